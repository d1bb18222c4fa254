package openaichat_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openaichat"
	"github.com/agentrt/agentrt/runtype"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testKey is the API key tests configure; it is long enough for
// model.Redact to treat it as a secret.
const testKey = "sk-test-4f1c2d9e8b7a6c5d"

// captured is a request as the test server received it.
type captured struct {
	header http.Header
	body   []byte
}

type testBundle struct {
	srv      *httptest.Server
	requests chan captured // buffered; every request the server received
}

// setup starts a server that records each request and answers it with
// handler.
func setup(t *testing.T, handler http.HandlerFunc) *testBundle {
	t.Helper()
	b := &testBundle{requests: make(chan captured, 16)}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.requests <- captured{header: r.Header.Clone(), body: body}
		handler(w, r)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

// provider returns a Provider for the bundle's server with cfg's other
// fields.
func (b *testBundle) provider(t *testing.T, cfg openaichat.Config) *openaichat.Provider {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "gpt-4o"
	}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	cfg.BaseURL = b.srv.URL + "/v1"
	cfg.HTTPClient = b.srv.Client()
	p, err := openaichat.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// lastRequest returns the request the server received last.
func (b *testBundle) lastRequest(t *testing.T) captured {
	t.Helper()
	select {
	case c := <-b.requests:
		return c
	default:
		t.Fatal("the server received no request")
		return captured{}
	}
}

// sse answers with a server-sent event stream.
func sse(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}
}

// sseFile answers with the stream in testdata/name.
func sseFile(t *testing.T, name string) http.HandlerFunc {
	return sse(readFile(t, name))
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// generate calls p and records the deltas it streams.
func generate(t *testing.T, p model.Provider, req *model.Request) (*model.Response, []model.Delta, error) {
	t.Helper()
	var deltas []model.Delta
	if req == nil {
		req = &model.Request{Messages: []runtype.Message{{Role: runtype.RoleUser, Content: "hi"}}}
	}
	req.Stream = func(d model.Delta) { deltas = append(deltas, d) }
	resp, err := p.Generate(t.Context(), req)
	return resp, deltas, err
}

func TestRequestMapping(t *testing.T) {
	t.Parallel()
	b := setup(t, sseFile(t, "usage.sse"))
	temp := 0.2
	p := b.provider(t, openaichat.Config{
		Endpoint: model.Endpoint{
			Model:           "gpt-5-mini",
			Temperature:     &temp,
			MaxOutputTokens: 4096,
			Headers:         map[string]string{"X-Tenant": "acme"},
		},
		ReasoningEffort: "low",
	})
	req := &model.Request{
		Instructions: "You are a support agent.",
		Messages: []runtype.Message{
			{Role: runtype.RoleUser, Content: "Where are orders 1042 and 1043?"},
			{Role: runtype.RoleAssistant, Content: "Let me look both up.", ToolCalls: []runtype.MessageToolCall{
				{ID: "call_1", Name: "lookup_order", Arguments: `{"order_id":"1042"}`},
				{ID: "call_2", Name: "lookup_order", Arguments: `{"order_id": "1043"`},
			}},
			{Role: runtype.RoleTool, ToolCallID: "call_1", Content: `{"status":"shipped"}`},
			{Role: runtype.RoleTool, ToolCallID: "call_2", Content: "invalid arguments: unexpected end of JSON input", IsError: true},
			{Role: runtype.RoleSystem, Content: "Reminder: never promise delivery dates."},
		},
		Tools: []model.ToolDefinition{
			{Name: "lookup_order", Description: "Looks up an order.", InputSchema: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string","description":"The order number."}},"required":["order_id"]}`)},
			{Name: "complete_task", Description: "Ends the task.", InputSchema: json.RawMessage(`{"type":"object","properties":{"result":{"type":"string"}}}`)},
		},
		MaxOutputTokens: 1024,
	}
	if _, _, err := generate(t, p, req); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	got := b.lastRequest(t)

	var indented bytes.Buffer
	if err := json.Indent(&indented, got.body, "", "  "); err != nil {
		t.Fatalf("the request body is not JSON: %v\n%s", err, got.body)
	}
	indented.WriteByte('\n')
	const golden = "testdata/request.golden.json"
	if *update {
		if err := os.WriteFile(golden, indented.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(string(readFile(t, "request.golden.json")), indented.String()); diff != "" {
		t.Errorf("request body mismatch with %s (-want +got):\n%s", golden, diff)
	}
	headers := map[string]string{"Authorization": got.header.Get("Authorization"), "X-Tenant": got.header.Get("X-Tenant")}
	wantHeaders := map[string]string{"Authorization": "Bearer " + testKey, "X-Tenant": "acme"}
	if diff := cmp.Diff(wantHeaders, headers); diff != "" {
		t.Errorf("request headers mismatch (-want +got):\n%s", diff)
	}
}

func TestRequestUsesConfiguredMaxOutputTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cfg, req  int
		wantField any
	}{
		{name: "request wins", cfg: 4096, req: 100, wantField: float64(100)},
		{name: "config default", cfg: 4096, wantField: float64(4096)},
		{name: "neither", wantField: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, sseFile(t, "usage.sse"))
			p := b.provider(t, openaichat.Config{Endpoint: model.Endpoint{MaxOutputTokens: tt.cfg}})
			req := &model.Request{MaxOutputTokens: tt.req, Messages: []runtype.Message{{Role: runtype.RoleUser, Content: "hi"}}}
			if _, _, err := generate(t, p, req); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			var body map[string]any
			if err := json.Unmarshal(b.lastRequest(t).body, &body); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantField, body["max_completion_tokens"]); diff != "" {
				t.Errorf("max_completion_tokens mismatch (-want +got):\n%s", diff)
			}
			if _, ok := body["max_tokens"]; ok {
				t.Errorf("max_tokens = %v was sent", body["max_tokens"])
			}
		})
	}
}

func TestRequestRejectsBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  *model.Request
		want string
	}{
		{
			name: "schema not an object",
			req:  &model.Request{Tools: []model.ToolDefinition{{Name: "t", InputSchema: json.RawMessage(`[1]`)}}},
			want: `model invalid_request: decoding the input schema of tool "t": json: cannot unmarshal array into Go value of type map[string]json.RawMessage`,
		},
		{
			name: "unknown role",
			req:  &model.Request{Messages: []runtype.Message{{Role: "narrator", Content: "x"}}},
			want: `model invalid_request: mapping message 0: unknown role "narrator"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, sseFile(t, "usage.sse"))
			p := b.provider(t, openaichat.Config{})
			_, err := p.Generate(t.Context(), tt.req)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Generate error = %v, want %s", err, tt.want)
			}
			if model.AsError(err).Retryable() {
				t.Errorf("a bad request is retryable")
			}
			if len(b.requests) != 0 {
				t.Errorf("a bad request was sent")
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  openaichat.Config
		want string
	}{
		{
			name: "empty",
			cfg:  openaichat.Config{},
			want: "invalid openai_chat config: model is required",
		},
		{
			name: "no key",
			cfg:  openaichat.Config{Endpoint: model.Endpoint{Model: "m"}},
			want: "invalid openai_chat config: api key is required",
		},
		{
			name: "bad endpoint",
			cfg:  openaichat.Config{Endpoint: model.Endpoint{Model: "m", APIKey: testKey, BaseURL: "localhost:8080", Timeout: -1}},
			want: `invalid openai_chat config: base url "localhost:8080" is not an absolute http or https url`,
		},
		{
			name: "bad reasoning effort",
			cfg:  openaichat.Config{Endpoint: model.Endpoint{Model: "m", APIKey: testKey}, ReasoningEffort: "extreme"},
			want: `invalid openai_chat config: reasoning effort "extreme" is not one of [none minimal low medium high xhigh max]`,
		},
		{
			name: "dialect kind and optional key",
			cfg:  openaichat.Config{Endpoint: model.Endpoint{Model: "m", Timeout: -1}, Dialect: openaichat.Dialect{Kind: "openai_compatible", OptionalAPIKey: true}},
			want: "invalid openai_compatible config: timeout -1ns is negative",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := openaichat.New(tt.cfg)
			if err == nil || err.Error() != tt.want {
				t.Errorf("New error = %v, want:\n%s", err, tt.want)
			}
		})
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	p, err := openaichat.New(openaichat.Config{Endpoint: model.Endpoint{Model: "gpt-4o", APIKey: testKey}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(model.Info{Kind: "openai_chat", Model: "gpt-4o"}, p.Info()); diff != "" {
		t.Errorf("Info mismatch (-want +got):\n%s", diff)
	}
}

// roundTripper answers every request itself, to see where a request goes
// without a network.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestDefaultBaseURL(t *testing.T) {
	t.Parallel()
	urls := make(chan string, 1)
	client := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		urls <- r.URL.String()
		return &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{}`)), Request: r}, nil
	})}
	p, err := openaichat.New(openaichat.Config{Endpoint: model.Endpoint{Model: "gpt-4o", APIKey: testKey, HTTPClient: client}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = generate(t, p, nil)
	if got := model.AsError(err).Kind; got != model.ErrAuth {
		t.Errorf("error kind = %s, want auth (%v)", got, err)
	}
	if got, want := <-urls, "https://api.openai.com/v1/chat/completions"; got != want {
		t.Errorf("request URL = %s, want %s", got, want)
	}
}

// TestEnvironmentIsIgnored checks that the SDK's OPENAI_* variables
// change nothing: the key, base URL and headers come from Config only.
// t.Setenv rules out t.Parallel.
func TestEnvironmentIsIgnored(t *testing.T) {
	elsewhere := setup(t, sseFile(t, "usage.sse"))
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment-0000")
	t.Setenv("OPENAI_BASE_URL", elsewhere.srv.URL+"/v1")
	t.Setenv("OPENAI_ORG_ID", "org-from-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-from-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Env: yes")

	b := setup(t, sseFile(t, "usage.sse"))
	p := b.provider(t, openaichat.Config{})
	if _, _, err := generate(t, p, nil); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	h := b.lastRequest(t).header
	got := map[string]string{
		"Authorization":       h.Get("Authorization"),
		"OpenAI-Organization": h.Get("OpenAI-Organization"),
		"OpenAI-Project":      h.Get("OpenAI-Project"),
		"X-From-Env":          h.Get("X-From-Env"),
	}
	want := map[string]string{"Authorization": "Bearer " + testKey, "OpenAI-Organization": "", "OpenAI-Project": "", "X-From-Env": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers mismatch (-want +got):\n%s", diff)
	}
	if n := len(elsewhere.requests); n != 0 {
		t.Errorf("OPENAI_BASE_URL received %d requests, want 0", n)
	}
}
