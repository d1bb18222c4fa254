//go:build linux

package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leakyListener listens on a loopback port with a socket made without
// close-on-exec, as the listening socket a supervisor hands a daemon is;
// it returns the socket and its port.
func leakyListener() (fd, port int, err error) {
	fd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return -1, 0, err
	}
	err = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	if err == nil {
		err = syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	}
	if err == nil {
		err = syscall.Listen(fd, 16)
	}
	var sa syscall.Sockaddr
	if err == nil {
		sa, err = syscall.Getsockname(fd)
	}
	if err != nil {
		syscall.Close(fd)
		return -1, 0, err
	}
	return fd, sa.(*syscall.SockaddrInet4).Port, nil
}

// TestNoInheritedDescriptors: a sandboxed command holds standard input,
// output and error and no other descriptor of the daemon's, not even one
// the daemon holds without close-on-exec, such as a listening socket
// handed to it: a background command would keep the socket, and the
// daemon's port, after the daemon died.
func TestNoInheritedDescriptors(t *testing.T) {
	t.Parallel()
	fd, _, err := leakyListener()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			r := b.run(t, t.Context(), profile(t, "workspace_write", nil), `ls -l /proc/$$/fd; true`) // bash forks ls: the listing is bash's
			if r.err != nil {
				t.Fatalf("%v: %s", r.err, r.stderr)
			}
			for _, line := range strings.Split(r.stdout, "\n") {
				f := strings.Fields(line)
				if len(f) < 3 || f[len(f)-2] != "->" {
					continue
				}
				if n, err := strconv.Atoi(f[len(f)-3]); err != nil || n > 2 {
					t.Errorf("the command holds descriptor %s -> %s", f[len(f)-3], f[len(f)-1])
				}
			}
		})
	}
}

// Environment variables that make the test binary testDaemon.
const (
	envTestDaemon = "AGENTRT_SANDBOX_TEST_DAEMON" // the enforcer
	envTestWS     = "AGENTRT_SANDBOX_TEST_WORKSPACE"
	envTestSleep  = "AGENTRT_SANDBOX_TEST_SLEEP"
)

// testDaemon, run by TestMain, stands in for an agentrt daemon: it holds a
// listening socket made without close-on-exec, starts a sandboxed sleep,
// and once the command runs prints the socket's port; then it waits,
// until killed.
func testDaemon(enf string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "test daemon:", err)
		os.Exit(1)
	}
	_, port, err := leakyListener()
	if err != nil {
		fail(err)
	}
	sb := New(Options{NoBubblewrap: enf == string(Landlock)})
	p, _ := Builtin("workspace_write")
	ws := os.Getenv(envTestWS)
	c, err := sb.Command(context.Background(), p, Spec{
		Argv: []string{"sh", "-c", "echo running; exec sleep " + os.Getenv(envTestSleep)},
		Dir:  ws, Workspace: ws, Env: []string{"PATH=/usr/bin:/bin"},
	})
	if err != nil {
		fail(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		fail(err)
	}
	if err := c.Start(); err != nil {
		fail(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "running\n" {
		fail(fmt.Errorf("the sandboxed command said %q, %v", line, err))
	}
	fmt.Println(port)
	io.Copy(io.Discard, os.Stdin) // until killed
}

// TestCommandDiesWithDaemon: when a daemon is killed, its port can be
// bound again at once, though it held its listening socket without
// close-on-exec and a sandboxed command was running, and the command
// dies with it (Landlock as bubblewrap's --die-with-parent).
func TestCommandDiesWithDaemon(t *testing.T) {
	t.Parallel()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			arg := sleepArg(t)
			daemon := exec.Command(os.Args[0], "-test.run=^$")
			daemon.Env = append(os.Environ(), envTestDaemon+"="+string(enf), envTestWS+"="+b.ws, envTestSleep+"="+arg)
			daemon.Stderr = os.Stderr
			stdin, err := daemon.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			stdout, err := daemon.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := daemon.Start(); err != nil {
				t.Fatal(err)
			}
			var port int
			if _, err := fmt.Fscan(stdout, &port); err != nil {
				daemon.Process.Kill()
				daemon.Wait()
				t.Fatalf("reading the test daemon's port: %v", err)
			}
			// The command's processes: bubblewrap and what runs in its
			// PID namespace, or the command itself under Landlock.
			pids := commandPids(t, arg)
			if len(pids) == 0 {
				t.Fatal("no process of the sandboxed command found")
			}
			pidfds := make(map[int]int, len(pids))
			for _, p := range pids {
				fd, err := pidfdOpen(p)
				if err != nil {
					t.Fatal(err)
				}
				defer syscall.Close(fd)
				pidfds[p] = fd
			}
			daemon.Process.Kill()
			daemon.Wait()

			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				t.Errorf("the killed daemon's port: %v", err)
			} else {
				ln.Close()
			}
			for p, fd := range pidfds {
				pollIn(fd, time.Minute)
				if alive(p) {
					t.Errorf("process %d of the sandboxed command outlived the daemon", p)
				}
			}
		})
	}
}

// commandPids returns the processes whose command line holds arg.
func commandPids(t *testing.T, arg string) []int {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range cmdlines {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), arg) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether process pid runs: it exists and is no zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}
