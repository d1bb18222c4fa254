package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter every sandboxed command runs under refuses, with
// EPERM, the system calls a confined process has no use for and that
// widen what it can reach: tracing other processes (ptrace,
// process_vm_readv/writev), mounting (mount, umount2, pivot_root and the
// new mount API), new namespaces (unshare and clone with a CLONE_NEW*
// flag, setns), the kernel keyring, BPF, perf events, loading kernels
// and modules, io_uring, userfaultfd, open_by_handle_at and changing
// the personality (only the default one and the query are allowed). It
// also refuses to make set-user-ID or set-group-ID files (chmod,
// creating a file with those bits): under a root daemon the workspace's
// files are the daemon's on disk, and such a file would be a set-user-ID
// root program outside the sandbox. clone3 and openat2, whose arguments
// a filter cannot read, fail with ENOSYS, so that libc falls back to
// clone and openat. System calls of another architecture (x86's x32 and
// 32-bit ones) kill the process.
//
// With network none it also refuses every socket but TCP ones of
// AF_INET and AF_INET6 (which the network namespace or Landlock confine)
// and, under bubblewrap, whose mount and network namespaces keep them
// inside, AF_UNIX and AF_NETLINK ones: no UDP, no raw or packet socket,
// no vsock; socketpair stays allowed.

// syscallTable is an architecture's view of the filter: its audit
// architecture and its system call numbers.
type syscallTable struct {
	arch uint32
	// x32 refuses numbers with the x32 bit (amd64).
	x32 bool
	// refused fail with EPERM; enosys with ENOSYS.
	refused, enosys []uint32
	// The calls whose arguments are checked.
	clone, unshare, personality, socket uint32
	// modes are the calls that can set a file's mode bits.
	modes []modeCall
}

// modeCall is a system call that sets a file's mode from argument mode;
// with flags >= 0, only when that argument has O_CREAT or O_TMPFILE.
type modeCall struct {
	nr          uint32
	flags, mode int
}

// errNoSeccomp says that the filter has no system call table for this
// architecture: no profile can be enforced.
var errNoSeccomp = fmt.Errorf("no seccomp filter for %s: only amd64 and arm64 are supported", runtime.GOARCH)

// Masks and values the filter checks arguments against.
const (
	// cloneNewNS are the CLONE_NEW* flags clone accepts (CLONE_NEWTIME
	// shares its bit with the exit signal there).
	cloneNewNS = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
		unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
	unshareNewNS = cloneNewNS | unix.CLONE_NEWTIME
	// setIDBits are S_ISUID and S_ISGID.
	setIDBits = unix.S_ISUID | unix.S_ISGID
	// createFlags are the open flags that make a file (O_TMPFILE
	// without the O_DIRECTORY it includes).
	createFlags = unix.O_CREAT | unix.O_TMPFILE&^unix.O_DIRECTORY
	// personalityQuery asks for the persona without changing it.
	personalityQuery = 0xffffffff
	// x32Bit marks x32 system call numbers.
	x32Bit = 0x40000000
)

// seccompProgram returns the filter for t and c.
func seccompProgram(t *syscallTable, c seccompConfig) ([]unix.SockFilter, error) {
	if t == nil {
		return nil, errNoSeccomp
	}
	var a bpfAsm
	a.load(offArch)
	a.jeq(t.arch, "", "kill")
	a.load(offNR)
	if t.x32 {
		a.jge(x32Bit, "kill", "")
	}
	for _, nr := range t.refused {
		a.jeq(nr, "eperm", "")
	}
	for _, nr := range t.enosys {
		a.jeq(nr, "enosys", "")
	}

	// Arguments: each block starts with "nr matches" and ends in returns,
	// so the next one still finds the number in the accumulator.
	block := func(nr uint32, name string, body func()) {
		a.jeq(nr, "", name)
		body()
		a.label(name)
	}
	block(t.clone, "after_clone", func() {
		a.load(offArg(0))
		a.jset(cloneNewNS, "eperm", "allow")
	})
	block(t.unshare, "after_unshare", func() {
		a.load(offArg(0))
		a.jset(unshareNewNS, "eperm", "allow")
	})
	block(t.personality, "after_personality", func() {
		a.load(offArg(0))
		a.jeq(personalityQuery, "allow", "")
		a.jeq(0, "allow", "eperm")
	})
	for i, m := range t.modes {
		block(m.nr, fmt.Sprintf("after_mode_%d", i), func() {
			if m.flags >= 0 {
				a.load(offArg(m.flags))
				a.jset(createFlags, "", "allow")
			}
			a.load(offArg(m.mode))
			a.jset(setIDBits, "eperm", "allow")
		})
	}
	if c.NetworkNone {
		block(t.socket, "after_socket", func() {
			a.load(offArg(0))
			if c.Local {
				a.jeq(unix.AF_UNIX, "allow", "")
				a.jeq(unix.AF_NETLINK, "allow", "")
			}
			a.jeq(unix.AF_INET, "socket_inet", "")
			a.jeq(unix.AF_INET6, "socket_inet", "eperm")
			a.label("socket_inet")
			a.load(offArg(1))
			a.and(0xf) // the type, without SOCK_CLOEXEC and SOCK_NONBLOCK
			a.jeq(unix.SOCK_STREAM, "", "eperm")
			a.load(offArg(2))
			a.jeq(0, "allow", "")
			a.jeq(unix.IPPROTO_TCP, "allow", "eperm")
		})
	}
	a.label("allow")
	a.ret(unix.SECCOMP_RET_ALLOW)
	a.label("eperm")
	a.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	a.label("enosys")
	a.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	a.label("kill")
	a.ret(unix.SECCOMP_RET_KILL_PROCESS)
	return a.assemble()
}

// Offsets in struct seccomp_data; arguments are read by their low 32
// bits (little-endian), which hold every flag and mode checked.
const (
	offNR   = 0
	offArch = 4
)

func offArg(i int) uint32 { return uint32(16 + 8*i) }

// bpfAsm assembles a classic BPF program with forward jumps to labels.
type bpfAsm struct {
	prog   []unix.SockFilter
	labels map[string]int
	jumps  []bpfJump
	err    error
}

// bpfJump is a conditional jump whose targets are labels ("" is the next
// instruction).
type bpfJump struct {
	at     int
	jt, jf string
}

func (a *bpfAsm) emit(code uint16, k uint32) {
	a.prog = append(a.prog, unix.SockFilter{Code: code, K: k})
}

func (a *bpfAsm) load(off uint32) { a.emit(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }
func (a *bpfAsm) and(k uint32)    { a.emit(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, k) }
func (a *bpfAsm) ret(k uint32)    { a.emit(unix.BPF_RET|unix.BPF_K, k) }

func (a *bpfAsm) jump(op uint16, k uint32, jt, jf string) {
	a.jumps = append(a.jumps, bpfJump{at: len(a.prog), jt: jt, jf: jf})
	a.emit(unix.BPF_JMP|op|unix.BPF_K, k)
}

func (a *bpfAsm) jeq(k uint32, jt, jf string)  { a.jump(unix.BPF_JEQ, k, jt, jf) }
func (a *bpfAsm) jge(k uint32, jt, jf string)  { a.jump(unix.BPF_JGE, k, jt, jf) }
func (a *bpfAsm) jset(k uint32, jt, jf string) { a.jump(unix.BPF_JSET, k, jt, jf) }

func (a *bpfAsm) label(name string) {
	if a.labels == nil {
		a.labels = make(map[string]int)
	}
	if _, dup := a.labels[name]; dup {
		a.err = fmt.Errorf("label %s defined twice", name)
	}
	a.labels[name] = len(a.prog)
}

// assemble resolves the jumps: each target must lie ahead, within the
// 255 instructions a jump can skip.
func (a *bpfAsm) assemble() ([]unix.SockFilter, error) {
	if a.err != nil {
		return nil, a.err
	}
	offset := func(at int, label string) (uint8, error) {
		if label == "" {
			return 0, nil
		}
		to, ok := a.labels[label]
		if !ok {
			return 0, fmt.Errorf("undefined label %s", label)
		}
		d := to - at - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("jump from %d to %s (%d) out of range", at, label, to)
		}
		return uint8(d), nil
	}
	for _, j := range a.jumps {
		jt, err := offset(j.at, j.jt)
		if err != nil {
			return nil, err
		}
		jf, err := offset(j.at, j.jf)
		if err != nil {
			return nil, err
		}
		a.prog[j.at].Jt, a.prog[j.at].Jf = jt, jf
	}
	if len(a.prog) > unix.BPF_MAXINSNS {
		return nil, errors.New("seccomp filter too long")
	}
	return a.prog, nil
}

// seccompBytes is prog as bubblewrap's --seccomp reads it: struct
// sock_filter after struct sock_filter, in the machine's byte order.
func seccompBytes(prog []unix.SockFilter) []byte {
	if len(prog) == 0 {
		return nil
	}
	n := len(prog) * int(unsafe.Sizeof(prog[0]))
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(&prog[0])), n)...)
}

// loadSeccomp installs prog on the calling thread, which must be the one
// that executes the command; no_new_privs is set first, as the kernel
// requires of a process without CAP_SYS_ADMIN.
func loadSeccomp(prog []unix.SockFilter) error {
	if err := prctl(unix.PR_SET_NO_NEW_PRIVS, 1); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER,
		uintptr(unsafe.Pointer(&fprog)), 0, 0, 0)
	runtime.KeepAlive(prog)
	if e != 0 {
		return e
	}
	return nil
}
