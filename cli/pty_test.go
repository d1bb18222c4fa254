//go:build linux

package cli_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/cli"
)

// TestRunStreamsOnTerminal runs the real agentrt binary on a
// pseudo-terminal, with a model (an OpenAI-compatible server in this
// test) that streams its reply and holds the last piece back until the
// test has seen the first on the terminal: the model's text shows as it
// arrives, not when the reply is complete. On the terminal the timeline
// is coloured and a spinner shows while the model works, erased before
// the next line.
func TestRunStreamsOnTerminal(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := buildAgentrt(t)
	const first, last = "Order 1042 is late. ", "A ticket is open."
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			fmt.Fprintf(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"streamer-v1","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, finish)
			w.(http.Flusher).Flush()
		}
		chunk(fmt.Sprintf(`{"role":"assistant","content":%q}`, first), "null")
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		chunk(fmt.Sprintf(`{"content":%q}`, last), "null")
		chunk(`{}`, `"stop"`)
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"streamer-v1","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29}}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close() // after open: Close waits for the handler
	defer open()

	dir := t.TempDir()
	config := filepath.Join(dir, "agentrt.yaml")
	err := os.WriteFile(config, []byte(`data_dir: data
models:
  streamer:
    provider: openai_compatible
    base_url: `+srv.URL+`/v1
    model: streamer-v1
agents:
  assistant:
    model: streamer
    instructions: Answer the customer.
    require_completion: false
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}

	term := cli.OpenPTY(t, 80)
	cmd := exec.Command(bin, "run", "--config", config, question)
	cmd.Env = append(withoutEnv(os.Environ(), "NO_COLOR", "COLUMNS", "AGENTRT_SERVER", "AGENTRT_TOKEN"), "TERM=xterm-256color")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = term.Slave, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	term.Slave.Close() // the child has its own
	defer cmd.Process.Kill()

	// The space after the piece's last word is written with the next word.
	if !term.WaitFor(strings.TrimSpace(first)) {
		t.Fatalf("the first streamed piece %q never reached the terminal while the reply was held back\nterminal:\n%q\nstderr:\n%s", first, term.Output(), stderr.String())
	}
	if out := term.Output(); strings.Contains(out, "completed") {
		t.Fatalf("the turn completed before the model's reply did:\n%q", out)
	}
	open()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agentrt run: %v\nterminal:\n%q\nstderr:\n%s", err, term.Output(), stderr.String())
	}
	out := term.Rest()

	lines := screenLines(out)
	want := []string{
		"hop 1   model   streamer openai_compatible/streamer-v1",
		`                "` + first + last + `"`,
		"                → reply · 20 in / 9 out tokens",
		"✔ completed in {DUR} · 1 hops · 0 tool calls · 20 in / 9 out tokens",
		"  result: " + first + last,
	}
	if len(lines) < len(want) {
		t.Fatalf("the terminal shows %d lines, want at least %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	// The header (two lines at 80 columns) comes first.
	matchLines(t, strings.Join(lines[len(lines)-len(want):], "\n"), want)
	if !strings.Contains(out, "⠋ waiting for streamer openai_compatible/streamer-v1 (hop 1) · ") {
		t.Errorf("no spinner while the model worked:\n%q", out)
	}
	if !strings.Contains(out, "\x1b[32m✔ completed\x1b[0m") {
		t.Errorf("no colour on a terminal:\n%q", out)
	}

	// In a pipe: the same lines, without colour or spinner.
	piped := runBinary(t, bin, "", "run", "--config", config, question)
	if piped.code != cli.ExitOK || strings.ContainsAny(piped.stdout, "\r\x1b") {
		t.Fatalf("piped: exit %d, stdout %q (want no carriage return or escape), stderr %q", piped.code, piped.stdout, piped.stderr)
	}
	matchLines(t, piped.stdout, append([]string{"request turn_{ID}  agent assistant  session ses_{ID}"}, want...))
}

// screenLines is what a terminal shows of out, line by line: a carriage
// return goes back to the line's start, the text after it overwrites.
func screenLines(out string) []string {
	out = stripANSI(strings.ReplaceAll(out, "\r\n", "\n"))
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var screen []rune
		col := 0
		for _, r := range l {
			if r == '\r' {
				col = 0
				continue
			}
			if col < len(screen) {
				screen[col] = r
			} else {
				screen = append(screen, r)
			}
			col++
		}
		lines = append(lines, strings.TrimRight(string(screen), " "))
	}
	return lines
}

// stripANSI removes colour sequences.
func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func withoutEnv(env []string, names ...string) []string {
	var kept []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || n == name
		}
		if !drop {
			kept = append(kept, kv)
		}
	}
	return kept
}
