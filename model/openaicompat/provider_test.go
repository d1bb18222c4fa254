package openaicompat_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openaicompat"
	"github.com/agentrt/agentrt/runtype"
)

type captured struct {
	header http.Header
	body   map[string]any
}

type testBundle struct {
	srv      *httptest.Server
	raw      []byte
	requests chan captured
}

// setup starts a server that records each request and answers it with the
// stream in testdata/file.
func setup(t *testing.T, file string) *testBundle {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	b := &testBundle{raw: raw, requests: make(chan captured, 4)}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		c := captured{header: r.Header.Clone()}
		_ = json.Unmarshal(data, &c.body)
		b.requests <- c
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(raw)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *testBundle) config(cfg openaicompat.Config) openaicompat.Config {
	cfg.Model = "qwen3:8b"
	cfg.BaseURL = b.srv.URL + "/v1"
	cfg.HTTPClient = b.srv.Client()
	return cfg
}

// generate sends a one-message request with cfg and returns the response,
// the deltas and the request the server received.
func (b *testBundle) generate(t *testing.T, cfg openaicompat.Config, req *model.Request) (*model.Response, []model.Delta, captured) {
	t.Helper()
	p, err := openaicompat.New(b.config(cfg))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if req == nil {
		req = &model.Request{Messages: []runtype.Message{{Role: runtype.RoleUser, Content: "What is 2+2?"}}}
	}
	var deltas []model.Delta
	req.Stream = func(d model.Delta) { deltas = append(deltas, d) }
	resp, err := p.Generate(t.Context(), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return resp, deltas, <-b.requests
}

func TestReasoningStreams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		file       string
		want       *model.Response
		wantDeltas []model.Delta
	}{
		{
			name: "ollama reasoning field",
			file: "ollama_reasoning.sse",
			want: &model.Response{
				Text:         "2 + 2 = 4.",
				Reasoning:    []runtype.Reasoning{{Provider: "openai_compatible", Text: "The user wants 2+2. That is 4."}},
				FinishReason: model.FinishStop,
				Usage:        runtype.Usage{InputTokens: 18, OutputTokens: 42},
				Model:        "qwen3:8b",
			},
			wantDeltas: []model.Delta{
				{Kind: model.DeltaReasoning, Text: "The user"},
				{Kind: model.DeltaReasoning, Text: " wants 2+2."},
				{Kind: model.DeltaReasoning, Text: " That is 4."},
				{Kind: model.DeltaText, Text: "2 + 2"},
				{Kind: model.DeltaText, Text: " = 4."},
			},
		},
		{
			name: "deepseek reasoning_content field",
			file: "deepseek_reasoning.sse",
			want: &model.Response{
				Text:         "9.8 is larger.",
				Reasoning:    []runtype.Reasoning{{Provider: "openai_compatible", Text: "Okay, 9.11 vs 9.8."}},
				FinishReason: model.FinishStop,
				Usage:        runtype.Usage{InputTokens: 530, CachedInputTokens: 512, OutputTokens: 96, ReasoningTokens: 80},
				Model:        "deepseek-reasoner",
			},
			wantDeltas: []model.Delta{
				{Kind: model.DeltaReasoning, Text: "Okay"},
				{Kind: model.DeltaReasoning, Text: ", 9.11 vs 9.8."},
				{Kind: model.DeltaText, Text: "9.8"},
				{Kind: model.DeltaText, Text: " is larger."},
			},
		},
		{
			name: "vllm sends both fields",
			file: "vllm_both_fields.sse",
			want: &model.Response{
				Text:         "Hi.",
				Reasoning:    []runtype.Reasoning{{Provider: "openai_compatible", Text: "Greet back."}},
				FinishReason: model.FinishStop,
				Model:        "Qwen/Qwen3-8B",
			},
			wantDeltas: []model.Delta{
				{Kind: model.DeltaReasoning, Text: "Greet back."},
				{Kind: model.DeltaText, Text: "Hi."},
			},
		},
		{
			name: "ollama tool calls in one chunk",
			file: "ollama_tool_calls.sse",
			want: &model.Response{
				ToolCalls: []runtype.MessageToolCall{
					{ID: "call_k3jf9a2m", Name: "get_weather", Arguments: `{"city":"Paris"}`},
					{ID: "call_p0q8x7zb", Name: "get_weather", Arguments: `{"city":"Rome"}`},
				},
				FinishReason: model.FinishToolCalls,
				Usage:        runtype.Usage{InputTokens: 150, OutputTokens: 38},
				Model:        "qwen3:8b",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.file)
			resp, deltas, _ := b.generate(t, openaicompat.Config{}, nil)
			tt.want.Raw = b.raw
			tt.want.RawMediaType = "text/event-stream"
			if diff := cmp.Diff(tt.want, resp); diff != "" {
				t.Errorf("response mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDeltas, deltas); diff != "" {
				t.Errorf("deltas mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestDialect(t *testing.T) {
	t.Parallel()
	b := setup(t, "ollama_reasoning.sse")
	req := &model.Request{MaxOutputTokens: 512, Messages: []runtype.Message{
		{Role: runtype.RoleUser, Content: "What is 2+2?"},
		{Role: runtype.RoleAssistant, Content: "4", Reasoning: []runtype.Reasoning{{Provider: "openai_compatible", Text: "easy"}}},
		{Role: runtype.RoleUser, Content: "And 3+3?"},
	}}
	_, _, got := b.generate(t, openaicompat.Config{}, req)
	fields := map[string]any{
		"max_tokens":            got.body["max_tokens"],
		"max_completion_tokens": got.body["max_completion_tokens"],
		"assistant message":     got.body["messages"].([]any)[1],
	}
	want := map[string]any{
		"max_tokens":            float64(512),
		"max_completion_tokens": nil,
		// Reasoning is not sent back.
		"assistant message": map[string]any{"role": "assistant", "content": "4"},
	}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("request mismatch (-want +got):\n%s", diff)
	}
}

// TestAuthorization checks that an empty key sends no Authorization
// header, whatever OPENAI_API_KEY says. t.Setenv rules out t.Parallel.
func TestAuthorization(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment-0000")
	tests := []struct {
		name string
		key  string
		want string
	}{
		{name: "no key", key: "", want: ""},
		{name: "key", key: "sk-local-1234567890", want: "Bearer sk-local-1234567890"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t, "ollama_reasoning.sse")
			_, _, got := b.generate(t, openaicompat.Config{Endpoint: model.Endpoint{APIKey: tt.key}}, nil)
			if v := got.header.Get("Authorization"); v != tt.want {
				t.Errorf("Authorization = %q, want %q", v, tt.want)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  openaicompat.Config
		want string
	}{
		{
			name: "missing base URL",
			cfg:  openaicompat.Config{Endpoint: model.Endpoint{Model: "llama3.2"}},
			want: "invalid openai_compatible config: base url is required (for example http://localhost:11434/v1)",
		},
		{
			name: "missing model",
			cfg:  openaicompat.Config{Endpoint: model.Endpoint{BaseURL: "http://localhost:11434/v1"}},
			want: "invalid openai_compatible config: model is required",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := openaicompat.New(tt.cfg)
			if err == nil || err.Error() != tt.want {
				t.Errorf("New = %v, %v; want error %s", p, err, tt.want)
			}
		})
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	p, err := openaicompat.New(openaicompat.Config{Endpoint: model.Endpoint{Model: "llama3.2", BaseURL: "http://localhost:11434/v1"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(model.Info{Kind: "openai_compatible", Model: "llama3.2"}, p.Info()); diff != "" {
		t.Errorf("Info mismatch (-want +got):\n%s", diff)
	}
}
