package agentrt_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
)

// secretsConfig is the default layout's agentrt.yaml: the data directory
// beside it, a key file, a command tool in tools/. Agent "sub" works in
// a workspace below and may read the whole folder; agent "top" works in
// the folder itself.
const secretsConfig = `# CONFIG_MARKER
models:
  spare: {provider: openai_chat, model: gpt-spare, api_key_file: keys/openai}
agents:
  sub:
    model: {provider: replay, script: sub.replay.yaml}
    tools: [peek, shell, exec]
    workspace: workspace
    sandbox: {mode: workspace_write, read_roots: [.]}
  top:
    model: {provider: replay, script: top.replay.yaml}
    tools: [peek, shell, exec, read_file, list_dir, write_file]
    workspace: .
tools:
  peek:
    description: Prints what it can read of the runtime's files.
    input_schema: {type: object}
    command: [./tools/peek.sh]
`

// peekScript is the command tool: it prints whatever it can read of the
// runtime's files and of a file that must stay readable, keeping only
// characters that need no escaping in JSON.
const peekScript = `#!/bin/sh
d="$(dirname "$0")/.."
out=$(cat "$d/agentrt.yaml" "$d/.agentrt/api-token" "$d/.agentrt/agentrt.db" "$d/keys/openai" "$d/tools/visible.txt" 2>&1 | tr -cd 'A-Za-z0-9_:. /-')
printf '{"out":"%s"}\n' "$out"
`

const subScript = `responses:
  - tool_calls: [{name: peek}]
  - tool_calls: [{name: shell, input: {command: "cat ../agentrt.yaml ../.agentrt/api-token ../.agentrt/agentrt.db ../keys/openai ../tools/visible.txt; grep -r art_ .. ; true"}}]
  - tool_calls: [{name: exec, input: {argv: [cat, ../.agentrt/api-token, ../agentrt.yaml, ../.agentrt/agentrt.db]}}]
  - text: done
`

const topScript = `responses:
  - tool_calls: [{name: peek}]
  - tool_calls: [{name: shell, input: {command: "cat agentrt.yaml .agentrt/api-token .agentrt/agentrt.db keys/openai tools/visible.txt; ls -la .agentrt; true"}}]
  - tool_calls: [{name: exec, input: {argv: [cat, .agentrt/api-token, agentrt.yaml, .agentrt/agentrt.db]}}]
  - tool_calls: [{name: read_file, input: {path: .agentrt/api-token}}]
  - tool_calls: [{name: read_file, input: {path: agentrt.yaml}}]
  - tool_calls: [{name: list_dir, input: {path: .agentrt}}]
  - tool_calls: [{name: write_file, input: {path: .agentrt/api-token, content: planted}}]
  - text: done
`

// TestToolsCannotReachRuntimeSecrets: with the default layout (the data
// directory inside the config's folder), a command tool, a shell call, an
// exec call and the file tools, from a workspace below the folder and
// from the folder itself, read nothing of the API token, the database,
// the config or a key file, under bubblewrap and under Landlock; none of
// it reaches an event or the output store, and the runtime's files are
// private to their owner on disk.
func TestToolsCannotReachRuntimeSecrets(t *testing.T) {
	t.Parallel()
	for _, enf := range []sandbox.Enforcer{sandbox.Bubblewrap, sandbox.Landlock} {
		t.Run(string(enf), func(t *testing.T) {
			t.Parallel()
			opts := sandbox.Options{NoBubblewrap: enf == sandbox.Landlock}
			if got, err := sandbox.New(opts).Enforcer(); err != nil || got != enf {
				testenv.Missing(t, "wanted the %s enforcer, the host offers %q (%v)", enf, got, err)
			}
			dir := t.TempDir()
			secrets := plantLayout(t, dir)
			cfg, _, err := agentrt.LoadConfig(filepath.Join(dir, "agentrt.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Sandbox.NoBubblewrap = opts.NoBubblewrap
			rt, err := agentrt.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := rt.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rt.Stop(context.Background()) })
			tb := &testBundle{rt: rt}
			var all bytes.Buffer
			for _, agent := range []string{"sub", "top"} {
				res, turn := tb.submit(t, &apitype.SubmitTurnParams{Agent: agent, Input: "look around"})
				if turn.Status != runtype.StatusCompleted {
					t.Fatalf("agent %s: turn %s (%s), want completed", agent, turn.Status, turn.StatusReason)
				}
				for _, e := range tb.sessionEvents(t, runtype.Owner{}, res.SessionID) {
					raw, err := e.JSON()
					if err != nil {
						t.Fatal(err)
					}
					all.Write(raw)
				}
			}
			outputs, err := os.ReadDir(filepath.Join(dir, ".agentrt", "outputs"))
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range outputs {
				b, err := os.ReadFile(filepath.Join(dir, ".agentrt", "outputs", o.Name()))
				if err != nil {
					t.Fatal(err)
				}
				all.Write(b)
			}
			for what, s := range secrets {
				if bytes.Contains(all.Bytes(), []byte(s)) {
					t.Errorf("the %s (%q) reached the events or the output store", what, s)
				}
			}
			// Redaction would hide a token that was read: nothing may have
			// been read to redact.
			if bytes.Contains(all.Bytes(), []byte("[REDACTED")) {
				t.Errorf("a secret was read, and redacted, by a tool")
			}
			// The tools ran, and read what they may.
			if n := bytes.Count(all.Bytes(), []byte("VISIBLE_MARKER")); n < 4 {
				t.Errorf("the readable file shows %d times in the events, want at least 4 (peek and shell of each agent)", n)
			}
			if got := readTrimmed(t, filepath.Join(dir, ".agentrt", "api-token")); got != secrets["API token"] {
				t.Errorf("the API token file holds %q, want it untouched", got)
			}

			for path, want := range map[string]os.FileMode{
				".agentrt":                0o700,
				".agentrt/api-token":      0o600,
				".agentrt/agentrt.db":     0o600,
				".agentrt/agentrt.db-wal": 0o600,
				".agentrt/agentrt.db-shm": 0o600,
				".agentrt/outputs":        0o700,
			} {
				fi, err := os.Stat(filepath.Join(dir, path))
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode().Perm(); got != want {
					t.Errorf("%s has mode %v, want %v", path, got, want)
				}
			}
		})
	}
}

// plantLayout writes the default layout into dir, with a data directory
// left open to others as an older agentrt made it, and returns the
// secrets that must not leak, by what they are.
func plantLayout(t *testing.T, dir string) map[string]string {
	t.Helper()
	mark := func(prefix string) string {
		b := make([]byte, 16)
		rand.Read(b)
		return prefix + hex.EncodeToString(b)
	}
	secrets := map[string]string{
		"API token": mark("art_"),
		"config":    mark("cfgmarker"),
		"key file":  mark("keyfilemarker"),
		"database":  "SQLite format 3",
	}
	files := map[string]string{
		"agentrt.yaml":        strings.Replace(secretsConfig, "CONFIG_MARKER", secrets["config"], 1),
		"sub.replay.yaml":     subScript,
		"top.replay.yaml":     topScript,
		"keys/openai":         secrets["key file"] + "\n",
		"tools/peek.sh":       peekScript,
		"tools/visible.txt":   "VISIBLE_MARKER\n",
		".agentrt/api-token":  secrets["API token"] + "\n",
		"workspace/notes.txt": "notes\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, ".agentrt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, ".agentrt", "api-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	return secrets
}

func readTrimmed(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
