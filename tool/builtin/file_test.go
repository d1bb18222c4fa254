package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

// escapes are paths that lead outside the workspace, given a bundle whose
// workspace holds the directory "sub", the symlinks "abs-link" (absolute target) and
// "rel-link" (relative target) to the secret file and "out-dir", a
// symlink to the directory above the workspace.
func (b *testBundle) escapes(t *testing.T) map[string]string {
	t.Helper()
	if err := os.Mkdir(filepath.Join(b.ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"abs-link": b.secret,
		"rel-link": "../secret.txt",
		"out-dir":  b.outer,
	} {
		if err := os.Symlink(target, filepath.Join(b.ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	return map[string]string{
		"traversal":              "../secret.txt",
		"nested traversal":       "sub/../../secret.txt",
		"absolute outside":       b.secret,
		"absolute symlink":       "abs-link",
		"relative symlink":       "rel-link",
		"through symlinked dir":  "out-dir/secret.txt",
		"absolute inside root":   filepath.Join(b.ws, "in.txt"),
		"traversal back into ws": "../ws/in.txt",
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()

	t.Run("reads", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.writeWS(t, "docs/readme.md", "# hello\nworld\n")
		res := bundle.call(t, builtin.ReadFileName, `{"path":"docs/readme.md"}`)
		if diff := cmp.Diff(&tool.Result{Content: "# hello\nworld\n"}, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})

	t.Run("symlink inside the root", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.writeWS(t, "real.txt", "real")
		if err := os.Symlink("real.txt", filepath.Join(bundle.ws, "alias.txt")); err != nil {
			t.Fatal(err)
		}
		res := bundle.call(t, builtin.ReadFileName, `{"path":"alias.txt"}`)
		if diff := cmp.Diff(&tool.Result{Content: "real"}, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})

	t.Run("max_bytes truncates", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.writeWS(t, "a.txt", "0123456789")
		res := bundle.call(t, builtin.ReadFileName, `{"path":"a.txt","max_bytes":4}`)
		want := "0123\n[truncated: showing the first 4 of 10 bytes; pass a larger max_bytes (up to 1048576) to see more]"
		if diff := cmp.Diff(&tool.Result{Content: want}, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})

	t.Run("truncation keeps runes whole", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.writeWS(t, "u.txt", "aé€x") // 1 + 2 + 3 + 1 bytes
		res := bundle.call(t, builtin.ReadFileName, `{"path":"u.txt","max_bytes":5}`)
		if got, _, _ := strings.Cut(res.Content, "\n"); got != "aé" {
			t.Errorf("truncated content = %q, want %q", got, "aé")
		}
	})

	t.Run("default cap", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.writeWS(t, "big.txt", strings.Repeat("x", builtin.DefaultReadBytes+100))
		res := bundle.call(t, builtin.ReadFileName, `{"path":"big.txt"}`)
		if res.IsError || !strings.HasPrefix(res.Content, strings.Repeat("x", builtin.DefaultReadBytes)+"\n[truncated: showing the first 262144 of 262244 bytes") {
			t.Errorf("result starts %q…, want the first 256 KiB and a truncation note", res.Content[:min(40, len(res.Content))])
		}
	})

	t.Run("max_bytes above the limit is refused by the schema", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		var inErr *tool.InputError
		err := bundle.reg.Validate(builtin.ReadFileName, json.RawMessage(`{"path":"a","max_bytes":99999999}`))
		if !errors.As(err, &inErr) {
			t.Errorf("Validate = %v, want *InputError", err)
		}
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.writeWS(t, "dir/x", "")
		bundle.writeWS(t, "bin", "ab\x00cd")
		tests := map[string]struct{ input, want string }{
			"missing":   {`{"path":"nope.txt"}`, "read_file: open nope.txt: no such file or directory"},
			"directory": {`{"path":"dir"}`, "read_file: dir is a directory; use list_dir"},
			"binary":    {`{"path":"bin"}`, "read_file: bin is a binary file (5 bytes)"},
		}
		for name, tt := range tests {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				wantError(t, bundle.call(t, builtin.ReadFileName, tt.input), tt.want)
			})
		}
	})

	t.Run("escapes are refused", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.writeWS(t, "in.txt", "inside")
		for name, p := range bundle.escapes(t) {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				input, _ := json.Marshal(map[string]string{"path": p})
				res := bundle.call(t, builtin.ReadFileName, string(input))
				wantError(t, res, fmt.Sprintf("read_file: open %s: path escapes from parent", p))
				if strings.Contains(res.Content, "top secret") {
					t.Errorf("result leaks the secret: %q", res.Content)
				}
			})
		}
	})
}

func TestListDir(t *testing.T) {
	t.Parallel()

	t.Run("lists", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.writeWS(t, "b.txt", "12345")
		bundle.writeWS(t, "a/inner.txt", "x")
		if err := os.Symlink("b.txt", filepath.Join(bundle.ws, "c-link")); err != nil {
			t.Fatal(err)
		}
		for _, input := range []string{`{}`, `{"path":"."}`} {
			res := bundle.call(t, builtin.ListDirName, input)
			if res.IsError {
				t.Fatalf("list_dir %s: %s", input, res.Content)
			}
			var got builtin.DirListing
			if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
				t.Fatalf("result %q is not a listing: %v", res.Content, err)
			}
			want := builtin.DirListing{Path: ".", Entries: []builtin.DirEntry{
				{Name: "a", Type: "dir"},
				{Name: "b.txt", Type: "file", Size: 5},
				{Name: "c-link", Type: "symlink", Size: int64(len("b.txt"))},
			}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("list_dir %s (-want +got):\n%s", input, diff)
			}
		}
		res := bundle.call(t, builtin.ListDirName, `{"path":"a"}`)
		if want := `{"path":"a","entries":[{"name":"inner.txt","type":"file","size":1}]}`; res.Content != want || res.IsError {
			t.Errorf("list_dir a = %+v, want content %s", res, want)
		}
	})

	t.Run("truncates", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		for i := range builtin.MaxListEntries + 5 {
			bundle.writeWS(t, fmt.Sprintf("many/f%04d", i), "")
		}
		var got builtin.DirListing
		if err := json.Unmarshal([]byte(bundle.call(t, builtin.ListDirName, `{"path":"many"}`).Content), &got); err != nil {
			t.Fatal(err)
		}
		if !got.Truncated || len(got.Entries) != builtin.MaxListEntries || got.Entries[0].Name != "f0000" {
			t.Errorf("listing: truncated %v, %d entries; want truncated, %d", got.Truncated, len(got.Entries), builtin.MaxListEntries)
		}
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.writeWS(t, "f.txt", "")
		wantError(t, bundle.call(t, builtin.ListDirName, `{"path":"f.txt"}`), "list_dir: f.txt is not a directory")
		wantError(t, bundle.call(t, builtin.ListDirName, `{"path":"nope"}`), "list_dir: open nope: no such file or directory")
	})

	t.Run("escapes are refused", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		if err := os.Symlink("..", filepath.Join(bundle.ws, "up")); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"..", "../..", bundle.outer, "up", "up/ws"} {
			input, _ := json.Marshal(map[string]string{"path": p})
			res := bundle.call(t, builtin.ListDirName, string(input))
			wantError(t, res, "path escapes from parent")
			if strings.Contains(res.Content, "secret.txt") {
				t.Errorf("list_dir %s leaks the outer directory: %q", p, res.Content)
			}
		}
	})
}

func TestWriteFile(t *testing.T) {
	t.Parallel()

	t.Run("creates and replaces", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		res := bundle.call(t, builtin.WriteFileName, `{"path":"notes.txt","content":"first"}`)
		if diff := cmp.Diff(&tool.Result{Content: `{"path":"notes.txt","bytes":5}`}, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if err := os.Chmod(filepath.Join(bundle.ws, "notes.txt"), 0o600); err != nil {
			t.Fatal(err)
		}
		res = bundle.call(t, builtin.WriteFileName, `{"path":"notes.txt","content":"second, longer"}`)
		if diff := cmp.Diff(&tool.Result{Content: `{"path":"notes.txt","bytes":14}`}, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		p := filepath.Join(bundle.ws, "notes.txt")
		got, err := os.ReadFile(p)
		if err != nil || string(got) != "second, longer" {
			t.Errorf("file holds %q, %v; want the second content", got, err)
		}
		if info, err := os.Stat(p); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("mode after replace = %v, %v; want 0600 kept", info.Mode(), err)
		}
		entries, err := os.ReadDir(bundle.ws)
		if err != nil || len(entries) != 1 {
			t.Errorf("workspace holds %v, %v; want only notes.txt (no temporary files)", entries, err)
		}
	})

	t.Run("create_dirs", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		wantError(t, bundle.call(t, builtin.WriteFileName, `{"path":"a/b/c.txt","content":"x"}`), "no such file or directory")
		res := bundle.call(t, builtin.WriteFileName, `{"path":"a/b/c.txt","content":"x","create_dirs":true}`)
		if res.IsError {
			t.Fatalf("write_file with create_dirs: %s", res.Content)
		}
		if got, err := os.ReadFile(filepath.Join(bundle.ws, "a", "b", "c.txt")); err != nil || string(got) != "x" {
			t.Errorf("file holds %q, %v", got, err)
		}
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.writeWS(t, "dir/x", "")
		wantError(t, bundle.call(t, builtin.WriteFileName, `{"path":"dir","content":"x"}`), "write_file: write dir: is a directory")
		wantError(t, bundle.call(t, builtin.WriteFileName, `{"path":".","content":"x"}`), "write_file: write .: not a file name")
	})

	t.Run("escapes are refused", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.writeWS(t, "in.txt", "inside")
		for name, p := range bundle.escapes(t) {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				input, _ := json.Marshal(map[string]any{"path": p, "content": "pwned", "create_dirs": true})
				wantError(t, bundle.call(t, builtin.WriteFileName, string(input)), "write_file: ", "path escapes from parent")
			})
		}
		t.Cleanup(func() {
			// Runs after the parallel subtests: nothing outside changed.
			if got, err := os.ReadFile(bundle.secret); err != nil || string(got) != "top secret" {
				t.Errorf("secret file now holds %q, %v", got, err)
			}
			entries, err := os.ReadDir(bundle.outer)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if diff := cmp.Diff([]string{"secret.txt", "ws"}, names); diff != "" || err != nil {
				t.Errorf("outer directory (-want +got):\n%s %v", diff, err)
			}
		})
	})

	t.Run("symlink escape does not create files", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		if err := os.Symlink(bundle.outer, filepath.Join(bundle.ws, "out")); err != nil {
			t.Fatal(err)
		}
		wantError(t, bundle.call(t, builtin.WriteFileName, `{"path":"out/new.txt","content":"x"}`), "path escapes from parent")
		if _, err := os.Stat(filepath.Join(bundle.outer, "new.txt")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("file outside the workspace: stat error %v, want not exist", err)
		}
	})
}

// TestReadFileRefusesFIFO: a FIFO in the workspace must not block the call.
func TestReadFileRefusesFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	r := tool.NewRegistry()
	if err := builtin.Register(r); err != nil {
		t.Fatal(err)
	}
	rf, _ := r.Lookup("read_file")
	res, err := rf.Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"path":"pipe"}`), Workspace: root, WorkspaceDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content, "not a regular file") {
		t.Errorf("read_file on a FIFO = %+v, want an error result", res)
	}
}

// TestHiddenPaths: the runtime's own files in the workspace (its config,
// its data directory) are refused by every file tool, by any name that
// leads there, and left out of listings; the rest of the workspace
// works.
func TestHiddenPaths(t *testing.T) {
	t.Parallel()
	const token = "art_builtin0123456789abcdef"
	setupHidden := func(t *testing.T) *testBundle {
		b := setup(t)
		b.writeWS(t, "agentrt.yaml", "api_key: sk-config")
		b.writeWS(t, ".agentrt/api-token", token)
		b.writeWS(t, "notes.txt", "notes")
		if err := os.Mkdir(filepath.Join(b.ws, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(".agentrt", filepath.Join(b.ws, "link")); err != nil {
			t.Fatal(err)
		}
		b.sb = sandbox.New(sandbox.Options{Hidden: []string{filepath.Join(b.ws, "agentrt.yaml"), filepath.Join(b.ws, ".agentrt")}})
		return b
	}
	refused := func(t *testing.T, res *tool.Result) {
		t.Helper()
		wantError(t, res, "permission denied")
		if strings.Contains(res.Content, token) || strings.Contains(res.Content, "sk-config") {
			t.Errorf("the result holds a hidden file's content: %q", res.Content)
		}
	}

	t.Run("read_file", func(t *testing.T) {
		t.Parallel()
		b := setupHidden(t)
		for _, p := range []string{"agentrt.yaml", ".agentrt/api-token", "link/api-token", "sub/../.agentrt/api-token", "./agentrt.yaml"} {
			input, _ := json.Marshal(map[string]string{"path": p})
			refused(t, b.call(t, builtin.ReadFileName, string(input)))
		}
		if res := b.call(t, builtin.ReadFileName, `{"path":"notes.txt"}`); res.IsError || res.Content != "notes" {
			t.Errorf("read_file notes.txt = %+v, want its content", res)
		}
	})

	t.Run("list_dir", func(t *testing.T) {
		t.Parallel()
		b := setupHidden(t)
		for _, p := range []string{".agentrt", "link", "sub/../.agentrt"} {
			input, _ := json.Marshal(map[string]string{"path": p})
			refused(t, b.call(t, builtin.ListDirName, string(input)))
		}
		var got builtin.DirListing
		if err := json.Unmarshal([]byte(b.call(t, builtin.ListDirName, `{}`).Content), &got); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range got.Entries {
			names = append(names, e.Name)
		}
		if diff := cmp.Diff([]string{"link", "notes.txt", "sub"}, names); diff != "" {
			t.Errorf("list_dir . (-want +got):\n%s", diff)
		}
	})

	t.Run("write_file", func(t *testing.T) {
		t.Parallel()
		b := setupHidden(t)
		for _, p := range []string{"agentrt.yaml", ".agentrt/api-token", ".agentrt/planted", "link/planted", "link/new/planted", "sub/../agentrt.yaml"} {
			input, _ := json.Marshal(map[string]any{"path": p, "content": "pwned", "create_dirs": true})
			refused(t, b.call(t, builtin.WriteFileName, string(input)))
		}
		if got := readFile(t, filepath.Join(b.ws, "agentrt.yaml")); got != "api_key: sk-config" {
			t.Errorf("agentrt.yaml = %q, want it untouched", got)
		}
		entries, err := os.ReadDir(filepath.Join(b.ws, ".agentrt"))
		if err != nil || len(entries) != 1 {
			t.Errorf("the data directory holds %v, %v; want only api-token", entries, err)
		}
		if res := b.call(t, builtin.WriteFileName, `{"path":"sub/new/ok.txt","content":"ok","create_dirs":true}`); res.IsError {
			t.Errorf("write_file beside the hidden paths: %s", res.Content)
		}
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
