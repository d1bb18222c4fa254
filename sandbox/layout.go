package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// systemDirs are always readable, those of them that exist.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// systemLinks are files in the system directories that are often
// symbolic links out of them (to /run, say); their targets are made
// readable too, so that name resolution works.
var systemLinks = []string{"/etc/resolv.conf", "/etc/hosts", "/etc/localtime"}

// sysEntry is one of systemDirs as it exists on the host.
type sysEntry struct {
	path string
	link string // the symbolic link's target, "" for a directory
}

// root is a path made readable or writable.
type root struct {
	path string
	file bool
}

// layout is a profile's file system, resolved on the host.
type layout struct {
	mode     Mode
	cwd      string
	system   []sysEntry
	sysRoots []string // the system directories, resolved
	extra    []string // resolved targets of systemLinks outside sysRoots
	ro       []root   // read-only beyond the system directories
	rw       []root
	hidden   []root   // hidden paths a root holds (hidden.go)
	pins     []string // directories on the way to them in writable roots
	unseen   []string // every hidden path, resolved, for Violation
	// tmpBytes bounds the private /tmp (bubblewrap's), 0 for no bound.
	tmpBytes int64
	// sources maps a root to where bubblewrap binds it from, when that
	// is not the root itself (a root daemon's staged roots).
	sources map[string]string
}

// source is where bubblewrap binds path from: the same place in the
// deepest staged root holding it, or path itself.
func (l *layout) source(path string) string {
	best := ""
	for r := range l.sources {
		if within(path, r) && len(r) > len(best) {
			best = r
		}
	}
	if best == "" {
		return path
	}
	return filepath.Join(l.sources[best], strings.TrimPrefix(path, best))
}

// newLayout resolves p's roots and spec's workspace and working
// directory. The workspace must exist; roots that do not exist grant
// nothing and are left out; the working directory must be readable.
func newLayout(p Profile, spec Spec) (*layout, error) {
	l := &layout{mode: p.Mode}
	ws := ""
	if spec.Workspace != "" {
		r, err := resolveRoot(spec.Workspace)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: resolving workspace: %w", ErrUnenforceable, err)
		case r == nil:
			return nil, fmt.Errorf("%w: workspace %s does not exist", ErrUnenforceable, spec.Workspace)
		case r.file:
			return nil, fmt.Errorf("%w: workspace %s is not a directory", ErrUnenforceable, spec.Workspace)
		}
		ws = r.path
	}
	cwd := spec.Dir
	if cwd == "" {
		cwd = ws
	}
	if cwd == "" {
		cwd = "/"
	}
	if !filepath.IsAbs(cwd) {
		return nil, fmt.Errorf("%w: working directory %s is not absolute", ErrUnenforceable, cwd)
	}
	rc, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return nil, fmt.Errorf("%w: resolving working directory: %w", ErrUnenforceable, err)
	}
	l.cwd = rc
	if p.Mode == FullAccess {
		return l, nil
	}

	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		if err != nil {
			continue
		}
		e := sysEntry{path: d}
		if fi.Mode()&os.ModeSymlink != 0 {
			if e.link, err = os.Readlink(d); err != nil {
				continue
			}
		} else if !fi.IsDir() {
			continue
		}
		r, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		l.system = append(l.system, e)
		if !withinAny(r, l.sysRoots) {
			l.sysRoots = append(l.sysRoots, r)
		}
	}
	for _, f := range systemLinks {
		r, err := filepath.EvalSymlinks(f)
		if err == nil && r != f && !withinAny(r, l.sysRoots) && !slices.Contains(l.extra, r) {
			l.extra = append(l.extra, r)
		}
	}

	var ro, rw []string
	if ws != "" {
		if p.Mode == WorkspaceWrite {
			rw = append(rw, ws)
		} else {
			ro = append(ro, ws)
		}
	}
	ro = append(ro, p.ReadRoots...)
	if p.Mode == WorkspaceWrite {
		rw = append(rw, p.WriteRoots...)
	} else {
		ro = append(ro, p.WriteRoots...)
	}
	if l.rw, err = resolveRoots(rw, nil); err != nil {
		return nil, err
	}
	if l.ro, err = resolveRoots(ro, l.rw); err != nil {
		return nil, err
	}
	if l.cwd != "/" && !withinAny(l.cwd, l.readable()) {
		return nil, fmt.Errorf("%w: working directory %s is outside the readable roots", ErrUnenforceable, l.cwd)
	}
	return l, nil
}

// resolveRoots resolves paths, leaving out those that do not exist and
// those in skip.
func resolveRoots(paths []string, skip []root) ([]root, error) {
	var out []root
	for _, p := range paths {
		r, err := resolveRoot(p)
		if err != nil {
			return nil, fmt.Errorf("%w: resolving root: %w", ErrUnenforceable, err)
		}
		if r == nil || slices.Contains(skip, *r) || slices.Contains(out, *r) {
			continue
		}
		out = append(out, *r)
	}
	return out, nil
}

// resolveRoot resolves p's symbolic links; nil when p does not exist.
func resolveRoot(p string) (*root, error) {
	if !filepath.IsAbs(p) {
		return nil, fmt.Errorf("path %q is not absolute", p)
	}
	r, err := filepath.EvalSymlinks(p)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(r)
	if err != nil {
		return nil, err
	}
	return &root{path: r, file: !fi.IsDir()}, nil
}

// readable returns every path a process may read, system directories
// first.
func (l *layout) readable() []string {
	out := slices.Clone(l.sysRoots)
	for _, r := range l.ro {
		out = append(out, r.path)
	}
	return append(out, l.writable()...)
}

func (l *layout) writable() []string {
	var out []string
	for _, r := range l.rw {
		out = append(out, r.path)
	}
	return out
}

// applied returns the layout's part of Applied.
func (l *layout) applied() (readRoots, writeRoots []string) {
	if l.mode == FullAccess {
		return nil, []string{"/"}
	}
	readRoots = slices.Clone(l.sysRoots)
	for _, r := range l.ro {
		readRoots = append(readRoots, r.path)
	}
	return readRoots, l.writable()
}

// within reports whether path p is root or below it.
func within(p, root string) bool {
	return root == "/" || p == root || strings.HasPrefix(p, root+"/")
}

func withinAny(p string, roots []string) bool {
	for _, r := range roots {
		if within(p, r) {
			return true
		}
	}
	return false
}

// depth is the number of elements in a clean absolute path.
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}
