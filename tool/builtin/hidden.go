package builtin

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// workspace is what a file tool acts on: the agent's workspace, through
// its root, and the runtime's hidden paths (Call.Sandbox.HiddenPaths:
// its data directory, configuration and key files), which the file tools
// refuse as sandboxed processes cannot see them, even where the
// workspace holds them.
type workspace struct {
	*os.Root
	dir    string   // the workspace's directory on disk
	hidden []string // absolute, resolved
}

// hides reports whether the host path p is or lies below a hidden path.
func (w *workspace) hides(p string) bool {
	for _, h := range w.hidden {
		if p == h || strings.HasPrefix(p, h+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// refuse returns a permission error for name when f, which the tool
// opened through the root as name, is a hidden path or lies in one;
// real is f's path on the host.
func (w *workspace) refuse(op, name string, f *os.File) (real string, err error) {
	real = w.realPath(f, name)
	if w.hides(real) {
		return real, &fs.PathError{Op: op, Path: name, Err: fs.ErrPermission}
	}
	return real, nil
}

// realPath returns the host path of f, opened through the root as name:
// where the descriptor leads (Linux), else name resolved in the
// workspace.
func (w *workspace) realPath(f *os.File, name string) string {
	if p, ok := fdPath(f); ok {
		return p
	}
	return w.resolve(name)
}

// resolve returns name's host path, its symbolic links resolved as far
// as it exists.
func (w *workspace) resolve(name string) string {
	p := filepath.Join(w.dir, filepath.FromSlash(path.Clean(name)))
	var rest []string
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(w.dir, filepath.FromSlash(path.Clean(name)))
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}
