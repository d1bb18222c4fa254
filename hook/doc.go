// Package hook runs hooks: user scripts and HTTP endpoints called at fixed
// points of an agent run (a session starting, a prompt arriving, a tool
// call about to run or just done, the agent about to stop, …) that can
// watch the run, add context for the model, rewrite a tool's input, or
// block what is about to happen.
//
// Hooks speak the same contract as Claude Code hooks, so that existing
// hook scripts work unchanged: each [Point] is one of Claude Code's hook
// events ([Point.EventName]), the [Input] a hook reads has Claude Code's
// field names, and its answer is read the way Claude Code reads it.
//
// # Using it
//
// Build a [Runner] from a list of [Config] with [New], which checks the
// whole list. At each point of a run, call [Runner.Has] to skip the work
// when no hook applies, then [Runner.Run], which runs the matching hooks
// one after another in config order and returns their merged [Outcome].
// What an Outcome means at each point is the caller's to apply; see
// Outcome. Run also reports each hook's start and end ([Report]) for the
// hook.started, hook.completed and hook.failed events.
//
// At the tool points (pre_tool_use, permission_request, post_tool_use,
// post_tool_failure) a hook's Matcher selects tools by name: a regular
// expression matched against the whole name, so "Write|Edit" is exactly
// those two tools; "" and "*" are every tool.
//
// # Command hooks
//
// A command runs with /bin/sh -c, in Input.Cwd (or Options.Dir), in a
// process group of its own that is killed when its Timeout passes. It
// reads the Input as JSON on stdin. Its environment is not the daemon's:
// it holds PATH, HOME, LANG, LC_ALL, TZ and TMPDIR from the daemon (when
// set), the hook's Env, CLAUDE_PROJECT_DIR (the working directory) and
// AGENTRT_HOOK_POINT, so that the daemon's secrets never reach a hook by
// accident.
//
// What it means by its exit status:
//
//   - 0: stdout is its answer. A JSON object is read for Claude Code's
//     fields: continue, stopReason, systemMessage, suppressOutput,
//     decision ("block", with reason; "approve" at pre_tool_use) and
//     hookSpecificOutput (permissionDecision and its reason, updatedInput,
//     additionalContext, and PermissionRequest's decision). Other text is
//     context for the model at user_prompt_submit and session_start and
//     ignored elsewhere. Text that starts with "{" but is not a valid
//     object, or stdout over 1 MiB, is invalid output.
//   - 2: the hook blocks, and its stderr (trimmed, at most 4 KiB) is the
//     reason, which the model sees.
//   - anything else: the hook failed.
//
// # HTTP hooks
//
// An HTTP hook gets the Input as the body of a POST, with Content-Type
// application/json and the hook's Headers, whose values may use $VAR and
// ${VAR} from the hook's Env (never the daemon's environment). A 2xx
// response's body is its answer, read as a command's stdout; an empty body
// decides nothing. Any other status, or no response within the Timeout, is
// a failure: an HTTP hook blocks only by answering so.
//
// # Failures
//
// A hook that fails — times out, exits with a status other than 0 and 2,
// answers invalid output, cannot be reached or cannot be started — is
// never an error for the caller. Its FailMode decides: fail_open ignores
// it, fail_closed blocks with the reason "hook NAME failed: …". Hooks at
// the points that guard something (pre_tool_use, permission_request,
// user_prompt_submit, stop) fail closed unless configured otherwise.
//
// # Differences from Claude Code
//
// Claude Code runs an event's matching hooks in parallel; a Runner runs
// them in sequence, in config order, so that merging is deterministic.
// Claude Code's matchers at non-tool events (a SessionStart's source, a
// PreCompact's trigger) have no counterpart: New rejects a matcher there.
// Claude Code ignores a failed hook; a Runner does so only under
// fail_open.
package hook
