// Package command runs YAML-declared command tools: an executable that
// reads the call's JSON input on stdin and writes a JSON result on stdout.
//
// # Contract with the executable
//
// The process starts in the agent's workspace directory (Call.WorkspaceDir)
// or, when the agent has none, in Config.Dir. Its environment is not the
// daemon's: it holds only PATH, HOME, LANG, LC_ALL, TZ and TMPDIR from the
// daemon (when set), the tool's configured variables, and
//
//	AGENTRT_TOOL_NAME        the tool's name
//	AGENTRT_TOOL_CALL_ID     the tool call id
//	AGENTRT_SESSION_ID       the session
//	AGENTRT_TURN_ID          the turn (request)
//	AGENTRT_IDEMPOTENCY_KEY  stable across retries of this call
//
// so that secrets such as OPENAI_API_KEY never reach a tool by accident.
//
// Exit status 0 with one JSON value on stdout is success; the value,
// compacted, is what the model sees. Anything else is an error result: a
// non-zero exit (with the exit code and the start of stderr and stdout),
// empty or non-JSON stdout, stdout over 1 MiB, or the time limit passing.
// Stderr is kept up to 64 KiB for those messages; more is read and
// discarded.
//
// The process runs in its own process group. When the call times out or
// its context is cancelled the whole group is killed, and once the call
// returns nothing the command started in that group keeps running.
package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/proc"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
)

// Limits on what a command may write.
const (
	// MaxStdout is the most stdout a command may write; more makes the
	// call an error.
	MaxStdout = 1 << 20
	// MaxStderr is how much stderr is kept for error messages.
	MaxStderr = 64 << 10
)

// previewLen bounds the excerpts of stdout and stderr in error results.
const previewLen = 1024

// Config says how to run a command tool.
type Config struct {
	// Argv is the command line. Argv[0] is an absolute path or a name
	// looked up in the daemon's PATH.
	Argv []string
	// Dir is the working directory when the call has no workspace.
	Dir string
	// Env holds extra environment variables for the command.
	Env map[string]string
}

func (c *Config) validate() error {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return errors.New("argv is empty")
	}
	for k, v := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(v, "\x00") {
			return fmt.Errorf("invalid environment variable %q", k)
		}
	}
	return nil
}

// commandTool is a command tool. It is safe for concurrent use; every
// call starts a new process.
type commandTool struct {
	spec tool.Spec
	argv []string
	dir  string
	env  []string // KEY=value: the configured variables, sorted
	// roots are what a sandboxed run must read besides the profile's:
	// the executable's directory and the tool's directory.
	roots []string
}

// New returns a command tool described by spec that runs cfg.Argv. A
// spec without a Source gets "command"; one without an InputSchema
// accepts any object.
func New(spec tool.Spec, cfg Config) (tool.Tool, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("creating command tool %s: %w", spec.Name, err)
	}
	if spec.Source == "" {
		spec.Source = "command"
	}
	if len(spec.InputSchema) == 0 {
		spec.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	t := &commandTool{spec: spec, argv: slices.Clone(cfg.Argv), dir: cfg.Dir}
	if filepath.IsAbs(t.argv[0]) {
		t.roots = append(t.roots, filepath.Dir(t.argv[0]))
	}
	if t.dir != "" {
		t.roots = append(t.roots, t.dir)
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		t.env = append(t.env, k+"="+cfg.Env[k])
	}
	return t, nil
}

// Spec implements tool.Tool.
func (t *commandTool) Spec() tool.Spec { return t.spec }

// errOutputLimit cancels a call whose command writes too much stdout.
var errOutputLimit = errors.New("output limit exceeded")

// errTimedOut is the cause of a call's context when its timeout passes.
var errTimedOut = errors.New("timed out")

// Call implements tool.Tool: it runs the command with the call's input on
// stdin. Every failure, including a missing executable, is an error
// result; the returned error is always nil.
func (t *commandTool) Call(ctx context.Context, call *tool.Call) (res *tool.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = t.errorResult("internal error: %v", p), nil
		}
	}()

	timeout := t.spec.Timeout
	if timeout <= 0 {
		timeout = tool.DefaultTimeout
	}
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	runCtx, cancelTimeout := context.WithTimeoutCause(runCtx, timeout, errTimedOut)
	defer cancelTimeout()

	input := call.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	stdout := proc.NewCappedBuffer(MaxStdout, func() error {
		cancelRun(errOutputLimit)
		return errOutputLimit
	})
	stderr := proc.NewCappedBuffer(MaxStderr, nil)

	dir := t.dir
	if call.WorkspaceDir != "" {
		dir = call.WorkspaceDir
	}
	var (
		cmd  *exec.Cmd
		wait func() error
		sc   *sandbox.Cmd
	)
	if call.Sandbox != nil && call.Profile != nil {
		// Under a runtime the command runs in the agent's sandbox, its
		// own directory and the tool's readable.
		prof := *call.Profile
		prof.ReadRoots = append(slices.Clone(prof.ReadRoots), t.roots...)
		var err error
		sc, err = call.Sandbox.Command(runCtx, prof, sandbox.Spec{Argv: t.argv, Dir: dir, Workspace: call.WorkspaceDir, Env: t.environ(call)})
		if err != nil {
			return t.errorResult("the sandbox cannot run it, so it did not run: %v", err), nil
		}
		if call.Emit != nil {
			call.Emit(event.SandboxApplied, sc.Applied.Payload())
		}
		cmd, wait = sc.Cmd, sc.Wait
	} else {
		cmd = proc.Command(runCtx, t.argv)
		cmd.Dir = dir
		cmd.Env = t.environ(call)
		wait = func() error { return proc.Wait(cmd) }
	}
	cmd.Stdin = bytes.NewReader(input)
	cmd.Stdout = stdout
	cmd.Stderr = stderr

	start := cmd.Start
	if sc != nil {
		start = sc.Start
	}
	if err := start(); err != nil {
		return t.errorResult("starting %s: %v", t.argv[0], err), nil
	}
	waitErr := wait()

	switch {
	case stdout.Overflowed():
		return t.errorResult("output exceeds %s", formatSize(MaxStdout)), nil
	case waitErr != nil && !errors.Is(waitErr, exec.ErrWaitDelay):
		res := t.failure(ctx, runCtx, timeout, waitErr, stdout, stderr)
		if sc != nil && ctx.Err() == nil {
			if v := sc.Violation(waitErr, stderr.Bytes()); v != nil {
				res.Violation = v
				if call.Emit != nil {
					p := sc.Applied.Payload()
					p.Violation, p.Detail = string(v.Kind), v.Detail
					call.Emit(event.SandboxViolation, p)
				}
			}
		}
		return res, nil
	}

	out := bytes.TrimSpace(stdout.Bytes())
	if len(out) == 0 {
		return t.errorResult("command wrote nothing on stdout; want a JSON value%s", stderrPreview(stderr)), nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, out); err != nil {
		return t.errorResult("stdout is not valid JSON (%v): %s%s", err, preview(out, len(out)), stderrPreview(stderr)), nil
	}
	return &tool.Result{Content: compact.String()}, nil
}

// failure explains a command that did not exit with status 0.
func (t *commandTool) failure(parent, runCtx context.Context, timeout time.Duration, waitErr error, stdout, stderr *proc.CappedBuffer) *tool.Result {
	if errors.Is(context.Cause(runCtx), errTimedOut) {
		return t.errorResult("timed out after %v", timeout)
	}
	if parent.Err() != nil {
		return t.errorResult("interrupted: %v", context.Cause(parent))
	}
	var exitErr *exec.ExitError
	if !errors.As(waitErr, &exitErr) {
		return t.errorResult("running %s: %v", t.argv[0], waitErr)
	}
	var what string
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		what = "killed by signal " + ws.Signal().String()
	} else {
		what = fmt.Sprintf("exit code %d", exitErr.ExitCode())
	}
	msg := what + stderrPreview(stderr)
	if out := bytes.TrimSpace(stdout.Bytes()); len(out) > 0 {
		msg += "; stdout: " + preview(out, len(out))
	}
	return t.errorResult("%s", msg)
}

// environ builds the command's environment from scratch.
func (t *commandTool) environ(call *tool.Call) []string {
	// Later entries win: configured variables override the daemon's, and
	// nothing overrides the call's identity.
	env := append(proc.BaseEnv(), t.env...)
	return append(env,
		"AGENTRT_TOOL_NAME="+t.spec.Name,
		"AGENTRT_TOOL_CALL_ID="+call.ID,
		"AGENTRT_SESSION_ID="+call.SessionID,
		"AGENTRT_TURN_ID="+call.TurnID,
		"AGENTRT_IDEMPOTENCY_KEY="+call.IdempotencyKey,
	)
}

func (t *commandTool) errorResult(format string, args ...any) *tool.Result {
	return &tool.Result{Content: t.spec.Name + ": " + fmt.Sprintf(format, args...), IsError: true}
}

// stderrPreview is "; stderr: …" with the start of the command's stderr,
// or "" when it wrote none.
func stderrPreview(b *proc.CappedBuffer) string {
	out := bytes.TrimSpace(b.Bytes())
	if len(out) == 0 {
		return ""
	}
	return "; stderr: " + preview(out, len(out)+int(b.Dropped()))
}

// preview returns the start of b, at most previewLen bytes cut at a rune
// boundary, saying how much was left out of total.
func preview(b []byte, total int) string { return proc.Excerpt(b, previewLen, total) }

func formatSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
