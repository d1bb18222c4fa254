//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/testenv"
)

// needRoot skips a test of what the sandbox does for a root daemon, or
// fails it in CI, which runs as root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "the daemon is not root: this test is about a root daemon's sandbox")
	}
}

// TestHostUser: under a root daemon a sandboxed process, bwrap's own
// included, is never root on the host, whatever it is in its user
// namespace.
func TestHostUser(t *testing.T) {
	t.Parallel()
	needRoot(t)
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			c, err := b.sb.Command(t.Context(), profile(t, "workspace_write", nil), b.spec("sh", "-c", "echo ready; read x; exit 0"))
			if err != nil {
				t.Fatal(err)
			}
			stdin, err := c.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := c.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
				t.Fatalf("reading ready: %q, %v", line, err)
			}
			pids, err := cgroupPids(cgroupOf(c))
			if err != nil || len(pids) == 0 {
				t.Fatalf("the command's cgroup holds %v, %v", pids, err)
			}
			want := strconv.Itoa(DefaultUser)
			for _, pid := range pids {
				status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
				if err != nil {
					t.Fatal(err)
				}
				for line := range strings.Lines(string(status)) {
					k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
					if k != "Uid" && k != "Gid" {
						continue
					}
					// Real, effective, saved and file system ids.
					for _, id := range strings.Fields(v) {
						if id != want {
							t.Errorf("process %d: %s %s, want every id %s", pid, k, strings.TrimSpace(v), want)
							break
						}
					}
				}
			}
			_ = stdin.Close()
			if err := c.Wait(); err != nil {
				t.Errorf("Wait: %v", err)
			}
		})
	}
}

// TestWorkspaceAsUser: run as an unprivileged user, a command still
// writes the root daemon's workspace: it changes the daemon's private
// files and makes new ones, which are the daemon's on disk, so the daemon
// reads and removes them. It cannot make a set-user-ID file there.
func TestWorkspaceAsUser(t *testing.T) {
	t.Parallel()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			own := filepath.Join(b.ws, "own")
			if err := os.WriteFile(own, []byte("daemon\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			p := profile(t, "workspace_write", nil)
			r := b.run(t, t.Context(), p, `echo sandbox >> own && mkdir -p dir/sub && echo new > dir/sub/file && test -O own && ls -l own`)
			if r.err != nil {
				t.Fatalf("writing the workspace: %v: %s", r.err, r.stderr)
			}
			if got := readFile(t, own); got != "daemon\nsandbox\n" {
				t.Errorf("own = %q, want the daemon's line and the sandbox's", got)
			}
			made := filepath.Join(b.ws, "dir", "sub", "file")
			if got := readFile(t, made); got != "new\n" {
				t.Errorf("the made file = %q, want %q", got, "new\n")
			}
			for _, f := range []string{own, made} {
				fi, err := os.Stat(f)
				if err != nil {
					t.Fatal(err)
				}
				if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid() {
					t.Errorf("%s is owned by %d:%d on disk, want the daemon's %d:%d", f, st.Uid, st.Gid, os.Geteuid(), os.Getegid())
				}
			}
			if err := os.RemoveAll(filepath.Join(b.ws, "dir")); err != nil {
				t.Errorf("the daemon cannot remove what the command made: %v", err)
			}

			r = b.run(t, t.Context(), p, `echo 'echo root' > s && chmod 4755 s`)
			if r.err == nil {
				t.Errorf("chmod 4755 succeeded")
			}
			if fi, err := os.Stat(filepath.Join(b.ws, "s")); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
				t.Errorf("the command made a set-user-ID file: %v", fi.Mode())
			}
		})
	}
}

// TestReadShadow: /etc/shadow, readable only by root, is not readable
// in the sandbox of a root daemon (read_denied), nor, by its own
// permissions, in a daemon's that is not root (no violation).
func TestReadShadow(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/etc/shadow"); err != nil {
		t.Skipf("no /etc/shadow: %v", err)
	}
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			r := b.run(t, t.Context(), profile(t, "workspace_write", nil), "cat /etc/shadow")
			if os.Geteuid() == 0 {
				wantViolation(t, r, ReadDenied, "/etc/shadow")
			} else if r.err == nil || r.v != nil {
				t.Errorf("reading /etc/shadow as the daemon's user: %v, violation %+v; want a failure that is not the sandbox's", r.err, r.v)
			}
			if r.stdout != "" {
				t.Errorf("read /etc/shadow: %q", r.stdout)
			}
		})
	}
}

// TestSyscallsRefused: the seccomp filter refuses tracing a sibling,
// new user namespaces (and so mounting from one: without capabilities a
// direct mount was refused before) and io_uring (syscall_denied).
func TestSyscallsRefused(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name, probe string
				argv        []string
				detail      string
			}{
				{"ptrace_sibling", "ptrace", []string{"bash", "-c", `sleep 1000 & "$0" $!; s=$?; kill $!; exit $s`, self}, "ptrace"},
				{"mount", "mount", []string{self}, "clone"},
				{"unshare_user", "", []string{"unshare", "--user", "true"}, "unshare"},
				{"io_uring_setup", "io_uring", []string{self}, "io_uring_setup"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					if _, err := exec.LookPath(tc.argv[0]); err != nil {
						t.Skipf("no %s: %v", tc.argv[0], err)
					}
					b := setup(t, enf)
					p, spec := b.probeSpec(t, profile(t, "workspace_write", nil), tc.probe)
					spec.Argv = tc.argv
					r := b.runSpec(t, t.Context(), p, spec)
					wantViolation(t, r, SyscallDenied, tc.detail)
					if r.stdout != "" {
						t.Errorf("stdout %q: it was allowed", r.stdout)
					}
				})
			}
		})
	}
}

// TestNetworkNoneSockets: with network none no UDP datagram leaves, not
// even for the loopback, and under Landlock, which cannot confine them,
// no Unix socket connects to the host's.
func TestNetworkNoneSockets(t *testing.T) {
	t.Parallel()
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = udp.Close() })
	sock := filepath.Join(t.TempDir(), "sock")
	listen(t, "unix", sock)
	script := fmt.Sprintf("echo hi > /dev/udp/127.0.0.1/%d", udp.LocalAddr().(*net.UDPAddr).Port)
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			t.Run("udp", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				r := b.run(t, t.Context(), profile(t, "workspace_write", nil), script)
				wantViolation(t, r, NetworkDenied, "socket refused")
			})
			if enf != Landlock {
				return
			}
			t.Run("unix", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				p, spec := b.probeSpec(t, profile(t, "workspace_write", nil), "unix", sock)
				r := b.runSpec(t, t.Context(), p, spec)
				if r.err == nil || r.stdout != "" {
					t.Errorf("connected to the host's Unix socket: %q, %v", r.stdout, r.err)
				}
				wantViolation(t, r, NetworkDenied, "socket refused")
			})
		})
	}
}

// TestTmpLimit: the private /tmp holds at most Limits.TmpBytes
// (tmp_limit).
func TestTmpLimit(t *testing.T) {
	t.Parallel()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			p := profile(t, "workspace_write", func(l *Limits) { l.TmpBytes = 1 << 20 })
			if r := b.run(t, t.Context(), p, `head -c 512K /dev/zero > "$TMPDIR/half"`); r.err != nil {
				t.Fatalf("writing half the cap: %v: %s", r.err, r.stderr)
			}
			r := b.run(t, t.Context(), p, `head -c 2M /dev/zero > "$TMPDIR/fill"`)
			wantViolation(t, r, TmpLimit, "")
			if r.v.Limit() != true {
				t.Errorf("tmp_limit: Limit() = false")
			}
		})
	}
}

// TestWriteLimit: the writable roots grow by at most Limits.WriteBytes
// in one command, in one file or many (write_limit).
func TestWriteLimit(t *testing.T) {
	t.Parallel()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			p := profile(t, "workspace_write", func(l *Limits) { l.WriteBytes = 1 << 20 })
			t.Run("within", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				writeFile(t, filepath.Join(b.ws, "old"), strings.Repeat("x", 2<<20))
				if r := b.run(t, t.Context(), p, "head -c 512K /dev/zero > a && rm old"); r.err != nil || r.v != nil {
					t.Errorf("growing by half the cap: %v, %v: %s", r.err, r.v, r.stderr)
				}
			})
			t.Run("one_file", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				r := b.run(t, t.Context(), p, "head -c 2M /dev/zero > big")
				wantViolation(t, r, WriteLimit, "")
				if fi, err := os.Stat(filepath.Join(b.ws, "big")); err != nil || fi.Size() > 1<<20 {
					t.Errorf("big: %v, %v; want at most 1 MiB", fi, err)
				}
			})
			t.Run("many_files", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				r := b.run(t, t.Context(), p, "for i in 1 2 3; do head -c 600K /dev/zero > f$i; done")
				wantViolation(t, r, WriteLimit, "")
				if !errors.Is(r.err, ErrLimitExceeded) {
					t.Errorf("Wait error = %v, want ErrLimitExceeded", r.err)
				}
			})
		})
	}
}

// TestUnsearchable: under Landlock a root daemon covers with a tmpfs each
// directory on the way to a root that the sandbox user cannot search —
// the shallowest only — seeing the daemon's files in idmapped roots as
// the user's.
func TestUnsearchable(t *testing.T) {
	t.Parallel()
	needRoot(t)
	base := t.TempDir()
	mk := func(rel string, mode os.FileMode, uid int) string {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := os.Chmod(filepath.Dir(base), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	closed := mk("closed", 0o700, 0)
	ws := mk("closed/ws", 0o755, 0)
	mk("open", 0o755, 0)
	others := mk("open/others", 0o700, 1234)
	mine := mk("open/mine", 0o755, DefaultUser)
	mk("closed/ws/private", 0o700, 0)
	theirs := mk("closed/ws/theirs", 0o700, 1234)
	roots := []string{ws, filepath.Join(others, "x"), filepath.Join(mine, "y"), filepath.Join(ws, "private", "z"), filepath.Join(theirs, "t")}
	got := unsearchable(slices.Clone(roots), roots, Options{}.user())
	want := []string{closed, others, theirs}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unsearchable (-want +got):\n%s", diff)
	}
}
