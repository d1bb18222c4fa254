package proc_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/proc"
	"github.com/agentrt/agentrt/internal/testenv"
)

// promptly bounds how long waiting for a killed child may take. It is far
// below the children's 30 s sleeps.
const promptly = 10 * time.Second

// lookPath returns the path of a program the test runs.
func lookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testenv.Missing(t, "no %s to run test children: %v", name, err)
	}
	return p
}

// start starts cmd, made by proc.Command, and returns a channel that
// receives proc.Wait's error.
func start(t *testing.T, cmd *exec.Cmd) <-chan error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- proc.Wait(cmd)
		close(done) // for the cleanup, once the test took the error
	}()
	t.Cleanup(func() {
		_ = proc.KillGroup(cmd.Process.Pid)
		<-done
	})
	return done
}

// waitKilled waits for the child's Wait to return and checks that SIGKILL
// ended it.
func waitKilled(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			t.Fatalf("Wait = %v, want an *exec.ExitError", err)
		}
		ws, ok := exitErr.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("Wait = %v, want killed by SIGKILL", err)
		}
	case <-time.After(promptly):
		t.Fatalf("the child was not killed within %v", promptly)
	}
}

// hold gives cmd, not yet started, the write end of a pipe as its file
// descriptor 3, for the processes it starts to hold: a killed process
// closes it as it dies, before anyone reaps it. Once cmd has started,
// ready waits for a child to write a byte to it, and writersGone reports
// whether every process holding it has closed it.
func hold(t *testing.T, cmd *exec.Cmd) (ready func(), writersGone func() bool) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Close()
		w.Close()
	})
	cmd.ExtraFiles = []*os.File{w}
	if err := r.SetReadDeadline(time.Now().Add(promptly)); err != nil {
		t.Fatal(err)
	}
	// The test's own write end would keep the pipe open.
	closeOwn := sync.OnceFunc(func() { w.Close() })
	ready = func() {
		t.Helper()
		closeOwn()
		if _, err := r.Read(make([]byte, 1)); err != nil {
			t.Fatalf("waiting for the child to start: %v", err)
		}
	}
	writersGone = func() bool {
		closeOwn()
		_, err := io.ReadAll(r) // EOF once the last writer is gone
		return err == nil
	}
	return ready, writersGone
}

// groupGone reports whether no process is left in the group pgid.
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

func TestKillGroup(t *testing.T) {
	t.Parallel()

	t.Run("kills the group", func(t *testing.T) {
		t.Parallel()
		cmd := proc.Command(context.Background(), []string{lookPath(t, "sleep"), "30"})
		done := start(t, cmd)
		if pgid, err := syscall.Getpgid(cmd.Process.Pid); err != nil || pgid != cmd.Process.Pid {
			t.Fatalf("Getpgid(child) = %d, %v; want the child leading its own group %d", pgid, err, cmd.Process.Pid)
		}
		if err := proc.KillGroup(cmd.Process.Pid); err != nil {
			t.Fatalf("KillGroup: %v", err)
		}
		waitKilled(t, done)
		if !groupGone(cmd.Process.Pid) {
			t.Error("the process group outlived Wait")
		}
	})

	t.Run("group already gone", func(t *testing.T) {
		t.Parallel()
		cmd := proc.Command(context.Background(), []string{lookPath(t, "true")})
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		if err := proc.KillGroup(cmd.Process.Pid); err != nil {
			t.Errorf("KillGroup of a finished child = %v, want nil", err)
		}
	})
}

func TestCommandCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	// Killing only the child, the group's leader, would leave the
	// background sleep holding the pipe open.
	cmd := proc.Command(ctx, []string{lookPath(t, "sh"), "-c", "sleep 30 & echo >&3; exec sleep 30"})
	ready, writersGone := hold(t, cmd)
	done := start(t, cmd)
	ready()
	cancel()
	waitKilled(t, done)
	if !writersGone() {
		t.Error("the background sleep outlived Wait")
	}
}

func TestWaitKillsBackground(t *testing.T) {
	t.Parallel()
	cmd := proc.Command(t.Context(), []string{lookPath(t, "sh"), "-c", "sleep 30 &"})
	_, writersGone := hold(t, cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := proc.Wait(cmd); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
	if !writersGone() {
		t.Error("the background sleep outlived Wait")
	}
}

func TestBaseEnv(t *testing.T) {
	// Not parallel: it sets the process's environment.
	t.Setenv("HOME", "/home/test")
	t.Setenv("AGENTRT_PROC_TEST_SECRET", "must-not-pass")
	env := proc.BaseEnv()
	if !slices.Contains(env, "HOME=/home/test") {
		t.Errorf("BaseEnv() = %q, want it to hold HOME=/home/test", env)
	}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains([]string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"}, k) {
			t.Errorf("BaseEnv() holds %q, which is not in the base environment", kv)
		}
	}
}
