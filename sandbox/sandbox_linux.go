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
	if seccompTable == nil {
		s.err = fmt.Errorf("%w: %w", ErrUnenforceable, errNoSeccomp)
		return
	}
	if !s.root {
		gids, _ := os.Getgroups()
		s.self = &fileReader{uid: os.Getuid(), gids: append([]int{os.Getgid()}, gids...)}
	}
	if s.root {
		s.cgroups, s.cgErr = openCgroups()
		s.user = opts.user()
		s.userns, s.userErr = idmapUserns(s.helper, s.user)
	}

	bwErr := errors.New("disabled by NoBubblewrap")
	if !opts.NoBubblewrap {
		s.bwrap, bwErr = s.probeBubblewrap(opts.Bubblewrap)
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

// probeBubblewrap finds bwrap and checks that the helper can run it
// with what Command uses: the seccomp filter and, for a root daemon, as
// the unprivileged user, from a mount namespace of its own.
func (s *Sandbox) probeBubblewrap(path string) (string, error) {
	if path == "" {
		path = "bwrap"
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return "", err
	}
	cfg := helperConfig{Started: true, Exec: p, EnvArgs: true, Seccomp: seccompConfig{NetworkNone: true, Local: true}}
	if s.root {
		if s.userErr != nil {
			return "", s.userErr
		}
		cfg.User = &s.user
		cfg.Mounts = &mountConfig{UsernsFD: -1, Tmpfs: []mountTmpfs{{At: stageDir, Size: smallTmpfs, Mode: 0o755}}, Chdir: "/"}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.helper)
	cmd.Args = append([]string{helperArg0}, bwrapProbeArgs(p)...)
	cmd.Env = helperEnv(b, []string{"PATH=/usr/bin:/bin"})
	cmd.WaitDelay = proc.WaitDelay
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("bubblewrap %s is unusable: %w: %s", p, err, strings.TrimSpace(string(out)))
	}
	return p, nil
}

// Enforcer is what Command would use, or an error saying why no profile
// can be enforced on this host: no usable bubblewrap and no Landlock, a
// helper that does not call Main, an architecture the seccomp filter
// does not know, or a root daemon that cannot make pids cgroups (then
// only profiles with unlimited processes could run) or idmapped mounts
// (then only full_access could).
func (s *Sandbox) Enforcer() (Enforcer, error) {
	s.detect()
	if s.err != nil {
		return "", s.err
	}
	if s.root && s.cgroups == nil {
		return "", s.cgroupError()
	}
	if s.root && s.userns == nil {
		return "", s.userError()
	}
	return s.enforcer, nil
}

func (s *Sandbox) userError() error {
	return fmt.Errorf("%w: running as root, where sandboxed processes must run as user %d, which needs idmapped mounts: %w", ErrUnenforceable, s.user.UID, s.userErr)
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
	if p.Mode == FullAccess {
		// No private /tmp, and the whole file system writable.
		lim.TmpBytes, lim.WriteBytes = -1, -1
	}
	useCgroup := s.root && lim.Processes >= 0
	if useCgroup && s.cgroups == nil {
		return nil, s.cgroupError()
	}
	asUser := s.root && p.Mode != FullAccess
	if asUser && s.userns == nil {
		return nil, s.userError()
	}
	if s.enforcer == Landlock && p.Network == NetworkNone && s.abi < 4 {
		return nil, fmt.Errorf("%w: Landlock ABI %d cannot refuse the network (needs 4)", ErrUnenforceable, s.abi)
	}
	l, err := newLayout(p, spec)
	if err == nil && p.Mode != FullAccess {
		err = l.hide(s.opts.Hidden)
	}
	if err != nil {
		return nil, err
	}
	env := slices.Clone(spec.Env)

	c := &Cmd{s: s, cgroup: useCgroup, layout: l}
	c.cfg.Rlimits = rlimits(lim, useCgroup)
	c.cfg.Seccomp = seccompConfig{NetworkNone: p.Network == NetworkNone}
	if asUser {
		c.cfg.User = &s.user
	}
	if lim.WriteBytes >= 0 {
		c.writable = l.writable()
	}
	var target []string
	switch s.enforcer {
	case Bubblewrap:
		if p.Mode != FullAccess {
			l.tmpBytes = max(lim.TmpBytes, 0)
			env = setEnv(env, "TMPDIR", privateTmp)
		}
		if asUser {
			c.cfg.Mounts = stagePlan(l)
		}
		target = bwrapArgs(s.bwrap, l, p.Network, s.root && !asUser, spec.Argv)
		c.cfg.Exec = s.bwrap
		c.cfg.EnvArgs = true
		c.cfg.Seccomp.Local = true
	case Landlock:
		target = slices.Clone(spec.Argv)
		c.cfg.DropCaps = true
		c.private = p.Mode != FullAccess
		if c.cfg.Landlock, err = landlockRules(l, p.Network, s.abi); err != nil {
			return nil, err
		}
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
		hidden:     l.unseen,
	}
	if p.Mode != FullAccess && s.enforcer == Bubblewrap {
		c.denied.tmp = privateTmp
	}
	switch {
	case asUser:
		r := &fileReader{uid: s.user.UID, gids: []int{s.user.GID}, sandbox: true}
		for _, root := range l.roots() {
			r.mapped = append(r.mapped, root.path)
		}
		c.denied.reader = r
	case !s.root:
		c.denied.reader = s.self
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
func landlockRules(l *layout, n Network, abi int) (*landlockConfig, error) {
	c := &landlockConfig{ABI: abi, TCP: n == NetworkNone, FS: l.mode != FullAccess}
	if !c.FS {
		return c, nil
	}
	ro, rw, err := l.landlockGrants()
	if err != nil {
		return nil, err
	}
	c.RODirs = []string{"/proc"}
	c.ROFiles = slices.Clone(l.extra)
	for _, r := range ro {
		if r.file {
			c.ROFiles = append(c.ROFiles, r.path)
		} else {
			c.RODirs = append(c.RODirs, r.path)
		}
	}
	for _, r := range rw {
		if r.file {
			c.RWFiles = append(c.RWFiles, r.path)
		} else {
			c.RWDirs = append(c.RWDirs, r.path)
		}
	}
	return c, nil
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
		c.denied.tmp = dir
		c.env = setEnv(c.env, "TMPDIR", dir)
		if c.cfg.User != nil {
			c.cfg.Mounts = landlockPlan(c.layout, *c.cfg.User, dir, c.Applied.Limits.TmpBytes)
		}
	} else if c.s.enforcer == Landlock && c.cfg.User != nil {
		c.cfg.Mounts = landlockPlan(c.layout, *c.cfg.User, "", 0)
	}
	if c.cfg.Mounts != nil {
		c.Cmd.ExtraFiles = append(c.Cmd.ExtraFiles, c.s.userns)
		c.cfg.Mounts.UsernsFD = 2 + len(c.Cmd.ExtraFiles)
	}
	if len(c.writable) > 0 {
		n, err := treeBytes(c.writable)
		if err != nil {
			c.releaseLocked()
			return fmt.Errorf("%w: measuring the writable roots: %w", ErrUnenforceable, err)
		}
		c.writeBase = n
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
	overErr := c.checkLimitsLocked()
	if rerr := c.releaseLocked(); rerr != nil || killErr != nil || overErr != nil {
		return errors.Join(err, overErr, killErr, rerr)
	}
	return err
}

// checkLimitsLocked checks, once nothing of the command runs, the limits
// measured after it: the growth of the writable roots and, where no
// tmpfs bounds it (Landlock without root), the private temporary
// directory. It records the first exceeded in c.over.
func (c *Cmd) checkLimitsLocked() error {
	lim := c.Applied.Limits
	if len(c.writable) > 0 {
		n, err := treeBytes(c.writable)
		if err != nil {
			return fmt.Errorf("measuring the writable roots: %w", err)
		}
		if grown := n - c.writeBase; grown > lim.WriteBytes {
			c.over = &Violation{Kind: WriteLimit, Detail: fmt.Sprintf("the writable roots grew by %d bytes, more than %d", grown, lim.WriteBytes)}
		}
	}
	if c.over == nil && c.tmpDir != "" && c.cfg.User == nil && lim.TmpBytes >= 0 {
		n, err := treeBytes([]string{c.tmpDir})
		if err != nil {
			return fmt.Errorf("measuring the private temporary directory: %w", err)
		}
		if n > lim.TmpBytes {
			c.over = &Violation{Kind: TmpLimit, Detail: fmt.Sprintf("the private /tmp holds %d bytes, more than %d", n, lim.TmpBytes)}
		}
	}
	if c.over == nil {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrLimitExceeded, c.over.Detail)
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
