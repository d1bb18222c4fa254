package openairesponses_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// TestStablePrefix sends three requests of one session (a tool call, its
// results, then the next turn), each built from the responses before it,
// and checks that each request starts with the one before it, byte for
// byte: instructions, tools and every input item; and that all carry the
// session as prompt_cache_key.
func TestStablePrefix(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	replies := [][]byte{fixture(t, "tool_calls.sse"), fixture(t, "text.sse"), fixture(t, "text.sse")}
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		body := replies[0]
		replies = replies[1:]
		mu.Unlock()
		sse(body)(w, r)
	}, nil)
	req := &model.Request{
		SessionID:    "ses_1",
		Instructions: "You are a weather assistant. Answer briefly.",
		Tools: []model.ToolDefinition{
			{Name: "get_weather", Description: "Get the weather.", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"units":{"enum":["c","f"]}},"required":["city"]}`)},
			{Name: "complete_task"},
		},
		Messages: []runtype.Message{{Role: runtype.RoleUser, Content: "Weather in Paris and Tokyo?"}},
	}
	type body struct {
		Instructions   json.RawMessage   `json:"instructions"`
		Tools          json.RawMessage   `json:"tools"`
		Input          []json.RawMessage `json:"input"`
		PromptCacheKey string            `json:"prompt_cache_key"`
	}
	var bodies []body
	for hop := range 3 {
		resp, err := b.p.Generate(t.Context(), req)
		if err != nil {
			t.Fatalf("hop %d: %v", hop, err)
		}
		var got body
		if err := json.Unmarshal(<-b.bodies, &got); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, got)
		next := *req
		next.Messages = append(slices.Clip(req.Messages), runtype.Message{Role: runtype.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Reasoning: resp.Reasoning})
		for _, tc := range resp.ToolCalls {
			next.Messages = append(next.Messages, runtype.Message{Role: runtype.RoleTool, ToolCallID: tc.ID, Content: `{"temp_c":18}`})
		}
		if len(resp.ToolCalls) == 0 {
			next.Messages = append(next.Messages, runtype.Message{Role: runtype.RoleUser, Content: "And tomorrow?"})
		}
		req = &next
	}
	if len(bodies[1].Input) <= len(bodies[0].Input)+1 {
		t.Fatalf("the second request has %d input items: the first response called no tools", len(bodies[1].Input))
	}
	for i, cur := range bodies {
		if cur.PromptCacheKey != "ses_1" {
			t.Errorf("request %d: prompt_cache_key %q, want the session id", i, cur.PromptCacheKey)
		}
		if i == 0 {
			continue
		}
		prev := bodies[i-1]
		if !bytes.Equal(prev.Instructions, cur.Instructions) || !bytes.Equal(prev.Tools, cur.Tools) {
			t.Errorf("request %d: instructions or tools differ:\n%s %s\n%s %s", i, prev.Instructions, prev.Tools, cur.Instructions, cur.Tools)
		}
		if len(cur.Input) <= len(prev.Input) {
			t.Fatalf("request %d has %d input items, request %d had %d", i, len(cur.Input), i-1, len(prev.Input))
		}
		for j := range prev.Input {
			if !bytes.Equal(prev.Input[j], cur.Input[j]) {
				t.Errorf("request %d: input item %d differs:\n%s\n%s", i, j, prev.Input[j], cur.Input[j])
			}
		}
	}
}

// TestNoSessionNoCacheKey checks that a request without a session sends
// no prompt_cache_key.
func TestNoSessionNoCacheKey(t *testing.T) {
	t.Parallel()
	b := setup(t, sse(fixture(t, "text.sse")), nil)
	if _, err := b.p.Generate(t.Context(), &model.Request{Messages: []runtype.Message{{Role: runtype.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(<-b.bodies, &got); err != nil {
		t.Fatal(err)
	}
	if k, ok := got["prompt_cache_key"]; ok {
		t.Errorf("prompt_cache_key = %v, want none", k)
	}
}
