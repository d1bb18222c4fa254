package anthropic_test

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/anthropic"
	"github.com/agentrt/agentrt/runtype"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func userMessages(text string) []runtype.Message {
	return []runtype.Message{{Role: runtype.RoleUser, Content: text}}
}

// sentBody runs req against a server and returns the JSON body it got.
func sentBody(t *testing.T, cfg anthropic.Config, req *model.Request) (map[string]any, received) {
	t.Helper()
	s := newServer(t, sse(fixture(t, "text.sse")))
	p := newProvider(t, s, cfg)
	if _, err := p.Generate(t.Context(), req); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	reqs := s.requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[0].body, &body); err != nil {
		t.Fatalf("request body %s: %v", reqs[0].body, err)
	}
	return body, reqs[0]
}

// TestRequestMapping compares the body sent for a conversation with every
// kind of message to testdata/request.golden.json (go test -update
// rewrites it).
func TestRequestMapping(t *testing.T) {
	t.Parallel()
	temp := 0.2
	req := &model.Request{
		Instructions: "You are a support agent for Acme.",
		Messages: []runtype.Message{
			{Role: runtype.RoleUser, Content: "Where is order 1042, and what is the weather in SF?"},
			{
				Role:    runtype.RoleAssistant,
				Content: "Let me look both up.",
				Reasoning: []runtype.Reasoning{
					{Provider: "anthropic_messages", Text: "Two lookups.", Signature: "sig-1"},
					{Provider: "anthropic_messages", Redacted: "opaque-redacted"},
					{Provider: "anthropic_messages", Text: "unsigned, so left out"},
					{Provider: "openai_responses", Encrypted: "not ours"},
				},
				ToolCalls: []runtype.MessageToolCall{
					{ID: "toolu_1", Name: "lookup_order", Arguments: `{"order_id": "1042"}`},
					{ID: "toolu_2", Name: "get_weather", Arguments: `{"city": "San Fr`},
				},
			},
			{Role: runtype.RoleTool, ToolCallID: "toolu_1", Content: `{"status":"shipped"}`},
			{Role: runtype.RoleTool, ToolCallID: "toolu_2", Content: "the arguments are not valid JSON: unexpected end of JSON input", IsError: true},
			{Role: runtype.RoleSystem, Content: "Call complete_task when you are done."},
			{Role: runtype.RoleAssistant, Content: "Order 1042 has shipped."},
			{Role: runtype.RoleAssistant, ToolCalls: []runtype.MessageToolCall{{ID: "toolu_3", Name: "get_weather", Arguments: `{"city": "San Francisco"}`}}},
			{Role: runtype.RoleTool, ToolCallID: "toolu_3", Content: ""},
			{Role: runtype.RoleUser, Content: "Thanks!"},
		},
		Tools: []model.ToolDefinition{
			{
				Name:        "lookup_order",
				Description: "Look up an order by id.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string","pattern":"^[0-9]+$"}},"required":["order_id"],"additionalProperties":false}`),
			},
			{Name: "get_weather", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		},
		MaxOutputTokens: 1024,
	}
	got, rec := sentBody(t, anthropic.Config{Endpoint: model.Endpoint{Temperature: &temp, Headers: map[string]string{"Anthropic-Beta": "test-beta"}}}, req)

	const golden = "testdata/request.golden.json"
	if *update {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var want map[string]any
	if err := json.Unmarshal([]byte(fixture(t, "request.golden.json")), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request body mismatch (-%s +got):\n%s", golden, diff)
	}

	headers := map[string]string{}
	for _, k := range []string{"X-Api-Key", "Anthropic-Version", "Anthropic-Beta", "Accept"} {
		headers[k] = rec.header.Get(k)
	}
	wantHeaders := map[string]string{"X-Api-Key": testKey, "Anthropic-Version": "2023-06-01", "Anthropic-Beta": "test-beta", "Accept": "application/json"}
	if diff := cmp.Diff(wantHeaders, headers); diff != "" {
		t.Errorf("request headers mismatch (-want +got):\n%s", diff)
	}
}

// TestRequestOptions checks the top-level fields each option sets.
func TestRequestOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  anthropic.Config
		req  *model.Request
		want string // the body's fields other than messages and stream, as JSON
	}{
		{
			name: "defaults",
			req:  userRequest(),
			want: `{"model":"claude-3-7-sonnet-latest","max_tokens":4096}`,
		},
		{
			name: "request max tokens",
			cfg:  anthropic.Config{Endpoint: model.Endpoint{MaxOutputTokens: 2000}},
			req:  &model.Request{Messages: userMessages("hi"), MaxOutputTokens: 300},
			want: `{"model":"claude-3-7-sonnet-latest","max_tokens":300}`,
		},
		{
			name: "thinking",
			cfg:  anthropic.Config{Endpoint: model.Endpoint{Model: "claude-sonnet-4-5", MaxOutputTokens: 16000}, ThinkingBudget: 10000},
			req:  userRequest(),
			want: `{"model":"claude-sonnet-4-5","max_tokens":16000,"thinking":{"type":"enabled","budget_tokens":10000}}`,
		},
		{
			name: "a leading system message joins the instructions",
			req: &model.Request{Instructions: "Be brief.", Messages: []runtype.Message{
				{Role: runtype.RoleSystem, Content: "The user is on the free plan."},
				{Role: runtype.RoleUser, Content: "hi"},
			}},
			want: `{"model":"claude-3-7-sonnet-latest","max_tokens":4096,"system":[{"type":"text","text":"Be brief."},{"type":"text","text":"The user is on the free plan.","cache_control":{"type":"ephemeral"}}]}`,
		},
		{
			name: "a tool without a schema",
			req:  &model.Request{Messages: userMessages("hi"), Tools: []model.ToolDefinition{{Name: "now", Description: "The time."}}},
			want: `{"model":"claude-3-7-sonnet-latest","max_tokens":4096,"tools":[{"name":"now","description":"The time.","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, _ := sentBody(t, tt.cfg, tt.req)
			delete(got, "messages")
			if got["stream"] != true {
				t.Errorf("stream = %v, want true", got["stream"])
			}
			delete(got, "stream")
			var want map[string]any
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("request fields mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRequestRejected checks requests refused before anything is sent.
func TestRequestRejected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  anthropic.Config
		req  *model.Request
		want string
	}{
		{
			name: "max tokens not above the thinking budget",
			cfg:  anthropic.Config{Endpoint: model.Endpoint{MaxOutputTokens: 8000}, ThinkingBudget: 2048},
			req:  &model.Request{Messages: userMessages("hi"), MaxOutputTokens: 2048},
			want: "max output tokens 2048 must exceed the thinking budget 2048",
		},
		{
			name: "a schema that is not JSON",
			req:  &model.Request{Messages: userMessages("hi"), Tools: []model.ToolDefinition{{Name: "bad", InputSchema: json.RawMessage(`{"type":`)}}},
			want: `tool "bad": the input schema is not valid JSON`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t) // fails the test if called
			p := newProvider(t, s, tt.cfg)
			_, err := p.Generate(t.Context(), tt.req)
			want := model.Error{Kind: model.ErrInvalidRequest, Message: tt.want}
			if diff := cmp.Diff(want, modelError(t, err)); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
