package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/internal/proc"
	"github.com/agentrt/agentrt/policy"
)

// Limits of an external checker.
const (
	// DefaultCommandTimeout bounds a check when NewCommand is given no
	// timeout.
	DefaultCommandTimeout = 10 * time.Second
	// MaxCommandOutput is the most stdout a checker may write.
	MaxCommandOutput = 1 << 20
	// maxStderr is how much stderr is kept for error messages; more is
	// read and discarded.
	maxStderr = 64 << 10
	// stderrExcerpt bounds the stderr quoted in an error.
	stderrExcerpt = 512
)

// Errors of external checkers, wrapped with the checker's name and
// details.
var (
	// ErrCommandTimeout: the checker ran past its timeout and was killed.
	ErrCommandTimeout = errors.New("timed out")
	// ErrCommandOutputLimit: the checker wrote more than
	// MaxCommandOutput bytes on stdout and was killed.
	ErrCommandOutputLimit = errors.New("output limit exceeded")
	// ErrInvalidResult: the checker's stdout is not one JSON CheckResult,
	// or the result breaks its contract (flagged without a reason code,
	// findings outside the checked text).
	ErrInvalidResult = errors.New("invalid checker result")
)

// Command is an external checker: a program that reads the CheckInput
// as JSON on stdin and writes one JSON CheckResult on stdout.
//
// Every Check starts a new process from argv, without a shell, in the
// daemon's working directory. Its environment is not the daemon's: it
// holds PATH, HOME, LANG, LC_ALL, TZ and TMPDIR from the daemon (when
// set), the configured variables, and AGENTRT_CHECKER_NAME, so that the
// daemon's own secrets never reach a checker by accident.
//
// Exit status 0 with one CheckResult is success. A non-zero exit, the
// timeout passing, stdout over MaxCommandOutput, or stdout that is not a
// valid CheckResult is an error naming the checker and quoting the start
// of its stderr. The process runs in its own process group, and the whole
// group is killed when the check times out or its context is cancelled.
//
// A Command is safe for concurrent use.
type Command struct {
	name    string
	argv    []string
	timeout time.Duration
	env     []string // KEY=value
}

// NewCommand returns the external checker name that runs argv. A timeout
// of zero or less means DefaultCommandTimeout. env holds KEY=value
// entries added to the checker's environment; later entries win. NewCommand
// copies argv and env; its arguments are checked when the checker runs,
// so that a bad configuration shows as an error of every check.
func NewCommand(name string, argv []string, timeout time.Duration, env []string) *Command {
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	return &Command{name: name, argv: slices.Clone(argv), timeout: timeout, env: slices.Clone(env)}
}

// Name returns the checker's name.
func (c *Command) Name() string { return c.name }

func (c *Command) validate() error {
	if len(c.argv) == 0 || c.argv[0] == "" {
		return errors.New("argv is empty")
	}
	for _, kv := range c.env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.ContainsRune(kv, 0) {
			return fmt.Errorf("invalid environment entry %q: want KEY=value", kv)
		}
	}
	return nil
}

// Check implements policy.Checker: it runs the checker on in.
func (c *Command) Check(ctx context.Context, in *policy.CheckInput) (policy.CheckResult, error) {
	res, err := c.run(ctx, in)
	if err != nil {
		return policy.CheckResult{}, fmt.Errorf("running checker %s: %w", c.name, err)
	}
	return res, nil
}

func (c *Command) run(ctx context.Context, in *policy.CheckInput) (policy.CheckResult, error) {
	if err := c.validate(); err != nil {
		return policy.CheckResult{}, err
	}
	text, err := checkedText(in)
	if err != nil {
		return policy.CheckResult{}, err
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		return policy.CheckResult{}, fmt.Errorf("encoding check input: %w", err)
	}

	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	runCtx, cancelTimeout := context.WithTimeoutCause(runCtx, c.timeout, ErrCommandTimeout)
	defer cancelTimeout()

	stdout := proc.NewCappedBuffer(MaxCommandOutput, func() error {
		cancelRun(ErrCommandOutputLimit)
		return ErrCommandOutputLimit
	})
	stderr := proc.NewCappedBuffer(maxStderr, nil)
	cmd := proc.Command(runCtx, c.argv)
	cmd.Env = c.environ()
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout = stdout
	cmd.Stderr = stderr

	if err := cmd.Start(); err != nil {
		return policy.CheckResult{}, fmt.Errorf("starting %s: %w", c.argv[0], err)
	}
	waitErr := proc.Wait(cmd)

	switch {
	case stdout.Overflowed():
		return policy.CheckResult{}, fmt.Errorf("%w: stdout exceeds %d bytes%s", ErrCommandOutputLimit, MaxCommandOutput, quoteStderr(stderr))
	case waitErr != nil && !errors.Is(waitErr, exec.ErrWaitDelay):
		return policy.CheckResult{}, c.failure(ctx, runCtx, waitErr, stderr)
	}
	res, err := decodeResult(stdout.Bytes(), len(text))
	if err != nil {
		return policy.CheckResult{}, fmt.Errorf("%w: %w%s", ErrInvalidResult, err, quoteStderr(stderr))
	}
	return res, nil
}

// failure explains a checker that did not exit with status 0.
func (c *Command) failure(parent, runCtx context.Context, waitErr error, stderr *proc.CappedBuffer) error {
	if errors.Is(context.Cause(runCtx), ErrCommandTimeout) && parent.Err() == nil {
		return fmt.Errorf("%w after %v%s", ErrCommandTimeout, c.timeout, quoteStderr(stderr))
	}
	if parent.Err() != nil {
		return fmt.Errorf("interrupted: %w", context.Cause(parent))
	}
	var exitErr *exec.ExitError
	if errors.As(waitErr, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Errorf("killed by signal %v: %w%s", ws.Signal(), waitErr, quoteStderr(stderr))
		}
		return fmt.Errorf("exit code %d: %w%s", exitErr.ExitCode(), waitErr, quoteStderr(stderr))
	}
	return fmt.Errorf("waiting for %s: %w%s", c.argv[0], waitErr, quoteStderr(stderr))
}

// decodeResult decodes one CheckResult from out and checks its contract
// against the length of the checked text.
func decodeResult(out []byte, textLen int) (policy.CheckResult, error) {
	var res policy.CheckResult
	if len(bytes.TrimSpace(out)) == 0 {
		return res, errors.New("stdout is empty; want a JSON CheckResult")
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&res); err != nil {
		return policy.CheckResult{}, fmt.Errorf("decoding stdout: %w: %s", err, proc.Excerpt(out, stderrExcerpt, len(out)))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return policy.CheckResult{}, fmt.Errorf("stdout has data after the JSON result: %s", proc.Excerpt(out, stderrExcerpt, len(out)))
	}
	if res.Flagged && res.ReasonCode == "" {
		return policy.CheckResult{}, errors.New("result is flagged without a reasonCode")
	}
	for _, f := range res.Findings {
		if f.Start < 0 || f.End < f.Start || f.End > textLen {
			return policy.CheckResult{}, fmt.Errorf("finding %s [%d,%d) is outside the checked text of %d bytes", f.Kind, f.Start, f.End, textLen)
		}
	}
	return res, nil
}

// environ builds the checker's environment from scratch.
func (c *Command) environ() []string {
	env := append(proc.BaseEnv(), c.env...)
	return append(env, "AGENTRT_CHECKER_NAME="+c.name)
}

// quoteStderr is "; stderr: …" with the start of what the checker
// wrote on stderr, or "" when it wrote nothing.
func quoteStderr(b *proc.CappedBuffer) string {
	out := bytes.TrimSpace(b.Bytes())
	if len(out) == 0 {
		return ""
	}
	s := proc.Excerpt(out, stderrExcerpt, len(out))
	if b.Dropped() > 0 && len(out) <= stderrExcerpt {
		s += fmt.Sprintf(" … (%d more bytes)", b.Dropped())
	}
	return "; stderr: " + s
}
