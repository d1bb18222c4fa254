package cli_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/apitype"
)

// leakConfig is the configuration of TestSecretsNeverRest: a replay model
// that leaks, two network models whose keys are only configured, a command
// tool that prints a secret, one that answers in MCP's content-array shape,
// and a hook that adds a secret as context. %s are the config's api_key
// and the name of the variable an api_key_env names.
const leakConfig = `data_dir: .agentrt
models:
  scripted: {provider: replay, script: leak.replay.yaml}
  cloud: {provider: openai_chat, model: gpt-4.1-mini, api_key: "%s"}
  other: {provider: anthropic_messages, model: claude-sonnet-4-5, api_key_env: %s}
agents:
  leaky:
    instructions: Answer the user.
    model: scripted
    tools: [note, mcp_search]
    workspace: ws
tools:
  note:
    description: Write a note. Returns what it saw.
    input_schema: {type: object, properties: {text: {type: string}, token: {type: string}, daemon: {type: string}}}
    command: [./note.sh]
  mcp_search:
    description: Search, answering as an MCP server would.
    input_schema: {type: object, properties: {q: {type: string}}}
    command: [./mcp.sh]
execution:
  redact: {secret_env: [I14_MCP_SECRET]}
hooks:
  - {point: post_tool_use, matcher: note, command: ./hook.sh}
`

// TestSecretsNeverRest runs a turn in which eight secrets show up where a
// run carries text — the configured api_key, a key read through
// api_key_env, the daemon's API token, and GitHub tokens in a tool's
// input, in a tool's output, in the model's text, in a hook's output, and
// a secret in a tool result in MCP's content-array shape — on a real
// agentrt serve (SQLite store, replay provider, loopback HTTP), and finds
// none of them in the data directory (database, WAL, output store), the
// daemon's logs, the SSE stream or the exported evidence bundle with its
// artifact contents. The tool still got the real values, and the bundle
// verifies.
func TestSecretsNeverRest(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := buildAgentrt(t)
	dir := t.TempDir()
	secrets := map[string]string{
		"config api_key": "cfgkey-" + "Rw3Tz9AbQm5Lx2Vc",
		"api_key_env":    "envkey-" + "Hd8Np4KsYt6Gj1Wq",
		"API token":      "art_" + "5f0c1e9a8b7d6c5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c",
		"tool input":     "ghp_" + "In1putTokenAbCdEfGhIjKlMnOpQrStUvWx12",
		"tool output":    "ghp_" + "Ou2tputTokenBcDeFgHiJkLmNoPqRsTuVw34",
		"model text":     "ghp_" + "Te3xtTokenCdEfGhIjKlMnOpQrStUvWxYz56",
		"hook output":    "ghp_" + "Ho4okTokenDeFgHiJkLmNoPqRsTuVwXyZa78",
		"MCP result":     `mcp-"` + `sealed"-<Zq8/x>-secret`,
	}
	write := func(name, content string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"ws", ".agentrt"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The daemon's token is the one it finds in its data directory.
	write(".agentrt/api-token", secrets["API token"]+"\n", 0o600)
	write("agentrt.yaml", fmt.Sprintf(leakConfig, secrets["config api_key"], "I14_ENV_KEY"), 0o644)
	// note keeps its input where the test can check the tool got it whole.
	write("note.sh", "#!/bin/sh\ncat > received.json\nprintf '%s\\n' '{\"noted\":true,\"upstream\":\""+secrets["tool output"]+"\"}'\n", 0o755)
	mcpText, _ := json.Marshal("found: " + secrets["MCP result"])
	write("mcp.sh", "#!/bin/sh\ncat >/dev/null\ncat <<'EOF'\n"+`{"content":[{"type":"text","text":`+string(mcpText)+`}],"isError":false}`+"\nEOF\n", 0o755)
	write("hook.sh", "#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' '"+
		`{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"audit: the note used `+secrets["hook output"]+`"}}'`+"\n", 0o755)
	write("leak.replay.yaml", fmt.Sprintf(`model: leaky-v1
responses:
  - error: {kind: server, message: "upstream rejected the key %s"}
  - text: "Using %s and the key %s."
    tool_calls:
      - name: note
        input: {text: "keep this", token: "%s", daemon: "%s"}
  - tool_calls: [{name: mcp_search, input: {q: "notes"}}]
  - text: "All done."
`, secrets["config api_key"], secrets["model text"], secrets["config api_key"], secrets["tool input"], secrets["API token"]), 0o644)

	b := &testBundle{dir: dir, config: filepath.Join(dir, "agentrt.yaml"),
		env: []string{"I14_ENV_KEY=" + secrets["api_key_env"], "I14_MCP_SECRET=" + secrets["MCP result"]}}
	s := startServe(t, bin, b)
	var res apitype.SubmitTurnResult
	input, _ := json.Marshal(map[string]string{"agent": "leaky", "sessionId": "leak", "input": "My env key is " + secrets["api_key_env"] + "; take notes."})
	s.request(t, http.MethodPost, "/v1/turns", string(input), &res)
	stream := readStream(t, s, "leak", "turn.completed")

	bundle := exportBundle(t, s, res.SessionID, res.TurnID)
	liveFiles := dataFiles(t, filepath.Join(dir, ".agentrt"))
	s.stop(t)
	stoppedFiles := dataFiles(t, filepath.Join(dir, ".agentrt"))

	places := map[string][]byte{"the SSE stream": stream, "the logs": []byte(s.stderr.String())}
	for name, data := range liveFiles {
		places["the data dir (running): "+name] = data
	}
	for name, data := range stoppedFiles {
		places["the data dir (stopped): "+name] = data
	}
	for name, data := range bundle {
		places["the bundle: "+name] = data
	}
	for what, secret := range secrets {
		for _, form := range forms(secret) {
			for place, data := range places {
				if bytes.Contains(data, []byte(form)) {
					t.Errorf("the secret in the %s (%q) is in %s", what, form, place)
				}
			}
		}
	}

	// The run did what the secrets were put in for: the tool ran with its
	// real input, the model's key failure was logged, and the output,
	// the hook and the MCP answer were recorded (redacted).
	got, err := os.ReadFile(filepath.Join(dir, "ws", "received.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{secrets["tool input"], secrets["API token"]} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("the tool got %s, want its input with %q", got, want)
		}
	}
	for _, want := range []string{"model call failed", "[REDACTED:secret_env]"} {
		if !strings.Contains(s.stderr.String(), want) {
			t.Errorf("the logs lack %q:\n%s", want, s.stderr)
		}
	}
	for _, want := range []string{"event: hook.completed", "event: output.redacted", "[REDACTED:github_token]", "[REDACTED:secret_env]"} {
		if !bytes.Contains(stream, []byte(want)) {
			t.Errorf("the stream lacks %q:\n%s", want, stream)
		}
	}
	path := filepath.Join(t.TempDir(), "bundle.tar.gz")
	if err := os.WriteFile(path, bundle[bundleFile], 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runBinary(t, bin, "", "verify", path); r.code != 0 {
		t.Errorf("agentrt verify of the bundle: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// forms are the ways secret may be written down: as it is and as it reads
// inside a JSON string.
func forms(secret string) []string {
	q, _ := json.Marshal(secret)
	out := []string{secret}
	if e := string(q[1 : len(q)-1]); e != secret {
		out = append(out, e)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(secret)
	if e := strings.TrimSuffix(b.String(), "\n"); e[1:len(e)-1] != secret {
		out = append(out, e[1:len(e)-1])
	}
	return out
}

// readStream reads the session's event stream over HTTP until an event of
// type last, and returns the bytes it read.
func readStream(t *testing.T, s *server, sessionID, last string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), serveTimeout)
	defer cancel()
	resp := s.send(t, ctx, http.MethodGet, "/v1/events?sessionId="+sessionID, "")
	defer resp.Body.Close()
	var raw bytes.Buffer
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	done := false
	for sc.Scan() {
		raw.Write(sc.Bytes())
		raw.WriteByte('\n')
		if sc.Text() == "event: "+last {
			done = true
		}
		if done && strings.HasPrefix(sc.Text(), "data: ") {
			return raw.Bytes()
		}
	}
	t.Fatalf("the stream ended (%v) before %s; stderr:\n%s", sc.Err(), last, s.stderr)
	return nil
}

// bundleFile names the bundle itself among exportBundle's members.
const bundleFile = "(the .tar.gz)"

// exportBundle exports the request's evidence bundle with its artifact
// contents over HTTP and returns its members by name, and the bundle.
func exportBundle(t *testing.T, s *server, sessionID, turnID string) map[string][]byte {
	t.Helper()
	resp := s.send(t, t.Context(), http.MethodPost, "/v1/sessions/"+sessionID+"/requests/"+turnID+"/export", `{"artifactContents": true}`)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("exporting: %d %v %s", resp.StatusCode, err, raw)
	}
	members := map[string][]byte{bundleFile: raw}
	artifacts := 0
	eachMember(t, raw, func(hdr *tar.Header, data []byte) {
		members[hdr.Name] = data
		if strings.Contains(hdr.Name, "artifacts/") {
			artifacts++
		}
	})
	if artifacts == 0 {
		t.Errorf("the bundle has no artifact contents: %d members", len(members))
	}
	return members
}

// dataFiles reads every file of the data directory but the API token's
// own file.
func dataFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "api-token" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out["agentrt.db"]; !ok {
		t.Fatalf("no database in %s: %v", dir, out)
	}
	return out
}
