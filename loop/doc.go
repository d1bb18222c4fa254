// Package loop is the coordinator: it runs one turn of an agent — model
// hop, tool calls, next hop — until the termination protocol ends it, and
// turns every step into durable facts through the store's Writer.
//
// # The entry point
//
// A worker that claimed a task calls Coordinator.RunAttempt, which reads
// the task's durable state and does what it is due for: the first
// attempt, a resumption of a parked run, a new attempt after a lost
// worker, a stop or a retry, a cancel or a pause (entry.go). Status
// reasons are runtype.Reason values.
//
// # One run
//
// A run starts (turn.started, task.started, task.attempt.started,
// tool.catalog.resolved) and then hops. Each hop requests the model
// (model.requested), normalizes its answer into a turn output
// (model.completed with status reply, tool_request or complete) and commits
// it with the assistant message before any requested tool runs. Each tool
// call is then, in order: looked up in the agent's inventory, validated
// against its JSON Schema, decided by the policy evaluator
// (permission.evaluated), executed with its timeout (tool.started,
// tool.result or tool.failed), and its result committed with the tool
// message before the next step. Unknown tools, invalid input, denials,
// errors, timeouts and panics all become error results the model sees;
// none of them crashes the run.
//
// # Termination
//
//   - complete_task (the completion tool) ends the run completed with its
//     result.
//   - A bare reply ends the run completed, unless the agent requires
//     completion: then the model gets one grace hop with a reminder, and a
//     second bare reply in a row ends the run failed with reason
//     no_completion.
//   - A response requesting tools after MaxToolHops tool hops ends the run
//     failed with reason max_tool_hops.
//   - A model failure that is not retryable, or still failing after the
//     retries, ends the run failed (model_error, script_exhausted).
//   - An "ask" permission decision parks the run as waiting_permission with
//     an action.required fact; the run holds nothing while parked.
//   - Cancelling the run's context with ErrInterrupted or ErrStop ends it
//     cancelled.
//
// The final step's facts and the terminal events commit in one
// transaction.
package loop
