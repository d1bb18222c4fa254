// Package testenv holds what tests across the module share about their
// environment: finding the go command, and the rule for a missing real
// component — skip with a message locally, fail when CI=true, because CI
// installs everything the tests need.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Missing reports a real component the test needs and does not have: it
// skips the test, or fails it when the CI environment variable is "true".
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// GoTool returns the go command of the toolchain running the test.
func GoTool(t testing.TB) string {
	t.Helper()
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); exists(p) {
		return p
	}
	p, err := exec.LookPath("go")
	if err != nil {
		Missing(t, "no go command: %v", err)
	}
	return p
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
