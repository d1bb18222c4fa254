package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/runtype"
)

// serveTimeout bounds each wait on a serve process, so that one that
// never answers fails the test with what it printed.
const serveTimeout = 60 * time.Second

// server is an `agentrt serve` process.
type server struct {
	cmd    *exec.Cmd
	client *http.Client // of send: http.DefaultClient unless the test sets one
	url    string
	token  string
	banner string      // the first line it printed
	lines  chan string // its standard output, line by line
	stderr *strings.Builder
	exited chan struct{}
	err    error // how it exited, once exited is closed
}

// startServe starts the binary's serve on a free port of 127.0.0.1 and
// reads its banner. Cleanup kills it if the test did not stop it.
func startServe(t *testing.T, bin string, b *testBundle, args ...string) *server {
	t.Helper()
	tokenFile := filepath.Join(b.dir, ".agentrt", "api-token")
	_, err := os.Stat(tokenFile)
	created := err != nil // the first start prints the token it creates
	cmd := exec.Command(bin, append([]string{"serve", "--config", b.config, "--listen", "127.0.0.1:0"}, args...)...)
	if b.env != nil {
		cmd.Env = append(os.Environ(), b.env...)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, client: http.DefaultClient, lines: make(chan string, 64), stderr: &strings.Builder{}, exited: make(chan struct{})}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		s.err = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			cmd.Process.Kill()
			<-s.exited
		}
	})
	s.banner = s.next(t)
	m := regexp.MustCompile(`^agentrt \S+ serving (https?://\S+) \(runtime rt_[0-9A-Z]{26}, data .+\)$`).FindStringSubmatch(s.banner)
	if m == nil {
		t.Fatalf("serve printed no banner; stderr:\n%s", s.stderr)
	}
	s.url = m[1]
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	s.token = strings.TrimSpace(string(tok))
	if created {
		if line := s.next(t); !strings.HasPrefix(line, "API token (shown once; kept in ") {
			t.Errorf("after the banner of a first start: %q, want the token's", line)
		}
		if line := s.next(t); line != "  "+s.token {
			t.Errorf("the token line is %q, want the token in the file", line)
		}
	}
	return s
}

// next returns the next line serve prints.
func (s *server) next(t *testing.T) string {
	t.Helper()
	select {
	case line, ok := <-s.lines:
		if !ok {
			<-s.exited
			t.Fatalf("serve exited (%v) before printing what was awaited; stderr:\n%s", s.err, s.stderr)
		}
		return line
	case <-time.After(serveTimeout):
		t.Fatalf("serve printed nothing for %s; stderr:\n%s", serveTimeout, s.stderr)
	}
	return ""
}

// stop sends SIGTERM and waits for serve to exit 0.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
}

func (s *server) wait(t *testing.T) {
	t.Helper()
	for range s.lines {
	}
	<-s.exited
	if s.err != nil {
		t.Fatalf("serve exited with %v, want 0; stderr:\n%s", s.err, s.stderr)
	}
}

// send sends an API request with the server's token.
func (s *server) send(t *testing.T, ctx context.Context, method, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// request sends an API request and decodes the JSON answer into v.
func (s *server) request(t *testing.T, method, path, body string, v any) {
	t.Helper()
	resp := s.send(t, t.Context(), method, path, body)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s %s: decoding %s: %v", method, path, raw, err)
	}
}

// awaitEvent reads the turn's event stream until an event of one of
// types, and returns its type with the types seen before it.
func (s *server) awaitEvent(t *testing.T, turnID string, types ...string) (string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), serveTimeout)
	defer cancel()
	resp := s.send(t, ctx, http.MethodGet, "/v1/events?turnId="+turnID, "")
	defer resp.Body.Close()
	var seen []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		typ, ok := strings.CutPrefix(sc.Text(), "event: ")
		if !ok {
			continue
		}
		for _, want := range types {
			if typ == want {
				return typ, seen
			}
		}
		seen = append(seen, typ)
	}
	t.Fatalf("the stream of turn %s ended (%v) after %v, before any of %v", turnID, sc.Err(), seen, types)
	return "", nil
}

// TestServeShutdown: SIGTERM while a tool runs stops the server from
// accepting requests and lets the step finish; the turn stays queued, and
// the next serve goes on from its last recorded step without running the
// tool again.
func TestServeShutdown(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := buildAgentrt(t)
	b := setup(t)
	// wait_release blocks in read until the test writes to the pipe: the
	// test knows the tool runs once its own open of the pipe returns.
	fifo := filepath.Join(b.dir, "workspace", "release.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	b.edit(t, "tools: [lookup_order, open_ticket, read_file]", "tools: [wait_release]")
	b.edit(t, "\ntools:\n", `
tools:
  wait_release:
    description: Waits until it is released.
    input_schema: {type: object}
    command: [sh, -c, 'read line < "$0" && echo "$line"', `+fifo+`]
    timeout: 2m
`)
	b.useScript(t, `responses:
  - tool_calls: [{name: wait_release}]
  - tool_calls: [{name: complete_task, input: {result: "released"}}]
`)

	s := startServe(t, bin, b, "--shutdown-grace", "90s")
	var res apitype.SubmitTurnResult
	s.request(t, http.MethodPost, "/v1/turns", `{"agent": "support", "input": "wait"}`, &res)

	opened := make(chan *os.File, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
		}
		opened <- w
	}()
	var w *os.File
	select {
	case w = <-opened:
	case <-s.exited:
		t.Fatalf("serve exited (%v) before the tool ran; stderr:\n%s", s.err, s.stderr)
	case <-time.After(serveTimeout):
		t.Fatalf("the tool did not start within %s; stderr:\n%s", serveTimeout, s.stderr)
	}
	if w == nil {
		t.FailNow()
	}

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"agentrt: stopping",
		"agentrt: no longer accepting requests",
		"agentrt: letting 1 running attempt finish the step in progress (up to 1m30s; Ctrl-C again quits at once)",
	} {
		if got := s.next(t); got != want {
			t.Errorf("serve printed %q, want %q", got, want)
		}
	}
	// The server accepts no request now.
	if resp, err := http.Get(s.url + "/healthz"); err == nil {
		resp.Body.Close()
		t.Error("the server still answers after it printed that it does not")
	}
	if _, err := io.WriteString(w, "go\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got, want := s.next(t), "agentrt: stopped; the turns they ran stay queued, and the next start goes on from their last recorded step"; got != want {
		t.Errorf("serve printed %q, want %q", got, want)
	}
	s.wait(t)

	// The next start goes on from the recorded tool result.
	s = startServe(t, bin, b)
	typ, seen := s.awaitEvent(t, res.TurnID, "turn.completed", "turn.failed")
	if typ != "turn.completed" {
		t.Errorf("the turn ended with %s; events %v", typ, seen)
	}
	var started int
	for _, e := range seen {
		if e == "tool.started" {
			started++
		}
	}
	// wait_release once, before the stop; complete_task once, after.
	if started != 2 {
		t.Errorf("tool.started %d times, want 2 (the released tool must not run again); events %v", started, seen)
	}
	var req apitype.RequestSummary
	s.request(t, http.MethodGet, "/v1/requests/"+res.TurnID, "", &req)
	if req.Status != runtype.StatusCompleted || req.ResultPreview != "released" {
		t.Errorf("request %+v, want completed with result released", req)
	}
	s.stop(t)
}

// TestServeShutdownGraceFlag: the grace must be positive.
func TestServeShutdownGraceFlag(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, v := range []string{"0s", "-1s"} {
		r := run(t, "", "serve", "--config", b.config, "--shutdown-grace", v)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "invalid --shutdown-grace "+v+": must be positive") {
			t.Errorf("--shutdown-grace %s: exit %d, stderr %q; want exit 2", v, r.code, r.stderr)
		}
	}
}
