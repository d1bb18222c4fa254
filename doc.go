// Package agentrt is a governed, durable agent execution runtime: it runs
// LLM agent loops (model ↔ tools) and turns every step into a durable,
// inspectable fact in the event contract of the Agent Runtime standard.
//
// This package is the embedding API and the control plane. Build a Runtime
// from a Config (agents with their model providers and tool names, extra Go
// tools, a data directory or a store), Start it, submit turns with
// SubmitTurn, follow them with Subscribe or WaitTurn, inspect them with
// GetSession, GetThreadRead and ListRequests, and Stop it.
//
// # Where things live
//
//   - apitype: the API contract — the parameters, results, read models
//     and errors this package's methods take and return.
//   - runtype: ids, statuses and durable records; event: the envelope,
//     payloads and the notification bus.
//   - store: the Store interface and the group-commit Writer;
//     store/sqlitestore (default) and store/memstore are its drivers.
//   - loop: the coordinator that runs one turn.
//   - model: the provider interface; model/replay plays scripted responses.
//   - tool: tools, schemas and the registry; tool/builtin and tool/command.
//   - policy: the permission evaluation point.
//   - config: agentrt.yaml; httpapi, client, cli and cmd/agentrt: the
//     daemon, its Go client and the command line.
//
// See docs/architecture.md for the flow of a run and its state diagrams.
package agentrt
