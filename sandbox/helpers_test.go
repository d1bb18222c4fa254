//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/internal/testenv"
)

// enforcers are the enforcers every escape test runs under.
var enforcers = []Enforcer{Bubblewrap, Landlock}

// sandboxes holds one Sandbox per enforcer for the whole test binary:
// New probes, and a Sandbox is safe for concurrent use.
var sandboxes = map[Enforcer]func() *Sandbox{
	Bubblewrap: sync.OnceValue(func() *Sandbox { return New(Options{}) }),
	Landlock:   sync.OnceValue(func() *Sandbox { return New(Options{NoBubblewrap: true}) }),
}

// testBundle is one test's sandbox and directories: a workspace and,
// beside it, a directory outside every root.
type testBundle struct {
	sb      *Sandbox
	enf     Enforcer
	ws      string
	outside string
}

func setup(t *testing.T, enf Enforcer) *testBundle {
	t.Helper()
	sb := sandboxes[enf]()
	got, err := sb.Enforcer()
	if err != nil {
		testenv.Missing(t, "no %s sandbox on this host: %v", enf, err)
	}
	if got != enf {
		testenv.Missing(t, "wanted the %s enforcer, the host offers %s", enf, got)
	}
	dir := t.TempDir()
	b := &testBundle{sb: sb, enf: enf, ws: filepath.Join(dir, "ws"), outside: filepath.Join(dir, "outside")}
	for _, d := range []string{b.ws, b.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// profile returns the builtin profile name with the limits changed by
// limits.
func profile(t *testing.T, name string, limits func(*Limits)) Profile {
	t.Helper()
	p, ok := Builtin(name)
	if !ok {
		t.Fatalf("no builtin profile %q", name)
	}
	if limits != nil {
		limits(&p.Limits)
	}
	return p
}

// result is how a sandboxed script ended.
type result struct {
	cmd            *Cmd
	stdout, stderr string
	err            error
	v              *Violation
}

// run runs script with bash in the workspace under p and checks that
// nothing of it is left running after Wait.
func (b *testBundle) run(t *testing.T, ctx context.Context, p Profile, script string) result {
	t.Helper()
	return b.runSpec(t, ctx, p, b.spec("bash", "-c", script))
}

// runSpec runs spec under p and checks that nothing of it is left
// running after Wait.
func (b *testBundle) runSpec(t *testing.T, ctx context.Context, p Profile, spec Spec) result {
	t.Helper()
	c, err := b.sb.Command(ctx, p, spec)
	if err != nil {
		t.Fatalf("Command: %v", err)
	}
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	cg := cgroupOf(c)
	err = c.Wait()
	assertNothingLeft(t, c, cg)
	return result{cmd: c, stdout: stdout.String(), stderr: stderr.String(), err: err, v: c.Violation(err, stderr.Bytes())}
}

// listen listens on address, accepting and closing every connection
// until the test ends.
func listen(t *testing.T, network, address string) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(func() { _ = ln.Close() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	})
	return ln
}

func (b *testBundle) spec(argv ...string) Spec {
	return Spec{Argv: argv, Dir: b.ws, Workspace: b.ws, Env: []string{"PATH=/usr/bin:/bin", "LANG=C"}}
}

func cgroupOf(c *Cmd) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cgDir
}

// assertNothingLeft checks that the command's process group is gone and
// its cgroup (which held every process of it, bwrap's namespace
// included) was emptied and removed.
func assertNothingLeft(t *testing.T, c *Cmd, cg string) {
	t.Helper()
	if live := groupMembers(t, c.Process.Pid); len(live) > 0 {
		t.Errorf("process group %d after Wait: %v still running", c.Process.Pid, live)
	}
	if os.Geteuid() == 0 && cg == "" {
		t.Errorf("a root daemon's command had no cgroup")
	}
	if cg != "" {
		if _, err := os.Stat(cg); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s after Wait: %v, want it removed", cg, err)
		}
	}
}

// groupMembers returns the processes of group pgid that are not
// zombies: a killed process whose parent died waits for init to reap it,
// but runs no more.
func groupMembers(t *testing.T, pgid int) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited
		}
		// pid (comm) state ppid pgrp ...
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 3 || fields[2] != strconv.Itoa(pgid) || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		live = append(live, string(b[:i+1]))
	}
	return live
}

// sleepArg returns a sleep duration that names the test's sleeps: a
// process still running it after Wait was left behind.
func sleepArg(t *testing.T) string {
	return fmt.Sprintf("1000.%d", rand.Int64N(1e12))
}

// assertNoSleep checks that no live process on the host runs sleep arg,
// wherever it is: in the command's group or session, or in bwrap's PID
// namespace.
func assertNoSleep(t *testing.T, arg string) {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil || !bytes.Equal(b, []byte("sleep\x00"+arg+"\x00")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(filepath.Dir(f), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		t.Errorf("%s: sleep %s still running after Wait", filepath.Dir(f), arg)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func assertNotExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists on the host (%v): the write escaped", path, err)
	}
}
