package sandbox

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procInfo is what /proc/<pid>/stat says of a process.
type procInfo struct {
	pid, ppid, pgrp int
	zombie          bool
}

// scanProcs lists the host's processes.
func scanProcs() []procInfo {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	out := make([]procInfo, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue // exited
		}
		// pid (comm) state ppid pgrp ...; comm may hold anything.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		out = append(out, procInfo{pid: pid, ppid: ppid, pgrp: pgrp, zombie: f[0] == "Z" || f[0] == "X"})
	}
	return out
}

// treeAndGroup returns the live processes below pid and those in
// process group pgid: what a command without a cgroup can leave behind.
// Under bubblewrap the tree holds the PID namespace, whose processes are
// in a session of their own.
func treeAndGroup(pid, pgid int) []int {
	procs := scanProcs()
	children := make(map[int][]int)
	var out []int
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p.pid)
		if p.pgrp == pgid && !p.zombie && p.pid != pid {
			out = append(out, p.pid)
		}
	}
	for queue := children[pid]; len(queue) > 0; {
		p := queue[0]
		queue = queue[1:]
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
		queue = append(queue, children[p]...)
	}
	return out
}

// pinTreeAndGroup opens pidfds for treeAndGroup(pid, pgid) and kills
// them. A number listed again after its pidfd was opened names the
// process the pidfd holds, not a later one, so nothing else is killed.
func pinTreeAndGroup(pid, pgid int) []int {
	fds := make(map[int]int)
	for _, p := range treeAndGroup(pid, pgid) {
		if fd, err := pidfdOpen(p); err == nil {
			fds[p] = fd
		}
	}
	still := treeAndGroup(pid, pgid)
	out := make([]int, 0, len(fds))
	for p, fd := range fds {
		if !slices.Contains(still, p) {
			_ = syscall.Close(fd)
			continue
		}
		_ = pidfdKill(fd)
		out = append(out, fd)
	}
	return out
}

// awaitPinned waits for the pinned processes to exit and closes their
// pidfds.
func awaitPinned(fds []int) {
	for _, fd := range fds {
		pollIn(fd, 5*time.Second)
		_ = syscall.Close(fd)
	}
}
