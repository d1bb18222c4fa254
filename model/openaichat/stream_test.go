package openaichat_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/openaichat"
	"github.com/agentrt/agentrt/runtype"
)

// santorini is the text of testdata/sdk_text_tool_call.sse, as the SDK's
// own test (streamaccumulator_test.go, expectedContents) expects it.
const santorini = `Let's take a journey to the beautiful island of Santorini in Greece.

Santorini is a gem in the Aegean Sea, known for its stunning sunsets, white-washed buildings, and crystal-clear waters. The island's rugged landscape is the result of a volcanic eruption that took place around 3,600 years ago, which gave Santorini its distinct caldera. When you visit the island, you can't miss the picturesque town of Oia, perched high on the cliffs with its narrow streets, blue-domed churches, and panoramic views of the sea. Fira, the island's capital, is buzzing with life, offering a variety of shops, restaurants, and cafes. Don't forget to explore the archaeological site of Akrotiri, an ancient Minoan city preserved in volcanic ash, often referred to as the "Pompeii of the Aegean."

Now, let's check the weather in Santorini.`

// deltaText joins the text of deltas of kind k.
func deltaText(deltas []model.Delta, k model.DeltaKind) string {
	var b strings.Builder
	for _, d := range deltas {
		if d.Kind == k {
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

func TestStreamRecorded(t *testing.T) {
	t.Parallel()
	raw := readFile(t, "sdk_text_tool_call.sse")
	b := setup(t, sse(raw))
	resp, deltas, err := generate(t, b.provider(t, openaichat.Config{}), nil)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	want := &model.Response{
		Text: santorini,
		// The call's id and name come in its first chunk, the arguments
		// in eight pieces.
		ToolCalls:    []runtype.MessageToolCall{{ID: "call_FXoAjBUMcVv1k40fficJ9cSs", Name: "get_weather", Arguments: `{"location":"Santorini, Greece"}`}},
		FinishReason: model.FinishToolCalls,
		// The fixture reports usage twice; the last report is the one kept.
		Usage:        runtype.Usage{InputTokens: 0, CachedInputTokens: 10, OutputTokens: 50, ReasoningTokens: 3},
		Model:        "gpt-4o-2024-05-13",
		Raw:          raw,
		RawMediaType: "text/event-stream",
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response mismatch (-want +got):\n%s", diff)
	}
	if got := deltaText(deltas, model.DeltaText); got != santorini {
		t.Errorf("streamed text = %q, want the response text", got)
	}
	wantFirst := []model.Delta{{Kind: model.DeltaText, Text: "Let's"}, {Kind: model.DeltaText, Text: " take"}, {Kind: model.DeltaText, Text: " a"}}
	if diff := cmp.Diff(wantFirst, deltas[:min(3, len(deltas))]); diff != "" {
		t.Errorf("first deltas mismatch (-want +got):\n%s", diff)
	}
	if len(deltas) < 100 {
		t.Errorf("got %d deltas, want one per content chunk (over 100)", len(deltas))
	}
}

func TestStreamFixtures(t *testing.T) {
	t.Parallel()
	usage := runtype.Usage{InputTokens: 1200, CachedInputTokens: 1024, OutputTokens: 310, ReasoningTokens: 256}
	tests := []struct {
		name string
		file string
		want *model.Response
	}{
		{
			name: "parallel tool calls",
			file: "parallel_tool_calls.sse",
			want: &model.Response{
				ToolCalls: []runtype.MessageToolCall{
					{ID: "call_weather_paris", Name: "get_weather", Arguments: `{"city":"Paris"}`},
					{ID: "call_weather_rome", Name: "get_weather", Arguments: `{"city":"Rome"}`},
				},
				FinishReason: model.FinishToolCalls,
				Usage:        usage,
			},
		},
		{
			name: "usage with cached and reasoning tokens",
			file: "usage.sse",
			want: &model.Response{Text: "Four.", FinishReason: model.FinishStop, Usage: usage},
		},
		{
			name: "invalid tool arguments are kept verbatim",
			file: "invalid_arguments.sse",
			want: &model.Response{
				ToolCalls:    []runtype.MessageToolCall{{ID: "call_ticket", Name: "open_ticket", Arguments: `{"order_id": 1042, "note": `}},
				FinishReason: model.FinishToolCalls,
			},
		},
		{
			name: "refusal",
			file: "refusal.sse",
			want: &model.Response{Text: "I can't help with that.", FinishReason: model.FinishContentFilter},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, sseFile(t, tt.file))
			resp, deltas, err := generate(t, b.provider(t, openaichat.Config{}), nil)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			tt.want.Model = "gpt-4o-2024-05-13"
			tt.want.Raw = readFile(t, tt.file)
			tt.want.RawMediaType = "text/event-stream"
			if diff := cmp.Diff(tt.want, resp); diff != "" {
				t.Errorf("response mismatch (-want +got):\n%s", diff)
			}
			if got := deltaText(deltas, model.DeltaText); got != resp.Text {
				t.Errorf("streamed text = %q, want %q", got, resp.Text)
			}
		})
	}
}

// finishStream is a stream whose choice ends with reason (no
// finish_reason when empty), after a tool call when toolCall is set.
func finishStream(reason string, toolCall bool) []byte {
	delta := `{"content":"ok"}`
	if toolCall {
		delta = `{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	}
	finish := "null"
	if reason != "" {
		finish = fmt.Sprintf("%q", reason)
	}
	const chunk = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}` + "\n\n"
	return []byte(fmt.Sprintf(chunk, delta, "null") + fmt.Sprintf(chunk, "{}", finish) + "data: [DONE]\n\n")
}

func TestFinishReasons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reason   string
		toolCall bool
		want     model.FinishReason
	}{
		{"stop", false, model.FinishStop},
		{"tool_calls", true, model.FinishToolCalls},
		{"function_call", true, model.FinishToolCalls},
		{"length", false, model.FinishLength},
		{"length", true, model.FinishLength},
		{"content_filter", false, model.FinishContentFilter},
		{"", false, model.FinishStop},
		{"", true, model.FinishToolCalls},
		{"eos", false, model.FinishStop},
		{"eos", true, model.FinishToolCalls},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/tool_call=%t", tt.reason, tt.toolCall), func(t *testing.T) {
			t.Parallel()
			b := setup(t, sse(finishStream(tt.reason, tt.toolCall)))
			resp, _, err := generate(t, b.provider(t, openaichat.Config{}), nil)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if resp.FinishReason != tt.want {
				t.Errorf("finish reason = %s, want %s", resp.FinishReason, tt.want)
			}
		})
	}
}

func TestStreamFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler func(t *testing.T) http.HandlerFunc
		want    *model.Error
	}{
		{
			name:    "truncated before [DONE]",
			handler: func(t *testing.T) http.HandlerFunc { return sseFile(t, "truncated.sse") },
			want:    &model.Error{Kind: model.ErrNetwork, Message: "the stream ended before the response was complete"},
		},
		{
			name: "connection cut mid-event",
			handler: func(t *testing.T) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					body := readFile(t, "truncated.sse")
					w.Header().Set("Content-Type", "text/event-stream")
					w.Header().Set("Content-Length", fmt.Sprint(len(body)+100))
					_, _ = w.Write(body[:len(body)-20])
				}
			},
			want: &model.Error{Kind: model.ErrNetwork, Message: "the response ended early: unexpected EOF"},
		},
		{
			name:    "malformed event",
			handler: func(t *testing.T) http.HandlerFunc { return sseFile(t, "malformed.sse") },
			want: &model.Error{Kind: model.ErrServer, Message: `malformed response: decoding stream event "{\"id\":\"chatcmpl-A3Tguz3LSXTHBTY2NAPBCSyfBltxF\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"": ` +
				"unexpected end of JSON input"},
		},
		{
			name:    "error event",
			handler: func(t *testing.T) http.HandlerFunc { return sseFile(t, "stream_error.sse") },
			want: &model.Error{Kind: model.ErrServer, Code: "server_error",
				Message: "The server had an error while processing your request. Sorry about that!"},
		},
		{
			name: "rate limit error event",
			handler: func(t *testing.T) http.HandlerFunc {
				return sse([]byte("event: error\ndata: {\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}\n\n"))
			},
			want: &model.Error{Kind: model.ErrRateLimit, Code: "rate_limit_exceeded", Message: "Rate limit reached"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.handler(t))
			resp, _, err := generate(t, b.provider(t, openaichat.Config{}), nil)
			if resp != nil {
				t.Errorf("got a response: %+v", resp)
			}
			var got *model.Error
			if !asModelError(err, &got) {
				t.Fatalf("Generate error = %T %v, want a *model.Error", err, err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(model.Error{}, "Err")); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if !got.Retryable() {
				t.Errorf("error %v is not retryable", got)
			}
		})
	}
}

func TestReasoningFieldsNeedADialect(t *testing.T) {
	t.Parallel()
	stream := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":"hmm","content":"hi"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	b := setup(t, sse([]byte(stream)))
	resp, deltas, err := generate(t, b.provider(t, openaichat.Config{}), nil)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.Reasoning != nil || resp.Text != "hi" || len(deltas) != 1 {
		t.Errorf("got reasoning %v, text %q and %d deltas, want no reasoning, text hi and one delta", resp.Reasoning, resp.Text, len(deltas))
	}
}

func TestNoStream(t *testing.T) {
	t.Parallel()
	raw := readFile(t, "completion.json")
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
	})
	resp, deltas, err := generate(t, b.provider(t, openaichat.Config{NoStream: true}), nil)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	want := &model.Response{
		Text:         "Let me check the weather.",
		ToolCalls:    []runtype.MessageToolCall{{ID: "call_weather_paris", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		FinishReason: model.FinishToolCalls,
		Usage:        runtype.Usage{InputTokens: 1117, CachedInputTokens: 1024, OutputTokens: 46},
		Model:        "gpt-4o-2024-08-06",
		Raw:          raw,
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]model.Delta{{Kind: model.DeltaText, Text: "Let me check the weather."}}, deltas); diff != "" {
		t.Errorf("deltas mismatch (-want +got):\n%s", diff)
	}
	var body map[string]any
	if err := json.Unmarshal(b.lastRequest(t).body, &body); err != nil {
		t.Fatal(err)
	}
	if body["stream"] != nil || body["stream_options"] != nil {
		t.Errorf("a NoStream request sent stream = %v, stream_options = %v", body["stream"], body["stream_options"])
	}
}
