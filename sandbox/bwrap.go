package sandbox

import (
	"path/filepath"
	"slices"
	"strconv"
)

// privateTmp is where bubblewrap mounts the private tmpfs.
const privateTmp = "/tmp"

// bwrapArgs returns the bwrap argv (bwrap's path first) that runs argv
// in l with network n. Namespaces: a new PID namespace, so that killing
// bwrap kills everything inside; a new network namespace (only
// loopback, the host's unreachable) for network none; IPC, UTS and
// cgroup namespaces. A root daemon's sandbox runs with no capabilities.
// Hidden paths are covered after the roots are mounted (hidden.go).
// The environment is not here: the helper adds it through --args.
func bwrapArgs(bwrap string, l *layout, n Network, asRoot bool, argv []string) []string {
	a := []string{bwrap,
		"--die-with-parent", "--new-session",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	}
	if n == NetworkNone {
		a = append(a, "--unshare-net")
	}
	if asRoot {
		a = append(a, "--cap-drop", "ALL")
	}
	if l.mode == FullAccess {
		a = append(a, "--bind", "/", "/", "--proc", "/proc", "--dev", "/dev")
		return append(append(a, "--chdir", l.cwd, "--"), argv...)
	}
	for _, e := range l.system {
		if e.link != "" {
			a = append(a, "--symlink", e.link, e.path)
		} else {
			a = append(a, "--ro-bind", e.path, e.path)
		}
	}
	for _, f := range l.extra {
		a = append(a, "--ro-bind-try", f, f)
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev")
	if l.tmpBytes > 0 {
		a = append(a, "--size", strconv.FormatInt(l.tmpBytes, 10))
	}
	a = append(a, "--tmpfs", privateTmp)

	type mount struct {
		root
		rw bool
	}
	var mounts []mount
	for _, r := range l.ro {
		mounts = append(mounts, mount{r, false})
	}
	for _, r := range l.rw {
		mounts = append(mounts, mount{r, true})
	}
	for _, d := range l.pins {
		mounts = append(mounts, mount{root{path: d}, true})
	}
	// Parents before children, so that a deeper root keeps its own
	// access.
	slices.SortStableFunc(mounts, func(x, y mount) int { return depth(x.path) - depth(y.path) })
	paths := make([]string, len(mounts))
	for i, m := range mounts {
		paths[i] = m.path
	}

	// bwrap makes the directories leading to a mount point in whatever
	// file system holds them. Under /tmp that is the writable private
	// tmpfs, so "../x" from a workspace in /tmp would silently write there;
	// a read-only tmpfs over each such parent refuses it, as the read-only
	// root refuses it elsewhere.
	var skeleton []string
	for _, p := range paths {
		d := filepath.Dir(p)
		if d != privateTmp && within(d, privateTmp) && !withinAny(d, paths) && !slices.Contains(skeleton, d) {
			skeleton = append(skeleton, d)
		}
	}
	slices.SortStableFunc(skeleton, func(x, y string) int { return depth(x) - depth(y) })
	for _, d := range skeleton {
		a = append(a, "--tmpfs", d)
	}
	for _, m := range mounts {
		if m.rw {
			a = append(a, "--bind", l.source(m.path), m.path)
		} else {
			a = append(a, "--ro-bind", l.source(m.path), m.path)
		}
	}
	a = append(a, hideArgs(l)...)
	for _, d := range skeleton {
		a = append(a, "--remount-ro", d)
	}
	a = append(a, "--remount-ro", "/", "--chdir", l.cwd, "--")
	return append(a, argv...)
}

// bwrapProbeArgs is a bwrap argv that uses what bwrapArgs uses, run as
// the user commands run as.
func bwrapProbeArgs(bwrap string) []string {
	return []string{bwrap,
		"--die-with-parent", "--new-session",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--size", "1048576", "--tmpfs", privateTmp,
		"--remount-ro", "/", "--chdir", "/", "--", "true"}
}
