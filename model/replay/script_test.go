package replay_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/runtype"
)

// lines joins lines with newlines, so that scripts in tables show their
// line numbers plainly.
func lines(l ...string) string {
	return strings.Join(l, "\n") + "\n"
}

func TestParseErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		script string
		want   []string
	}{
		{
			name: "typo in a response key",
			script: lines(
				"responses:",
				"  - text: hi",
				"    tool_call:",
				"      - name: lookup_order",
			),
			want: []string{
				`support.replay.yaml:3:5: response 1: unknown key "tool_call" (did you mean "tool_calls"?)`,
			},
		},
		{
			name: "unknown keys at every level",
			script: lines(
				"model: m",
				"responsez: []",
				"responses:",
				"  - colour: red",
				"    tool_calls: [{name: a, args: {}}]",
				"    usage: {tokens: 1}",
				"  - error: {kind: server, code: 500}",
			),
			want: []string{
				`support.replay.yaml:2:1: unknown key "responsez" (did you mean "responses"?)`,
				`support.replay.yaml:4:5: response 1: unknown key "colour" (valid keys: text, tool_calls, usage, finish_reason, error, delay_ms)`,
				`support.replay.yaml:5:28: response 1, tool call 1: unknown key "args" (valid keys: name, input, raw_input, id)`,
				`support.replay.yaml:6:13: response 1, usage: unknown key "tokens" (valid keys: input_tokens, output_tokens, cached_input_tokens)`,
				`support.replay.yaml:7:27: response 2, error: unknown key "code" (valid keys: kind, message, retry_after_ms)`,
			},
		},
		{
			name: "input and raw_input together",
			script: lines(
				"responses:",
				"  - tool_calls:",
				"      - name: open_ticket",
				"        input: {order_id: 10}",
				"        raw_input: '{\"order_id\": 10}'",
			),
			want: []string{
				`support.replay.yaml:5:9: response 1, tool call 1: input and raw_input are both set; keep one`,
			},
		},
		{
			name: "input that is not a mapping",
			script: lines(
				"responses:",
				"  - tool_calls:",
				"      - name: a",
				"        input: [1, 2]",
				"      - name: b",
				"        input: '{\"x\": 1}'",
				"      - name: c",
				"        input:",
			),
			want: []string{
				`support.replay.yaml:4:16: response 1, tool call 1: input must be a mapping (a JSON object), not a sequence; use raw_input for other text`,
				`support.replay.yaml:6:16: response 1, tool call 2: input must be a mapping (a JSON object), not a string; use raw_input for other text`,
				`support.replay.yaml:8:9: response 1, tool call 3: input must be a mapping (a JSON object), not null; use raw_input for other text`,
			},
		},
		{
			name: "tool call without a name",
			script: lines(
				"responses:",
				"  - tool_calls:",
				"      - input: {a: 1}",
				"      - {id: call_1}",
				"      - name: ''",
			),
			want: []string{
				`support.replay.yaml:3:9: response 1, tool call 1: name is missing`,
				`support.replay.yaml:4:9: response 1, tool call 2: name is missing`,
				`support.replay.yaml:5:15: response 1, tool call 3: name must not be empty`,
			},
		},
		{
			name: "unknown error kind",
			script: lines(
				"responses:",
				"  - error: {kind: rate_limited}",
				"  - error: {kind: teapot}",
				"  - error: {message: no kind}",
			),
			want: []string{
				`support.replay.yaml:2:19: response 1, error: unknown kind "rate_limited" (did you mean "rate_limit"?)`,
				`support.replay.yaml:3:19: response 2, error: unknown kind "teapot" (valid kinds: rate_limit, overloaded, server, timeout, network, auth, invalid_request, context_length_exceeded, content_filter, script_exhausted)`,
				`support.replay.yaml:4:12: response 3, error: kind is missing`,
			},
		},
		{
			name: "error with other keys",
			script: lines(
				"responses:",
				"  - error: {kind: server}",
				"    text: partial",
				"    finish_reason: stop",
				"    delay_ms: 10",
				"  - error: overloaded",
			),
			want: []string{
				`support.replay.yaml:3:5: response 1: text cannot go with error (only delay_ms can)`,
				`support.replay.yaml:4:5: response 1: finish_reason cannot go with error (only delay_ms can)`,
				`support.replay.yaml:6:12: response 2: error must be a mapping, not a string`,
			},
		},
		{
			name: "unknown finish_reason",
			script: lines(
				"responses:",
				"  - text: hi",
				"    finish_reason: done",
				"  - text: hi",
				"    finish_reason: lenght",
			),
			want: []string{
				`support.replay.yaml:3:20: response 1: unknown finish_reason "done" (valid finish reasons: stop, tool_calls, length, content_filter)`,
				`support.replay.yaml:5:20: response 2: unknown finish_reason "lenght" (did you mean "length"?)`,
			},
		},
		{
			name: "negative and oversized numbers",
			script: lines(
				"responses:",
				"  - delay_ms: -50",
				"  - error: {kind: rate_limit, retry_after_ms: -1}",
				"  - usage: {input_tokens: -3}",
				"  - delay_ms: 99999999999999999999",
				"  - delay_ms: 9223372036854775807",
			),
			want: []string{
				`support.replay.yaml:2:15: response 1: delay_ms must not be negative, got -50`,
				`support.replay.yaml:3:47: response 2, error: retry_after_ms must not be negative, got -1`,
				`support.replay.yaml:4:27: response 3, usage: input_tokens must not be negative, got -3`,
				`support.replay.yaml:5:15: response 4: delay_ms is too large: 99999999999999999999 (at most 9223372036854)`,
				`support.replay.yaml:6:15: response 5: delay_ms is too large: 9223372036854775807 (at most 9223372036854)`,
			},
		},
		{
			name: "input that aliases expand beyond 1 MiB",
			script: lines(
				"responses:",
				"  - tool_calls:",
				"      - name: laugh",
				"        input:",
				"          a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]",
				"          b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]",
				"          c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]",
				"          d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]",
				"          e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]",
				"          f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]",
				"          g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]",
				"          h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]",
				"          i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]",
			),
			want: []string{
				`support.replay.yaml:5:11: response 1, tool call 1: input is larger than 1048576 bytes once encoded as JSON`,
			},
		},
		{
			name:   "empty responses list",
			script: lines("model: m", "responses: []"),
			want: []string{
				`support.replay.yaml:2:12: responses is empty; a script needs at least one response`,
			},
		},
		{
			name:   "missing responses",
			script: lines("model: m"),
			want: []string{
				`support.replay.yaml:1:1: responses is missing; a script needs at least one response`,
			},
		},
		{
			name:   "empty file",
			script: "# nothing here\n",
			want: []string{
				`support.replay.yaml:1:1: the script is empty; it needs a responses list`,
			},
		},
		{
			name: "wrong types",
			script: lines(
				"model: 7",
				"responses:",
				"  - text: 42",
				"    tool_calls: {name: a}",
				"    usage: [1]",
				"  - tool_calls: [lookup_order]",
				"    delay_ms: fast",
				"  - usage: {output_tokens: 1.5}",
				"    finish_reason: [stop]",
				"  - tool_calls: [{name: a, id: 7, raw_input: {a: 1}}]",
				"  - error: {kind: server, message: [oops]}",
				"  - hello",
				"  -",
			),
			want: []string{
				`support.replay.yaml:1:8: model must be a string, not an integer (quote it: "7")`,
				`support.replay.yaml:3:11: response 1: text must be a string, not an integer (quote it: "42")`,
				`support.replay.yaml:4:17: response 1: tool_calls must be a sequence, not a mapping`,
				`support.replay.yaml:5:12: response 1: usage must be a mapping, not a sequence`,
				`support.replay.yaml:6:18: response 2, tool call 1 must be a mapping, not a string`,
				`support.replay.yaml:7:15: response 2: delay_ms must be an integer, not a string`,
				`support.replay.yaml:8:28: response 3, usage: output_tokens must be an integer, not a number`,
				`support.replay.yaml:9:20: response 3: finish_reason must be a string, not a sequence`,
				`support.replay.yaml:10:32: response 4, tool call 1: id must be a string, not an integer (quote it: "7")`,
				`support.replay.yaml:10:46: response 4, tool call 1: raw_input must be a string, not a mapping`,
				`support.replay.yaml:11:36: response 5, error: message must be a string, not a sequence`,
				`support.replay.yaml:12:5: response 6 must be a mapping, not a string`,
				`support.replay.yaml:13:3: response 7 must be a mapping, not null`,
			},
		},
		{
			name:   "script that is not a mapping",
			script: lines("- text: hi"),
			want: []string{
				`support.replay.yaml:1:1: a replay script must be a mapping with a responses key, not a sequence`,
			},
		},
		{
			name:   "second document",
			script: lines("responses: [{text: a}]", "---", "responses: [{text: b}]"),
			want: []string{
				`support.replay.yaml:2:1: a replay script is one YAML document, but another starts here`,
			},
		},
		{
			name: "syntax error: unterminated string",
			script: lines(
				"responses:",
				"  - text: \"Let me look",
				"  - text: ok",
			),
			want: []string{
				`support.replay.yaml:2:11: syntax error: could not find end character of double-quoted text`,
			},
		},
		{
			name:   "syntax error: tab indentation",
			script: lines("responses:", "\t- text: hi"),
			want: []string{
				"support.replay.yaml:2:1: syntax error: found character '\t' that cannot start any token",
			},
		},
		{
			name:   "syntax error: duplicate key",
			script: lines("responses:", "  - text: a", "    text: b"),
			want: []string{
				`support.replay.yaml:3:5: syntax error: mapping key "text" already defined at [2:5]`,
			},
		},
		{
			name: "unsupported YAML",
			script: lines(
				"responses:",
				"  - text: !custom hi",
				"  - text: *missing",
				"  - tool_calls: [{name: a, input: {x: .inf}}]",
				"  - <<: [1]",
				"  - text: !!int abc",
				"    delay_ms: !!str 5",
			),
			want: []string{
				`support.replay.yaml:2:11: unsupported tag !custom (only the standard tags !!str, !!int, !!float, !!bool, !!null, !!map and !!seq are)`,
				`support.replay.yaml:3:11: alias *missing refers to no anchor defined before it`,
				`support.replay.yaml:4:35: response 3, tool call 1: input cannot hold .inf: JSON has no infinity or NaN`,
				`support.replay.yaml:5:9: merge key << needs a mapping or a sequence of mappings, not a sequence`,
				`support.replay.yaml:6:11: value tagged !!int is a string`,
				`support.replay.yaml:7:15: response 5: delay_ms must be an integer, not a string`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := replay.Parse("support.replay.yaml", []byte(tt.script))
			if s != nil {
				t.Errorf("Parse returned a script with the error %v", err)
			}
			var se *replay.ScriptError
			if !errors.As(err, &se) {
				t.Fatalf("Parse error = %v (%T), want a *replay.ScriptError", err, err)
			}
			got := make([]string, len(se.Problems))
			for i, p := range se.Problems {
				got[i] = p.String()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(strings.Join(tt.want, "\n"), err.Error()); diff != "" {
				t.Errorf("Error() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseProblemFields(t *testing.T) {
	t.Parallel()
	_, err := replay.Parse("", []byte("responses:\n  - tool_call: []\n"))
	var se *replay.ScriptError
	if !errors.As(err, &se) {
		t.Fatalf("Parse error = %v, want a *replay.ScriptError", err)
	}
	want := []replay.Problem{{
		Line: 2, Column: 5,
		Message: `response 1: unknown key "tool_call" (did you mean "tool_calls"?)`,
	}}
	if diff := cmp.Diff(want, se.Problems); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
	if got, want := err.Error(), `2:5: response 1: unknown key "tool_call" (did you mean "tool_calls"?)`; got != want {
		t.Errorf("Error() = %q, want %q (no file prefix for an unnamed script)", got, want)
	}
}

// play parses script and returns the responses of one session's calls,
// one per call, with the error of each call that failed.
func play(t *testing.T, script string, calls int) []result {
	t.Helper()
	s, err := replay.Parse("t.replay.yaml", []byte(script))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	p := replay.New(s)
	var got []result
	for range calls {
		resp, err := p.Generate(t.Context(), &model.Request{SessionID: "ses_1"})
		got = append(got, result{resp, err})
	}
	return got
}

// result is one Generate outcome, compared field by field.
type result struct {
	Resp *model.Response
	Err  error
}

// cmpResult compares results, errors by their *model.Error fields.
var cmpResult = cmp.Options{
	cmp.Comparer(func(a, b error) bool {
		var ma, mb *model.Error
		if errors.As(a, &ma) && errors.As(b, &mb) {
			return cmp.Equal(*ma, *mb)
		}
		return errors.Is(a, b) || errors.Is(b, a)
	}),
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		script string
		want   *model.Response
	}{
		{
			name:   "text only finishes with stop",
			script: lines("responses:", "  - text: hello"),
			want: &model.Response{
				Text: "hello", FinishReason: model.FinishStop,
				Raw: []byte(`{"text":"hello"}`),
			},
		},
		{
			name:   "empty response",
			script: lines("responses:", "  - {}"),
			want:   &model.Response{FinishReason: model.FinishStop, Raw: []byte(`{}`)},
		},
		{
			name:   "tool calls finish with tool_calls; no input means {}",
			script: lines("responses:", "  - tool_calls: [{name: list_orders}]"),
			want: &model.Response{
				ToolCalls:    []runtype.MessageToolCall{{Name: "list_orders", Arguments: "{}"}},
				FinishReason: model.FinishToolCalls,
				Raw:          []byte(`{"tool_calls":[{"name":"list_orders"}]}`),
			},
		},
		{
			name: "explicit finish_reason wins",
			script: lines(
				"responses:",
				"  - text: cut o",
				"    tool_calls: [{name: a, id: call_1}]",
				"    finish_reason: length",
			),
			want: &model.Response{
				Text:         "cut o",
				ToolCalls:    []runtype.MessageToolCall{{ID: "call_1", Name: "a", Arguments: "{}"}},
				FinishReason: model.FinishLength,
				Raw:          []byte(`{"text":"cut o","tool_calls":[{"name":"a","id":"call_1"}],"finish_reason":"length"}`),
			},
		},
		{
			name: "input keeps key order and YAML types",
			script: lines(
				"responses:",
				"  - tool_calls:",
				"      - name: search",
				"        input:",
				"          query: \"<a & b>\"",
				"          limit: 0x10",
				"          ratio: 1.50",
				"          exact: true",
				"          after: ~",
				"          tags: [x, 'y']",
				"          nested: {z: 1, a: 2}",
			),
			want: &model.Response{
				ToolCalls: []runtype.MessageToolCall{{
					Name:      "search",
					Arguments: `{"query":"<a & b>","limit":16,"ratio":1.5,"exact":true,"after":null,"tags":["x","y"],"nested":{"z":1,"a":2}}`,
				}},
				FinishReason: model.FinishToolCalls,
				Raw:          []byte(`{"tool_calls":[{"name":"search","input":{"query":"<a & b>","limit":16,"ratio":1.5,"exact":true,"after":null,"tags":["x","y"],"nested":{"z":1,"a":2}}}]}`),
			},
		},
		{
			name: "raw_input is verbatim",
			script: lines(
				"responses:",
				"  - tool_calls:",
				"      - name: open_ticket",
				"        raw_input: '{\"order_id\": 10'",
			),
			want: &model.Response{
				ToolCalls:    []runtype.MessageToolCall{{Name: "open_ticket", Arguments: `{"order_id": 10`}},
				FinishReason: model.FinishToolCalls,
				Raw:          []byte(`{"tool_calls":[{"name":"open_ticket","raw_input":"{\"order_id\": 10"}]}`),
			},
		},
		{
			name: "usage, block text and tags",
			script: lines(
				"responses:",
				"  - text: |",
				"      line one",
				"      line two",
				"    usage: {input_tokens: 120, output_tokens: 30, cached_input_tokens: 100}",
				"  - text: !!str 42",
			),
			want: &model.Response{
				Text:         "line one\nline two\n",
				Usage:        runtype.Usage{InputTokens: 120, OutputTokens: 30, CachedInputTokens: 100},
				FinishReason: model.FinishStop,
				Raw:          []byte(`{"text":"line one\nline two\n","usage":{"input_tokens":120,"output_tokens":30,"cached_input_tokens":100}}`),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := play(t, tt.script, 1)
			if diff := cmp.Diff([]result{{Resp: tt.want}}, got, cmpResult); diff != "" {
				t.Errorf("first response mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseMergeKeys(t *testing.T) {
	t.Parallel()
	got := play(t, lines(
		"responses:",
		"  - &lookup",
		"    tool_calls: [{name: lookup, input: &args {id: 1, region: eu}}]",
		"  - <<: *lookup",
		"    text: again",
		"  - tool_calls: [{name: lookup, input: {<<: *args, id: 2}}]",
	), 3)
	want := []result{
		{Resp: &model.Response{
			ToolCalls:    []runtype.MessageToolCall{{Name: "lookup", Arguments: `{"id":1,"region":"eu"}`}},
			FinishReason: model.FinishToolCalls,
			Raw:          []byte(`{"tool_calls":[{"name":"lookup","input":{"id":1,"region":"eu"}}]}`),
		}},
		{Resp: &model.Response{
			Text:         "again",
			ToolCalls:    []runtype.MessageToolCall{{Name: "lookup", Arguments: `{"id":1,"region":"eu"}`}},
			FinishReason: model.FinishToolCalls,
			Raw:          []byte(`{"text":"again","tool_calls":[{"name":"lookup","input":{"id":1,"region":"eu"}}]}`),
		}},
		{Resp: &model.Response{
			ToolCalls:    []runtype.MessageToolCall{{Name: "lookup", Arguments: `{"region":"eu","id":2}`}},
			FinishReason: model.FinishToolCalls,
			Raw:          []byte(`{"tool_calls":[{"name":"lookup","input":{"region":"eu","id":2}}]}`),
		}},
	}
	if diff := cmp.Diff(want, got, cmpResult); diff != "" {
		t.Errorf("responses mismatch (-want +got):\n%s", diff)
	}
}

// TestRawIsAResponseEntry checks that Response.Raw, stored as a blob, can
// be played again: wrapped in a responses list it parses to the same
// response.
func TestRawIsAResponseEntry(t *testing.T) {
	t.Parallel()
	s, err := replay.Load("testdata/support.replay.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	p := replay.New(s)
	ctx := t.Context()
	for i := range s.Len() {
		resp, err := p.Generate(ctx, &model.Request{SessionID: "ses_raw"})
		if err != nil {
			continue // an error entry has no Raw
		}
		again, err := replay.Parse("raw.json", []byte(`{"responses": [`+string(resp.Raw)+`]}`))
		if err != nil {
			t.Fatalf("response %d: parsing its Raw %s: %v", i+1, resp.Raw, err)
		}
		got, err := replay.New(again).Generate(ctx, &model.Request{SessionID: "ses_raw"})
		if err != nil {
			t.Fatalf("response %d: playing its Raw: %v", i+1, err)
		}
		if diff := cmp.Diff(resp, got); diff != "" {
			t.Errorf("response %d: replayed Raw mismatch (-want +got):\n%s", i+1, diff)
		}
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()

	t.Run("file", func(t *testing.T) {
		t.Parallel()
		s, err := replay.Load("testdata/support.replay.yaml")
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		got := []any{s.Name(), s.Model(), s.Len()}
		want := []any{"testdata/support.replay.yaml", "support-bot-v1", 4}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("name, model, len mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		_, err := replay.Load("testdata/no-such.replay.yaml")
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Load error = %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("positions name the path", func(t *testing.T) {
		t.Parallel()
		_, err := replay.Load("testdata/typo.replay.yaml")
		want := `testdata/typo.replay.yaml:4:5: response 1: unknown key "tool_call" (did you mean "tool_calls"?)`
		if err == nil || err.Error() != want {
			t.Errorf("Load error = %v, want %s", err, want)
		}
	})
}

func TestModelDefaultsToFileName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, script, want string
	}{
		{"scripts/support.replay.yaml", "responses: [{}]\n", "support.replay.yaml"},
		{"support.replay.yaml", "model: gpt-test\nresponses: [{}]\n", "gpt-test"},
		{"", "responses: [{}]\n", "replay"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			s, err := replay.Parse(tt.name, []byte(tt.script))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := model.Info{Kind: "replay", Model: tt.want}
			if diff := cmp.Diff(want, replay.New(s).Info()); diff != "" {
				t.Errorf("Info mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
