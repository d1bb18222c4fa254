package openaichat_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openaichat"
	"github.com/agentrt/agentrt/runtype"
)

// TestStablePrefix sends three requests of one session (parallel tool
// calls, their results, then the next turn), each built from the
// responses before it, and checks that each request starts with the one
// before it, byte for byte: tools and every message (the instructions are
// the first).
func TestStablePrefix(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	replies := [][]byte{readFile(t, "parallel_tool_calls.sse"), readFile(t, "usage.sse"), readFile(t, "usage.sse")}
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		body := replies[0]
		replies = replies[1:]
		mu.Unlock()
		sse(body)(w, r)
	})
	p := b.provider(t, openaichat.Config{})
	req := &model.Request{
		SessionID:    "ses_1",
		Instructions: "You are a weather assistant. Answer briefly.",
		Tools: []model.ToolDefinition{
			{Name: "get_weather", Description: "Get the weather.", InputSchema: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"},"units":{"enum":["c","f"]}},"required":["location"]}`)},
			{Name: "complete_task"},
		},
		Messages: []runtype.Message{{Role: runtype.RoleUser, Content: "Weather in Paris and Tokyo?"}},
	}
	type body struct {
		Tools    json.RawMessage   `json:"tools"`
		Messages []json.RawMessage `json:"messages"`
	}
	var bodies []body
	for hop := range 3 {
		resp, err := p.Generate(t.Context(), req)
		if err != nil {
			t.Fatalf("hop %d: %v", hop, err)
		}
		var got body
		if err := json.Unmarshal(b.lastRequest(t).body, &got); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, got)
		next := *req
		next.Messages = append(slices.Clip(req.Messages), runtype.Message{Role: runtype.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
		for _, tc := range resp.ToolCalls {
			next.Messages = append(next.Messages, runtype.Message{Role: runtype.RoleTool, ToolCallID: tc.ID, Content: `{"temp_c":18}`})
		}
		if len(resp.ToolCalls) == 0 {
			next.Messages = append(next.Messages, runtype.Message{Role: runtype.RoleUser, Content: "And tomorrow?"})
		}
		req = &next
	}
	if len(bodies[1].Messages) <= len(bodies[0].Messages)+1 {
		t.Fatalf("the second request has %d messages: the first response called no tools", len(bodies[1].Messages))
	}
	for i := 1; i < len(bodies); i++ {
		prev, cur := bodies[i-1], bodies[i]
		if !bytes.Equal(prev.Tools, cur.Tools) {
			t.Errorf("request %d: tools differ:\n%s\n%s", i, prev.Tools, cur.Tools)
		}
		if len(cur.Messages) <= len(prev.Messages) {
			t.Fatalf("request %d has %d messages, request %d had %d", i, len(cur.Messages), i-1, len(prev.Messages))
		}
		for j := range prev.Messages {
			if !bytes.Equal(prev.Messages[j], cur.Messages[j]) {
				t.Errorf("request %d: message %d differs:\n%s\n%s", i, j, prev.Messages[j], cur.Messages[j])
			}
		}
	}
}
