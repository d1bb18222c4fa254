package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probeEnv, in a sandboxed command's environment, makes the test binary
// a probe: it tries one thing the sandbox must refuse, prints what
// happened as a C program would ("op: Operation not permitted") and exits
// 0 only if it was allowed.
const probeEnv = "AGENTRT_SANDBOX_TEST_PROBE"

// runProbe runs the probe named in the environment, if any, and exits.
func runProbe() {
	name, ok := os.LookupEnv(probeEnv)
	if !ok {
		return
	}
	if err := probe(name, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// probeError is a refused operation, worded as strerror would.
func probeError(op string, err error) error {
	msg := err.Error()
	if e, ok := err.(syscall.Errno); ok {
		msg = e.Error()
	}
	return fmt.Errorf("%s: %s", op, strings.ToUpper(msg[:1])+msg[1:])
}

func probe(name string, args []string) error {
	switch name {
	case "ptrace":
		// Attach to the process args[0], a sibling.
		pid, err := strconv.Atoi(args[0])
		if err != nil {
			return err
		}
		if err := syscall.PtraceAttach(pid); err != nil {
			return probeError(fmt.Sprintf("ptrace(PTRACE_ATTACH, %d)", pid), err)
		}
		_ = syscall.PtraceDetach(pid)
		fmt.Println("attached")
	case "io_uring":
		var params [120]byte // struct io_uring_params
		fd, _, e := syscall.RawSyscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if e != 0 {
			return probeError("io_uring_setup", e)
		}
		_ = syscall.Close(int(fd))
		fmt.Println("io_uring set up")
	case "mount":
		// Directly, then from new user and mount namespaces, where the
		// process would hold CAP_SYS_ADMIN.
		if err := syscall.Mount("tmpfs", "/tmp", "tmpfs", 0, ""); err == nil {
			fmt.Println("mounted")
			return nil
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), probeEnv+"=mount_inner")
		// No id maps: mapping root needs CAP_SETFCAP, and the
		// namespace's capabilities come without one.
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS}
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			var e syscall.Errno
			if pe, ok := err.(*os.PathError); ok {
				e, _ = pe.Err.(syscall.Errno)
			}
			if e == 0 {
				return err
			}
			return probeError("clone(CLONE_NEWUSER|CLONE_NEWNS)", e)
		}
		return cmd.Wait()
	case "mount_inner":
		if err := syscall.Mount("tmpfs", "/tmp", "tmpfs", 0, ""); err != nil {
			return probeError("mount", err)
		}
		fmt.Println("mounted in a new mount namespace")
	case "unix":
		// Connect to the Unix socket args[0].
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			return probeError("socket", err)
		}
		defer syscall.Close(fd)
		if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: args[0]}); err != nil {
			return probeError("connect", err)
		}
		fmt.Println("connected")
	default:
		return fmt.Errorf("unknown probe %q", name)
	}
	return nil
}

// probeSpec returns a spec running the probe name with args in b's
// workspace, and p with the test binary readable.
func (b *testBundle) probeSpec(t *testing.T, p Profile, name string, args ...string) (Profile, Spec) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p.ReadRoots = append(p.ReadRoots, self)
	spec := b.spec(append([]string{self}, args...)...)
	spec.Env = append(spec.Env, probeEnv+"="+name)
	return p, spec
}
