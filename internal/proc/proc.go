package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// WaitDelay bounds how long Wait waits, after the program exited or was
// killed, for its stdout and stderr to close: a background process that
// inherited them must not hold the caller open.
const WaitDelay = 500 * time.Millisecond

// baseEnv are the daemon's environment variables a program inherits.
var baseEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"}

// Command returns a command that runs argv[0] with the arguments
// argv[1:], without a shell, as the leader of a new process group. When
// ctx is done the whole group is killed, and Wait then waits at most
// WaitDelay for the program's output to close. argv must not be empty.
//
// The caller sets Dir, Env, Stdin, Stdout and Stderr, starts the command
// with Start and waits for it with the package's Wait.
func Command(ctx context.Context, argv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return KillGroup(cmd.Process.Pid) }
	cmd.WaitDelay = WaitDelay
	return cmd
}

// Wait waits for cmd, made by Command and started, as cmd.Wait does, and
// then kills its process group, so that background processes the program
// left in the group do not outlive it. The group exists while any of them
// lives, so its id cannot have been reused.
func Wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	_ = KillGroup(cmd.Process.Pid)
	return err
}

// KillGroup kills the process group led by pid with SIGKILL. A group
// that is already gone is not an error.
func KillGroup(pid int) error {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing process group %d: %w", pid, err)
	}
	return nil
}

// BaseEnv returns, as KEY=value entries in a new slice, the variables of
// the daemon's environment a program may see: PATH, HOME, LANG, LC_ALL,
// TZ and TMPDIR, those that are set. A program's environment starts from
// these, never from the daemon's whole environment.
func BaseEnv() []string {
	env := make([]string, 0, len(baseEnv))
	for _, k := range baseEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}
