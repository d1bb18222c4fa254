// Package apitype is agentrt's API contract as plain Go values: the
// parameters and results of the control plane (SubmitTurnParams,
// RespondActionResult, …), the read models (Snapshot, TaskRead,
// RequestSummary, the pages, Health, ToolInventory, tokens), the typed
// errors and sentinels callers branch on (ErrNotFound, ErrBusy,
// *InvalidError, …), and the HTTP request and error bodies of the API
// (SubmitTurnRequest, Problem, …).
//
// The runtime (package agentrt) takes and returns these values, the HTTP
// API (package httpapi) serves them as JSON, and the Go client (package
// client) decodes them, so a caller works with a daemon as it would with
// an embedded runtime, as River's root package returns rivertype values.
// Method names in these docs (SubmitTurn, ListRequestsPage, Subscribe, …)
// are those of agentrt.Runtime and client.Client; Config is
// agentrt.Config.
//
// The package holds no logic beyond validating its own values, and
// imports only runtype and event from agentrt (a test enforces it), so
// that importing it — or the client — links neither the runtime, its
// store, its policy engine nor any model SDK.
//
// # Errors
//
// ErrNotFound and ErrConflict are runtype's sentinels, which the store
// returns too, and ErrUnknownProcess is the process manager's: errors.Is
// matches an error from any layer against the contract's sentinel.
package apitype
