package openairesponses_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openairesponses"
	"github.com/agentrt/agentrt/runtype"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// mappingRequest has every kind of message and two tools.
func mappingRequest() *model.Request {
	return &model.Request{
		Instructions: "You are a weather assistant. Answer briefly.",
		Messages: []runtype.Message{
			{Role: runtype.RoleUser, Content: "What is the weather in Paris and Tokyo?"},
			{
				Role:    runtype.RoleAssistant,
				Content: "Let me check both cities.",
				Reasoning: []runtype.Reasoning{
					{Provider: openairesponses.Kind, ID: "rs_68f0b2d4a1b2c3d4e5f60718293a4b5c", Text: "**Two lookups**\n\nOne call per city.", Encrypted: "gAAAAABo8LLUq3Jk1vX0mT9c=="},
					{Provider: "anthropic_messages", Text: "not for this provider", Signature: "sig"},
					{Provider: openairesponses.Kind, ID: "rs_68f0b2d4ffeeddccbbaa998877665544", Encrypted: "gAAAAABo8LLVz9Y8x7W6v5U4=="},
				},
				ToolCalls: []runtype.MessageToolCall{
					{ID: "call_Qm4vK2pX8sLdN1rT5yWz", Name: "get_weather", Arguments: `{"city":"Paris"}`},
					{ID: "call_Hj7nR3cV9aMe2uFb6tGq", Name: "get_weather", Arguments: `{"city": "Tokyo"`},
				},
			},
			{Role: runtype.RoleTool, ToolCallID: "call_Qm4vK2pX8sLdN1rT5yWz", Content: `{"temp_c":18,"sky":"clear"}`},
			{Role: runtype.RoleTool, ToolCallID: "call_Hj7nR3cV9aMe2uFb6tGq", Content: "invalid arguments: unexpected end of JSON input", IsError: true},
			{Role: runtype.RoleSystem, Content: "Reminder: you have 3 tool calls left."},
		},
		Tools: []model.ToolDefinition{
			{
				Name:        "get_weather",
				Description: "Get the current weather for a city.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"],"additionalProperties":false}`),
			},
			{Name: "complete_task", Description: "Finish the task with a result."},
		},
	}
}

// TestRequestMapping compares the body the API receives with
// testdata/request.golden.json (rewrite it with -update).
func TestRequestMapping(t *testing.T) {
	t.Parallel()
	temp := 0.25
	headers := make(chan http.Header, 1)
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		headers <- r.Header.Clone()
		sse(fixture(t, "text.sse"))(w, r)
	}, func(c *openairesponses.Config) {
		c.Model = "gpt-5"
		c.MaxOutputTokens = 4096
		c.Temperature = &temp
		c.ReasoningEffort = "medium"
		c.ReasoningSummary = "auto"
		c.Headers = map[string]string{"X-Client-Request-Id": "req-7"}
	})
	req := mappingRequest()
	req.MaxOutputTokens = 2048 // the request's cap wins over the config's
	if _, err := b.p.Generate(t.Context(), req); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	got := <-b.bodies
	h := <-headers
	if a := h.Get("Authorization"); a != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want the configured key", a)
	}
	if v := h.Get("X-Client-Request-Id"); v != "req-7" {
		t.Errorf("X-Client-Request-Id = %q, want req-7", v)
	}

	golden := filepath.Join("testdata", "request.golden.json")
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, got)
	}
	pretty.WriteByte('\n')
	if *update {
		if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var gotV, wantV any
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fixture(t, "request.golden.json"), &wantV); err != nil {
		t.Fatalf("decoding the golden file: %v", err)
	}
	if diff := cmp.Diff(wantV, gotV); diff != "" {
		t.Errorf("request body mismatch (-golden +got):\n%s", diff)
	}
}

// TestRequestWithoutReasoning checks that a config without reasoning
// settings sends neither reasoning nor include, and that an optional cap
// left zero is not sent.
func TestRequestWithoutReasoning(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(fixture(t, "text.sse")), nil)
	if _, err := b.p.Generate(t.Context(), &model.Request{Messages: []runtype.Message{{Role: runtype.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(<-b.bodies, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"reasoning", "include", "max_output_tokens", "temperature", "instructions", "tools"} {
		if v, ok := got[k]; ok {
			t.Errorf("request has %s = %v, want it absent", k, v)
		}
	}
	if got["store"] != false || got["stream"] != true {
		t.Errorf("store, stream = %v, %v; want false, true", got["store"], got["stream"])
	}
}

// TestReasoningWithoutEncryptedContentStaysBehind: a reasoning item the
// API returned without encrypted content (a reasoning model the config
// asks no reasoning settings of) is not sent back: with store false the
// API could not find it by its id and would reject the request.
func TestReasoningWithoutEncryptedContentStaysBehind(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(fixture(t, "text.sse")), nil)
	req := &model.Request{Messages: []runtype.Message{
		{Role: runtype.RoleUser, Content: "weather?"},
		{Role: runtype.RoleAssistant, ToolCalls: []runtype.MessageToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{}`}},
			Reasoning: []runtype.Reasoning{{Provider: openairesponses.Kind, ID: "rs_plain", Text: "thinking"}}},
		{Role: runtype.RoleTool, ToolCallID: "call_1", Content: "sunny"},
	}}
	if _, err := b.p.Generate(t.Context(), req); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	var got struct {
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(<-b.bodies, &got); err != nil {
		t.Fatal(err)
	}
	var types []any
	for _, item := range got.Input {
		types = append(types, item["type"])
	}
	if want := []any{"message", "function_call", "function_call_output"}; !reflect.DeepEqual(types, want) {
		t.Errorf("input item types %v, want %v", types, want)
	}
}

// TestRequestBadToolSchema checks that a tool schema that is not JSON is
// refused before anything is sent.
func TestRequestBadToolSchema(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		t.Error("the request was sent")
	}, nil)
	_, err := b.p.Generate(t.Context(), &model.Request{Tools: []model.ToolDefinition{{Name: "broken", InputSchema: json.RawMessage(`{"type":`)}}})
	if me := asModelError(t, err); me.Kind != model.ErrInvalidRequest || !strings.Contains(me.Message, `"broken"`) {
		t.Errorf("error = %v (kind %s), want invalid_request naming the tool", err, me.Kind)
	}
}

// TestEnvironmentIgnored checks that the SDK's environment variables do
// not replace the configured key, endpoint or headers. It sets
// environment variables, so it cannot run in parallel.
func TestEnvironmentIgnored(t *testing.T) {
	envSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the request went to OPENAI_BASE_URL")
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(envSrv.Close)
	t.Setenv("OPENAI_API_KEY", "sk-env-should-not-be-used")
	t.Setenv("OPENAI_BASE_URL", envSrv.URL)
	t.Setenv("OPENAI_ORG_ID", "org-from-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-from-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Env: 1")

	headers := make(chan http.Header, 1)
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		headers <- r.Header.Clone()
		sse(fixture(t, "text.sse"))(w, r)
	}, func(c *openairesponses.Config) {
		c.HTTPClient = nil // the default client, as users get it
	})
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	if _, err := b.p.Generate(t.Context(), &model.Request{}); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	h := <-headers
	if a := h.Get("Authorization"); a != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want the configured key", a)
	}
	for _, k := range []string{"OpenAI-Organization", "OpenAI-Project", "X-From-Env"} {
		if v := h.Get(k); v != "" {
			t.Errorf("header %s = %q came from the environment", k, v)
		}
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	neg := -1.0
	valid := openairesponses.Config{Endpoint: model.Endpoint{Model: "gpt-5", APIKey: testKey}}
	tests := []struct {
		name string
		mod  func(*openairesponses.Config)
		want string // part of the error; empty for success
	}{
		{"valid", func(*openairesponses.Config) {}, ""},
		{"full", func(c *openairesponses.Config) {
			c.BaseURL, c.ReasoningEffort, c.ReasoningSummary = "https://proxy.example/v1", "high", "detailed"
		}, ""},
		{"no model", func(c *openairesponses.Config) { c.Model = "" }, "model is required"},
		{"no key", func(c *openairesponses.Config) { c.APIKey = "" }, "api key is required"},
		{"negative timeout", func(c *openairesponses.Config) { c.Timeout = -1 }, "timeout"},
		{"negative idle timeout", func(c *openairesponses.Config) { c.IdleTimeout = -1 }, "idle timeout"},
		{"negative max tokens", func(c *openairesponses.Config) { c.MaxOutputTokens = -5 }, "max output tokens"},
		{"temperature", func(c *openairesponses.Config) { c.Temperature = &neg }, "temperature"},
		{"effort", func(c *openairesponses.Config) { c.ReasoningEffort = "extreme" }, `reasoning effort "extreme"`},
		{"summary", func(c *openairesponses.Config) { c.ReasoningSummary = "brief" }, `reasoning summary "brief"`},
		{"relative base url", func(c *openairesponses.Config) { c.BaseURL = "api.openai.com/v1" }, "base url"},
		{"bad scheme", func(c *openairesponses.Config) { c.BaseURL = "ftp://api.openai.com/v1" }, "base url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := valid
			tt.mod(&cfg)
			p, err := openairesponses.New(cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.want == "":
				if got := p.Info(); got != (model.Info{Kind: "openai_responses", Model: cfg.Model}) {
					t.Errorf("Info = %+v", got)
				}
			case err == nil:
				t.Fatalf("New succeeded, want an error containing %q", tt.want)
			case !strings.Contains(err.Error(), tt.want):
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			case strings.Contains(err.Error(), testKey):
				t.Errorf("error %q shows the key", err)
			}
		})
	}
}
