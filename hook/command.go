package hook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"

	"github.com/agentrt/agentrt/internal/proc"
)

// Limits on what a hook may write.
const (
	// maxOutput is the most stdout (or HTTP body) a hook may write; more
	// is invalid output.
	maxOutput = 1 << 20
	// maxStderr is how much of a command's stderr is kept.
	maxStderr = 64 << 10
	// maxReason bounds the stderr of a command that exited with 2, which
	// becomes the reason the model sees.
	maxReason = 4 << 10
)

// blockExitCode is the exit status with which a command blocks.
const blockExitCode = 2

var (
	// errTimedOut is the cause of a hook's context when its timeout passes.
	errTimedOut = errors.New("timed out")
	// errOutputLimit cancels a command that writes too much stdout.
	errOutputLimit = errors.New("output limit exceeded")
)

// runCommand runs a command hook with /bin/sh -c in its own process
// group, which is killed when the hook times out or ctx ends.
func (r *Runner) runCommand(ctx context.Context, h *hook, p Point, body []byte, cwd string) (effect, *failure) {
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	runCtx, cancelTimeout := context.WithTimeoutCause(runCtx, h.timeout, errTimedOut)
	defer cancelTimeout()

	stdout := proc.NewCappedBuffer(maxOutput, func() error {
		cancelRun(errOutputLimit)
		return errOutputLimit
	})
	stderr := proc.NewCappedBuffer(maxStderr, nil)
	cmd := proc.Command(runCtx, []string{"/bin/sh", "-c", h.command})
	cmd.Dir = cwd
	cmd.Env = h.environ(p, cwd)
	cmd.Stdin = bytes.NewReader(body)
	cmd.Stdout = stdout
	cmd.Stderr = stderr

	if err := cmd.Start(); err != nil {
		if f := interrupted(ctx, runCtx, h); f != nil {
			return effect{}, f
		}
		return effect{}, &failure{category: categoryStart, message: "starting the command: " + err.Error()}
	}
	waitErr := proc.Wait(cmd)

	switch {
	case stdout.Overflowed():
		return effect{}, invalidOutput("stdout exceeds %d MiB", maxOutput>>20)
	case waitErr == nil || errors.Is(waitErr, exec.ErrWaitDelay):
		return parseOutput(h.name, p, stdout.Bytes())
	}
	if f := interrupted(ctx, runCtx, h); f != nil {
		return effect{}, f
	}
	var exitErr *exec.ExitError
	if !errors.As(waitErr, &exitErr) {
		return effect{}, &failure{category: categoryExit, message: "running the command: " + waitErr.Error()}
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return effect{}, &failure{category: categoryExit, message: "killed by signal " + ws.Signal().String() + stderrPreview(stderr)}
	}
	if code := exitErr.ExitCode(); code != blockExitCode {
		return effect{}, &failure{category: categoryExit, message: fmt.Sprintf("exit code %d%s", code, stderrPreview(stderr))}
	}
	// Exit 2 blocks, and stderr is the reason; stdout is ignored.
	reason := bytes.TrimSpace(stderr.Bytes())
	e := effect{blocked: true, reason: proc.Excerpt(reason, maxReason, len(reason)+int(stderr.Dropped()))}
	if e.reason == "" {
		e.reason = fmt.Sprintf("hook %s exited with status %d", h.name, blockExitCode)
	}
	return e, nil
}

// interrupted explains a hook stopped by its timeout or by the end of
// ctx, the Run's context, or returns nil if neither stopped it.
func interrupted(ctx, runCtx context.Context, h *hook) *failure {
	if errors.Is(context.Cause(runCtx), errTimedOut) {
		return &failure{category: categoryTimeout, message: fmt.Sprintf("timed out after %v", h.timeout)}
	}
	if ctx.Err() != nil {
		return &failure{category: categoryCancelled, message: fmt.Sprintf("interrupted: %v", context.Cause(ctx))}
	}
	return nil
}

// environ builds a command's environment from scratch, never from the
// daemon's whole environment. Later entries win: the hook's variables
// override the daemon's, and nothing overrides the runner's.
func (h *hook) environ(p Point, cwd string) []string {
	env := append(proc.BaseEnv(), h.env...)
	return append(env,
		"CLAUDE_PROJECT_DIR="+cwd,
		"AGENTRT_HOOK_POINT="+string(p),
	)
}

// stderrPreview is "; stderr: …" with the start of the command's stderr,
// or "" when it wrote none.
func stderrPreview(b *proc.CappedBuffer) string {
	if len(bytes.TrimSpace(b.Bytes())) == 0 {
		return ""
	}
	return "; stderr: " + excerpt(b.Bytes(), b.Dropped())
}
