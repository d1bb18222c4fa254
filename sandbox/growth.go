package sandbox

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
)

// treeBytes is the total size of the regular files below roots (a root
// may be a file), each counted once however the roots nest. It does not
// follow symbolic links; what vanishes while it walks is not counted.
func treeBytes(roots []string) (int64, error) {
	var n int64
	for i, r := range roots {
		if withinAny(r, roots[:i]) || slices.ContainsFunc(roots[i+1:], func(o string) bool { return o != r && within(r, o) }) {
			continue // counted with the root holding it
		}
		err := filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return nil
			case err != nil:
				return err
			case !d.Type().IsRegular():
				return nil
			}
			fi, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			n += fi.Size()
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}
