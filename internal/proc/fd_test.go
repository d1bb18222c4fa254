//go:build linux

package proc_test

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentrt/agentrt/internal/proc"
)

// childFDs returns the file descriptors a child program holds, as shown
// in its /proc/PID/fd.
func childFDs(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", "ls /proc/$$/fd").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))
}

// TestCloseInheritedOnExec: a descriptor the process holds without
// close-on-exec (a pipe, here; a listening socket handed by a
// supervisor, in a daemon) passes to every child until
// CloseInheritedOnExec marks it; standard input, output and error still
// pass.
func TestCloseInheritedOnExec(t *testing.T) {
	// Not parallel: it changes descriptors of the whole process.
	var p [2]int
	if err := syscall.Pipe2(p[:], 0); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	if got := childFDs(t); !slices.Contains(got, strconv.Itoa(p[0])) {
		t.Fatalf("a child holds %v before, want the pipe's %d among them", got, p[0])
	}
	if err := proc.CloseInheritedOnExec(); err != nil {
		t.Fatal(err)
	}
	if got := childFDs(t); !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Errorf("a child holds descriptors %v, want 0 1 2", got)
	}
}
