package proc

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// CloseInheritedOnExec marks every file descriptor of this process from 3
// up close-on-exec, so that no program it executes inherits one. Go opens
// its own files and sockets close-on-exec, but not the descriptors a
// process inherits without the flag — a listening socket a supervisor
// hands it, a pipe its shell leaked — and those pass to every child: a
// sandboxed background process would keep a daemon's listening socket,
// and its port, after the daemon died. Standard input, output and error
// are left alone, and a descriptor opened afterwards without the flag is
// inherited as meant.
func CloseInheritedOnExec() error {
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	// Kernels before 5.11 lack CLOSE_RANGE_CLOEXEC: one descriptor at a
	// time.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing file descriptors: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		// EBADF: the descriptor ReadDir read the listing with, closed.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("marking file descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}
