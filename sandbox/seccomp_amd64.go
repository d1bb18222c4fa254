//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// seccompTable is amd64's: x86-64 numbers only, x32 and i386 refused.
var seccompTable = &syscallTable{
	arch:        unix.AUDIT_ARCH_X86_64,
	x32:         true,
	refused:     refusedSyscalls,
	enosys:      enosysSyscalls,
	clone:       unix.SYS_CLONE,
	unshare:     unix.SYS_UNSHARE,
	personality: unix.SYS_PERSONALITY,
	socket:      unix.SYS_SOCKET,
	modes: []modeCall{
		{unix.SYS_OPEN, 1, 2}, {unix.SYS_OPENAT, 2, 3}, {unix.SYS_CREAT, -1, 1},
		{unix.SYS_MKNOD, -1, 1}, {unix.SYS_MKNODAT, -1, 2},
		{unix.SYS_CHMOD, -1, 1}, {unix.SYS_FCHMOD, -1, 1}, {unix.SYS_FCHMODAT, -1, 2}, {unix.SYS_FCHMODAT2, -1, 2},
	},
}
