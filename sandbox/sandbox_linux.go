package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/internal/proc"
)

// probeTimeout bounds each of New's probes.
const probeTimeout = 10 * time.Second

// New returns a Sandbox. On first use (Enforcer or Command) it detects
// the enforcers the host offers, once: that the helper calls Main; that
// bubblewrap runs with the namespaces Command uses (unless NoBubblewrap);
// the kernel's Landlock ABI; and, for a root daemon, that it can make
// pids cgroups. What it finds is cached; Enforcer reports it.
func New(opts Options) *Sandbox {
	return &Sandbox{opts: opts}
}

// detect finds what the host offers, once, on first use: probing starts
// processes, and a runtime that never runs one should not pay for them.
func (s *Sandbox) detect() {
	s.once.Do(s.probe)
}

func (s *Sandbox) probe() {
	opts := s.opts
	s.root = os.Geteuid() == 0
	s.helper = opts.Helper
	if s.helper == "" {
		exe, err := os.Executable()
		if err != nil {
			s.err = fmt.Errorf("%w: finding the helper executable: %w", ErrUnenforceable, err)
			return
		}
		s.helper = exe
	}
	if err := probeHelper(s.helper); err != nil {
		s.err = fmt.Errorf("%w: %w", ErrUnenforceable, err)
		return
	}
	if !opts.noLandlock {
		s.abi = landlockABI()
	}
	if s.root {
		s.cgroups, s.cgErr = openCgroups()
	}

	bwErr := errors.New("disabled by NoBubblewrap")
	if !opts.NoBubblewrap {
		s.bwrap, bwErr = probeBubblewrap(opts.Bubblewrap, s.root)
	}
	switch {
	case bwErr == nil:
		s.enforcer = Bubblewrap
	case s.abi > 0:
		s.enforcer = Landlock
	default:
		s.err = fmt.Errorf("%w: no usable bubblewrap (%w) and no Landlock in the kernel", ErrUnenforceable, bwErr)
	}
}

// probeHelper checks that helper runs Main.
func probeHelper(helper string) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, helper)
	cmd.Args[0] = helperArg0
	cmd.Env = helperEnv([]byte(`{"probe":true}`), nil)
	cmd.WaitDelay = proc.WaitDelay
	out, err := cmd.Output()
	if err != nil || string(out) != probeReply {
		return fmt.Errorf("helper %s does not call sandbox.Main first thing (%v)", helper, err)
	}
	return nil
}

// probeBubblewrap finds bwrap and checks that it can make the sandbox
// Command makes.
func probeBubblewrap(path string, root bool) (string, error) {
	if path == "" {
		path = "bwrap"
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	argv := bwrapProbeArgs(p, root)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.WaitDelay = proc.WaitDelay
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("bubblewrap %s is unusable: %w: %s", p, err, strings.TrimSpace(string(out)))
	}
	return p, nil
}

// Enforcer is what Command would use, or an error saying why no profile
// can be enforced on this host: no usable bubblewrap and no Landlock, a
// helper that does not call Main, or a root daemon that cannot make pids
// cgroups (then only profiles with unlimited processes could run).
func (s *Sandbox) Enforcer() (Enforcer, error) {
	s.detect()
	if s.err != nil {
		return "", s.err
	}
	if s.root && s.cgroups == nil {
		return "", s.cgroupError()
	}
	return s.enforcer, nil
}

func (s *Sandbox) cgroupError() error {
	return fmt.Errorf("%w: running as root, where RLIMIT_NPROC does not bind, and no pids cgroup can be made: %w", ErrUnenforceable, s.cgErr)
}

// Command prepares spec to run under p. The caller sets Stdin, Stdout
// and Stderr, then calls Start and Wait (Cmd's, not exec.Cmd's). It
// returns an error when p cannot be enforced: the call must not run.
//
// The workspace must exist; Dir, the workspace and the roots must be
// absolute; Dir ("" for the workspace, or / without one) must be
// readable under p. Roots that do not exist are left out. The command
// runs as the leader of a new session and process group; when ctx is
// done the group is killed with SIGKILL. Under a restricted profile its
// TMPDIR is the private temporary directory.
func (s *Sandbox) Command(ctx context.Context, p Profile, spec Spec) (*Cmd, error) {
	s.detect()
	if s.err != nil {
		return nil, s.err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, fmt.Errorf("%w: no command", ErrUnenforceable)
	}
	lim := p.Limits.resolved()
	useCgroup := s.root && lim.Processes >= 0
	if useCgroup && s.cgroups == nil {
		return nil, s.cgroupError()
	}
	if s.enforcer == Landlock && p.Network == NetworkNone && s.abi < 4 {
		return nil, fmt.Errorf("%w: Landlock ABI %d cannot refuse the network (needs 4)", ErrUnenforceable, s.abi)
	}
	l, err := newLayout(p, spec)
	if err != nil {
		return nil, err
	}
	env := slices.Clone(spec.Env)

	c := &Cmd{s: s, cgroup: useCgroup}
	c.cfg.Rlimits = rlimits(lim)
	var target []string
	switch s.enforcer {
	case Bubblewrap:
		target = bwrapArgs(s.bwrap, l, p.Network, s.root, spec.Argv)
		c.cfg.Exec = s.bwrap
		c.cfg.EnvArgs = true
		if p.Mode != FullAccess {
			env = setEnv(env, "TMPDIR", privateTmp)
		}
	case Landlock:
		target = slices.Clone(spec.Argv)
		c.cfg.DropCaps = true
		c.private = p.Mode != FullAccess
		c.cfg.Landlock = landlockRules(l, p.Network, s.abi)
	}

	readRoots, writeRoots := l.applied()
	c.Applied = Applied{
		Profile:    p.Name,
		Mode:       p.Mode,
		Network:    p.Network,
		Enforcer:   s.enforcer,
		Cwd:        l.cwd,
		ReadRoots:  readRoots,
		WriteRoots: writeRoots,
		Limits:     lim,
	}
	c.denied = deniedFS{
		restricted: p.Mode != FullAccess,
		cwd:        l.cwd,
		readable:   append(l.readable(), "/dev", "/proc"),
		writable:   l.writable(),
	}

	c.Cmd = exec.CommandContext(ctx, s.helper)
	c.Cmd.Args = append([]string{helperArg0}, target...)
	c.env = env
	// Started through exec.Cmd.Start, the helper refuses to run it.
	c.Cmd.Env = helperEnv([]byte(`{}`), nil)
	c.Cmd.Dir = l.cwd
	// Killed with the daemon, as bubblewrap's --die-with-parent kills what
	// runs in it: from its start, so that a helper the daemon was starting
	// when it died cannot hold the daemon's descriptors (its listening
	// socket among them) until it executes the command.
	c.Cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	c.Cmd.Cancel = c.cancel
	c.Cmd.WaitDelay = proc.WaitDelay
	return c, nil
}

// landlockRules returns the Landlock configuration for l.
func landlockRules(l *layout, n Network, abi int) *landlockConfig {
	c := &landlockConfig{ABI: abi, TCP: n == NetworkNone, FS: l.mode != FullAccess}
	if !c.FS {
		return c
	}
	c.RODirs = append(slices.Clone(l.sysRoots), "/proc")
	c.ROFiles = slices.Clone(l.extra)
	for _, r := range l.ro {
		if r.file {
			c.ROFiles = append(c.ROFiles, r.path)
		} else {
			c.RODirs = append(c.RODirs, r.path)
		}
	}
	for _, r := range l.rw {
		if r.file {
			c.RWFiles = append(c.RWFiles, r.path)
		} else {
			c.RWDirs = append(c.RWDirs, r.path)
		}
	}
	return c
}

// setEnv sets key in env, replacing any earlier value.
func setEnv(env []string, key, value string) []string {
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, key+"=") })
	return append(env, key+"="+value)
}

// Start makes what the sandbox holds for the command (its pids cgroup,
// its private temporary directory under Landlock) and starts it.
func (c *Cmd) Start() error {
	if c.s == nil {
		return errors.New("sandbox: Cmd not made by Sandbox.Command")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("sandbox: Start called twice")
	}
	c.started = true
	if c.cgroup {
		dir, err := c.s.cgroups.create(c.Applied.Limits.Processes)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUnenforceable, err)
		}
		c.cgDir, c.cfg.Cgroup = dir, dir
	}
	if c.private {
		dir, err := os.MkdirTemp("", "agentrt-sandbox-")
		if err != nil {
			c.releaseLocked()
			return fmt.Errorf("making private temporary directory: %w", err)
		}
		c.tmpDir = dir
		c.cfg.Landlock.RWDirs = append(c.cfg.Landlock.RWDirs, dir)
		c.denied.writable = append(c.denied.writable, dir)
		c.denied.readable = append(c.denied.readable, dir)
		c.env = setEnv(c.env, "TMPDIR", dir)
	}
	c.cfg.Started = true
	b, err := json.Marshal(c.cfg)
	if err != nil {
		c.releaseLocked()
		return fmt.Errorf("encoding helper configuration: %w", err)
	}
	c.Cmd.Env = helperEnv(b, c.env)
	if err := c.Cmd.Start(); err != nil {
		c.releaseLocked()
		return err
	}
	return nil
}

// Wait waits for the command, kills whatever it left in its process group
// and releases what the sandbox held for it (a cgroup).
//
// As soon as the command's main process has exited, its process group
// and cgroup are killed, so that a background process holding its
// output open does not delay Wait; the cgroup is removed once it is
// empty.
func (c *Cmd) Wait() error {
	c.mu.Lock()
	waited := c.waited
	c.waited = true
	c.mu.Unlock()
	if c.Process == nil || c.s == nil || waited {
		// exec.Cmd's error: not started, or Wait already called.
		return c.Cmd.Wait()
	}
	// Kill the group while its leader is a zombie, before Wait reaps it:
	// until then the group id cannot name another group.
	pid := c.Process.Pid
	waitExited(pid)
	_ = proc.KillGroup(pid)
	c.mu.Lock()
	var killErr error
	var pinned []int
	if c.cgDir != "" {
		killErr = c.s.cgroups.kill(c.cgDir)
	} else {
		pinned = pinTreeAndGroup(pid, pid)
	}
	c.mu.Unlock()

	// exec.Cmd.Wait returns after Cancel has: c.pinned is complete.
	err := c.Cmd.Wait()

	c.mu.Lock()
	defer c.mu.Unlock()
	awaitPinned(append(pinned, c.pinned...))
	c.pinned = nil
	if rerr := c.releaseLocked(); rerr != nil || killErr != nil {
		return errors.Join(err, killErr, rerr)
	}
	return err
}

// cancel kills the command's process group when its context ends.
// Without a cgroup to find them by, it first pins what the command has
// below it (under bubblewrap, the PID namespace, in a session of its
// own) and kills that too; Wait waits for them to exit.
func (c *Cmd) cancel() error {
	pid := c.Process.Pid
	if !c.cgroup {
		fds := pinTreeAndGroup(pid, pid)
		c.mu.Lock()
		c.pinned = append(c.pinned, fds...)
		c.mu.Unlock()
	}
	return proc.KillGroup(pid)
}

// releaseLocked removes the cgroup, killing what is left in it and
// recording its pids events, and the private temporary directory.
func (c *Cmd) releaseLocked() error {
	var errs []error
	if c.cgDir != "" {
		n, err := c.s.cgroups.remove(c.cgDir)
		c.pidsMax = n
		if err != nil {
			errs = append(errs, err)
		} else {
			c.cgDir = ""
		}
	}
	if c.tmpDir != "" {
		if err := os.RemoveAll(c.tmpDir); err != nil {
			errs = append(errs, fmt.Errorf("removing private temporary directory: %w", err))
		}
		c.tmpDir = ""
	}
	return errors.Join(errs...)
}
