package cli_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
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
	bin := buildAgentrt(t)
	b := setup(t)
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		wantOut  string // last line of stdout
	}{
		{"version", []string{"version"}, "", cli.ExitOK, "agentrt "},
		{"--version", []string{"--version"}, "", cli.ExitOK, "agentrt "},
		{"example from stdin", []string{"run", "--config", b.config, "-"}, question, cli.ExitOK, "  result: Order 1042 is delayed"},
		{"usage error", []string{"run", "--config", b.config, "--agent", "nobody", question}, "", cli.ExitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runBinary(t, bin, tt.stdin, tt.args...)
			if r.code != tt.wantCode {
				t.Errorf("exit %d, want %d\nstderr:\n%s", r.code, tt.wantCode, r.stderr)
			}
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, tt.wantOut) {
				t.Errorf("last line of stdout = %q, want it to start with %q", last, tt.wantOut)
			}
		})
	}
}

// TestVersionFlag: agentrt --version prints what agentrt version prints:
// one line with the module version, the Go version and the platform.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	version := runOK(t, "", "version").stdout
	flag := runOK(t, "", "--version").stdout
	if flag != version || !regexp.MustCompile(`^agentrt \S+ (\(rev [0-9a-f]{1,12}[^)]*\) )?go\S+ \w+/\w+\n$`).MatchString(flag) {
		t.Errorf("agentrt --version printed %q, agentrt version %q; want the same line", flag, version)
	}
}

// TestApprovalAcrossProcesses parks a turn in one agentrt process and
// approves it from another, on the same SQLite file: the second process
// resumes the turn from what the first recorded and completes it.
func TestApprovalAcrossProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := buildAgentrt(t)
	b := setupGoverned(t)

	parked := runBinary(t, bin, "", "run", "--config", b.config, question)
	if parked.code != cli.ExitParked {
		t.Fatalf("run: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", parked.code, cli.ExitParked, parked.stdout, parked.stderr)
	}
	m := regexp.MustCompile(`(?m)^    approve: agentrt (approvals approve (act_[0-9A-Z]{26}) --config (.+))$`).FindStringSubmatch(parked.stdout)
	if m == nil {
		t.Fatalf("run printed no approve command:\n%s", parked.stdout)
	}
	if m[3] != b.config {
		t.Errorf("the approve command names config %q, want %q", m[3], b.config)
	}

	// The command exactly as run printed it.
	approved := runBinary(t, bin, "", strings.Fields(m[1])...)
	if approved.code != cli.ExitOK {
		t.Fatalf("approve: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", approved.code, approved.stdout, approved.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(approved.stdout, "\n"), "\n")
	if want := "  result: Ticket opened for order 1042."; lines[len(lines)-1] != want {
		t.Errorf("last line of approve = %q, want %q\nstdout:\n%s", lines[len(lines)-1], want, approved.stdout)
	}
	if !strings.HasPrefix(approved.stdout, "action "+m[2]+" approved (approve by local): open_ticket ") {
		t.Errorf("approve does not start by saying the action was approved:\n%s", approved.stdout)
	}

	// Both processes wrote one evidence chain.
	session := regexp.MustCompile(`session (ses_[0-9A-Z]{26})`).FindStringSubmatch(parked.stdout)[1]
	if r := runBinary(t, bin, "", "verify", "--config", b.config, "--session", session); r.code != cli.ExitOK {
		t.Errorf("verify: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// buildAgentrt builds the agentrt binary into a temporary directory.
func buildAgentrt(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agentrt")
	build := exec.Command(testenv.GoTool(t), "build", "-o", bin, "github.com/agentrt/agentrt/cmd/agentrt")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building agentrt: %v\n%s", err, out)
	}
	return bin
}

// runBinary runs the agentrt binary, a process of its own.
func runBinary(t *testing.T, bin, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}
