package builtin

import (
	"os"
	"strconv"
)

// fdPath returns the path f's descriptor leads to, as the kernel sees
// it: no later rename or symbolic link swap in the workspace can change
// what was opened.
func fdPath(f *os.File) (string, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return "", false
	}
	var p string
	cerr := rc.Control(func(fd uintptr) {
		p, err = os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	})
	return p, cerr == nil && err == nil
}
