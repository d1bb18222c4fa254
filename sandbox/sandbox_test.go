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

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// hostSystemRoots returns the system directories as Applied reports them
// on this host.
func hostSystemRoots(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, d := range systemDirs {
		r, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(r); err == nil && fi.IsDir() && !withinAny(r, out) {
			out = append(out, r)
		}
	}
	return out
}

// TestApplied: Applied reports the profile as applied, and the command
// runs where it says.
func TestApplied(t *testing.T) {
	t.Parallel()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			ro, rw := filepath.Join(b.outside, "ro"), filepath.Join(b.outside, "rw")
			sub := filepath.Join(b.ws, "sub")
			for _, d := range []string{ro, rw, sub} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			p := Profile{
				Name: "custom", Mode: WorkspaceWrite, Network: NetworkFull,
				ReadRoots:  []string{ro, filepath.Join(b.outside, "missing")},
				WriteRoots: []string{rw},
				Limits:     Limits{Processes: 64, FileBytes: -1},
			}
			spec := b.spec("sh", "-c", `pwd; touch "$1/w"; echo "$TMPDIR"`, "sh", rw)
			spec.Dir = sub
			c, err := b.sb.Command(t.Context(), p, spec)
			if err != nil {
				t.Fatal(err)
			}
			want := Applied{
				Profile: "custom", Mode: WorkspaceWrite, Network: NetworkFull, Enforcer: enf,
				Cwd:        sub,
				ReadRoots:  append(hostSystemRoots(t), ro),
				WriteRoots: []string{b.ws, rw},
				Limits:     Limits{Processes: 64, MemoryBytes: 4 << 30, FileBytes: -1, CPUSeconds: 600, TmpBytes: 256 << 20, WriteBytes: -1},
			}
			if diff := cmp.Diff(want, c.Applied); diff != "" {
				t.Errorf("Applied (-want +got):\n%s", diff)
			}
			var out strings.Builder
			c.Stdout = &out
			if err := c.Run(); err != nil {
				t.Fatal(err)
			}
			if got := strings.Fields(out.String())[0]; got != sub {
				t.Errorf("pwd = %q, want %q", got, sub)
			}
			if _, err := os.Stat(filepath.Join(rw, "w")); err != nil {
				t.Errorf("write root not written: %v", err)
			}

			full, _ := Builtin("full_access")
			c, err = b.sb.Command(t.Context(), full, b.spec("true"))
			if err != nil {
				t.Fatal(err)
			}
			fullLimits := DefaultLimits()
			fullLimits.TmpBytes = -1 // no private /tmp
			want = Applied{
				Profile: "full_access", Mode: FullAccess, Network: NetworkFull, Enforcer: enf,
				Cwd: b.ws, WriteRoots: []string{"/"}, Limits: fullLimits,
			}
			if diff := cmp.Diff(want, c.Applied); diff != "" {
				t.Errorf("full_access Applied (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFailClosed: what cannot be enforced is an error, never an
// unsandboxed run.
func TestFailClosed(t *testing.T) {
	t.Parallel()
	rw, _ := Builtin("workspace_write")
	ws := t.TempDir()
	spec := Spec{Argv: []string{"true"}, Workspace: ws, Env: []string{"PATH=/usr/bin:/bin"}}

	t.Run("no_enforcer", func(t *testing.T) {
		t.Parallel()
		s := New(Options{Bubblewrap: "/nonexistent", noLandlock: true})
		if _, err := s.Enforcer(); !errors.Is(err, ErrUnenforceable) {
			t.Errorf("Enforcer error = %v, want ErrUnenforceable", err)
		}
		if _, err := s.Command(t.Context(), rw, spec); !errors.Is(err, ErrUnenforceable) {
			t.Errorf("Command error = %v, want ErrUnenforceable", err)
		}
	})
	t.Run("bubblewrap_missing_falls_back", func(t *testing.T) {
		t.Parallel()
		s := New(Options{Bubblewrap: "/nonexistent"})
		if landlockABI() == 0 {
			t.Skip("no Landlock to fall back to")
		}
		if got, err := s.Enforcer(); got != Landlock || err != nil {
			t.Errorf("Enforcer = %q, %v; want landlock", got, err)
		}
	})
	t.Run("bubblewrap_unusable", func(t *testing.T) {
		t.Parallel()
		s := New(Options{Bubblewrap: "/bin/false", noLandlock: true})
		if _, err := s.Command(t.Context(), rw, spec); !errors.Is(err, ErrUnenforceable) {
			t.Errorf("Command error = %v, want ErrUnenforceable", err)
		}
	})
	t.Run("helper_without_main", func(t *testing.T) {
		t.Parallel()
		s := New(Options{Helper: "/bin/true"})
		if _, err := s.Command(t.Context(), rw, spec); !errors.Is(err, ErrUnenforceable) {
			t.Errorf("Command error = %v, want ErrUnenforceable", err)
		}
	})
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			for name, tc := range map[string]struct {
				p    Profile
				spec Spec
			}{
				"workspace_missing":  {rw, Spec{Argv: []string{"true"}, Workspace: filepath.Join(b.ws, "missing")}},
				"workspace_relative": {rw, Spec{Argv: []string{"true"}, Workspace: "ws"}},
				"cwd_outside_roots":  {rw, Spec{Argv: []string{"true"}, Workspace: b.ws, Dir: b.outside}},
				"cwd_missing":        {rw, Spec{Argv: []string{"true"}, Workspace: b.ws, Dir: filepath.Join(b.ws, "missing")}},
				"no_argv":            {rw, Spec{Workspace: b.ws}},
				"unknown_mode":       {Profile{Name: "x", Mode: "everything", Network: NetworkNone}, b.spec("true")},
				"unknown_network":    {Profile{Name: "x", Mode: ReadOnly}, b.spec("true")},
				"relative_root":      {Profile{Name: "x", Mode: ReadOnly, Network: NetworkNone, ReadRoots: []string{"etc"}}, b.spec("true")},
			} {
				if _, err := b.sb.Command(t.Context(), tc.p, tc.spec); !errors.Is(err, ErrUnenforceable) {
					t.Errorf("%s: Command error = %v, want ErrUnenforceable", name, err)
				}
			}
		})
	}
}

// TestHelperFailsClosed: a command started through exec.Cmd's Start,
// bypassing Cmd.Start and what it sets up, does not run.
func TestHelperFailsClosed(t *testing.T) {
	t.Parallel()
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			marker := filepath.Join(b.ws, "ran")
			c, err := b.sb.Command(t.Context(), profile(t, "workspace_write", nil), b.spec("touch", marker))
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			c.Stderr = &stderr
			if err := c.Cmd.Start(); err != nil {
				t.Fatal(err)
			}
			err = c.Cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != helperExit {
				t.Errorf("Run error = %v, want exit status %d; stderr %q", err, helperExit, stderr.String())
			}
			assertNotExist(t, marker)
		})
	}
}

// TestLoaderEnvironment: the command's environment reaches neither the
// helper nor bwrap, which run before the sandbox exists: LD_PRELOAD
// there would be an escape. LD_DEBUG shows which programs the dynamic
// loader saw it in.
func TestLoaderEnvironment(t *testing.T) {
	t.Parallel()
	helper, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, enf := range enforcers {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			b := setup(t, enf)
			spec := b.spec("true")
			spec.Env = append(spec.Env, "LD_DEBUG=files")
			c, err := b.sb.Command(t.Context(), profile(t, "workspace_write", nil), spec)
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			c.Stderr = &stderr
			if err := c.Run(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stderr.String(), "needed by") {
				t.Skipf("the dynamic loader ignored LD_DEBUG for true: %q", stderr.String())
			}
			for _, prog := range []string{helper, helperArg0, "bwrap"} {
				if strings.Contains(stderr.String(), prog+" [0]") {
					t.Errorf("the loader ran %s with the command's environment:\n%s", prog, stderr.String())
				}
			}
		})
	}
}
