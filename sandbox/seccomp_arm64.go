//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// seccompTable is arm64's: AArch64 numbers only, AArch32 refused.
var seccompTable = &syscallTable{
	arch:        unix.AUDIT_ARCH_AARCH64,
	refused:     refusedSyscalls,
	enosys:      enosysSyscalls,
	clone:       unix.SYS_CLONE,
	unshare:     unix.SYS_UNSHARE,
	personality: unix.SYS_PERSONALITY,
	socket:      unix.SYS_SOCKET,
	modes: []modeCall{
		{unix.SYS_OPENAT, 2, 3}, {unix.SYS_MKNODAT, -1, 2},
		{unix.SYS_FCHMOD, -1, 1}, {unix.SYS_FCHMODAT, -1, 2}, {unix.SYS_FCHMODAT2, -1, 2},
	},
}
