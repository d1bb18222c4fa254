// Package testenv holds what tests across the module share about their
// environment: finding the go command, mounting a small file system, and
// the rule for a missing real component — skip with a message locally,
// fail when CI=true, because CI installs everything the tests need.
package testenv

import (
	"fmt"
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

// GoTool returns the go command: the one GOROOT names when it is set,
// else the one on PATH.
func GoTool(t testing.TB) string {
	t.Helper()
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); exists(p) {
			return p
		}
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

// Tmpfs mounts a tmpfs of size bytes on a new directory and returns it;
// cleanup unmounts it after the test's other cleanups (register it before
// anything that keeps files open there). It needs Linux and root (CI runs
// as root): elsewhere the test is Missing a real component.
func Tmpfs(t testing.TB, size int64) string {
	t.Helper()
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		Missing(t, "mounting a tmpfs needs root on Linux (uid %d on %s)", os.Geteuid(), runtime.GOOS)
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		Missing(t, "mounting a tmpfs on %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("unmounting the tmpfs on %s: %v: %s", dir, err, out)
		}
	})
	return dir
}
