//go:build linux

package sandbox

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// seccompData is struct seccomp_data.
type seccompData struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

// runBPF runs a seccomp filter on d as the kernel would (the
// instructions seccompProgram uses) and returns its action.
func runBPF(t *testing.T, prog []unix.SockFilter, d seccompData) uint32 {
	t.Helper()
	var buf [64]byte
	binary.LittleEndian.PutUint32(buf[0:], d.nr)
	binary.LittleEndian.PutUint32(buf[4:], d.arch)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(buf[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(buf[in.K:])
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var cond bool
			switch in.Code &^ (unix.BPF_JMP | unix.BPF_K) {
			case unix.BPF_JEQ:
				cond = acc == in.K
			case unix.BPF_JGE:
				cond = acc >= in.K
			default:
				cond = acc&in.K != 0
			}
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		default:
			t.Fatalf("instruction %d: unexpected code %#x", pc, in.Code)
		}
	}
	t.Fatalf("the filter fell off its end")
	return 0
}

// TestSeccompProgram: the filter's decisions, system call by system call
// and argument by argument.
func TestSeccompProgram(t *testing.T) {
	t.Parallel()
	if seccompTable == nil {
		t.Skip(errNoSeccomp)
	}
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		kill   = unix.SECCOMP_RET_KILL_PROCESS
	)
	arch := seccompTable.arch
	call := func(nr uint32, args ...uint64) seccompData {
		d := seccompData{nr: nr, arch: arch}
		copy(d.args[:], args)
		return d
	}
	base := []struct {
		name string
		d    seccompData
		want uint32
	}{
		{"getpid", call(unix.SYS_GETPID), allow},
		{"another architecture", seccompData{nr: unix.SYS_GETPID, arch: unix.AUDIT_ARCH_I386}, kill},
		{"ptrace", call(unix.SYS_PTRACE, unix.PTRACE_ATTACH, 1), eperm},
		{"mount", call(unix.SYS_MOUNT), eperm},
		{"umount2", call(unix.SYS_UMOUNT2), eperm},
		{"pivot_root", call(unix.SYS_PIVOT_ROOT), eperm},
		{"fsopen", call(unix.SYS_FSOPEN), eperm},
		{"setns", call(unix.SYS_SETNS), eperm},
		{"keyctl", call(unix.SYS_KEYCTL), eperm},
		{"add_key", call(unix.SYS_ADD_KEY), eperm},
		{"request_key", call(unix.SYS_REQUEST_KEY), eperm},
		{"bpf", call(unix.SYS_BPF), eperm},
		{"perf_event_open", call(unix.SYS_PERF_EVENT_OPEN), eperm},
		{"kexec_load", call(unix.SYS_KEXEC_LOAD), eperm},
		{"kexec_file_load", call(unix.SYS_KEXEC_FILE_LOAD), eperm},
		{"init_module", call(unix.SYS_INIT_MODULE), eperm},
		{"finit_module", call(unix.SYS_FINIT_MODULE), eperm},
		{"delete_module", call(unix.SYS_DELETE_MODULE), eperm},
		{"io_uring_setup", call(unix.SYS_IO_URING_SETUP), eperm},
		{"io_uring_enter", call(unix.SYS_IO_URING_ENTER), eperm},
		{"io_uring_register", call(unix.SYS_IO_URING_REGISTER), eperm},
		{"userfaultfd", call(unix.SYS_USERFAULTFD), eperm},
		{"process_vm_readv", call(unix.SYS_PROCESS_VM_READV), eperm},
		{"clone3", call(unix.SYS_CLONE3), enosys},
		{"openat2", call(unix.SYS_OPENAT2), enosys},
		{"fork by clone", call(unix.SYS_CLONE, uint64(unix.SIGCHLD)), allow},
		{"thread by clone", call(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD), allow},
		{"clone a user namespace", call(unix.SYS_CLONE, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), eperm},
		{"clone a network namespace", call(unix.SYS_CLONE, unix.CLONE_NEWNET), eperm},
		{"unshare files", call(unix.SYS_UNSHARE, unix.CLONE_FILES), allow},
		{"unshare a user namespace", call(unix.SYS_UNSHARE, unix.CLONE_NEWUSER), eperm},
		{"unshare a mount namespace", call(unix.SYS_UNSHARE, unix.CLONE_NEWNS), eperm},
		{"unshare a time namespace", call(unix.SYS_UNSHARE, unix.CLONE_NEWTIME), eperm},
		{"personality query", call(unix.SYS_PERSONALITY, 0xffffffff), allow},
		{"personality default", call(unix.SYS_PERSONALITY, 0), allow},
		{"personality without ASLR", call(unix.SYS_PERSONALITY, 0x0040000 /* ADDR_NO_RANDOMIZE */), eperm},
		{"open for reading, any mode", call(unix.SYS_OPENAT, 0, 0, unix.O_RDONLY, 0o4755), allow},
		{"create", call(unix.SYS_OPENAT, 0, 0, unix.O_CREAT|unix.O_WRONLY, 0o644), allow},
		{"create set-user-ID", call(unix.SYS_OPENAT, 0, 0, unix.O_CREAT|unix.O_WRONLY, 0o4755), eperm},
		{"temporary set-group-ID", call(unix.SYS_OPENAT, 0, 0, unix.O_TMPFILE|unix.O_RDWR, 0o2755), eperm},
		{"chmod", call(unix.SYS_FCHMODAT, 0, 0, 0o755), allow},
		{"chmod sticky", call(unix.SYS_FCHMODAT, 0, 0, 0o1777), allow},
		{"chmod set-user-ID", call(unix.SYS_FCHMODAT, 0, 0, 0o4755), eperm},
		{"fchmod set-group-ID", call(unix.SYS_FCHMOD, 0, 0o2775), eperm},
		{"fchmodat2 set-user-ID", call(unix.SYS_FCHMODAT2, 0, 0, 0o4700, 0), eperm},
		{"mknodat set-user-ID", call(unix.SYS_MKNODAT, 0, 0, unix.S_IFREG|0o4755, 0), eperm},
		{"socket", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, 0), allow},
		{"socketpair", call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM, 0), allow},
	}
	if seccompTable.x32 {
		base = append(base, struct {
			name string
			d    seccompData
			want uint32
		}{"x32", call(x32Bit | unix.SYS_GETPID), kill})
	}
	prog, err := seccompProgram(seccompTable, seccompConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range base {
		if got := runBPF(t, prog, tc.d); got != tc.want {
			t.Errorf("%s: action %#x, want %#x", tc.name, got, tc.want)
		}
	}

	socket := func(family, typ, proto uint64) seccompData { return call(unix.SYS_SOCKET, family, typ, proto) }
	for _, tc := range []struct {
		name          string
		d             seccompData
		landlock, bwr uint32
	}{
		{"tcp", socket(unix.AF_INET, unix.SOCK_STREAM, 0), allow, allow},
		{"tcp, close on exec", socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0), allow, allow},
		{"tcp6", socket(unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_TCP), allow, allow},
		{"udp", socket(unix.AF_INET, unix.SOCK_DGRAM, 0), eperm, eperm},
		{"udp6", socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP), eperm, eperm},
		{"multipath tcp", socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), eperm, eperm},
		{"sctp", socket(unix.AF_INET, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP), eperm, eperm},
		{"raw", socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP), eperm, eperm},
		{"unix", socket(unix.AF_UNIX, unix.SOCK_STREAM, 0), eperm, allow},
		{"netlink", socket(unix.AF_NETLINK, unix.SOCK_RAW, 0), eperm, allow},
		{"vsock", socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0), eperm, eperm},
		{"packet", socket(unix.AF_PACKET, unix.SOCK_RAW, 0), eperm, eperm},
		{"socketpair", call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM, 0), allow, allow},
	} {
		for _, c := range []struct {
			cfg  seccompConfig
			want uint32
		}{
			{seccompConfig{NetworkNone: true}, tc.landlock},
			{seccompConfig{NetworkNone: true, Local: true}, tc.bwr},
		} {
			prog, err := seccompProgram(seccompTable, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := runBPF(t, prog, tc.d); got != c.want {
				t.Errorf("%s under %+v: action %#x, want %#x", tc.name, c.cfg, got, c.want)
			}
		}
	}
}

// TestSeccompNoTable: without a system call table (an architecture the
// filter does not know) there is no filter, so nothing runs.
func TestSeccompNoTable(t *testing.T) {
	t.Parallel()
	if _, err := seccompProgram(nil, seccompConfig{}); err != errNoSeccomp {
		t.Errorf("seccompProgram(nil) error = %v, want errNoSeccomp", err)
	}
}

// TestBPFAssemble: jumps go forward to defined labels within reach.
func TestBPFAssemble(t *testing.T) {
	t.Parallel()
	var undefined bpfAsm
	undefined.jeq(1, "nowhere", "")
	if _, err := undefined.assemble(); err == nil {
		t.Errorf("a jump to an undefined label assembled")
	}
	var far bpfAsm
	far.jeq(1, "end", "")
	for range 256 {
		far.ret(0)
	}
	far.label("end")
	far.ret(0)
	if _, err := far.assemble(); err == nil {
		t.Errorf("a jump over 256 instructions assembled")
	}
}
