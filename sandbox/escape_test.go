//go:build linux

package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// wantViolation checks that the command failed and Violation says kind
// (and detail, unless "").
func wantViolation(t *testing.T, r result, kind ViolationKind, detail string) {
	t.Helper()
	if r.err == nil {
		t.Fatalf("command succeeded, want it refused (%s); stdout %q", kind, r.stdout)
	}
	want := &Violation{Kind: kind, Detail: detail, Profile: r.cmd.Applied.Profile}
	got := r.v
	if detail == "" && got != nil {
		want.Detail = got.Detail
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Violation (-want +got):\n%s\nerr: %v\nstderr: %s", diff, r.err, r.stderr)
	}
}

// TestWriteOutsideWorkspace: writes that leave the workspace fail, are
// reported as write_denied and change nothing on the host.
func TestWriteOutsideWorkspace(t *testing.T) {
	t.Parallel()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			p := profile(t, "workspace_write", nil)

			t.Run("absolute", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				target := filepath.Join(b.outside, "new")
				r := b.run(t, t.Context(), p, "touch "+target)
				wantViolation(t, r, WriteDenied, target)
				assertNotExist(t, target)
			})
			t.Run("dotdot", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				r := b.run(t, t.Context(), p, "touch ../escape")
				wantViolation(t, r, WriteDenied, "../escape")
				assertNotExist(t, filepath.Join(filepath.Dir(b.ws), "escape"))
			})
			t.Run("symlink", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				existing := filepath.Join(b.outside, "existing")
				writeFile(t, existing, "orig")
				if err := os.Symlink(existing, filepath.Join(b.ws, "link")); err != nil {
					t.Fatal(err)
				}
				r := b.run(t, t.Context(), p, "echo pwned | tee link")
				wantViolation(t, r, WriteDenied, "link")
				if got := readFile(t, existing); got != "orig" {
					t.Errorf("file outside = %q after a write through a symlink, want %q", got, "orig")
				}
			})
			t.Run("dangling_symlink", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				target := filepath.Join(b.outside, "made")
				if err := os.Symlink(target, filepath.Join(b.ws, "link")); err != nil {
					t.Fatal(err)
				}
				r := b.run(t, t.Context(), p, "touch link")
				wantViolation(t, r, WriteDenied, "link")
				assertNotExist(t, target)
			})
			t.Run("hardlink", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				file := filepath.Join(b.outside, "file")
				writeFile(t, file, "orig")
				r := b.run(t, t.Context(), p, "ln "+file+" x")
				wantViolation(t, r, WriteDenied, file)
				// Writing to x now makes a new file in the workspace.
				if r := b.run(t, t.Context(), p, "echo pwned > x"); r.err != nil {
					t.Fatalf("writing x in the workspace: %v: %s", r.err, r.stderr)
				}
				if got := readFile(t, file); got != "orig" {
					t.Errorf("file outside = %q after a write through a hard link, want %q", got, "orig")
				}
				if got := readFile(t, filepath.Join(b.ws, "x")); got != "pwned\n" {
					t.Errorf("workspace x = %q, want %q", got, "pwned\n")
				}
			})
			t.Run("read_only_workspace", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				r := b.run(t, t.Context(), profile(t, "read_only", nil), "echo x > f")
				wantViolation(t, r, WriteDenied, "f")
				assertNotExist(t, filepath.Join(b.ws, "f"))
				offer, ok := Profile{Name: "read_only", Mode: ReadOnly, Network: NetworkNone}.Escalation(r.v)
				if !ok || offer.Name != "workspace_write" {
					t.Errorf("Escalation = %q, %v; want workspace_write", offer.Name, ok)
				}
			})
			t.Run("private_tmp", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				r := b.run(t, t.Context(), profile(t, "read_only", nil), `echo x > "$TMPDIR/f" && cat "$TMPDIR/f" && echo "$TMPDIR"`)
				if r.err != nil {
					t.Fatalf("writing the private temporary directory: %v: %s", r.err, r.stderr)
				}
				tmp := strings.Fields(r.stdout)[1]
				if b.enf == Landlock {
					assertNotExist(t, tmp) // removed by Wait
				}
			})
		})
	}
}

// TestReadOutsideRoots: a file outside the readable roots cannot be
// read and is reported as read_denied; nor are the daemon's home and
// other temporary directories visible.
func TestReadOutsideRoots(t *testing.T) {
	t.Parallel()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			secret := filepath.Join(b.outside, "secret")
			writeFile(t, secret, "s3cr3t")
			r := b.run(t, t.Context(), profile(t, "workspace_write", nil), "cat "+secret)
			wantViolation(t, r, ReadDenied, secret)
			if strings.Contains(r.stdout, "s3cr3t") {
				t.Errorf("the secret was read: %q", r.stdout)
			}
			r = b.run(t, t.Context(), profile(t, "workspace_write", nil), "ls /root")
			wantViolation(t, r, ReadDenied, "/root")

			// A read root makes it readable.
			p := profile(t, "read_only", nil)
			p.ReadRoots = []string{b.outside}
			if r := b.run(t, t.Context(), p, "cat "+secret); r.err != nil || r.stdout != "s3cr3t" {
				t.Errorf("reading a read root: %q, %v: %s", r.stdout, r.err, r.stderr)
			}
		})
	}
}

// TestNetwork: with network none a loopback listener on the host is
// unreachable (network_denied); with network full it is reached.
func TestNetwork(t *testing.T) {
	t.Parallel()
	ln := listen(t, "tcp4", "127.0.0.1:0")
	script := fmt.Sprintf("echo hi > /dev/tcp/127.0.0.1/%d", ln.Addr().(*net.TCPAddr).Port)
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			p := profile(t, "workspace_write", nil)
			r := b.run(t, t.Context(), p, script)
			wantViolation(t, r, NetworkDenied, "")
			offer, ok := p.Escalation(r.v)
			if !ok || offer.Name != "workspace_write+network" || offer.Network != NetworkFull || offer.Mode != WorkspaceWrite {
				t.Errorf("Escalation = %+v, %v; want workspace_write+network", offer, ok)
			}

			if r := b.run(t, t.Context(), offer, script); r.err != nil {
				t.Errorf("connecting with network full: %v: %s", r.err, r.stderr)
			}
		})
	}
}

// TestForkBomb: a command forking without end is held to its process
// limit, reported as process_limit, and nothing of it is left.
func TestForkBomb(t *testing.T) {
	t.Parallel()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			// The deadline only bounds a broken sandbox: the bomb ends when
			// dash cannot fork.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			p := profile(t, "workspace_write", func(l *Limits) { l.Processes = 32 })
			c, err := b.sb.Command(ctx, p, b.spec("sh", "-c", `while :; do sleep 1000 & done`))
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			c.Stderr = &stderr
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			cg := cgroupOf(c)
			err = c.Wait()
			assertNothingLeft(t, c, cg)
			wantViolation(t, result{cmd: c, err: err, stderr: stderr.String(), v: c.Violation(err, []byte(stderr.String()))}, ProcessLimit, "")
			if ctx.Err() != nil {
				t.Errorf("the fork bomb ran until the deadline")
			}
			if c.pidsMax == 0 && cg != "" {
				t.Errorf("pids.events counted no refused fork")
			}
		})
	}
}

// TestFileSizeLimit: writing 10 GB with a 1 MiB file limit stops at
// 1 MiB and is reported as file_size_limit.
func TestFileSizeLimit(t *testing.T) {
	t.Parallel()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			p := profile(t, "workspace_write", func(l *Limits) { l.FileBytes = 1 << 20 })
			r := b.run(t, t.Context(), p, "head -c 10G /dev/zero > big")
			wantViolation(t, r, FileSizeLimit, "")
			fi, err := os.Stat(filepath.Join(b.ws, "big"))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() > 1<<20 {
				t.Errorf("big is %d bytes, want at most 1 MiB", fi.Size())
			}
		})
	}
}

// TestCPULimit: a busy loop with a one-second CPU limit is stopped and
// reported as cpu_limit.
func TestCPULimit(t *testing.T) {
	t.Parallel()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			p := profile(t, "workspace_write", func(l *Limits) { l.CPUSeconds = 1 })
			r := b.run(t, t.Context(), p, "while :; do :; done")
			wantViolation(t, r, CPULimit, "")
			if r.v.Limit() != true {
				t.Errorf("cpu_limit: Limit() = false")
			}
			if _, ok := p.Escalation(r.v); ok {
				t.Errorf("a limit offered an escalation")
			}
		})
	}
}

// TestMemoryLimit: allocating beyond the address-space limit fails and
// is reported as memory_limit.
func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 to allocate with")
	}
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			p := profile(t, "workspace_write", func(l *Limits) { l.MemoryBytes = 256 << 20 })
			r := b.run(t, t.Context(), p, `/usr/bin/python3 -c 'x = bytearray(1 << 30)'`)
			wantViolation(t, r, MemoryLimit, "")
		})
	}
}

// TestIgnoresSIGTERM: cancelling the context kills a command that
// ignores SIGTERM, with its whole group, and Wait returns.
func TestIgnoresSIGTERM(t *testing.T) {
	t.Parallel()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			arg := sleepArg(t)
			c, err := b.sb.Command(ctx, profile(t, "workspace_write", nil),
				b.spec("bash", "-c", `trap '' TERM; sleep $1 & setsid sleep $1 & echo ready; while :; do :; done`, "bash", arg))
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			cg := cgroupOf(c)
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || line != "ready\n" {
				t.Fatalf("reading ready: %q, %v", line, err)
			}
			cancel()
			if err := c.Wait(); err == nil {
				t.Errorf("Wait after cancel = nil, want an error")
			}
			assertNothingLeft(t, c, cg)
			assertNoSleep(t, arg)
		})
	}
}

// TestNothingLeftRunning: what a command leaves behind, even in a new
// session, is killed by Wait.
func TestNothingLeftRunning(t *testing.T) {
	t.Parallel()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			arg := sleepArg(t)
			script := `sleep ` + arg + ` & (setsid sleep ` + arg + ` > /dev/null 2>&1 < /dev/null &) ; echo started`
			if enf == Landlock && os.Geteuid() != 0 {
				// Without a cgroup (not root) a process that leaves the
				// session and its parent outlives Landlock's Wait, as
				// the package says.
				script = `sleep ` + arg + ` & echo started`
			}
			r := b.run(t, t.Context(), profile(t, "workspace_write", nil), script)
			if r.err != nil || r.stdout != "started\n" {
				t.Fatalf("%q, %v: %s", r.stdout, r.err, r.stderr)
			}
			assertNoSleep(t, arg)
		})
	}
}

// TestEnvironment: the command sees exactly the given environment (and
// the private TMPDIR), nothing of the daemon's or the helper's.
func TestEnvironment(t *testing.T) {
	t.Parallel()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			spec := b.spec("env")
			spec.Env = append(spec.Env, "GIVEN=1")
			c, err := b.sb.Command(t.Context(), profile(t, "read_only", nil), spec)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			c.Stdout = &out
			if err := c.Run(); err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, kv := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				// bwrap's --chdir sets PWD, as a shell would.
				if k, _, _ := strings.Cut(kv, "="); k != "PWD" {
					keys = append(keys, k)
				}
			}
			if diff := cmp.Diff([]string{"GIVEN", "LANG", "PATH", "TMPDIR"}, sorted(keys)); diff != "" {
				t.Errorf("environment keys (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDaemonUnreachable: a command can neither read the daemon's
// environment through /proc nor signal it.
func TestDaemonUnreachable(t *testing.T) {
	t.Parallel()
	pid := os.Getpid()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			r := b.run(t, t.Context(), profile(t, "workspace_write", nil), fmt.Sprintf("cat /proc/%d/environ", pid))
			if r.err == nil || r.stdout != "" {
				t.Errorf("read the daemon's environment: %q, %v", r.stdout, r.err)
			}
			r = b.run(t, t.Context(), profile(t, "full_access", nil), fmt.Sprintf("kill -0 %d", pid))
			if r.err == nil {
				t.Errorf("signalled the daemon")
			}
		})
	}
}
