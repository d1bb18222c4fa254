package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/agentrt/agentrt/internal/proc"
)

// Main runs the sandbox helper when the program was started as one, and
// otherwise returns at once. A program that makes sandboxed commands
// must call it first thing in main, before it starts goroutines or reads
// flags, since the sandbox re-executes the program (Options.Helper) to
// set up each command's child side: resource limits, the pids cgroup,
// Landlock. The helper is recognised by argv[0] "agentrt-sandbox-helper"
// together with the AGENTRT_SANDBOX_CONFIG variable. As the helper, Main
// never returns: it executes the command (or bwrap), or exits with
// status 125 saying why it could not.
//
// Tests that use the sandbox call it first in TestMain.
func Main() {
	config, ok := os.LookupEnv(envConfig)
	if len(os.Args) < 1 || os.Args[0] != helperArg0 || !ok {
		return
	}
	// Capabilities and no_new_privs are per thread, and so is what exec
	// keeps: do everything on this thread.
	runtime.LockOSThread()
	err := runHelper(config, os.Args[1:], commandEnv(os.Environ()))
	fmt.Fprintf(os.Stderr, "agentrt sandbox: %v\n", err)
	os.Exit(helperExit)
}

// helperEnv returns the helper's environment: the configuration and the
// command's environment, in order.
func helperEnv(config []byte, env []string) []string {
	out := make([]string, 0, len(env)+1)
	out = append(out, envConfig+"="+string(config))
	for i, kv := range env {
		out = append(out, fmt.Sprintf("%s%06d=%s", envPrefix, i, kv))
	}
	return out
}

// commandEnv undoes helperEnv.
func commandEnv(environ []string) []string {
	type entry struct {
		i  int
		kv string
	}
	var entries []entry
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if n, ok := strings.CutPrefix(k, envPrefix); ok {
			if i, err := strconv.Atoi(n); err == nil {
				entries = append(entries, entry{i, v})
			}
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return a.i - b.i })
	env := make([]string, len(entries))
	for i, e := range entries {
		env[i] = e.kv
	}
	return env
}

// runHelper applies the configuration and executes argv with env; it
// returns only on error.
func runHelper(config string, argv, env []string) error {
	var c helperConfig
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		return fmt.Errorf("decoding helper configuration: %w", err)
	}
	if c.Probe {
		_, _ = os.Stdout.WriteString(probeReply)
		os.Exit(0)
	}
	if c.Hold {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	if !c.Started {
		return errors.New("command not started with sandbox.Cmd.Start")
	}
	// The command gets standard input, output and error, and bwrap its
	// --args descriptor (made below), nothing more: not a descriptor the
	// daemon inherited without close-on-exec, such as a listening socket
	// a background command would otherwise keep after the daemon died.
	if err := proc.CloseInheritedOnExec(); err != nil {
		return err
	}
	if len(argv) == 0 {
		return errors.New("no command")
	}
	if c.Cgroup != "" {
		// Join before anything else can fork: every descendant then
		// counts against pids.max.
		procs := c.Cgroup + "/cgroup.procs"
		if err := os.WriteFile(procs, []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			return fmt.Errorf("joining cgroup: %w", err)
		}
	}
	path := c.Exec
	if path == "" {
		p, err := lookPath(argv[0], env)
		if err != nil {
			return err
		}
		path = p
	}
	filter, err := seccompProgram(seccompTable, c.Seccomp)
	if err != nil {
		return fmt.Errorf("making the seccomp filter: %w", err)
	}
	if c.EnvArgs {
		fd, err := envArgsFile(env)
		if err != nil {
			return fmt.Errorf("passing the environment to bwrap: %w", err)
		}
		sfd, err := inheritedFile(seccompBytes(filter))
		if err != nil {
			return fmt.Errorf("passing the seccomp filter to bwrap: %w", err)
		}
		argv = slices.Insert(slices.Clone(argv), 1, "--args", strconv.Itoa(fd), "--seccomp", strconv.Itoa(sfd))
		env = []string{}
	}
	if c.Mounts != nil {
		if err := setUpMounts(c.Mounts); err != nil {
			return err
		}
	}
	switch {
	case c.DropCaps:
		if err := dropCapabilities(c.User); err != nil {
			return fmt.Errorf("dropping capabilities: %w", err)
		}
	case c.User != nil:
		// Not the bounding set: a set-user-ID bwrap needs it.
		if err := becomeUser(c.User); err != nil {
			return err
		}
	}
	if c.Landlock != nil {
		if err := applyLandlock(c.Landlock); err != nil {
			return fmt.Errorf("applying landlock: %w", err)
		}
	}
	// The parent-death signal Cmd.Start asked for is an attribute of the
	// helper's first thread, and this one, which executes the command,
	// may be another; a change of user clears it too. Without it here
	// the command would outlive the daemon. (Were the daemon gone
	// already, the first thread's signal killed the helper.)
	if err := prctl(syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL)); err != nil {
		return fmt.Errorf("asking to die with the daemon: %w", err)
	}
	if !c.EnvArgs {
		if err := loadSeccomp(filter); err != nil {
			return fmt.Errorf("applying the seccomp filter: %w", err)
		}
	}
	return execLimited(path, argv, env, c.Rlimits)
}

// lookPath finds file as execvp would, in the PATH of env.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", file, exec.ErrNotFound)
}

// envArgsFile returns a file descriptor, kept across exec, from which
// bwrap --args reads --clearenv and a --setenv for each entry of env.
// The file is unlinked at once.
func envArgsFile(env []string) (int, error) {
	var b strings.Builder
	b.WriteString("--clearenv\x00")
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		b.WriteString("--setenv\x00" + k + "\x00" + v + "\x00")
	}
	return inheritedFile([]byte(b.String()))
}

// inheritedFile returns a file descriptor, kept across exec, from which
// content can be read. The file is unlinked at once.
func inheritedFile(content []byte) (int, error) {
	f, err := os.CreateTemp("", "agentrt-sandbox-")
	if err != nil {
		return -1, err
	}
	defer f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return -1, err
	}
	if _, err := f.Write(content); err != nil {
		return -1, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		return -1, err
	}
	// dup's descriptor lacks close-on-exec; it shares the offset.
	return syscall.Dup(int(f.Fd()))
}

// execLimited sets the rlimits and executes path. Once RLIMIT_AS is set
// the helper's own runtime may be unable to allocate, so everything is
// prepared first and nothing allocates between the limits and execve:
// the limits bind the new image only.
func execLimited(path string, argv, env []string, limits []rlimit) error {
	pathp, err := syscall.BytePtrFromString(path)
	if err != nil {
		return err
	}
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return err
	}
	lims := make([]syscall.Rlimit, len(limits))
	for i, r := range limits {
		// A daemon whose own hard limit is lower keeps its lower one.
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(r.Resource, &cur); err != nil {
			return fmt.Errorf("getting rlimit %d: %w", r.Resource, err)
		}
		lims[i] = syscall.Rlimit{Cur: min(r.Cur, cur.Max), Max: min(r.Max, cur.Max)}
	}
	execFailed := "executing " + path
	debug.SetGCPercent(-1)
	for i, r := range limits {
		if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, 0, uintptr(r.Resource),
			uintptr(unsafe.Pointer(&lims[i])), 0, 0, 0); e != 0 {
			rawFail("setting an rlimit", e)
		}
	}
	_, _, e := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(pathp)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	rawFail(execFailed, e)
	return nil // not reached
}

// rawFail reports what failed, with errno e, and exits with helperExit,
// without allocating.
func rawFail(what string, e syscall.Errno) {
	var buf [512]byte
	n := copy(buf[:], "agentrt sandbox: ")
	n += copy(buf[n:], what)
	n += copy(buf[n:], ": errno ")
	var digits [20]byte
	i := len(digits)
	for v := uint64(e); ; v /= 10 {
		i--
		digits[i] = byte('0' + v%10)
		if v < 10 {
			break
		}
	}
	n += copy(buf[n:], digits[i:])
	n += copy(buf[n:], "\n")
	_, _, _ = syscall.RawSyscall(syscall.SYS_WRITE, 2, uintptr(unsafe.Pointer(&buf[0])), uintptr(n))
	_, _, _ = syscall.RawSyscall(syscall.SYS_EXIT_GROUP, helperExit, 0, 0)
}

// Linux rlimit resources the syscall package does not name.
const rlimitNPROC = 6

// rlimits returns the helper's rlimits for l. The CPU hard limit is one
// second above the soft one so that SIGXCPU, which says why, comes first.
// With a cgroup bounding processes RLIMIT_NPROC is left unlimited: it
// would count every process of the user, which a root daemon's commands
// all share. A write cap bounds the size of any file too.
func rlimits(l Limits, cgroup bool) []rlimit {
	const inf = ^uint64(0)
	set := func(res int, v int64) rlimit {
		if v < 0 {
			return rlimit{Resource: res, Cur: inf, Max: inf}
		}
		return rlimit{Resource: res, Cur: uint64(v), Max: uint64(v)}
	}
	nproc := int64(l.Processes)
	if cgroup {
		nproc = -1
	}
	out := []rlimit{
		{Resource: syscall.RLIMIT_CORE}, // a limit's signal must not dump core
		set(rlimitNPROC, nproc),
		set(syscall.RLIMIT_AS, l.MemoryBytes),
		set(syscall.RLIMIT_FSIZE, fileCap(l)),
		set(syscall.RLIMIT_CPU, l.CPUSeconds),
	}
	if l.CPUSeconds >= 0 {
		out[len(out)-1].Max++
	}
	return out
}

// dropCapabilities empties this thread's bounding, ambient, inheritable,
// permitted and effective capability sets, so that the command (executed
// from this thread, with no_new_privs) has none, even as root. With u it
// becomes u once the bounding set is empty, while it may still.
func dropCapabilities(u *userConfig) error {
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		err := prctl(syscall.PR_CAPBSET_DROP, uintptr(c))
		if err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	const prCapAmbient, prCapAmbientClearAll = 47, 4
	if err := prctl(prCapAmbient, prCapAmbientClearAll); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	if u != nil {
		if err := becomeUser(u); err != nil {
			return err
		}
	}
	hdr := struct {
		version uint32
		pid     int32
	}{version: 0x20080522} // _LINUX_CAPABILITY_VERSION_3
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return e
	}
	return nil
}

func prctl(option int, arg uintptr) error {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, uintptr(option), arg, 0, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// landlockPresets are go-landlock's configurations by ABI version.
var landlockPresets = []landlock.Config{
	landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
	landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}

// landlockABI returns the kernel's Landlock ABI version, 0 without
// Landlock.
func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// devices are the device files a restricted process may read and write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// applyLandlock restricts every thread of the process, and so what it
// executes, strictly: a right the kernel cannot restrict is an error,
// never silently granted. Scoping (ABI 6) keeps signals and abstract
// UNIX sockets from reaching processes outside the sandbox, the daemon
// among them.
func applyLandlock(c *landlockConfig) error {
	preset := landlockPresets[min(c.ABI, len(landlockPresets))-1]
	cfg := landlock.Config{Scoped: preset.Scoped}
	var rules []landlock.Rule
	if c.FS {
		cfg.HandledAccessFS = preset.HandledAccessFS
		add := func(r landlock.FSRule, paths []string) {
			if len(paths) > 0 {
				rules = append(rules, r)
			}
		}
		add(landlock.RODirs(c.RODirs...), c.RODirs)
		add(landlock.ROFiles(c.ROFiles...), c.ROFiles)
		rw := landlock.RWDirs(c.RWDirs...)
		if c.ABI >= 2 {
			// Renames and links between writable directories; a link
			// from anywhere else is still refused.
			rw = rw.WithRefer()
		}
		add(rw, c.RWDirs)
		add(landlock.RWFiles(c.RWFiles...), c.RWFiles)
		rules = append(rules, landlock.RWFiles(devices...).IgnoreIfMissing())
	}
	if c.TCP {
		cfg.HandledAccessNet = preset.HandledAccessNet
	}
	if cfg.HandledAccessFS == 0 && cfg.HandledAccessNet == 0 && cfg.Scoped == 0 {
		return nil // nothing this kernel could restrict is asked for
	}
	return cfg.Restrict(rules...)
}
