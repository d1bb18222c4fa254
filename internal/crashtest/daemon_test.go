package crashtest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readyTimeout bounds how long a start may take to answer /readyz.
const readyTimeout = 30 * time.Second

// incarnation is one life of the daemon: from its start to its kill (or
// final stop).
type incarnation struct {
	pid     int
	started time.Time // the process was started
	ready   time.Time // /readyz first answered 200
	killed  time.Time // SIGKILL sent (zero for the last one)
}

// daemon runs `agentrt serve` on the harness's workspace, one incarnation
// at a time, each in its own process group.
type daemon struct {
	bin    string
	ws     *workspace
	addr   string
	client *http.Client
	// name prefixes its log files; dataDir, when set, overrides the
	// config's data_dir; env is added to its environment. (Several
	// daemons on one PostgreSQL database differ by these.)
	name    string
	dataDir string
	env     []string

	cmd    *exec.Cmd
	exited chan error // receives cmd.Wait's result once
	lives  []incarnation
}

// freeAddr picks a loopback port nobody listens on; every incarnation
// serves on it, so clients need not follow the daemon around.
//
// The port lies below the kernel's ephemeral range. While the daemon is
// down, the kernel may hand a port of that range to any socket that asks
// for one (another process's listener on port 0, any outgoing
// connection, even a client dialling that very port), and the restart
// then cannot bind it: a 300-session run failed so.
func freeAddr(t *testing.T) string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	first := max(1024, low-20000)
	if first >= low {
		t.Fatalf("no ports below the ephemeral range (from %d) to serve on", low)
	}
	for range 100 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(first+rand.IntN(low-first)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ln.Close()
		return addr
	}
	t.Fatalf("found no free port in [%d, %d)", first, low)
	return ""
}

// start starts a new incarnation and waits until it answers /readyz.
func (d *daemon) start(t *testing.T) {
	t.Helper()
	n := len(d.lives)
	stdout, err := os.Create(filepath.Join(d.ws.logs, fmt.Sprintf("serve%s-%02d.out", d.name, n)))
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(d.ws.logs, fmt.Sprintf("serve%s-%02d.err", d.name, n)))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd := exec.Command(d.bin, "serve", "--config", d.ws.config, "--listen", d.addr)
	if d.dataDir != "" {
		cmd.Args = append(cmd.Args, "--data-dir", d.dataDir)
	}
	if d.env != nil {
		cmd.Env = append(os.Environ(), d.env...)
	}
	cmd.Dir = d.ws.root
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting agentrt serve: %v", err)
	}
	d.cmd = cmd
	d.exited = make(chan error, 1)
	go func() { d.exited <- cmd.Wait() }()
	life := incarnation{pid: cmd.Process.Pid, started: time.Now()}

	deadline := time.Now().Add(readyTimeout)
	for {
		if d.ready(t) {
			life.ready = time.Now()
			break
		}
		select {
		case err := <-d.exited:
			d.cmd = nil
			t.Fatalf("agentrt serve (incarnation %d) exited before it was ready: %v; see %s", n, err, stderr.Name())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.kill(t)
			t.Fatalf("agentrt serve (incarnation %d) not ready after %v; see %s", n, readyTimeout, stderr.Name())
		}
	}
	d.lives = append(d.lives, life)
}

// ready asks /readyz once.
func (d *daemon) ready(t *testing.T) bool {
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.addr+"/readyz", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// kill sends SIGKILL to the incarnation's process group and waits for it
// to die. The tools' sandboxes (bubblewrap, --die-with-parent) die with
// it.
func (d *daemon) kill(t *testing.T) {
	t.Helper()
	if d.cmd == nil {
		return
	}
	if err := syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("killing agentrt serve: %v", err)
	}
	if n := len(d.lives); n > 0 && d.lives[n-1].killed.IsZero() {
		d.lives[n-1].killed = time.Now()
	}
	<-d.exited
	d.cmd = nil
}

// stop sends SIGTERM and waits for a graceful exit, which must be clean.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	if d.cmd == nil {
		return
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stopping agentrt serve: %v", err)
	}
	select {
	case err := <-d.exited:
		d.cmd = nil
		if err != nil {
			t.Errorf("agentrt serve exited with %v after SIGTERM; see %s", err, d.ws.logs)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("agentrt serve still running 60s after SIGTERM; killing it")
		d.kill(t)
	}
}

// incarnationOf returns the index of the incarnation whose process id is
// pid, or -1.
func (d *daemon) incarnationOf(pid int) int {
	for i, l := range d.lives {
		if l.pid == pid {
			return i
		}
	}
	return -1
}
