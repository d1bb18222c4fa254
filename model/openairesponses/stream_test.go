package openairesponses_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openairesponses"
	"github.com/agentrt/agentrt/runtype"
)

// weatherCalls are the calls of tool_calls.sse and tool_call_deltas.sse.
var weatherCalls = []runtype.MessageToolCall{
	{ID: "call_Qm4vK2pX8sLdN1rT5yWz", Name: "get_weather", Arguments: `{"city":"Paris"}`},
	{ID: "call_Hj7nR3cV9aMe2uFb6tGq", Name: "get_weather", Arguments: `{"city":"Tokyo"}`},
}

// TestGenerateStreams plays each successful fixture and checks the
// response and the deltas.
func TestGenerateStreams(t *testing.T) {
	t.Parallel()
	text := func(s ...string) []model.Delta {
		var d []model.Delta
		for _, x := range s {
			d = append(d, model.Delta{Kind: model.DeltaText, Text: x})
		}
		return d
	}
	tests := []struct {
		name       string // the fixture's, unless set
		fixture    string
		edit       func([]byte) []byte // changes the fixture, when set
		want       *model.Response
		wantDeltas []model.Delta
	}{
		{
			fixture: "text.sse",
			want: &model.Response{
				Text:         "Hello! How can I help you today?",
				FinishReason: model.FinishStop,
				Usage:        runtype.Usage{InputTokens: 1250, CachedInputTokens: 1024, OutputTokens: 9},
				Model:        "gpt-4.1-2025-04-14",
			},
			wantDeltas: text("Hello", "!", " How can I", " help you today?"),
		},
		{
			fixture: "reasoning.sse",
			want: &model.Response{
				Text:         "17 × 23 = 391.",
				FinishReason: model.FinishStop,
				Usage:        runtype.Usage{InputTokens: 42, OutputTokens: 180, ReasoningTokens: 128},
				Reasoning: []runtype.Reasoning{{
					Provider:  openairesponses.Kind,
					ID:        "rs_68f0b2d4a1b2c3d4e5f60718293a4b5c",
					Text:      "**Checking the arithmetic**\n\nThe user asks for 17 × 23.\n\nSeventeen times twenty is 340, plus 51 gives 391.",
					Encrypted: "gAAAAABo8LLUq3Jk1vX0mT9cR2yN7sWbE4hZpQ6fA8dKuL5oG1iV3eC0jYxMnBzHwTqSrUoPlKjIhGfEdCbA9876543210zyxwvutsrqponmlkjihgfedcba==",
				}},
				Model: "gpt-5-2025-08-07",
			},
			wantDeltas: []model.Delta{
				{Kind: model.DeltaReasoning, Text: "**Checking"},
				{Kind: model.DeltaReasoning, Text: " the arithmetic**\n\n"},
				{Kind: model.DeltaReasoning, Text: "The user asks for 17 × 23."},
				{Kind: model.DeltaReasoning, Text: "\n\n"},
				{Kind: model.DeltaReasoning, Text: "Seventeen times twenty is 340,"},
				{Kind: model.DeltaReasoning, Text: " plus 51 gives 391."},
				{Kind: model.DeltaText, Text: "17 × 23"},
				{Kind: model.DeltaText, Text: " = 391."},
			},
		},
		{
			// Two parallel calls, arguments split across delta events.
			fixture: "tool_calls.sse",
			want: &model.Response{
				ToolCalls:    weatherCalls,
				FinishReason: model.FinishToolCalls,
				Usage:        runtype.Usage{InputTokens: 310, OutputTokens: 46},
				Model:        "gpt-4.1-2025-04-14",
			},
		},
		{
			// The same calls with interleaved argument deltas only: no
			// done events and no output in the terminal response.
			fixture: "tool_call_deltas.sse",
			want: &model.Response{
				ToolCalls:    weatherCalls,
				FinishReason: model.FinishToolCalls,
				Usage:        runtype.Usage{InputTokens: 310, OutputTokens: 46},
				Model:        "gpt-4.1-2025-04-14",
			},
		},
		{
			// Invalid JSON arguments come back verbatim, without error.
			fixture: "bad_arguments.sse",
			want: &model.Response{
				ToolCalls:    []runtype.MessageToolCall{{ID: "call_Zx8cV7bN6mA5sD4fG3hJ", Name: "get_weather", Arguments: `{"city": "Paris`}},
				FinishReason: model.FinishToolCalls,
				Usage:        runtype.Usage{InputTokens: 305, OutputTokens: 12},
				Model:        "gpt-4.1-2025-04-14",
			},
		},
		{
			fixture: "incomplete_length.sse",
			want: &model.Response{
				Text:         "Once upon a time, in a",
				FinishReason: model.FinishLength,
				Usage:        runtype.Usage{InputTokens: 20, OutputTokens: 16},
				Model:        "gpt-4.1-2025-04-14",
			},
			wantDeltas: text("Once upon", " a time, in a"),
		},
		{
			fixture: "incomplete_content_filter.sse",
			want: &model.Response{
				Text:         "I can",
				FinishReason: model.FinishContentFilter,
				Usage:        runtype.Usage{InputTokens: 20, OutputTokens: 2},
				Model:        "gpt-4.1-2025-04-14",
			},
			wantDeltas: text("I can"),
		},
		{
			name:    "incomplete for an unknown reason",
			fixture: "incomplete_length.sse",
			edit: func(b []byte) []byte {
				return bytes.ReplaceAll(b, []byte(`"reason":"max_output_tokens"`), []byte(`"reason":"server_shutdown"`))
			},
			want: &model.Response{
				Text:         "Once upon a time, in a",
				FinishReason: model.FinishError,
				Usage:        runtype.Usage{InputTokens: 20, OutputTokens: 16},
				Model:        "gpt-4.1-2025-04-14",
			},
			wantDeltas: text("Once upon", " a time, in a"),
		},
	}
	for _, tt := range tests {
		name := tt.name
		if name == "" {
			name = tt.fixture
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body := fixture(t, tt.fixture)
			if tt.edit != nil {
				body = tt.edit(body)
			}
			b := setup(t, sse(body), nil)
			stream, deltas := collect()
			got, err := b.p.Generate(t.Context(), &model.Request{Stream: stream})
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(model.Response{}, "Raw", "RawMediaType")); diff != "" {
				t.Errorf("response mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDeltas, deltas()); diff != "" {
				t.Errorf("deltas mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGenerateRaw checks that Raw holds the stream as received, with the
// API key redacted.
func TestGenerateRaw(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		body, want []byte
	}{
		{"as received", fixture(t, "text.sse"), fixture(t, "text.sse")},
		{
			"key redacted",
			bytes.ReplaceAll(fixture(t, "text.sse"), []byte("How can I"), []byte(testKey)),
			bytes.ReplaceAll(fixture(t, "text.sse"), []byte("How can I"), []byte("[REDACTED]")),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, sse(tt.body), nil)
			got, err := b.p.Generate(t.Context(), &model.Request{})
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if !bytes.Equal(got.Raw, tt.want) {
				t.Errorf("Raw mismatch:\n%s", cmp.Diff(string(tt.want), string(got.Raw)))
			}
			if got.RawMediaType != "text/event-stream" {
				t.Errorf("RawMediaType = %q, want text/event-stream", got.RawMediaType)
			}
		})
	}
}

// TestGenerateStreamFailures plays fixtures that end in an error.
func TestGenerateStreamFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture  string
		wantKind model.ErrorKind
		wantCode string
	}{
		{"failed.sse", model.ErrServer, "server_error"},
		{"error.sse", model.ErrRateLimit, "rate_limit_exceeded"},
		{"error_nested.sse", model.ErrContextLength, "context_length_exceeded"},
		{"truncated.sse", model.ErrNetwork, ""},
		{"malformed.sse", model.ErrServer, ""},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			b := setup(t, sse(fixture(t, tt.fixture)), nil)
			got, err := b.p.Generate(t.Context(), &model.Request{})
			if got != nil {
				t.Errorf("response = %+v, want nil", got)
			}
			me := asModelError(t, err)
			if me.Kind != tt.wantKind || me.Code != tt.wantCode || me.Message == "" {
				t.Errorf("error = %q (kind %s, code %q), want kind %s, code %q", me, me.Kind, me.Code, tt.wantKind, tt.wantCode)
			}
		})
	}
}
