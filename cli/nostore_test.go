package cli_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/cli"
)

// TestNoStore: every command that works on what a data directory holds —
// reading it or answering what was recorded there — refuses a data
// directory without a store: exit 2, "no agentrt store at DIR", and
// nothing made, neither the directory nor a database in it. (They once
// made an empty store and reported it healthy.) Only run and serve make
// stores.
func TestNoStore(t *testing.T) {
	t.Parallel()
	commands := [][]string{
		{"health"},
		{"health", "--json"},
		{"overview"},
		{"approvals", "list"},
		{"approvals", "watch", "--once"},
		{"approvals", "approve", "act_01M7Z6EQH1EH35X9M20WK8S11A"},
		{"approvals", "deny", "act_01M7Z6EQH1EH35X9M20WK8S11A"},
		{"requests", "tail", "--once"},
		{"requests", "list"},
		{"sessions", "list"},
		{"tasks", "list"},
		{"outputs", "get", "sha256:03c9e653fbebf32a2e458552ee50b1b2e76d8fd0538ea7da8653aad357cc90b2"},
		{"verify", "--session", "ses_01M7Z6EQH1EH35X9M20WK8S11D"},
		{"tasks", "show", "task_01M7Z6EQH1EH35X9M20WK8S11J"},
		{"tasks", "cancel", "task_01M7Z6EQH1EH35X9M20WK8S11J"},
		{"tasks", "pause", "task_01M7Z6EQH1EH35X9M20WK8S11J"},
		{"tasks", "resume", "task_01M7Z6EQH1EH35X9M20WK8S11J"},
		{"tasks", "retry", "task_01M7Z6EQH1EH35X9M20WK8S11J"},
		{"queue", "list", "--thread", "thr_01M7Z6EQH1EH35X9M20WK8S11E"},
		{"queue", "remove", "turn_01M7Z6EQH1EH35X9M20WK8S11F"},
		{"queue", "promote", "turn_01M7Z6EQH1EH35X9M20WK8S11F"},
		{"export", "request", "--session", "ses_01M7Z6EQH1EH35X9M20WK8S11D", "--request", "turn_01M7Z6EQH1EH35X9M20WK8S11F", "-o", "case.tar.gz"},
		{"replay", "--session", "ses_01M7Z6EQH1EH35X9M20WK8S11D", "--request", "turn_01M7Z6EQH1EH35X9M20WK8S11F"},
		{"token", "list"},
		{"token", "rotate", "tok_01M7Z6EQH1EH35X9M20WK8S11K"},
		{"token", "revoke", "tok_01M7Z6EQH1EH35X9M20WK8S11K"},
	}
	// Where the data directory is: --data-dir naming a path that does not
	// exist, an empty directory, or a file; or the config's data_dir.
	places := []struct {
		name string
		make func(t *testing.T, b *testBundle) (dir string, flags []string)
	}{
		{"Missing", func(t *testing.T, b *testBundle) (string, []string) {
			dir := filepath.Join(b.dir, "nothing", "here")
			return dir, []string{"--data-dir", dir}
		}},
		{"EmptyDir", func(t *testing.T, b *testBundle) (string, []string) {
			dir := filepath.Join(b.dir, "empty")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			return dir, []string{"--data-dir", dir}
		}},
		{"File", func(t *testing.T, b *testBundle) (string, []string) {
			return b.write(t, "not-a-dir", "x"), []string{"--data-dir", filepath.Join(b.dir, "not-a-dir")}
		}},
		{"ConfigDataDir", func(t *testing.T, b *testBundle) (string, []string) {
			return filepath.Join(b.dir, ".agentrt"), nil
		}},
	}
	for _, command := range commands {
		t.Run(strings.Join(command[:min(2, len(command))], "_"), func(t *testing.T) {
			t.Parallel()
			for _, p := range places {
				t.Run(p.name, func(t *testing.T) {
					t.Parallel()
					b := setup(t)
					dir, flags := p.make(t, b)
					before := listing(t, b.dir)
					args := append(append(command[:len(command):len(command)], "--config", b.config), flags...)
					r := run(t, "", args...)
					if want := "agentrt: no agentrt store at " + dir + ": "; r.code != cli.ExitUsage || !strings.HasPrefix(r.stderr, want) {
						t.Errorf("agentrt %s: exit %d, stderr %q; want exit %d and %q", strings.Join(args, " "), r.code, r.stderr, cli.ExitUsage, want)
					}
					if r.stdout != "" {
						t.Errorf("stdout = %q, want nothing", r.stdout)
					}
					if after := listing(t, b.dir); strings.Join(after, "\n") != strings.Join(before, "\n") {
						t.Errorf("the command changed the folder:\nbefore %q\nafter  %q", before, after)
					}
				})
			}
		})
	}
}

// listing returns every path under dir, relative to it.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		paths = append(paths, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}
