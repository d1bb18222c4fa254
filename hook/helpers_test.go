package hook_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/hook"
)

// promptly bounds how long a Run that must not wait for its hooks may
// take. It is far below the hooks' 30 s sleeps.
const promptly = 10 * time.Second

// writeScript writes an executable shell script named name with body
// into dir (a fresh temporary directory when dir is "") and returns its
// path.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	p := filepath.Join(dir, name)
	// Hold ForkLock for reading while the script is open for writing: a
	// command started concurrently by another test would otherwise inherit
	// the descriptor across fork, and exec of this script would fail with
	// "text file busy".
	syscall.ForkLock.RLock()
	err := os.WriteFile(p, []byte(body), 0o755)
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// newRunner returns a Runner for hooks, failing the test if New does.
func newRunner(t *testing.T, opts hook.Options, hooks ...hook.Config) *hook.Runner {
	t.Helper()
	r, err := hook.New(hooks, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// run runs the hooks at p and returns the outcome and the reports, failing
// the test if the run takes longer than promptly.
func run(t *testing.T, r *hook.Runner, p hook.Point, in hook.Input) (hook.Outcome, []hook.Report) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), promptly)
	defer cancel()
	var reports []hook.Report
	out := r.Run(ctx, p, in, func(rep hook.Report) { reports = append(reports, rep) })
	if ctx.Err() != nil {
		t.Fatalf("Run did not return within %v", promptly)
	}
	return out, reports
}

// final returns the reports of ended runs, one per hook.
func final(reports []hook.Report) []hook.Report {
	var out []hook.Report
	for _, r := range reports {
		if r.Phase != "started" {
			out = append(out, r)
		}
	}
	return out
}

// bashInput is the Input of a Bash call running command.
func bashInput(t *testing.T, command string) hook.Input {
	return hook.Input{
		SessionID: "sess-1",
		Cwd:       t.TempDir(),
		ToolName:  "Bash",
		ToolInput: []byte(`{"command":` + quote(command) + `}`),
		ToolUseID: "toolu_01",
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// fakeClock is a clock that advances one second every time it is read.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time {
	c.now = c.now.Add(time.Second)
	return c.now
}
