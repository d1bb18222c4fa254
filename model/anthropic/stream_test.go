package anthropic_test

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/anthropic"
	"github.com/agentrt/agentrt/runtype"
)

// ignoreRaw leaves Raw out of Response comparisons; TestRaw checks it.
var ignoreRaw = cmpopts.IgnoreFields(model.Response{}, "Raw", "RawMediaType")

// stream serves body once and returns the response, the deltas and the
// error of one Generate call.
func stream(t *testing.T, cfg anthropic.Config, body string) (*model.Response, []model.Delta, error) {
	t.Helper()
	s := newServer(t, sse(body))
	p := newProvider(t, s, cfg)
	req := userRequest()
	var deltas []model.Delta
	req.Stream = func(d model.Delta) { deltas = append(deltas, d) }
	resp, err := p.Generate(t.Context(), req)
	return resp, deltas, err
}

func text(s string) model.Delta      { return model.Delta{Kind: model.DeltaText, Text: s} }
func reasoning(s string) model.Delta { return model.Delta{Kind: model.DeltaReasoning, Text: s} }

func TestStreamText(t *testing.T) {
	t.Parallel()
	resp, deltas, err := stream(t, anthropic.Config{}, fixture(t, "text.sse"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	wantDeltas := []model.Delta{
		text("The"), text(" current weather"), text(" in San Francisco is "), text("68 degrees Fahren"), text("heit."),
	}
	if diff := cmp.Diff(wantDeltas, deltas); diff != "" {
		t.Errorf("deltas mismatch (-want +got):\n%s", diff)
	}
	want := &model.Response{
		Text:         "The current weather in San Francisco is 68 degrees Fahrenheit.",
		FinishReason: model.FinishStop,
		Usage:        runtype.Usage{InputTokens: 509, OutputTokens: 19},
		Model:        "claude-3-7-sonnet-20250219",
	}
	if diff := cmp.Diff(want, resp, ignoreRaw); diff != "" {
		t.Errorf("response mismatch (-want +got):\n%s", diff)
	}
}

// TestStreamToolCalls plays real streams whose tool input arrives split
// across input_json_delta chunks.
func TestStreamToolCalls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture string
		want    *model.Response
	}{
		{
			fixture: "tool-use.sse",
			want: &model.Response{
				Text: "I'd be happy to check the weather in San Francisco for you. Let me get that information for you right away.",
				ToolCalls: []runtype.MessageToolCall{
					{ID: "toolu_017QoD96fYwGzCWvLfaPADWg", Name: "get_weather", Arguments: `{"city": "San Francisco"}`},
				},
				FinishReason: model.FinishToolCalls,
				Usage:        runtype.Usage{InputTokens: 394, OutputTokens: 79},
				Model:        "claude-3-7-sonnet-20250219",
			},
		},
		{
			fixture: "tool-use-units.sse",
			want: &model.Response{
				Text: "I'll get the current weather in San Francisco for you in Fahrenheit.",
				ToolCalls: []runtype.MessageToolCall{
					{ID: "toolu_01RaX2WYWRWCbaeFHssmGJXG", Name: "get_weather", Arguments: `{"city": "San Francisco", "units": "fahrenheit"}`},
				},
				FinishReason: model.FinishToolCalls,
				Usage:        runtype.Usage{InputTokens: 397, OutputTokens: 89},
				Model:        "claude-3-7-sonnet-20250219",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			resp, _, err := stream(t, anthropic.Config{}, fixture(t, tt.fixture))
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if diff := cmp.Diff(tt.want, resp, ignoreRaw); diff != "" {
				t.Errorf("response mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParallelToolCalls(t *testing.T) {
	t.Parallel()
	resp, _, err := stream(t, anthropic.Config{}, fixture(t, "parallel-tools.sse"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	want := []runtype.MessageToolCall{
		{ID: "toolu_hand_sf", Name: "get_weather", Arguments: `{"city": "San Francisco"}`},
		{ID: "toolu_hand_ny", Name: "get_weather", Arguments: `{"city": "New York"}`},
		// No input deltas: the input of content_block_start.
		{ID: "toolu_hand_time", Name: "get_time", Arguments: `{}`},
	}
	if diff := cmp.Diff(want, resp.ToolCalls); diff != "" {
		t.Errorf("tool calls mismatch (-want +got):\n%s", diff)
	}
	if resp.Text != "I'll check all three cities at once." || resp.FinishReason != model.FinishToolCalls {
		t.Errorf("text %q, finish %s; want the text block and tool_calls", resp.Text, resp.FinishReason)
	}
}

func TestInvalidToolArgumentsAreVerbatim(t *testing.T) {
	t.Parallel()
	resp, _, err := stream(t, anthropic.Config{}, fixture(t, "invalid-args.sse"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	want := &model.Response{
		ToolCalls:    []runtype.MessageToolCall{{ID: "toolu_hand_cut", Name: "get_weather", Arguments: `{"city": "San Fr`}},
		FinishReason: model.FinishLength,
		Usage:        runtype.Usage{InputTokens: 394, OutputTokens: 16},
		Model:        "claude-sonnet-4-5-20250929",
	}
	if diff := cmp.Diff(want, resp, ignoreRaw); diff != "" {
		t.Errorf("response mismatch (-want +got):\n%s", diff)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture string
		want    runtype.Usage
	}{
		// 12 uncached + 2048 read from the cache + 512 written to it.
		{"thinking.sse", runtype.Usage{InputTokens: 2572, CachedInputTokens: 2048, OutputTokens: 180, ReasoningTokens: 120}},
		// Output from message_delta (106), not message_start (5).
		{"refusal.sse", runtype.Usage{InputTokens: 28, OutputTokens: 106, ReasoningTokens: 67}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			resp, _, err := stream(t, anthropic.Config{}, fixture(t, tt.fixture))
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if diff := cmp.Diff(tt.want, resp.Usage); diff != "" {
				t.Errorf("usage mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCachedUsageCost prices the usage of a response that read 2048
// tokens from the prompt cache and wrote 512 to it: the reads are priced
// at the cached rate, the writes and the rest at the input rate.
func TestCachedUsageCost(t *testing.T) {
	t.Parallel()
	resp, _, err := stream(t, anthropic.Config{}, fixture(t, "thinking.sse"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	price := model.Price{InputPerMTok: 3, CachedInputPerMTok: 0.3, OutputPerMTok: 15}
	// (12 + 512) × $3 + 2048 × $0.30 + 180 × $15, per million tokens.
	want := (524*3 + 2048*0.3 + 180*15) / 1e6
	if got := price.Cost(resp.Usage); math.Abs(got-want) > 1e-12 {
		t.Errorf("cost = %v, want %v (usage %+v)", got, want, resp.Usage)
	}
}

func TestFinishReasons(t *testing.T) {
	t.Parallel()
	body := fixture(t, "text.sse")
	tests := []struct {
		stop string
		want model.FinishReason
	}{
		{"end_turn", model.FinishStop},
		{"stop_sequence", model.FinishStop},
		{"pause_turn", model.FinishStop},
		{"tool_use", model.FinishToolCalls},
		{"max_tokens", model.FinishLength},
		{"model_context_window_exceeded", model.FinishLength},
		{"refusal", model.FinishContentFilter},
		{"a_reason_added_later", model.FinishStop},
	}
	for _, tt := range tests {
		t.Run(tt.stop, func(t *testing.T) {
			t.Parallel()
			b := strings.Replace(body, `"stop_reason":"end_turn"`, `"stop_reason":"`+tt.stop+`"`, 1)
			resp, _, err := stream(t, anthropic.Config{}, b)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if resp.FinishReason != tt.want {
				t.Errorf("finish reason = %s, want %s", resp.FinishReason, tt.want)
			}
		})
	}
}

func TestReasoning(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture    string
		wantDeltas []model.Delta
		want       *model.Response
	}{
		{
			fixture:    "thinking.sse",
			wantDeltas: []model.Delta{reasoning("The order id is 1042;"), reasoning(" look it up first."), text("Order 1042 shipped.")},
			want: &model.Response{
				Text: "Order 1042 shipped.",
				Reasoning: []runtype.Reasoning{
					{Provider: "anthropic_messages", Text: "The order id is 1042; look it up first.", Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxjaGVjay1zaWduYXR1cmU="},
					{Provider: "anthropic_messages", Redacted: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
				},
				FinishReason: model.FinishStop,
				Usage:        runtype.Usage{InputTokens: 2572, CachedInputTokens: 2048, OutputTokens: 180, ReasoningTokens: 120},
				Model:        "claude-sonnet-4-5-20250929",
			},
		},
		{
			fixture:    "refusal.sse",
			wantDeltas: []model.Delta{reasoning("Simple educational question. Benign."), text("Hi")},
			want: &model.Response{
				Text:         "Hi",
				Reasoning:    []runtype.Reasoning{{Provider: "anthropic_messages", Text: "Simple educational question. Benign.", Signature: "sig-thinking-a"}},
				FinishReason: model.FinishContentFilter,
				Usage:        runtype.Usage{InputTokens: 28, OutputTokens: 106, ReasoningTokens: 67},
				Model:        "primary-model",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			resp, deltas, err := stream(t, anthropic.Config{Endpoint: model.Endpoint{MaxOutputTokens: 8192}, ThinkingBudget: 2048}, fixture(t, tt.fixture))
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if diff := cmp.Diff(tt.wantDeltas, deltas); diff != "" {
				t.Errorf("deltas mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, resp, ignoreRaw); diff != "" {
				t.Errorf("response mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRaw(t *testing.T) {
	t.Parallel()
	body := fixture(t, "tool-use.sse")
	echo := strings.Replace(body, `"text":"I"`, `"text":"`+testKey+`"`, 1)
	tests := []struct {
		name, body, want string
	}{
		{"the stream as received", body, body},
		{"the key scrubbed", echo, strings.Replace(body, `"text":"I"`, `"text":"[REDACTED]"`, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, _, err := stream(t, anthropic.Config{}, tt.body)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if diff := cmp.Diff(tt.want, string(resp.Raw)); diff != "" {
				t.Errorf("Raw mismatch (-want +got):\n%s", diff)
			}
			if resp.RawMediaType != "text/event-stream" {
				t.Errorf("RawMediaType = %q, want text/event-stream", resp.RawMediaType)
			}
		})
	}
}

// TestStreamFailures breaks real streams in the ways streams break.
func TestStreamFailures(t *testing.T) {
	t.Parallel()
	body := fixture(t, "text.sse")
	head, _, _ := strings.Cut(body, "event: message_delta")
	const firstDelta = `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The"}  }`
	if !strings.Contains(body, firstDelta) {
		t.Fatal("text.sse lacks the delta the cases edit")
	}
	overloaded := fixture(t, "error-overloaded.sse")
	tests := []struct {
		name  string
		reply reply
		want  model.Error
	}{
		{
			name:  "ends before message_stop",
			reply: sse(head),
			want:  model.Error{Kind: model.ErrNetwork, Message: "the stream ended before the response was complete"},
		},
		{
			name:  "connection dropped mid-stream",
			reply: reply{status: 200, header: sse("").header, body: head, cut: true},
			want:  model.Error{Kind: model.ErrNetwork, Message: "the response ended early: unexpected EOF"},
		},
		{
			name:  "event that is not JSON",
			reply: sse(strings.Replace(body, firstDelta, `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_de`, 1)),
			want:  model.Error{Kind: model.ErrServer, Message: "malformed response: decoding a stream event: invalid character '\\n' in string literal"},
		},
		{
			name:  "delta for a block that never started",
			reply: sse(strings.Replace(body, firstDelta, strings.Replace(firstDelta, `"index":0`, `"index":4`, 1), 1)),
			want:  model.Error{Kind: model.ErrServer, Message: "malformed response: content block 4 has a delta but never started"},
		},
		{
			name:  "overloaded_error event",
			reply: sse(overloaded),
			want:  model.Error{Kind: model.ErrOverloaded, Code: "overloaded_error", Message: "Overloaded"},
		},
		{
			name:  "api_error event",
			reply: sse(strings.Replace(overloaded, `{"type":"overloaded_error","message":"Overloaded"}`, `{"type":"api_error","message":"Internal server error"}`, 1)),
			want:  model.Error{Kind: model.ErrServer, Code: "api_error", Message: "Internal server error"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, tt.reply)
			p := newProvider(t, s, anthropic.Config{})
			resp, err := p.Generate(t.Context(), userRequest())
			if resp != nil {
				t.Errorf("Generate returned a response with the error %v", err)
			}
			if diff := cmp.Diff(tt.want, modelError(t, err)); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
