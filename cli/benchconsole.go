package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/bench"
	"github.com/agentrt/agentrt/client"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds agentrt bench console: the web console's cost, on a
// real agentrt serve in a process of its own, so that its RSS is the
// server's alone.

// consoleBenchOptions are agentrt bench console's flags.
type consoleBenchOptions struct {
	hops, renders, streams int
	dir                    string
	bin                    string // the agentrt binary that serves
}

// consoleBenchResult is agentrt bench console's RESULT.
type consoleBenchResult struct {
	Bench string `json:"bench"`
	Hops  int    `json:"hops"`
	// TimelineMS is the median time of GET /ui/requests/{turnId} for the
	// request of Hops hops, from sending it to the end of the page, on
	// loopback: the server's time plus a loopback round trip.
	TimelineMS    float64 `json:"timeline_ms"`
	TimelineBytes int     `json:"timeline_bytes"`
	Renders       int     `json:"renders"`
	// Streams are open at once: half the console's live streams, half
	// event streams (GET /v1/events), all with the console's cookie.
	Streams int `json:"streams"`
	// RSSStartMB is the server's RSS once it answers, RSSBeforeMB before
	// the streams open (after the long request and its renders),
	// RSSStreamsMB with them all open, and MaxRSSMB its peak.
	RSSStartMB   float64 `json:"rss_start_mb"`
	RSSBeforeMB  float64 `json:"rss_before_mb"`
	RSSStreamsMB float64 `json:"rss_streams_mb"`
	// AnonStreamsMB and FileStreamsMB split RSSStreamsMB: the process's
	// own memory, and the pages of its binary and files.
	AnonStreamsMB float64 `json:"anon_streams_mb"`
	FileStreamsMB float64 `json:"file_streams_mb"`
	MaxRSSMB      float64 `json:"maxrss_mb"`
	// KBPerStream is (RSSStreamsMB - RSSBeforeMB) / Streams.
	KBPerStream float64 `json:"kb_per_stream"`
	// FanoutMS is how long one more turn's completion took to reach
	// every event stream, from its submission.
	FanoutMS float64 `json:"fanout_ms"`
	SetupS   float64 `json:"setup_s"`
}

func newBenchConsoleCmd() *cobra.Command {
	var o consoleBenchOptions
	cmd := &cobra.Command{
		Use:   "console [--hops 200] [--renders 21] [--streams 1000] [--dir PARENT_TMP]",
		Short: "Time the console's timeline and hold many live streams on one agentrt serve",
		Long: `Start agentrt serve (this binary, a process of its own) on a temporary SQLite data
directory and a replay agent, run one request of --hops tool calls, sign in to the
console, and time the request's timeline page (GET /ui/requests/{turnId}) --renders
times. Then open --streams streams with the console's cookie, half the console's live
streams (GET /ui/live) and half event streams (GET /v1/events), read the server's RSS,
and time how long one more turn's completion takes to reach every event stream (docs/benchmarks.md,
"Console"). Prints exactly one line:
RESULT {"bench":"console","hops":…,"timeline_ms":…,"streams":…,"rss_streams_mb":…,…}`,
		Example:     "  agentrt bench console --hops 200 --streams 1000",
		Annotations: map[string]string{singleDash: "true"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.hops < 1 || o.renders < 1 || o.streams < 2 {
				return usageErr("invalid benchmark options: need --hops and --renders ≥ 1 and --streams ≥ 2")
			}
			if o.bin == "" {
				exe, err := os.Executable()
				if err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
				o.bin = exe
			}
			res, err := benchConsole(cmd.Context(), o)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			return printResult(cmd, res)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.hops, "hops", 200, "tool calls of the request whose timeline is timed")
	fl.IntVar(&o.renders, "renders", 21, "times the timeline is fetched")
	fl.IntVar(&o.streams, "streams", 1000, "streams held open at once")
	fl.StringVar(&o.dir, "dir", "", "parent of the temporary data directory")
	fl.StringVar(&o.bin, "agentrt", "", "the agentrt binary to serve with (default: this one)")
	fl.MarkHidden("agentrt")
	return cmd
}

func benchConsole(ctx context.Context, o consoleBenchOptions) (*consoleBenchResult, error) {
	start := time.Now()
	dir, err := os.MkdirTemp(o.dir, "agentrt-bench-console-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, err := startBenchServe(ctx, dir, o)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	res := &consoleBenchResult{Bench: "console", Hops: o.hops, Renders: o.renders, Streams: o.streams}
	if res.RSSStartMB, _, err = processRSS(srv.cmd.Process.Pid); err != nil {
		return nil, err
	}

	// The request of o.hops hops.
	c, err := client.New(srv.url, srv.token)
	if err != nil {
		return nil, err
	}
	long, err := c.SubmitTurn(ctx, &apitype.SubmitTurnRequest{Agent: "hops", Input: "go"})
	if err != nil {
		return nil, fmt.Errorf("submitting the long request: %w", err)
	}
	if err := waitRested(ctx, c, long.TurnID); err != nil {
		return nil, err
	}
	cookie, err := srv.signIn(ctx)
	if err != nil {
		return nil, err
	}
	res.SetupS = time.Since(start).Seconds()

	// The timeline, o.renders times.
	times := make([]time.Duration, o.renders)
	for i := range times {
		t0 := time.Now()
		n, err := srv.get(ctx, "/ui/requests/"+long.TurnID, cookie)
		if err != nil {
			return nil, fmt.Errorf("the timeline: %w", err)
		}
		times[i] = time.Since(t0)
		res.TimelineBytes = n
	}
	res.TimelineMS = ms(bench.Median(times))

	// The streams.
	if res.RSSBeforeMB, _, err = processRSS(srv.cmd.Process.Pid); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		opened sync.WaitGroup
		done   sync.WaitGroup
		mu     sync.Mutex
		errs   []error
	)
	completed := make(chan time.Time, o.streams)
	h, err := c.Health(ctx)
	if err != nil {
		return nil, err
	}
	events := "/v1/events?follow=true&after=" + strconv.FormatInt(h.Store.LastCursor, 10)
	for i := range o.streams {
		path := "/ui/live"
		if i%2 == 1 {
			path = events
		}
		opened.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			err := srv.stream(sctx, path, cookie, opened.Done, completed)
			if err != nil && sctx.Err() == nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	opened.Wait()
	if err := errors.Join(errs...); err != nil {
		cancel()
		done.Wait()
		return nil, fmt.Errorf("opening the streams: %w", err)
	}
	m, err := procStatus(srv.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	res.RSSStreamsMB, res.AnonStreamsMB, res.FileStreamsMB = m["VmRSS"], m["RssAnon"], m["RssFile"]
	res.KBPerStream = (res.RSSStreamsMB - res.RSSBeforeMB) * 1024 / float64(o.streams)

	// One more turn, followed by every event stream.
	t0 := time.Now()
	if _, err := c.SubmitTurn(ctx, &apitype.SubmitTurnRequest{Agent: "echo", Input: "hi"}); err != nil {
		return nil, fmt.Errorf("submitting the fan-out turn: %w", err)
	}
	var last time.Time
	for range o.streams / 2 {
		select {
		case at := <-completed:
			last = at
		case <-time.After(time.Minute):
			return nil, errors.New("the fan-out turn did not reach every event stream within a minute")
		}
	}
	res.FanoutMS = ms(last.Sub(t0))
	cancel()
	done.Wait()
	if _, res.MaxRSSMB, err = processRSS(srv.cmd.Process.Pid); err != nil {
		return nil, err
	}
	return res, nil
}

// benchServe is the agentrt serve the console bench runs.
type benchServe struct {
	cmd   *exec.Cmd
	url   string
	token string
	hc    *http.Client
}

func startBenchServe(ctx context.Context, dir string, o consoleBenchOptions) (*benchServe, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	var script strings.Builder
	script.WriteString("responses:\n")
	for i := range o.hops {
		fmt.Fprintf(&script, "  - text: \"Reading the notes, pass %d.\"\n    tool_calls: [{name: read_file, input: {path: notes.md}}]\n    usage: {input_tokens: 400, output_tokens: 20}\n", i+1)
	}
	script.WriteString("  - text: \"Done.\"\n")
	files := map[string]string{
		"hops.replay.yaml": script.String(),
		"echo.replay.yaml": "responses: [{text: hi}]\n",
		"ws/notes.md":      "Notes for the benchmark: a few lines of text a tool returns.\n",
		"agentrt.yaml": fmt.Sprintf(`data_dir: data
server: {listen: %q, max_conns_per_client: %d}
agents:
  hops:
    instructions: Read the notes.
    model: {provider: replay, script: hops.replay.yaml}
    tools: [read_file]
    max_tool_hops: %d
    workspace: ws
  echo:
    instructions: Say hi.
    model: {provider: replay, script: echo.replay.yaml}
`, addr, o.streams+64, min(o.hops+1, 1000)),
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(o.bin, "serve", "--config", filepath.Join(dir, "agentrt.yaml"), "--log-format", "text")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting agentrt serve: %w", err)
	}
	s := &benchServe{cmd: cmd, url: "http://" + addr, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.streams + 8}}}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Wait for it to answer /readyz.
	for {
		resp, err := s.hc.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("agentrt serve exited (%v):\n%s", err, log)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	token, err := os.ReadFile(filepath.Join(dir, "data", httpapi.TokenFile))
	if err != nil {
		s.stop()
		return nil, err
	}
	s.token = strings.TrimSpace(string(token))
	return s, nil
}

func (s *benchServe) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { s.cmd.Process.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
	}
}

// signIn signs in to the console and returns its cookie.
func (s *benchServe) signIn(ctx context.Context) (*http.Cookie, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/ui/login", strings.NewReader(url.Values{"token": {s.token}}.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := (&http.Client{Transport: s.hc.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == httpapi.SessionCookie {
			return c, nil
		}
	}
	return nil, fmt.Errorf("signing in to the console: %s, and no session cookie", resp.Status)
}

// get fetches path with the cookie and returns the body's length.
func (s *benchServe) get(ctx context.Context, path string, cookie *http.Cookie) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		return 0, err
	}
	req.AddCookie(cookie)
	resp, err := s.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return int(n), err
}

// stream opens path with the cookie, calls opened once its first bytes
// arrive, and reads it until ctx ends. An event stream sends the time
// it reads a turn.completed to completed.
func (s *benchServe) stream(ctx context.Context, path string, cookie *http.Cookie, opened func(), completed chan<- time.Time) error {
	once := sync.OnceFunc(opened)
	defer once()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		return err
	}
	req.AddCookie(cookie)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 0, 4096), 1<<20)
	events := strings.HasPrefix(path, "/v1/events")
	for lines.Scan() {
		once()
		if events && lines.Text() == "event: turn.completed" {
			completed <- time.Now()
		}
	}
	return lines.Err()
}

// waitRested waits for a turn to come to rest.
func waitRested(ctx context.Context, c *client.Client, turnID string) error {
	for {
		r, err := c.GetRequest(ctx, turnID)
		if err != nil {
			return err
		}
		if r.Status.Resting() {
			if r.Status != runtype.StatusCompleted {
				return fmt.Errorf("request %s ended %s", turnID, r.Status)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// processRSS reads a process's resident set and its peak, in MB, from
// /proc.
func processRSS(pid int) (rss, peak float64, err error) {
	m, err := procStatus(pid)
	return m["VmRSS"], m["VmHWM"], err
}

// procStatus reads the memory figures of /proc/PID/status (VmRSS, VmHWM,
// RssAnon, RssFile), in MB.
func procStatus(pid int) (map[string]float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("reading the server's RSS: %w", err)
	}
	m := make(map[string]float64)
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || !slices.Contains([]string{"VmRSS", "VmHWM", "RssAnon", "RssFile"}, k) {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if err != nil {
			return nil, fmt.Errorf("reading the server's RSS: %s: %w", line, err)
		}
		m[k] = kb / 1024
	}
	return m, nil
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
