package agentrt_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// wire is an httptest server that answers each model call with the next
// recorded response: a file from the adapters' testdata, served as
// received from the provider. It records the requests it got.
type wire struct {
	srv *httptest.Server

	mu      sync.Mutex
	replies []reply
	got     []*http.Request
	bodies  [][]byte
}

// reply is one recorded answer: a status, headers and a body (a file
// under model/, or literal text).
type reply struct {
	status int
	header map[string]string
	file   string
	body   string
}

func newWire(t *testing.T, replies ...reply) *wire {
	t.Helper()
	w := &wire{replies: replies}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.got = append(w.got, r)
		w.bodies = append(w.bodies, body)
		if len(w.replies) == 0 {
			w.mu.Unlock()
			http.Error(rw, `{"error":{"type":"invalid_request_error","message":"no more recorded replies"}}`, http.StatusBadRequest)
			return
		}
		rp := w.replies[0]
		w.replies = w.replies[1:]
		w.mu.Unlock()
		data := []byte(rp.body)
		if rp.file != "" {
			var err error
			if data, err = os.ReadFile(filepath.Join("model", rp.file)); err != nil {
				t.Errorf("reading recorded reply: %v", err)
			}
		}
		ct := "text/event-stream"
		if rp.status >= 400 || strings.HasSuffix(rp.file, ".json") {
			ct = "application/json"
		}
		rw.Header().Set("Content-Type", ct)
		for k, v := range rp.header {
			rw.Header().Set(k, v)
		}
		rw.WriteHeader(cmpOr(rp.status, http.StatusOK))
		rw.Write(data)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

func (w *wire) requests() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.got)
}

// providerConfig writes an agentrt.yaml whose agent "weather" uses the
// given models section and candidates, with a get_weather command tool.
func providerConfig(t *testing.T, models, candidates, extra string) string {
	t.Helper()
	dir := t.TempDir()
	src := "models:\n" + models + `
agents:
  weather:
    instructions: Answer questions about the weather.
    models: [` + candidates + `]
    tools: [get_weather, open_ticket]
tools:
  get_weather:
    description: Get the weather of a city.
    input_schema: {type: object, properties: {city: {type: string}, location: {type: string}, units: {type: string}}}
    command: [sh, -c, 'cat >/dev/null; echo "{\"temp_c\": 18, \"sky\": \"clear\"}"']
    annotations: {read_only: true, idempotent: true}
  open_ticket:
    description: Open a ticket.
    input_schema: {type: object, properties: {order_id: {type: string}}}
    command: [sh, -c, 'cat >/dev/null; echo "{\"ticket\": \"T-1\"}"']
` + extra
	path := filepath.Join(dir, "agentrt.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startConfig starts a runtime from an agentrt.yaml, logging JSON into
// logs.
func startConfig(t *testing.T, path string, logs io.Writer) *testBundle {
	t.Helper()
	cfg, f, err := agentrt.LoadConfig(path)
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if logs != nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return &testBundle{rt: rt, dir: f.DataDir}
}

// TestProvidersEndToEnd runs a whole turn through each adapter against
// recorded wire traffic: a streamed tool call, the tool, then the final
// streamed answer.
func TestProvidersEndToEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind      string
		extra     string // more model keys
		replies   []reply
		wantCalls int    // get_weather calls the model made
		wantText  string // a part of the final answer
	}{
		{kind: "openai_chat", replies: []reply{{file: "openaichat/testdata/sdk_text_tool_call.sse"}, {file: "openaichat/testdata/usage.sse"}},
			wantCalls: 1},
		{kind: "openai_chat", extra: "context_window: 128000", replies: []reply{{file: "openaichat/testdata/parallel_tool_calls.sse"}, {file: "openaichat/testdata/usage.sse"}},
			wantCalls: 2},
		{kind: "openai_compatible", extra: "base_url: URL", replies: []reply{{file: "openaicompat/testdata/ollama_tool_calls.sse"}, {file: "openaicompat/testdata/ollama_reasoning.sse"}},
			wantCalls: 2},
		{kind: "openai_responses", replies: []reply{{file: "openairesponses/testdata/tool_calls.sse"}, {file: "openairesponses/testdata/text.sse"}},
			wantCalls: 2},
		{kind: "anthropic_messages", replies: []reply{{file: "anthropic/testdata/tool-use.sse"}, {file: "anthropic/testdata/text.sse"}},
			wantCalls: 1},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprint(tt.kind, i), func(t *testing.T) {
			t.Parallel()
			w := newWire(t, tt.replies...)
			url := w.srv.URL + "/v1"
			if tt.kind == "anthropic_messages" {
				url = w.srv.URL
			}
			extra := strings.ReplaceAll(tt.extra, "URL", url)
			models := fmt.Sprintf("  m: {provider: %s, model: test-model, base_url: %q, api_key: sk-e2e-test-key-123, price: {input: 1, output: 2}", tt.kind, url)
			if tt.kind == "openai_compatible" {
				models = fmt.Sprintf("  m: {provider: %s, model: test-model, price: {input: 1, output: 2}, %s", tt.kind, extra)
			} else if extra != "" {
				models += ", " + extra
			}
			b := startConfig(t, providerConfig(t, models+"}", "m", ""), nil)
			_, turn := b.submit(t, &apitype.SubmitTurnParams{Agent: "weather", Input: "What's the weather in San Francisco?"})
			if turn.Status != runtype.StatusCompleted {
				t.Fatalf("turn %s (%s): %+v", turn.Status, turn.StatusReason, turn.Failure)
			}
			if w.requests() != 2 {
				t.Errorf("%d model requests, want 2", w.requests())
			}
			evs := b.sessionEvents(t, runtype.Owner{}, turn.SessionID)
			results := find(evs, event.ToolResult)
			if len(results) != tt.wantCalls {
				t.Errorf("%d tool results, want %d (events %v)", len(results), tt.wantCalls, types(evs))
			}
			for _, e := range results {
				if p := e.Payload.(*event.ToolResultPayload); p.Name != "get_weather" || !strings.Contains(p.Preview, "clear") {
					t.Errorf("tool result %+v", p)
				}
			}
			if len(find(evs, event.ModelDelta)) == 0 {
				t.Error("no model.delta events: the answer was not streamed")
			}
			recorded := find(evs, event.CostRecorded)
			if len(recorded) != 2 {
				t.Fatalf("%d cost.recorded events, want 2", len(recorded))
			}
			var usage runtype.Usage
			for _, e := range find(evs, event.ModelCompleted) {
				p := e.Payload.(*event.ModelCompletedPayload)
				usage = usage.Add(p.Usage)
				if e.Refs["rawResponse"] == "" || p.Provider.Kind != tt.kind || p.Provider.Candidate != "m" {
					t.Errorf("model.completed %+v refs %v", p, e.Refs)
				}
			}
			if usage.Tokens() == 0 || turn.Usage != usage {
				t.Errorf("turn usage %+v, model.completed usage %+v", turn.Usage, usage)
			}
			// The tool result went back to the model in the second request.
			w.mu.Lock()
			second := string(w.bodies[1])
			w.mu.Unlock()
			if !strings.Contains(second, `temp_c`) {
				t.Errorf("second request does not carry the tool result:\n%s", second)
			}
		})
	}
}

// TestInvalidToolArgumentsFromTheWire: a model that streams malformed tool
// arguments gets an error result and the turn goes on.
func TestInvalidToolArgumentsFromTheWire(t *testing.T) {
	t.Parallel()
	w := newWire(t, reply{file: "openaichat/testdata/invalid_arguments.sse"}, reply{file: "openaichat/testdata/usage.sse"})
	models := fmt.Sprintf("  m: {provider: openai_chat, model: gpt, base_url: %q, api_key: sk-e2e-test-key-123}", w.srv.URL+"/v1")
	b := startConfig(t, providerConfig(t, models, "m", ""), nil)
	_, turn := b.submit(t, &apitype.SubmitTurnParams{Agent: "weather", Input: "Open a ticket"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn %s: %+v", turn.Status, turn.Failure)
	}
	failed := find(b.sessionEvents(t, runtype.Owner{}, turn.SessionID), event.ToolFailed)
	if len(failed) != 1 {
		t.Fatalf("%d tool.failed events, want 1", len(failed))
	}
	if f := failed[0].Payload.(*event.ToolResultPayload).Failure; f == nil || f.Kind != runtype.FailureInvalidArguments {
		t.Errorf("failure %+v, want invalid_arguments", f)
	}
}

// TestAPIKeyNeverWritten runs a turn whose first candidate is rate limited
// with a body echoing the key and whose second answers with the key in its
// raw stream, then searches everything the run wrote — the data directory
// (SQLite, WAL, blobs), the logs and every event — for the key.
func TestAPIKeyNeverWritten(t *testing.T) {
	key := "sk-live-" + randomHex(t)
	t.Setenv("AGENTRT_TEST_OPENAI_KEY", key)
	t.Setenv("AGENTRT_TEST_ANTHROPIC_KEY", key)
	limited := newWire(t, reply{status: http.StatusTooManyRequests,
		header: map[string]string{"Retry-After": "0", "X-Ratelimit-Remaining-Requests": "0"},
		body:   `{"error":{"type":"requests","code":"rate_limit_exceeded","message":"Rate limit reached for key ` + key + `"}}`})
	stream, err := os.ReadFile("model/anthropic/testdata/tool-use.sse")
	if err != nil {
		t.Fatal(err)
	}
	leaky := strings.Replace(string(stream), "msg_01P7nF1bmxyzFZjF8zwbUDBM", "msg_"+key, 1)
	answers := newWire(t, reply{body: leaky}, reply{file: "anthropic/testdata/text.sse"})
	models := fmt.Sprintf("  first: {provider: openai_chat, model: gpt, base_url: %q, api_key_env: AGENTRT_TEST_OPENAI_KEY}\n"+
		"  second: {provider: anthropic_messages, model: claude, base_url: %q, api_key_env: AGENTRT_TEST_ANTHROPIC_KEY}",
		limited.srv.URL+"/v1", answers.srv.URL)
	var logs bytes.Buffer
	var mu sync.Mutex
	b := startConfig(t, providerConfig(t, models, "first, second", ""), lockedWriter{&mu, &logs})
	_, turn := b.submit(t, &apitype.SubmitTurnParams{Agent: "weather", Input: "Weather in SF?"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn %s: %+v", turn.Status, turn.Failure)
	}
	limited.mu.Lock()
	auth := limited.got[0].Header.Get("Authorization")
	limited.mu.Unlock()
	if auth != "Bearer "+key {
		t.Fatalf("the key was not sent: Authorization %q", auth)
	}
	evs := b.sessionEvents(t, runtype.Owner{}, turn.SessionID)
	if len(find(evs, event.RateLimitHit)) != 1 || len(find(evs, event.RoutingFallbackApplied)) != 1 {
		t.Errorf("want a rate limit and a fallback; events %v", types(evs))
	}
	for _, e := range evs {
		raw, _ := e.JSON()
		if bytes.Contains(raw, []byte(key)) {
			t.Errorf("event %s holds the key: %s", e.Type, raw)
		}
	}
	if err := b.rt.Stop(context.Background()); err != nil { // flush the WAL and close the files
		t.Fatal(err)
	}
	err = filepath.WalkDir(b.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(key)) {
			t.Errorf("%s holds the key", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if logs.Len() == 0 {
		t.Error("nothing was logged; the search proves nothing about logs")
	}
	if bytes.Contains(logs.Bytes(), []byte(key)) {
		t.Errorf("logs hold the key:\n%s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func find(evs []*event.Event, typ event.Type) []*event.Event {
	var out []*event.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func types(evs []*event.Event) []event.Type {
	out := make([]event.Type, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// TestAnthropicDefaultsAgree: config checks a thinking budget against the
// max tokens the Anthropic adapter sends by default; the largest budget the
// file accepts must build an adapter too.
func TestAnthropicDefaultsAgree(t *testing.T) {
	t.Parallel()
	models := "  m: {provider: anthropic_messages, model: claude, api_key: sk-e2e-test-key-123, thinking_budget: 4095}"
	if _, _, err := agentrt.LoadConfig(providerConfig(t, models, "m", "")); err != nil {
		t.Fatalf("a budget config accepts is refused by the adapter: %v", err)
	}
}
