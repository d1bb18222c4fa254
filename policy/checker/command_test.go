package checker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/policy/checker"
)

// promptly bounds how long a check that must not wait for its checker
// may take. It is far below the scripts' 30 s sleeps.
const promptly = 10 * time.Second

// shell returns the path of sh, which runs the test checkers.
func shell(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("sh")
	if err != nil {
		testenv.Missing(t, "no sh to run test checkers: %v", err)
	}
	return p
}

// newScript returns a checker named "ext" that runs script with sh -c;
// args become $1, $2, ….
func newScript(t *testing.T, script string, timeout time.Duration, env []string, args ...string) *checker.Command {
	t.Helper()
	argv := append([]string{shell(t), "-c", script, "ext"}, args...)
	return checker.NewCommand("ext", argv, timeout, env)
}

// runCheck runs c on in and fails the test if the check takes longer
// than promptly.
func runCheck(t *testing.T, c policy.Checker, in *policy.CheckInput) (policy.CheckResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), promptly)
	defer cancel()
	start := time.Now()
	res, err := c.Check(ctx, in)
	if ctx.Err() != nil {
		t.Fatalf("Check did not return within %v (took %v): %v", promptly, time.Since(start), err)
	}
	return res, err
}

var fetchInput = &policy.CheckInput{
	Phase:     policy.PhaseInput,
	ToolName:  "fetch",
	Agent:     "researcher",
	SessionID: "ses_1",
	Principal: "alice",
	Input:     json.RawMessage(`{"url":"https://example.com"}`),
}

// unpassedVar returns the name of a variable in the test's environment
// that a checker must not inherit, or "" when there is none.
func unpassedVar() string {
	name := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if name.MatchString(k) && !slices.Contains([]string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "FOO"}, k) {
			return k
		}
	}
	return ""
}

func TestCommandResult(t *testing.T) {
	t.Parallel()
	unpassed := unpassedVar()
	if unpassed == "" {
		unpassed = "AGENTRT_UNSET"
	}
	script := `input=$(cat)
case "$input" in
*'"phase":"input"'*'"toolName":"fetch"'*)
	printf '{"flagged":true,"reasonCode":"ext_flag","message":"%s","findings":[{"kind":"url","start":8,"end":27}],"extra":1}\n' \
		"$AGENTRT_CHECKER_NAME $FOO ${` + unpassed + `+leaked}" ;;
*) printf '{"flagged":false,"message":"unexpected input"}' ;;
esac`
	c := newScript(t, script, 0, []string{"FOO=bar", "FOO=baz"})
	if c.Name() != "ext" {
		t.Errorf("Name() = %q, want ext", c.Name())
	}
	res, err := runCheck(t, c, fetchInput)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	want := policy.CheckResult{
		Flagged:    true,
		ReasonCode: "ext_flag",
		Message:    "ext baz ",
		Findings:   []policy.Finding{{Kind: "url", Start: 8, End: 27}},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("Check result (-want +got):\n%s", diff)
	}
}

// TestCommandStdin: the checker reads exactly the CheckInput as JSON.
func TestCommandStdin(t *testing.T) {
	t.Parallel()
	dump := filepath.Join(t.TempDir(), "stdin.json")
	c := newScript(t, `cat > "$1"; echo '{"flagged":false}'`, 0, nil, dump)
	for _, in := range []*policy.CheckInput{
		fetchInput,
		{Phase: policy.PhaseOutput, ToolName: "fetch", Input: fetchInput.Input, Output: "<html>…</html>"},
	} {
		res, err := runCheck(t, c, in)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if res.Flagged {
			t.Errorf("Check = %+v, want not flagged", res)
		}
		got, err := os.ReadFile(dump)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(in)
		if string(got) != string(want) {
			t.Errorf("checker read %s, want %s", got, want)
		}
	}
}

func TestCommandErrors(t *testing.T) {
	t.Parallel()
	longStderr := `head -c 100000 /dev/zero | tr '\0' e >&2; exit 1`
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		in      *policy.CheckInput
		wantIs  error
		want    []string // substrings of the message
	}{
		{name: "exit status", script: `echo boom >&2; echo '{"flagged":false}'; exit 3`,
			want: []string{"running checker ext: exit code 3", "stderr: boom"}},
		{name: "bounded stderr", script: longStderr, want: []string{"exit code 1", "stderr: eee", "more bytes"}},
		{name: "killed by signal", script: `kill -9 $$`, want: []string{"killed by signal killed"}},
		{name: "invalid json", script: `echo 'not json'; echo oops >&2`, wantIs: checker.ErrInvalidResult,
			want: []string{"running checker ext: invalid checker result", "not json", "stderr: oops"}},
		{name: "empty stdout", script: `exit 0`, wantIs: checker.ErrInvalidResult, want: []string{"stdout is empty"}},
		{name: "wrong type", script: `echo '{"flagged":"yes"}'`, wantIs: checker.ErrInvalidResult},
		{name: "trailing data", script: `echo '{"flagged":false} {"flagged":true}'`, wantIs: checker.ErrInvalidResult,
			want: []string{"data after the JSON result"}},
		{name: "flagged without reason", script: `echo '{"flagged":true}'`, wantIs: checker.ErrInvalidResult,
			want: []string{"without a reasonCode"}},
		{name: "finding out of range", script: `echo '{"flagged":true,"reasonCode":"x","findings":[{"kind":"k","start":2,"end":99}]}'`,
			wantIs: checker.ErrInvalidResult, want: []string{"finding k [2,99) is outside the checked text of 29 bytes"}},
		{name: "negative finding", script: `echo '{"flagged":true,"reasonCode":"x","findings":[{"kind":"k","start":-1,"end":2}]}'`,
			wantIs: checker.ErrInvalidResult},
		{name: "oversized output", script: `head -c 1100000 /dev/zero | tr '\0' ' '; echo '{"flagged":false}'`,
			wantIs: checker.ErrCommandOutputLimit, want: []string{"stdout exceeds 1048576 bytes"}},
		{name: "endless output", script: `yes`, wantIs: checker.ErrCommandOutputLimit},
		{name: "timeout", script: `exec sleep 30`, timeout: 200 * time.Millisecond, wantIs: checker.ErrCommandTimeout,
			want: []string{"running checker ext: timed out after 200ms"}},
		{name: "timeout with children", script: `sleep 30 & sleep 30 & wait`, timeout: 200 * time.Millisecond, wantIs: checker.ErrCommandTimeout},
		{name: "unknown phase", script: `echo '{"flagged":false}'`, in: &policy.CheckInput{Phase: "later"}, wantIs: checker.ErrUnknownPhase},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := tt.in
			if in == nil {
				in = fetchInput
			}
			res, err := runCheck(t, newScript(t, tt.script, tt.timeout, nil), in)
			if err == nil {
				t.Fatalf("Check = %+v, want an error", res)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Check error = %v, want %v", err, tt.wantIs)
			}
			msg := err.Error()
			for _, s := range tt.want {
				if !strings.Contains(msg, s) {
					t.Errorf("Check error = %q, want it to contain %q", msg, s)
				}
			}
			if len(msg) > 2048 {
				t.Errorf("Check error is %d bytes long, want a bounded excerpt: %.200s…", len(msg), msg)
			}
			if !cmp.Equal(res, policy.CheckResult{}) {
				t.Errorf("Check result = %+v with an error, want the zero result", res)
			}
		})
	}
}

func TestCommandExitCode(t *testing.T) {
	t.Parallel()
	_, err := runCheck(t, newScript(t, `exit 7`, 0, nil), fetchInput)
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 7 {
		t.Errorf("Check error = %v, want an *exec.ExitError with code 7", err)
	}
}

func TestCommandConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    *checker.Command
		want string
	}{
		{"empty argv", checker.NewCommand("ext", nil, 0, nil), "running checker ext: argv is empty"},
		{"missing program", checker.NewCommand("ext", []string{"/nonexistent/agentrt-checker"}, 0, nil), "running checker ext: starting /nonexistent/agentrt-checker"},
		{"bad env", checker.NewCommand("ext", []string{"true"}, 0, []string{"NOVALUE"}), `invalid environment entry "NOVALUE"`},
		{"empty env name", checker.NewCommand("ext", []string{"true"}, 0, []string{"=x"}), `invalid environment entry "=x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := runCheck(t, tt.c, fetchInput)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestCommandArgvCopied: changing the slices given to NewCommand later
// does not change the checker.
func TestCommandArgvCopied(t *testing.T) {
	t.Parallel()
	argv := []string{shell(t), "-c", `printf '{"flagged":false,"message":"%s"}' "$FOO"`}
	env := []string{"FOO=kept"}
	c := checker.NewCommand("ext", argv, 0, env)
	argv[2], env[0] = "exit 1", "FOO=changed"
	res, err := runCheck(t, c, fetchInput)
	if err != nil || res.Message != "kept" {
		t.Errorf("Check = %+v, %v; want message kept", res, err)
	}
}

// TestCommandBackgroundChild: a checker that answers and exits while a
// child it started still holds its stdout does not hold the check open.
func TestCommandBackgroundChild(t *testing.T) {
	t.Parallel()
	res, err := runCheck(t, newScript(t, `sleep 30 & echo '{"flagged":false}'`, 0, nil), fetchInput)
	if err != nil || res.Flagged {
		t.Errorf("Check = %+v, %v; want not flagged", res, err)
	}
}

// TestCommandCancel: cancelling the context kills the checker and the
// check returns the cancellation.
func TestCommandCancel(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		testenv.Missing(t, "no FIFOs: %v", err)
	}
	// Opened read-write, a FIFO does not block on open.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pids := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(f).ReadString('\n')
		pids <- strings.TrimSpace(line)
	}()

	c := newScript(t, `echo $$ > "$1"; exec sleep 30`, time.Hour, nil, fifo)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type result struct {
		res policy.CheckResult
		err error
	}
	results := make(chan result, 1)
	go func() {
		res, err := c.Check(ctx, fetchInput)
		results <- result{res, err}
	}()

	var pid int
	select {
	case line := <-pids:
		if pid, err = strconv.Atoi(line); err != nil {
			t.Fatalf("checker wrote pid %q: %v", line, err)
		}
	case r := <-results:
		t.Fatalf("Check returned before the checker started: %+v, %v", r.res, r.err)
	case <-time.After(promptly):
		t.Fatal("the checker did not start")
	}
	cancel()
	var r result
	select {
	case r = <-results:
	case <-time.After(promptly):
		t.Fatal("Check did not return after its context was cancelled")
	}
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("Check error = %v, want context.Canceled", r.err)
	}
	if !strings.Contains(r.err.Error(), "running checker ext: interrupted") {
		t.Errorf("Check error = %q, want it to say the check was interrupted", r.err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("checker process %d is still there after Check returned (kill 0: %v)", pid, err)
	}
}

// TestCommandConcurrent: one Command serves concurrent checks.
func TestCommandConcurrent(t *testing.T) {
	t.Parallel()
	c := newScript(t, `input=$(cat); case "$input" in *'"toolName":"t1"'*) echo '{"flagged":true,"reasonCode":"one"}';; *) echo '{"flagged":false}';; esac`, 0, nil)
	for i := range 8 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			res, err := runCheck(t, c, &policy.CheckInput{Phase: policy.PhaseOutput, ToolName: "t" + strconv.Itoa(i), Output: "x"})
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if res.Flagged != (i == 1) {
				t.Errorf("Check(t%d) = %+v", i, res)
			}
		})
	}
}
