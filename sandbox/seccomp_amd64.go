//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// seccompTable is amd64's: x86-64 numbers only, x32 and i386 refused.
var seccompTable = &syscallTable{
	arch: unix.AUDIT_ARCH_X86_64,
	x32:  true,
	refused: []uint32{
		unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
		unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_MOUNT_SETATTR, unix.SYS_MOVE_MOUNT,
		unix.SYS_OPEN_TREE, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
		unix.SYS_SETNS, unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_BPF,
		unix.SYS_PERF_EVENT_OPEN, unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
		unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
		unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
		unix.SYS_USERFAULTFD, unix.SYS_OPEN_BY_HANDLE_AT,
	},
	enosys:      []uint32{unix.SYS_CLONE3, unix.SYS_OPENAT2},
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
