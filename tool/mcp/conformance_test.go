package mcp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testenv"
)

// TestConformance runs the client scenarios of the MCP conformance suite
// pinned in testdata/mcp against agentrt's client: this test binary, made
// the client by TestMain (conformanceClient). The suite compares what
// fails with testdata/conformance-baseline.yml and exits non-zero on a
// failure the baseline does not list, or on a listed scenario that
// passes.
func TestConformance(t *testing.T) {
	argv := testenv.MCPConformance(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The suite splits the command on spaces and runs it with a shell.
	if strings.ContainsAny(exe, " \t\n'\"\\$`") {
		t.Fatalf("the test binary's path %q cannot be given to the conformance suite as a command", exe)
	}
	baseline, err := filepath.Abs(filepath.Join("testdata", "conformance-baseline.yml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], "client",
		"--command", exe+" -test.run=^$",
		"--suite", "all",
		"--expected-failures", baseline,
		"--verbose")...)
	cmd.Env = append(os.Environ(), conformanceClientEnv+"=1")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	out = ansiColor.ReplaceAll(out, nil)
	if err != nil {
		t.Fatalf("the MCP conformance suite: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Baseline check passed") {
		t.Fatalf("the MCP conformance suite did not check the baseline:\n%s", out)
	}
}

// ansiColor matches the colour codes the suite prints whatever its output.
var ansiColor = regexp.MustCompile("\x1b\\[[0-9;]*m")
