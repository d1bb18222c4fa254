package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseContextValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, ctx string // the agent's context value; empty for none
		want      *Context
	}{
		{name: "None"},
		{name: "Defaults", ctx: "{}", want: &Context{CompactAt: 0.8, KeepRecentTurns: 2, Strategy: "summarize"}},
		{
			name: "Everything",
			ctx:  "{window_tokens: 32000, compact_at: 0.5, keep_recent_turns: 3, strategy: summarize_then_drop, summary_model: cheap}",
			want: &Context{WindowTokens: 32000, CompactAt: 0.5, KeepRecentTurns: 3, Strategy: "summarize_then_drop",
				SummaryModel: &Model{Key: "cheap", Provider: "replay", Script: "$DIR/support.replay.yaml"}},
		},
		{name: "Reset", ctx: "{strategy: reset, compact_at: 1}", want: &Context{CompactAt: 1, KeepRecentTurns: 2, Strategy: "reset"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			src := "models:\n  cheap: {provider: replay, script: support.replay.yaml}\n" + okAgent
			if tt.ctx != "" {
				src += "    context: " + tt.ctx + "\n"
			}
			f, err := Parse("agentrt.yaml", []byte(src), dir, Options{Builtins: builtins})
			if err != nil {
				t.Fatalf("Parse:\n%v", err)
			}
			got := f.Agents["a"].Context
			if got != nil && got.SummaryModel != nil {
				m := *got.SummaryModel
				m.Script = strings.Replace(m.Script, dir, "$DIR", 1)
				got.SummaryModel = &Model{Key: m.Key, Provider: m.Provider, Script: m.Script}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Context mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseContextErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, ctx string
		want      []string
	}{
		{name: "NotMapping", ctx: "[summarize]", want: []string{`agentrt.yaml:4:14: context in agent "a" must be a mapping, got a list`}},
		{
			name: "Ranges",
			ctx:  "{window_tokens: 100, compact_at: 1.5, keep_recent_turns: 0}",
			want: []string{
				`agentrt.yaml:4:30: window_tokens in context in agent "a" must be at least 256, got 100`,
				`agentrt.yaml:4:47: compact_at in context in agent "a" must be a fraction above 0 and at most 1, got 1.5`,
				`agentrt.yaml:4:71: keep_recent_turns in context in agent "a" must be between 1 and 100, got 0`,
			},
		},
		{
			name: "ZeroFraction",
			ctx:  "{compact_at: 0, window_tokens: lots}",
			want: []string{
				`agentrt.yaml:4:27: compact_at in context in agent "a" must be a fraction above 0 and at most 1, got 0`,
				`agentrt.yaml:4:45: window_tokens in context in agent "a" must be an integer, got string "lots"`,
			},
		},
		{
			name: "Strategy",
			ctx:  "{strategy: forget}",
			want: []string{`agentrt.yaml:4:25: unknown strategy "forget" in context in agent "a": use summarize, drop_tool_outputs, summarize_then_drop or reset`},
		},
		{
			name: "SummaryModel",
			ctx:  "{summary_model: cheep, keep_recent: 2}",
			want: []string{
				`agentrt.yaml:4:30: agent "a" uses summary_model "cheep", which is not declared under models; did you mean cheap?`,
				`agentrt.yaml:4:37: unknown key "keep_recent" in context in agent "a"; did you mean keep_recent_turns?`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			src := okAgent + "    context: " + tt.ctx + "\nmodels:\n  cheap: {provider: replay, script: support.replay.yaml}\n"
			_, err := Parse("agentrt.yaml", []byte(src), dir, Options{Builtins: builtins})
			if err == nil {
				t.Fatal("Parse: no error")
			}
			got := errorLines(t, err, dir)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s\ngot:\n%s", diff, "\t`"+strings.Join(got, "`,\n\t`")+"`,")
			}
		})
	}
}
