package cli_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/testenv"

	"github.com/agentrt/agentrt/cli"
)

// TestBinary builds the real agentrt binary and checks what only it can
// show: that main passes the arguments and standard streams to cli.Main
// and exits with its code.
func TestBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "agentrt")
	build := exec.Command(testenv.GoTool(t), "build", "-o", bin, "github.com/agentrt/agentrt/cmd/agentrt")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building agentrt: %v\n%s", err, out)
	}
	b := setup(t)
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		wantOut  string // last line of stdout
	}{
		{"version", []string{"version"}, "", cli.ExitOK, "agentrt "},
		{"example from stdin", []string{"run", "--config", b.config, "-"}, question, cli.ExitOK, "  result: Order 1042 is delayed"},
		{"usage error", []string{"run", "--config", b.config, "--agent", "nobody", question}, "", cli.ExitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, tt.args...)
			cmd.Stdin = strings.NewReader(tt.stdin)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			code := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\nstderr:\n%s", code, tt.wantCode, stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, tt.wantOut) {
				t.Errorf("last line of stdout = %q, want it to start with %q", last, tt.wantOut)
			}
		})
	}
}
