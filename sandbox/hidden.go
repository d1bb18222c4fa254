package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// hide applies the Sandbox's hidden paths (Options.Hidden) to l, which
// is not full_access: roots inside a hidden path are dropped (they grant
// nothing), a working directory inside one is refused, l.hidden keeps
// the hidden paths that a remaining root would expose, l.pins the
// directories between a writable root and such a path, and l.unseen
// every hidden path.
func (l *layout) hide(paths []string) error {
	hidden, err := resolveRoots(paths, nil)
	if err != nil || len(hidden) == 0 {
		return err
	}
	// Outermost first; a path inside another hidden one is hidden with it.
	slices.SortStableFunc(hidden, func(x, y root) int { return depth(x.path) - depth(y.path) })
	var hp []string
	for _, h := range hidden {
		if !withinAny(h.path, hp) {
			hp = append(hp, h.path)
		}
	}
	l.unseen = hp
	if withinAny(l.cwd, hp) {
		return fmt.Errorf("%w: working directory %s is hidden from sandboxed processes", ErrUnenforceable, l.cwd)
	}
	inside := func(p string) bool { return withinAny(p, hp) }
	l.extra = slices.DeleteFunc(l.extra, inside)
	l.ro = slices.DeleteFunc(l.ro, func(r root) bool { return inside(r.path) })
	l.rw = slices.DeleteFunc(l.rw, func(r root) bool { return inside(r.path) })

	for _, h := range hidden {
		if !slices.Contains(hp, h.path) {
			continue
		}
		cover, rw := l.cover(h.path)
		if cover == "" {
			continue // no root exposes it
		}
		l.hidden = append(l.hidden, h)
		if !rw {
			continue
		}
		// A directory on the way from a writable root could be moved
		// away, leaving the hidden path's name on the host free for the
		// process to fill (a planted token or config the daemon would
		// read next). A mount point cannot be moved or removed.
		for d := filepath.Dir(h.path); d != cover && within(d, cover); d = filepath.Dir(d) {
			if !slices.Contains(l.pins, d) {
				l.pins = append(l.pins, d)
			}
		}
	}
	// Last: bubblewrap mounts every system directory, and covers those
	// hidden as it covers any other hidden path.
	l.sysRoots = slices.DeleteFunc(l.sysRoots, inside)
	return nil
}

// cover returns the deepest root that holds p, and whether it is
// writable; "" when none does.
func (l *layout) cover(p string) (string, bool) {
	best, rw := "", false
	consider := func(r string, w bool) {
		if within(p, r) && (best == "" || depth(r) > depth(best)) {
			best, rw = r, w
		}
	}
	for _, r := range l.sysRoots {
		consider(r, false)
	}
	for _, r := range l.ro {
		consider(r.path, false)
	}
	for _, r := range l.rw {
		consider(r.path, true)
	}
	return best, rw
}

// hiddenPaths returns the hidden paths a root of l would expose.
func (l *layout) hiddenPaths() []string {
	out := make([]string, len(l.hidden))
	for i, h := range l.hidden {
		out[i] = h.path
	}
	return out
}

// hideArgs returns the bwrap arguments that cover l's hidden paths, to
// come after the mounts of the roots: an empty read-only tmpfs over a
// directory, the host's /dev/null, read-only, over a file. What the
// process sees there is an empty directory, or a device node it cannot
// open (bwrap mounts it nodev).
func hideArgs(l *layout) []string {
	var a []string
	for _, h := range l.hidden {
		if h.file {
			a = append(a, "--ro-bind", os.DevNull, h.path)
		} else {
			a = append(a, "--tmpfs", h.path, "--remount-ro", h.path)
		}
	}
	return a
}

// landlockGrants returns what Landlock grants under l, read-only and
// writable. Landlock only allows, and a rule on a directory holds for
// everything below it, so a root holding a hidden path is granted as its
// entries instead, but the hidden path, the entries on the way to it
// expanded the same way. The system directories are read-only roots.
func (l *layout) landlockGrants() (ro, rw []root, err error) {
	for _, r := range l.sysRoots {
		ro = append(ro, root{path: r})
	}
	ro = append(ro, l.ro...)
	hp := l.hiddenPaths()
	if ro, err = expandAll(ro, hp); err != nil {
		return nil, nil, err
	}
	if rw, err = expandAll(l.rw, hp); err != nil {
		return nil, nil, err
	}
	return ro, rw, nil
}

func expandAll(roots []root, hidden []string) ([]root, error) {
	var out []root
	for _, r := range roots {
		x, err := expand(r, hidden)
		if err != nil {
			return nil, err
		}
		out = append(out, x...)
	}
	return out, nil
}

// expand returns r, or, when a hidden path lies below r, the entries of
// r but the hidden ones, each expanded in turn. Symbolic links are left
// out: a rule on one would grant its target, and what they lead to is
// reachable, or not, on its own terms.
func expand(r root, hidden []string) ([]root, error) {
	if r.file || !slices.ContainsFunc(hidden, func(h string) bool { return h != r.path && within(h, r.path) }) {
		return []root{r}, nil
	}
	entries, err := os.ReadDir(r.path)
	if err != nil {
		return nil, fmt.Errorf("%w: listing %s to leave its hidden paths out: %w", ErrUnenforceable, r.path, err)
	}
	var out []root
	for _, e := range entries {
		p := filepath.Join(r.path, e.Name())
		if e.Type()&os.ModeSymlink != 0 || slices.Contains(hidden, p) {
			continue
		}
		x, err := expand(root{path: p, file: !e.IsDir()}, hidden)
		if err != nil {
			return nil, err
		}
		out = append(out, x...)
	}
	return out, nil
}

// HiddenPaths returns the Sandbox's hidden paths (Options.Hidden) that
// exist, resolved through symbolic links now, outermost first. Tools
// that reach files without a sandboxed process, the file built-ins,
// refuse what lies there, as processes cannot see it. A hidden path that
// cannot be resolved is an error: the caller fails closed.
func (s *Sandbox) HiddenPaths() ([]string, error) {
	if s == nil || len(s.opts.Hidden) == 0 {
		return nil, nil
	}
	hidden, err := resolveRoots(s.opts.Hidden, nil)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(hidden, func(x, y root) int { return depth(x.path) - depth(y.path) })
	out := make([]string, len(hidden))
	for i, h := range hidden {
		out[i] = h.path
	}
	return out, nil
}
