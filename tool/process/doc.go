// Package process provides the tools that run commands — shell (a command
// line run by /bin/sh -c) and exec (an argument vector, no shell) — and the
// tools that drive a command left running in the background,
// write_process_stdin and terminate_process, together with the Manager
// that owns those background processes once the call that started them
// has returned.
//
// # Sandbox, fail closed
//
// Every process runs through Call.Sandbox under Call.Profile. A call
// without a sandbox or profile, without an output store or without a
// redactor runs nothing and gets an error result, as does a call whose
// profile the sandbox cannot enforce. A sandbox refusal that makes the
// command fail (a denied write, a hit limit) sets Result.Violation and is
// recorded as sandbox.violation.
//
// # Environment
//
// A process never sees the daemon's environment: it gets proc.BaseEnv
// (PATH, HOME, LANG, LC_ALL, TZ, TMPDIR), the daemon variables named in
// Options.EnvAllow, the call's "env" input, and then
//
//	AGENTRT_TOOL_CALL_ID     the tool call id
//	AGENTRT_SESSION_ID       the session
//	AGENTRT_TURN_ID          the turn
//	AGENTRT_IDEMPOTENCY_KEY  stable across retries of the call
//
// The "env" input may set any variable except PATH and names starting
// with AGENTRT_; a call setting one of those is refused.
//
// # Output
//
// Standard output and standard error are merged, in the order they are
// read, into one stream that passes through Call.Redactor before anything
// keeps or shows it. A foreground command's stream goes to a Call.Outputs
// sink, so that whatever it prints costs disk rather than memory; the
// result shows the sink's preview and sets Result.Output. A background
// command's stream goes to a ring of its last 64 KiB, from which
// write_process_stdin and terminate_process return what is new. Both are
// also recorded as process.output events, per stream, in redacted chunks
// of at most 4 KiB, up to 64 KiB (and 1024 chunks) per process; the final
// event's Bytes gives the whole size. The first 4 KiB and the last 8 KiB
// of raw standard error are kept only to classify sandbox violations.
//
// The streaming redactor holds back a short tail to catch a secret split
// across writes. A background process's tail is flushed whenever its
// output is read (after a yield), so a secret split exactly across such a
// read is the one case it cannot catch.
//
// # Time
//
// timeout_ms bounds a command's wall-clock time (default 2 minutes for a
// foreground command, at most the tool's 10-minute Spec.Timeout; none for
// a background one unless given) and idle_timeout_ms the time it may go
// without printing. When one passes, or when a process is terminated, its
// process group gets SIGTERM and, Options.Grace later, SIGKILL; the end is
// recorded as process.terminated with reason timeout, inactivity,
// terminated, run_ended or cancelled. A foreground call whose context ends
// has its process group killed at once (reason cancelled, or timeout when
// the context's deadline passed).
//
// # Events
//
// Events of a call are emitted through Call.Emit while the call runs.
// Events of a background process after the call that started it returned
// (output, its end) go to Options.Emit with the starting call's Ref;
// process.input of write_process_stdin goes to that call's Emit.
//
// # Background processes
//
// A background call waits yield_ms (default 1 s) for the command to exit,
// then returns its id and the output so far. At most Options.MaxLive
// background processes live per session. write_process_stdin and
// terminate_process act only on processes of the caller's session. A
// background process that exits is kept, with its final status and
// output, until a tool call has reported it once or its run ends
// (KillRun). KillRun and Close end processes and wait for them; after
// Close no goroutine of the manager remains.
//
// # Input is governed by what reads it
//
// write_process_stdin is a tool.StdinWriter: before a call runs, it tells
// the runtime which process the call writes to, the command line that
// process was started with, and the unfinished line written to it before
// (text after the last newline no backslash escapes). The runtime decides
// text written to a process that runs a shell as the shell command it
// makes (see policy.ShellReadsInput). A process's unfinished input line is
// bounded: a write that would leave more than 1 MiB without a newline is
// refused (ErrLineTooLong).
package process
