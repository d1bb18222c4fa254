//go:build linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// exitErr returns how `sh -c script` fails.
func exitErr(t *testing.T, script string) error {
	t.Helper()
	err := exec.Command("sh", "-c", script).Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("sh -c %q: %v, want an exit error", script, err)
	}
	return err
}

func TestViolationOfSuccess(t *testing.T) {
	t.Parallel()
	if v := (&Cmd{}).Violation(nil, []byte("touch: cannot touch '/x': Read-only file system")); v != nil {
		t.Errorf("Violation of a command that succeeded = %+v, want nil", v)
	}
}

// TestClassify: Violation's reading of how commands end, on the messages
// real commands print under each enforcer.
func TestClassify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws, out := filepath.Join(dir, "ws"), filepath.Join(dir, "outside")
	for _, d := range []string{ws, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(out, "secret"), "s")
	if err := os.Symlink(filepath.Join(out, "secret"), filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(out, "secret")
	failed := errors.New("exit status 1")
	limits := DefaultLimits()
	wsWrite := deniedFS{restricted: true, cwd: ws, readable: []string{"/usr", "/etc", ws}, writable: []string{ws}}
	readOnly := deniedFS{restricted: true, cwd: ws, readable: []string{"/usr", "/etc", ws}}
	withTmp := wsWrite
	withTmp.tmp = "/tmp"
	// Landlock's private directory is writable, and named as it is.
	landlockTmp := wsWrite
	landlockTmp.tmp = filepath.Join(dir, "private-tmp")
	landlockTmp.writable = append(slices.Clone(wsWrite.writable), landlockTmp.tmp)
	// Run as another user, with out readable: its private file is not.
	private, public := filepath.Join(out, "private"), filepath.Join(out, "public")
	writeFile(t, public, "p")
	writeFile(t, private, "p")
	if err := os.Chmod(private, 0o600); err != nil {
		t.Fatal(err)
	}
	asUser := deniedFS{restricted: true, cwd: ws, readable: []string{"/usr", "/etc", ws, out}, writable: []string{ws},
		reader: &fileReader{uid: 4242, gids: []int{4242}, sandbox: true}}
	asDaemon := asUser
	asDaemon.reader = &fileReader{uid: 4242, gids: []int{4242}}

	for _, tc := range []struct {
		name    string
		err     error
		stderr  string
		network Network
		fs      deniedFS
		refused int64
		limits  *Limits
		want    *Violation // nil: not the sandbox's doing
	}{
		{name: "xfsz_signal", err: exitErr(t, "kill -XFSZ $$"), want: &Violation{Kind: FileSizeLimit, Detail: "file size limit exceeded"}},
		{name: "xfsz_status", err: exitErr(t, "exit 153"), want: &Violation{Kind: FileSizeLimit, Detail: "file size limit exceeded"}},
		{name: "xfsz_unlimited", err: exitErr(t, "exit 153"), limits: &Limits{FileBytes: -1}, want: nil},
		{name: "efbig", err: failed, stderr: "dd: error writing 'big': File too large", want: &Violation{Kind: FileSizeLimit, Detail: "file size limit exceeded"}},
		{name: "xcpu_signal", err: exitErr(t, "kill -XCPU $$"), want: &Violation{Kind: CPULimit, Detail: "CPU time limit exceeded"}},
		{name: "xcpu_status", err: exitErr(t, "exit 152"), want: &Violation{Kind: CPULimit, Detail: "CPU time limit exceeded"}},
		{name: "pids_events", err: exitErr(t, "exit 2"), refused: 3, want: &Violation{Kind: ProcessLimit, Detail: "process limit reached"}},
		{name: "bash_fork", err: failed, stderr: "bash: fork: retry: Resource temporarily unavailable\n", want: &Violation{Kind: ProcessLimit, Detail: "process limit reached"}},
		{name: "bwrap_clone", err: failed, stderr: "bwrap: Creating new namespace failed: Resource temporarily unavailable\n", want: &Violation{Kind: ProcessLimit, Detail: "process limit reached"}},
		{name: "dash_fork", err: failed, stderr: "sh: 0: Cannot fork\n", want: &Violation{Kind: ProcessLimit, Detail: "process limit reached"}},
		{name: "enomem", err: failed, stderr: "Traceback (most recent call last):\nMemoryError\n", want: &Violation{Kind: MemoryLimit, Detail: "memory limit reached"}},
		{name: "enomem_unlimited", err: failed, stderr: "x: Cannot allocate memory", limits: &Limits{MemoryBytes: -1}, want: nil},
		{name: "refused", err: failed, network: NetworkNone, stderr: "bash: connect: Connection refused\nbash: line 1: /dev/tcp/127.0.0.1/34071: Connection refused\n",
			want: &Violation{Kind: NetworkDenied, Detail: "connection refused"}},
		{name: "landlock_connect", err: failed, network: NetworkNone, stderr: "bash: connect: Permission denied\nbash: line 1: /dev/tcp/127.0.0.1/34071: Permission denied\n",
			want: &Violation{Kind: NetworkDenied, Detail: "connect refused"}},
		{name: "resolve", err: failed, network: NetworkNone, stderr: "curl: (6) Could not resolve host: example.com\n", want: &Violation{Kind: NetworkDenied, Detail: "could not resolve host"}},
		{name: "refused_with_network", err: failed, network: NetworkFull, stderr: "curl: (7) Failed to connect: Connection refused\n", want: nil},
		{name: "touch_outside_bwrap", err: failed, fs: wsWrite, stderr: "touch: cannot touch '" + out + "/new': No such file or directory\n",
			want: &Violation{Kind: WriteDenied, Detail: out + "/new"}},
		{name: "touch_outside_landlock", err: failed, fs: wsWrite, stderr: "touch: cannot touch '" + out + "/new': Permission denied\n",
			want: &Violation{Kind: WriteDenied, Detail: out + "/new"}},
		{name: "dash_redirect_absolute", err: failed, fs: wsWrite, stderr: "/bin/sh: 1: cannot create /etc/x: Read-only file system\n", want: &Violation{Kind: WriteDenied, Detail: "/etc/x"}},
		{name: "dash_redirect_hidden_dir", err: failed, fs: wsWrite, stderr: "/bin/sh: 1: cannot create /root/agentrt-f: Directory nonexistent\n", want: &Violation{Kind: WriteDenied, Detail: "/root/agentrt-f"}},
		{name: "dash_redirect_relative", err: failed, fs: readOnly, stderr: "/bin/sh: 1: cannot create out.txt: Read-only file system\n", want: &Violation{Kind: WriteDenied, Detail: "out.txt"}},
		{name: "dotdot", err: failed, fs: wsWrite, stderr: "touch: cannot touch '../escape': Read-only file system\n", want: &Violation{Kind: WriteDenied, Detail: "../escape"}},
		{name: "symlink", err: failed, fs: wsWrite, stderr: "tee: link: No such file or directory\n", want: &Violation{Kind: WriteDenied, Detail: "link"}},
		{name: "hardlink", err: failed, fs: wsWrite, stderr: "ln: failed to create hard link 'x' => '" + secret + "': Invalid cross-device link\n", want: &Violation{Kind: WriteDenied, Detail: secret}},
		{name: "read_only_landlock", err: failed, fs: readOnly, stderr: "bash: line 1: f: Permission denied\n", want: &Violation{Kind: WriteDenied, Detail: "f"}},
		{name: "mkdir_utf8_quotes", err: failed, fs: readOnly, stderr: "mkdir: cannot create directory ‘" + ws + "/d’: Read-only file system\n", want: &Violation{Kind: WriteDenied, Detail: ws + "/d"}},
		{name: "cat_secret", err: failed, fs: wsWrite, stderr: "cat: " + secret + ": No such file or directory\n", want: &Violation{Kind: ReadDenied, Detail: secret}},
		{name: "python_secret", err: failed, fs: wsWrite, stderr: "PermissionError: [Errno 13] Permission denied: '" + secret + "'\n", want: &Violation{Kind: ReadDenied, Detail: secret}},
		{name: "genuinely_missing", err: failed, fs: wsWrite, stderr: "cat: /nonexistent/file: No such file or directory\n", want: nil},
		{name: "missing_in_workspace", err: failed, fs: wsWrite, stderr: "cat: nofile: No such file or directory\n", want: nil},
		{name: "full_access", err: failed, fs: deniedFS{}, stderr: "cat: " + secret + ": Permission denied\n", want: nil},
		{name: "unrelated", err: failed, fs: wsWrite, stderr: "error: tests failed\n", want: nil},
		{name: "xfsz_write_cap", err: exitErr(t, "exit 153"), limits: &Limits{WriteBytes: 1 << 20}, want: &Violation{Kind: WriteLimit, Detail: "a file reached the write limit"}},
		{name: "xfsz_file_cap_below_write_cap", err: exitErr(t, "exit 153"), limits: &Limits{FileBytes: 1 << 20, WriteBytes: 2 << 20},
			want: &Violation{Kind: FileSizeLimit, Detail: "file size limit exceeded"}},
		{name: "sigsys", err: exitErr(t, "kill -SYS $$"), want: &Violation{Kind: SyscallDenied, Detail: "a system call of another architecture"}},
		{name: "udp_socket", err: failed, network: NetworkNone, stderr: "bash: socket: Operation not permitted\nbash: line 1: /dev/udp/127.0.0.1/9: Operation not permitted\n",
			want: &Violation{Kind: NetworkDenied, Detail: "socket refused"}},
		{name: "unshare", err: failed, stderr: "unshare: unshare failed: Operation not permitted\n", want: &Violation{Kind: SyscallDenied, Detail: "unshare"}},
		{name: "strace", err: failed, stderr: "strace: attach: ptrace(PTRACE_SEIZE, 12): Operation not permitted\n", want: &Violation{Kind: SyscallDenied, Detail: "ptrace"}},
		{name: "io_uring", err: failed, stderr: "io_uring_setup: Operation not permitted\n", want: &Violation{Kind: SyscallDenied, Detail: "io_uring_setup"}},
		{name: "file_named_like_a_syscall", err: failed, fs: wsWrite, stderr: "rm: cannot remove 'mount.txt': Operation not permitted\n", want: nil},
		{name: "tmp_full_redirect", err: failed, fs: withTmp, stderr: "head: error writing 'standard output': No space left on device\n", want: &Violation{Kind: TmpLimit, Detail: "the private /tmp is full"}},
		{name: "tmp_full_path", err: failed, fs: withTmp, stderr: "dd: error writing '/tmp/fill': No space left on device\n", want: &Violation{Kind: TmpLimit, Detail: "the private /tmp is full"}},
		{name: "tmp_full_landlock", err: failed, fs: landlockTmp, stderr: "dd: error writing '" + landlockTmp.tmp + "/fill': No space left on device\n",
			want: &Violation{Kind: TmpLimit, Detail: "the private /tmp is full"}},
		{name: "workspace_disk_full", err: failed, fs: withTmp, stderr: "dd: error writing '" + ws + "/big': No space left on device\n", want: nil},
		{name: "tmp_unlimited", err: failed, fs: withTmp, limits: &Limits{TmpBytes: -1}, stderr: "dd: error writing '/tmp/fill': No space left on device\n", want: nil},
		{name: "private_to_another_user", err: failed, fs: asUser, stderr: "cat: " + private + ": Permission denied\n", want: &Violation{Kind: ReadDenied, Detail: private}},
		{name: "private_to_the_daemon", err: failed, fs: asDaemon, stderr: "cat: " + private + ": Permission denied\n", want: nil},
		{name: "readable_by_the_user", err: failed, fs: asUser, stderr: "bash: " + public + ": Permission denied\n", want: &Violation{Kind: WriteDenied, Detail: public}},
	} {
		a := Applied{Network: tc.network, Limits: limits}
		if a.Network == "" {
			a.Network = NetworkFull
		}
		if tc.limits != nil {
			a.Limits = tc.limits.resolved()
		}
		got := classify(tc.err, tc.stderr, a, tc.refused, tc.fs)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
		if got != nil && (len(got.Detail) > maxDetail || strings.Contains(got.Detail, ": ")) {
			t.Errorf("%s: Detail %q quotes more than a path", tc.name, got.Detail)
		}
	}
}
