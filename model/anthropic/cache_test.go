package anthropic_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/anthropic"
	"github.com/agentrt/agentrt/runtype"
)

// body is a request body split into the parts the prompt cache sees, in
// the API's order (tools, system, messages), each as sent.
type body struct {
	Tools    json.RawMessage   `json:"tools"`
	System   json.RawMessage   `json:"system"`
	Messages []json.RawMessage `json:"messages"`
}

func decodeBody(t *testing.T, raw []byte) body {
	t.Helper()
	var b body
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("request body %s: %v", raw, err)
	}
	return b
}

// breakpoints lists where a body carries cache_control, as paths such as
// tools[1], system[0] and messages[2].content[0], in document order.
func breakpoints(t *testing.T, raw []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if cc, ok := v["cache_control"]; ok {
				if diff := cmp.Diff(map[string]any{"type": "ephemeral"}, cc); diff != "" {
					t.Errorf("%s: cache_control (-want +got):\n%s", path, diff)
				}
				out = append(out, path)
			}
			for _, k := range []string{"tools", "system", "messages", "content"} {
				if c, ok := v[k]; ok {
					walk(path+"."+k, c)
				}
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("", v)
	for i := range out {
		out[i] = out[i][1:] // the leading dot
	}
	return out
}

// TestCacheBreakpoints checks where cache_control goes: the last tool, the
// last system block, a boundary that opens the conversation and the last
// cacheable block of the last message, at most four in all.
func TestCacheBreakpoints(t *testing.T) {
	t.Parallel()
	tools := []model.ToolDefinition{{Name: "a"}, {Name: "b"}}
	summary := &runtype.Boundary{ID: "cmp_1", Kind: runtype.BoundaryCompaction, Strategy: runtype.StrategySummarize, FromSeq: 1, ThroughSeq: 40}
	tests := []struct {
		name string
		req  *model.Request
		want []string
	}{
		{
			name: "a user message alone",
			req:  userRequest(),
			want: []string{"messages[0].content[0]"},
		},
		{
			name: "instructions, tools and a conversation",
			req: &model.Request{Instructions: "Be brief.", Tools: tools, Messages: []runtype.Message{
				{Role: runtype.RoleUser, Content: "first"},
				{Role: runtype.RoleAssistant, Content: "reply"},
				{Role: runtype.RoleUser, Content: "second"},
			}},
			want: []string{"messages[2].content[0]", "system[0]", "tools[1]"},
		},
		{
			name: "a leading system message is the last system block",
			req: &model.Request{Instructions: "Be brief.", Messages: []runtype.Message{
				{Role: runtype.RoleSystem, Content: "The user is on the free plan."},
				{Role: runtype.RoleUser, Content: "hi"},
			}},
			want: []string{"messages[0].content[0]", "system[1]"},
		},
		{
			name: "tool results and a reminder: the reminder, last in the turn",
			req: &model.Request{Tools: tools, Messages: []runtype.Message{
				{Role: runtype.RoleUser, Content: "go"},
				{Role: runtype.RoleAssistant, ToolCalls: []runtype.MessageToolCall{{ID: "t1", Name: "a", Arguments: "{}"}, {ID: "t2", Name: "b", Arguments: "{}"}}},
				{Role: runtype.RoleTool, ToolCallID: "t1", Content: "one"},
				{Role: runtype.RoleTool, ToolCallID: "t2", Content: "two"},
				{Role: runtype.RoleSystem, Content: "Call complete_task when you are done."},
			}},
			want: []string{"messages[2].content[2]", "tools[1]"},
		},
		{
			name: "an empty tool result last",
			req: &model.Request{Messages: []runtype.Message{
				{Role: runtype.RoleUser, Content: "go"},
				{Role: runtype.RoleAssistant, ToolCalls: []runtype.MessageToolCall{{ID: "t1", Name: "a", Arguments: "{}"}}},
				{Role: runtype.RoleTool, ToolCallID: "t1"},
			}},
			want: []string{"messages[2].content[0]"},
		},
		{
			name: "an assistant turn last: its last block after the thinking",
			req: &model.Request{Messages: []runtype.Message{
				{Role: runtype.RoleUser, Content: "go"},
				{Role: runtype.RoleAssistant, Content: "Sure", Reasoning: []runtype.Reasoning{{Provider: anthropic.Kind, Text: "t", Signature: "s"}}},
			}},
			want: []string{"messages[1].content[1]"},
		},
		{
			name: "a compaction summary opens the conversation: four breakpoints",
			req: &model.Request{Instructions: "Be brief.", Tools: tools, Messages: []runtype.Message{
				{Role: runtype.RoleUser, Content: "Summary of the conversation so far.", Boundary: summary},
				{Role: runtype.RoleUser, Content: "next"},
				{Role: runtype.RoleAssistant, Content: "reply"},
				{Role: runtype.RoleUser, Content: "again"},
			}},
			want: []string{"messages[0].content[0]", "messages[2].content[0]", "system[0]", "tools[1]"},
		},
		{
			name: "a summary in the system role: the instructions keep a breakpoint of their own",
			req: &model.Request{Instructions: "Be brief.", Tools: tools, Messages: []runtype.Message{
				{Role: runtype.RoleSystem, Content: "Summary of the conversation so far.", Boundary: summary},
				{Role: runtype.RoleUser, Content: "next"},
			}},
			want: []string{"messages[0].content[0]", "system[0]", "system[1]", "tools[1]"},
		},
		{
			name: "a summary that is the whole conversation: one breakpoint for both",
			req: &model.Request{Messages: []runtype.Message{
				{Role: runtype.RoleUser, Content: "Summary of the conversation so far.", Boundary: summary},
			}},
			want: []string{"messages[0].content[0]"},
		},
		{
			name: "a turn of thinking only is left unmarked",
			req: &model.Request{Messages: []runtype.Message{
				{Role: runtype.RoleUser, Content: "go"},
				{Role: runtype.RoleAssistant, Reasoning: []runtype.Reasoning{{Provider: anthropic.Kind, Text: "t", Signature: "s"}}},
			}},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, rec := sentBody(t, anthropic.Config{}, tt.req)
			got := breakpoints(t, rec.body)
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("breakpoints (-want +got):\n%s", diff)
			}
			if len(got) > 4 {
				t.Errorf("%d breakpoints, the API allows 4", len(got))
			}
		})
	}
}

// TestStablePrefix sends three requests of a compacted session (a tool
// call, its result, then the next turn), each built from the responses
// before it,
// and checks that each request starts with the one before it, byte for
// byte: tools, system and every message, except that the rolling
// breakpoint moves off the previous request's last message.
func TestStablePrefix(t *testing.T) {
	t.Parallel()
	s := newServer(t, sse(fixture(t, "tool-use.sse")), sse(fixture(t, "text.sse")), sse(fixture(t, "text.sse")))
	p := newProvider(t, s, anthropic.Config{})
	req := &model.Request{
		SessionID:    "ses_1",
		Instructions: "You are a support agent for Acme.",
		Tools: []model.ToolDefinition{
			{Name: "lookup_order", Description: "Look up an order.", InputSchema: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`)},
			{Name: "get_weather", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		},
		Messages: []runtype.Message{
			{Role: runtype.RoleUser, Content: "Summary: the user asked about orders 1042 and 7; both shipped.", Boundary: &runtype.Boundary{ID: "cmp_1", Kind: runtype.BoundaryCompaction}},
			{Role: runtype.RoleUser, Content: "What is the weather in SF?"},
		},
	}
	for hop := range 3 {
		resp, err := p.Generate(t.Context(), req)
		if err != nil {
			t.Fatalf("hop %d: %v", hop, err)
		}
		next := *req
		next.Messages = append(slices.Clip(req.Messages), runtype.Message{Role: runtype.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
		for _, tc := range resp.ToolCalls {
			next.Messages = append(next.Messages, runtype.Message{Role: runtype.RoleTool, ToolCallID: tc.ID, Content: `{"temp_f":61}`})
		}
		if len(resp.ToolCalls) == 0 {
			next.Messages = append(next.Messages, runtype.Message{Role: runtype.RoleUser, Content: "And tomorrow?"})
		}
		req = &next
	}
	reqs := s.requests()
	if len(reqs) != 3 {
		t.Fatalf("server got %d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if bp := breakpoints(t, r.body); !slices.Contains(bp, "messages[0].content[0]") || len(bp) != 4 {
			t.Errorf("request %d: breakpoints %v, want four, the summary's among them", i, bp)
		}
	}
	for i := 1; i < len(reqs); i++ {
		prev, cur := decodeBody(t, reqs[i-1].body), decodeBody(t, reqs[i].body)
		if !bytes.Equal(prev.Tools, cur.Tools) {
			t.Errorf("request %d: tools differ:\n%s\n%s", i, prev.Tools, cur.Tools)
		}
		if !bytes.Equal(prev.System, cur.System) {
			t.Errorf("request %d: system differs:\n%s\n%s", i, prev.System, cur.System)
		}
		if len(cur.Messages) <= len(prev.Messages) {
			t.Fatalf("request %d has %d messages, request %d had %d", i, len(cur.Messages), i-1, len(prev.Messages))
		}
		last := len(prev.Messages) - 1
		for j := range last {
			if !bytes.Equal(prev.Messages[j], cur.Messages[j]) {
				t.Errorf("request %d: message %d differs:\n%s\n%s", i, j, prev.Messages[j], cur.Messages[j])
			}
		}
		// The previous last message lost only its rolling breakpoint, the
		// last in it (the first turn keeps the summary's).
		marker := []byte(`,"cache_control":{"type":"ephemeral"}`)
		k := bytes.LastIndex(prev.Messages[last], marker)
		if k < 0 {
			t.Fatalf("request %d: the last message %s has no breakpoint", i-1, prev.Messages[last])
		}
		unmarked := slices.Concat(prev.Messages[last][:k], prev.Messages[last][k+len(marker):])
		if !bytes.Equal(unmarked, cur.Messages[last]) {
			t.Errorf("request %d: message %d differs beyond its breakpoint:\n%s\n%s", i, last, unmarked, cur.Messages[last])
		}
	}
}
