package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// cgroups makes per-command pids cgroups under an agentrt/ parent.
type cgroups struct {
	parent string // the agentrt directory
	v2     bool
}

// cgroupParentName names the directory, under the daemon's own pids
// cgroup where possible, that holds the per-command cgroups.
const cgroupParentName = "agentrt"

// openCgroups finds a pids cgroup hierarchy the daemon can create
// cgroups in: cgroup v1's pids controller, else cgroup v2 with pids.
func openCgroups() (*cgroups, error) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mountinfo: %w", err)
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("reading own cgroup: %w", err)
	}
	var errs []error
	if mnt, mroot, ok := findCgroupMount(mounts, false); ok {
		if path, ok := ownCgroup(own, false); ok {
			dir := filepath.Join(mnt, relCgroup(path, mroot), cgroupParentName)
			g, err := makeParent(dir, false)
			if err == nil {
				return g, nil
			}
			errs = append(errs, err)
		}
	}
	if mnt, mroot, ok := findCgroupMount(mounts, true); ok {
		if ctl, err := os.ReadFile(filepath.Join(mnt, "cgroup.controllers")); err == nil && slices.Contains(strings.Fields(string(ctl)), "pids") {
			// The daemon's own cgroup first (a delegated subtree), then
			// the root of the mount, which is exempt from the "no
			// processes in inner cgroups" rule.
			var dirs []string
			if path, ok := ownCgroup(own, true); ok {
				if rel := relCgroup(path, mroot); rel != "/" {
					dirs = append(dirs, filepath.Join(mnt, rel))
				}
			}
			for _, d := range append(dirs, mnt) {
				g, err := makeParent(filepath.Join(d, cgroupParentName), true)
				if err == nil {
					return g, nil
				}
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		return nil, errors.New("no pids cgroup hierarchy is mounted")
	}
	return nil, errors.Join(errs...)
}

// findCgroupMount returns the mount point and root of the cgroup v1
// hierarchy with the pids controller, or of cgroup v2.
func findCgroupMount(mountinfo []byte, v2 bool) (mnt, root string, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// id parent maj:min root mountpoint options [optional...] - type source superoptions
		pre, post, found := strings.Cut(sc.Text(), " - ")
		if !found {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		switch {
		case v2 && g[0] == "cgroup2":
		case !v2 && g[0] == "cgroup" && slices.Contains(strings.Split(g[2], ","), "pids"):
		default:
			continue
		}
		return unescapeMount(f[4]), unescapeMount(f[3]), true
	}
	return "", "", false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroup returns the daemon's cgroup path in the pids v1 hierarchy or
// in v2.
func ownCgroup(procCgroup []byte, v2 bool) (string, bool) {
	for line := range strings.Lines(string(procCgroup)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v2 && parts[0] == "0" && parts[1] == "" {
			return parts[2], true
		}
		if !v2 && slices.Contains(strings.Split(parts[1], ","), "pids") {
			return parts[2], true
		}
	}
	return "", false
}

// relCgroup returns path relative to the mount's root.
func relCgroup(path, mountRoot string) string {
	if mountRoot == "/" || !within(path, mountRoot) {
		return path
	}
	rel := strings.TrimPrefix(path, mountRoot)
	if rel == "" {
		return "/"
	}
	return rel
}

func makeParent(dir string, v2 bool) (*cgroups, error) {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("creating cgroup %s: %w", dir, err)
	}
	if v2 {
		// Let the per-command children have pids.max: the parent of dir
		// must delegate pids to dir, and dir to its children.
		for _, d := range []string{filepath.Dir(dir), dir} {
			ctl, err := os.ReadFile(filepath.Join(d, "cgroup.subtree_control"))
			if err == nil && slices.Contains(strings.Fields(string(ctl)), "pids") {
				continue
			}
			if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+pids"), 0); err != nil {
				return nil, fmt.Errorf("enabling pids controller in %s: %w", d, err)
			}
		}
	}
	// A cgroup the daemon made can be written and removed: try a child.
	g := &cgroups{parent: dir, v2: v2}
	child, err := g.create(1)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(child); err != nil {
		return nil, fmt.Errorf("removing cgroup %s: %w", child, err)
	}
	return g, nil
}

// create makes a cgroup allowing at most max tasks.
func (g *cgroups) create(max int) (string, error) {
	dir, err := os.MkdirTemp(g.parent, "cmd-")
	if err != nil {
		return "", fmt.Errorf("creating cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		_ = os.Remove(dir)
		return "", fmt.Errorf("setting pids.max: %w", err)
	}
	return dir, nil
}

// kill kills every process in the cgroup dir and waits until they have
// exited; a cgroup that is gone is empty.
func (g *cgroups) kill(dir string) error {
	if g.v2 {
		// cgroup.kill (Linux 5.14) kills even processes forking as it goes.
		_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	}
	for range 1000 {
		pids, err := cgroupPids(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		// Pin the processes before killing: a pid read from cgroup.procs
		// that is still listed after pidfd_open names that process, not
		// a later one with its number.
		fds := make(map[int]int, len(pids))
		for _, pid := range pids {
			if fd, err := pidfdOpen(pid); err == nil {
				fds[pid] = fd
			}
		}
		still, _ := cgroupPids(dir)
		for pid, fd := range fds {
			if slices.Contains(still, pid) {
				_ = pidfdKill(fd)
			}
		}
		for _, fd := range fds {
			pollIn(fd, 5*time.Second)
			_ = syscall.Close(fd)
		}
	}
	return fmt.Errorf("killing the processes of cgroup %s: they keep coming", dir)
}

// remove kills what is left in dir, returns the number of forks the pids
// limit refused, and removes dir.
func (g *cgroups) remove(dir string) (int64, error) {
	if err := g.kill(dir); err != nil {
		return 0, err
	}
	refused := pidsEvents(dir)
	// The kernel finishes taking exited tasks out of the cgroup shortly
	// after they are gone from cgroup.procs.
	var err error
	for i := range 200 {
		err = syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return refused, nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		if kerr := g.kill(dir); kerr != nil {
			return refused, kerr
		}
		time.Sleep(time.Duration(min(i+1, 20)) * time.Millisecond)
	}
	return refused, fmt.Errorf("removing cgroup %s: %w", dir, err)
}

func cgroupPids(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// pidsEvents returns pids.events' max count: the forks pids.max refused.
func pidsEvents(dir string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, "pids.events"))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && k == "max" {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// Linux system call numbers the syscall package lacks; they are the same
// on every architecture since Linux 5.1.
const (
	sysPidfdSendSignal = 424
	sysPidfdOpen       = 434
)

func pidfdOpen(pid int) (int, error) {
	fd, _, e := syscall.RawSyscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

func pidfdKill(fd int) error {
	_, _, e := syscall.RawSyscall6(sysPidfdSendSignal, uintptr(fd), uintptr(syscall.SIGKILL), 0, 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// pollIn waits until fd is readable (a pidfd: its process exited) or the
// timeout passes.
func pollIn(fd int, timeout time.Duration) {
	const pollin = 0x1
	pfd := struct {
		fd      int32
		events  int16
		revents int16
	}{fd: int32(fd), events: pollin}
	ts := syscall.NsecToTimespec(timeout.Nanoseconds())
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if e != syscall.EINTR {
			return
		}
	}
}

// waitExited blocks until process pid has exited, leaving it for Wait to
// reap: while it is a zombie its process group id cannot be reused.
func waitExited(pid int) {
	const pPID, wExited, wNoWait = 1, 4, 0x1000000
	var info [128]byte
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), wExited|wNoWait, 0, 0)
		if e != syscall.EINTR {
			return
		}
	}
}
