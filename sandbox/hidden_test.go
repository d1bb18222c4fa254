//go:build linux

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/testenv"
)

// The secrets the hidden-path tests plant.
const (
	tokenSecret  = "art_hidden0123456789abcdef"
	configSecret = "api_key: sk-hidden-config"
	dbSecret     = "SQLite format 3 hidden-db"
)

// hiding gives b a Sandbox of its enforcer that hides paths.
func (b *testBundle) hiding(t *testing.T, paths ...string) {
	t.Helper()
	b.sb = New(Options{NoBubblewrap: b.enf == Landlock, Hidden: paths})
	if got, err := b.sb.Enforcer(); err != nil || got != b.enf {
		testenv.Missing(t, "wanted the %s enforcer, the host offers %s (%v)", b.enf, got, err)
	}
}

// plantRuntime lays out a runtime's files in dir as the default layout
// has them: agentrt.yaml beside the data directory, which holds the
// token and the database. It returns what to hide.
func plantRuntime(t *testing.T, dir string) []string {
	t.Helper()
	data := filepath.Join(dir, ".agentrt")
	if err := os.MkdirAll(filepath.Join(data, "outputs"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "agentrt.yaml"), configSecret)
	writeFile(t, filepath.Join(data, "api-token"), tokenSecret)
	writeFile(t, filepath.Join(data, "agentrt.db"), dbSecret)
	return []string{filepath.Join(dir, "agentrt.yaml"), data}
}

// assertNoSecret checks that nothing the command printed holds a
// planted secret.
func assertNoSecret(t *testing.T, r result) {
	t.Helper()
	for _, s := range []string{tokenSecret, configSecret, dbSecret} {
		if strings.Contains(r.stdout, s) || strings.Contains(r.stderr, s) {
			t.Errorf("the sandboxed command read %q:\nstdout: %s\nstderr: %s", s, r.stdout, r.stderr)
		}
	}
}

// assertPlanted checks that the planted files are as planted on the
// host.
func assertPlanted(t *testing.T, dir string) {
	t.Helper()
	for path, want := range map[string]string{
		filepath.Join(dir, "agentrt.yaml"):           configSecret,
		filepath.Join(dir, ".agentrt", "api-token"):  tokenSecret,
		filepath.Join(dir, ".agentrt", "agentrt.db"): dbSecret,
	} {
		if got := readFile(t, path); got != want {
			t.Errorf("%s = %q on the host, want it untouched", path, got)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".agentrt", "planted")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was made in the hidden data directory (%v)", err)
	}
}

// TestHiddenPaths: a hidden file or directory is neither readable nor
// writable, whichever root holds it, through any name, and the rest of
// the root works as before.
func TestHiddenPaths(t *testing.T) {
	t.Parallel()
	// Every way to read the planted secrets; none may print one.
	const readAll = `for f in agentrt.yaml .agentrt/api-token .agentrt/agentrt.db link/api-token ./.agentrt/../agentrt.yaml; do cat "$f"; done
ls -la .agentrt; grep -r art_ . ; cat /proc/self/root"$PWD"/.agentrt/api-token; true`
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()

			t.Run("read_root", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				b.hiding(t, plantRuntime(t, b.outside)...)
				writeFile(t, filepath.Join(b.outside, "tool.sh"), "echo tool")
				if err := os.Symlink(filepath.Join(b.outside, ".agentrt"), filepath.Join(b.outside, "link")); err != nil {
					t.Fatal(err)
				}
				p := profile(t, "read_only", nil)
				p.ReadRoots = []string{b.outside}
				r := b.run(t, t.Context(), p, "cd "+b.outside+"\n"+readAll+"\ncat tool.sh")
				assertNoSecret(t, r)
				if r.err != nil || !strings.HasSuffix(r.stdout, "echo tool") {
					t.Errorf("reading beside the hidden paths: %q, %v: %s", r.stdout, r.err, r.stderr)
				}
			})

			t.Run("workspace", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				b.hiding(t, plantRuntime(t, b.ws)...)
				if err := os.Symlink(".agentrt", filepath.Join(b.ws, "link")); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(b.ws, "notes.txt"), "notes")
				if err := os.Mkdir(filepath.Join(b.ws, "src"), 0o755); err != nil {
					t.Fatal(err)
				}
				p := profile(t, "workspace_write", nil)
				r := b.run(t, t.Context(), p, readAll+`
echo pwned > agentrt.yaml; echo pwned > .agentrt/planted; echo pwned > link/planted
rm -rf .agentrt agentrt.yaml; mv .agentrt moved; mv agentrt.yaml moved.yaml
cat notes.txt && echo more >> notes.txt && echo new > src/new.txt && mkdir -p src/a/b`)
				assertNoSecret(t, r)
				assertPlanted(t, b.ws)
				if !strings.HasSuffix(r.stdout, "notes") {
					t.Errorf("reading a file beside the hidden ones: %q: %s", r.stdout, r.stderr)
				}
				if got := readFile(t, filepath.Join(b.ws, "notes.txt")); got != "notesmore\n" {
					t.Errorf("notes.txt = %q, want the append to land", got)
				}
				if got := readFile(t, filepath.Join(b.ws, "src", "new.txt")); got != "new\n" {
					t.Errorf("src/new.txt = %q, want the write to land", got)
				}
			})

			t.Run("moving_a_parent", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				deep := filepath.Join(b.ws, "a", "b")
				if err := os.MkdirAll(deep, 0o755); err != nil {
					t.Fatal(err)
				}
				b.hiding(t, plantRuntime(t, deep)...)
				// Moving a directory above a hidden path away would free
				// its name on the host for a planted token or config.
				r := b.run(t, t.Context(), profile(t, "workspace_write", nil), `mv a elsewhere; mv a/b a/c; rm -rf a
mkdir -p a/b/.agentrt && echo planted > a/b/.agentrt/api-token; true`)
				assertNoSecret(t, r)
				assertPlanted(t, deep)
			})

			t.Run("system_directory", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				b.hiding(t, "/etc/passwd")
				r := b.run(t, t.Context(), profile(t, "read_only", nil), "cat /etc/passwd; cat /etc/group")
				if strings.Contains(r.stdout, "root:x:0:0") {
					t.Errorf("/etc/passwd was readable: %q", r.stdout)
				}
				if !strings.Contains(r.stdout, "root:x:0:") {
					t.Errorf("/etc/group was not readable beside it: %q: %s", r.stdout, r.stderr)
				}
			})

			t.Run("no_violation", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				// Hidden where a root holds it, and where none does.
				b.hiding(t, append(plantRuntime(t, b.ws), b.outside)...)
				writeFile(t, filepath.Join(b.outside, "api-token"), tokenSecret)
				for _, script := range []string{"cat .agentrt/api-token", "cat " + filepath.Join(b.outside, "api-token")} {
					r := b.run(t, t.Context(), profile(t, "workspace_write", nil), script)
					assertNoSecret(t, r)
					if r.err == nil || r.v != nil {
						t.Errorf("%s: err %v, violation %+v; want a plain failure, no escalation to offer", script, r.err, r.v)
					}
				}
			})

			t.Run("working_directory", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				hidden := plantRuntime(t, b.ws)
				b.hiding(t, hidden...)
				spec := b.spec("cat", "api-token")
				spec.Dir = hidden[1]
				if _, err := b.sb.Command(t.Context(), profile(t, "workspace_write", nil), spec); !errors.Is(err, ErrUnenforceable) {
					t.Errorf("Command in the hidden data directory: %v, want ErrUnenforceable", err)
				}
				spec.Workspace = hidden[1]
				if _, err := b.sb.Command(t.Context(), profile(t, "workspace_write", nil), spec); !errors.Is(err, ErrUnenforceable) {
					t.Errorf("Command with the hidden data directory as workspace: %v, want ErrUnenforceable", err)
				}
			})

			t.Run("full_access", func(t *testing.T) {
				t.Parallel()
				b := setup(t, enf)
				b.hiding(t, plantRuntime(t, b.ws)...)
				r := b.run(t, t.Context(), profile(t, "full_access", nil), "cat .agentrt/api-token")
				if r.err != nil || r.stdout != tokenSecret {
					t.Errorf("full_access read %q, %v; want it to see the whole file system, hidden paths too", r.stdout, r.err)
				}
			})
		})
	}
}

// TestHideLayout: roots inside a hidden path grant nothing; a hidden
// path a root holds is covered after the roots are mounted, and the
// directories between it and a writable root are pinned as mount
// points; Landlock grants the roots' other entries instead.
func TestHideLayout(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, cfg := filepath.Join(dir, "ws"), filepath.Join(dir, "cfg")
	for _, d := range []string{filepath.Join(ws, "a", "b", "data", "inner"), filepath.Join(ws, "a", "sib"), filepath.Join(cfg, "tools")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(ws, "top.txt"), filepath.Join(ws, "a", "b", "x.txt"), filepath.Join(cfg, "agentrt.yaml"), filepath.Join(cfg, "tools", "t.sh")} {
		writeFile(t, f, "x")
	}
	if err := os.Symlink("a", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(ws, "a", "b", "data")
	p := profile(t, "workspace_write", nil)
	p.ReadRoots = []string{cfg, filepath.Join(data, "inner")}
	l, err := newLayout(p, Spec{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.hide([]string{filepath.Join(cfg, "agentrt.yaml"), data, filepath.Join(data, "inner"), filepath.Join(dir, "missing")}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]root{{path: cfg}}, l.ro, cmp.AllowUnexported(root{})); diff != "" {
		t.Errorf("read-only roots (-want +got):\n%s", diff)
	}
	wantHidden := []root{{path: filepath.Join(cfg, "agentrt.yaml"), file: true}, {path: data}}
	if diff := cmp.Diff(wantHidden, l.hidden, cmp.AllowUnexported(root{})); diff != "" {
		t.Errorf("hidden (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{filepath.Join(ws, "a", "b"), filepath.Join(ws, "a")}, l.pins); diff != "" {
		t.Errorf("pins (-want +got):\n%s", diff)
	}

	args := strings.Join(bwrapArgs("bwrap", l, NetworkNone, false, []string{"true"}), " ")
	for _, want := range []string{
		"--ro-bind " + cfg + " " + cfg + " --bind " + ws + " " + ws + " --bind " + ws + "/a " + ws + "/a --bind " + ws + "/a/b " + ws + "/a/b",
		"--ro-bind /dev/null " + cfg + "/agentrt.yaml --tmpfs " + data + " --remount-ro " + data,
	} {
		if !strings.Contains(args, want) {
			t.Errorf("bwrap args lack %q:\n%s", want, args)
		}
	}

	ro, rw, err := l.landlockGrants()
	if err != nil {
		t.Fatal(err)
	}
	paths := func(rs []root) []string {
		var out []string
		for _, r := range rs {
			if !slices.Contains(l.sysRoots, r.path) {
				out = append(out, r.path)
			}
		}
		slices.Sort(out)
		return out
	}
	if diff := cmp.Diff([]string{cfg + "/tools"}, paths(ro)); diff != "" {
		t.Errorf("Landlock read-only grants (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{ws + "/a/b/x.txt", ws + "/a/sib", ws + "/top.txt"}, paths(rw)); diff != "" {
		t.Errorf("Landlock writable grants (-want +got):\n%s", diff)
	}

	// A hidden system directory is covered as mounted, and not granted.
	l, err = newLayout(p, Spec{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.hide([]string{"/etc"}); err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(bwrapArgs("bwrap", l, NetworkNone, false, []string{"true"}), " "); !strings.Contains(args, "--tmpfs /etc --remount-ro /etc") {
		t.Errorf("bwrap args do not cover a hidden /etc:\n%s", args)
	}
	if ro, _, err := l.landlockGrants(); err != nil || slices.ContainsFunc(ro, func(r root) bool { return within(r.path, "/etc") }) {
		t.Errorf("Landlock grants %v, %v; want nothing of a hidden /etc", ro, err)
	}

	l, err = newLayout(p, Spec{Workspace: ws, Dir: filepath.Join(data, "inner")})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.hide([]string{data}); !errors.Is(err, ErrUnenforceable) {
		t.Errorf("hide with the working directory in a hidden path: %v, want ErrUnenforceable", err)
	}
}

// TestHiddenPathsResolved: HiddenPaths resolves the configured paths
// through their symbolic links and leaves out those that do not exist.
func TestHiddenPathsResolved(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(data, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "agentrt.yaml"), configSecret)
	sb := New(Options{Hidden: []string{filepath.Join(dir, "agentrt.yaml"), filepath.Join(dir, "link"), filepath.Join(dir, "missing")}})
	got, err := sb.HiddenPaths()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{filepath.Join(dir, "agentrt.yaml"), data}, got); diff != "" {
		t.Errorf("HiddenPaths (-want +got):\n%s", diff)
	}
	var none *Sandbox
	if got, err := none.HiddenPaths(); got != nil || err != nil {
		t.Errorf("a nil Sandbox hides %v, %v", got, err)
	}
	if _, err := New(Options{Hidden: []string{"relative"}}).HiddenPaths(); !errors.Is(err, ErrUnenforceable) {
		t.Errorf("a relative hidden path: %v, want ErrUnenforceable", err)
	}
}
