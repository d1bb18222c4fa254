// Package replay implements the replay model provider: it plays a YAML
// script of model responses instead of calling a real model. The offline
// example, tests, demos and benchmarks use it, and so does anyone who wants
// a run to go exactly the same way every time.
//
// The script format is a public contract, documented in full in
// docs/replay-format.md. In short:
//
//	model: support-bot-v1
//	responses:
//	  - text: "Let me look that up."
//	    tool_calls:
//	      - name: lookup_order
//	        input: {order_id: "1042"}
//	  - error: {kind: rate_limit, retry_after_ms: 200}
//	  - tool_calls: [{name: complete_task, input: {result: "done"}}]
//
// # Playing a script
//
// Parse or Load validate a script and prepare every response, so that
// Generate does no more than copy a few slices. Problems are reported all
// at once as a *ScriptError, one "file:line:col: message" per problem.
//
// New returns a Provider for a Script. Each session (model.Request's
// SessionID) walks the script on its own, from the first response, one
// response per Generate call; error entries are consumed like the rest. A
// session that runs past the end gets a model.ErrScriptExhausted error.
// Positions live in the Provider's memory, so they start over when the
// process does.
package replay
