package replaycase_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/replaycase"
	"github.com/agentrt/agentrt/runtype"
)

func step(i int, tool, args, decision, status, result string) replaycase.Step {
	return replaycase.Step{Index: i, Output: i, ToolCallID: "call_" + tool, Tool: tool, ArgumentsSHA256: args,
		Outcome: replaycase.Outcome{Decision: decision, ResultStatus: status, ResultSHA256: result}}
}

func recorded() *replaycase.Case {
	return &replaycase.Case{
		Version: 1, Agent: "a", Input: "hi", SessionID: "ses_1", TurnID: "turn_1", Status: "completed",
		ModelOutputs: []replaycase.ModelOutput{
			{ToolCalls: []replaycase.ToolCall{{ID: "call_lookup", Name: "lookup", Arguments: "{}"}}},
			{ToolCalls: []replaycase.ToolCall{{ID: "call_open", Name: "open", Arguments: "{}"}}},
		},
		Steps: []replaycase.Step{
			step(1, "lookup", "a1", "allow", "completed", "r1"),
			step(2, "open", "a2", "ask", "completed", "r2"),
		},
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		change   func(c *replaycase.Case)
		before   func(c *replaycase.Case) // changes both sides
		opts     replaycase.CompareOptions
		changed  [][]string // per step
		kinds    []string   // differences
		compared int
	}{
		{name: "same", change: func(*replaycase.Case) {}, changed: [][]string{{}, {}}, compared: 2},
		{name: "decision", change: func(c *replaycase.Case) { c.Steps[0].Decision = "deny" },
			changed: [][]string{{"decision"}, {}}, compared: 2},
		{name: "standing approval answered", change: func(c *replaycase.Case) {
			c.Steps[0].Decision, c.Steps[0].Human = "ask", "approve"
		}, before: func(c *replaycase.Case) { c.Steps[0].Source = "human" }, changed: [][]string{{}, {}}, compared: 2},
		{name: "standing approval denied", change: func(c *replaycase.Case) {
			c.Steps[0].Decision, c.Steps[0].Human = "ask", "deny"
		}, before: func(c *replaycase.Case) { c.Steps[0].Source = "human" }, changed: [][]string{{"decision"}, {}}, compared: 2},
		{name: "result", change: func(c *replaycase.Case) { c.Steps[1].ResultSHA256 = "other" },
			changed: [][]string{{}, {"result"}}, compared: 2},
		{name: "result status", change: func(c *replaycase.Case) { c.Steps[1].ResultStatus = "failed" },
			changed: [][]string{{}, {"result"}}, compared: 2},
		{name: "results not compared", change: func(c *replaycase.Case) { c.Steps[1].ResultSHA256 = "other" },
			opts: replaycase.CompareOptions{NoResults: true}, changed: [][]string{{}, {}}, compared: 2},
		{name: "decision and result", change: func(c *replaycase.Case) {
			c.Steps[0].Decision, c.Steps[0].ResultStatus = "deny", "failed"
		}, changed: [][]string{{"decision", "result"}, {}}, compared: 2},
		{name: "another call", change: func(c *replaycase.Case) { c.Steps[0].ArgumentsSHA256 = "a9" },
			changed: [][]string{{"call"}, {}}, compared: 2},
		{name: "missing", change: func(c *replaycase.Case) {
			c.Steps, c.ModelOutputs = c.Steps[:1], c.ModelOutputs[:1]
			c.Status, c.Failure = "failed", &runtype.Failure{Kind: runtype.FailureNoCompletion, Message: "stopped"}
		}, changed: [][]string{{}, {"missing"}}, kinds: []string{"model_outputs", "status"}, compared: 1},
		{name: "extra", change: func(c *replaycase.Case) {
			c.Steps = append(c.Steps, step(3, "more", "a3", "allow", "completed", "r3"))
			c.Status, c.Failure = "failed", &runtype.Failure{Kind: runtype.FailureScriptExhausted, Message: "no response 3"}
		}, changed: [][]string{{}, {}, {"extra"}}, kinds: []string{"model_outputs", "status"}, compared: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec, rep := recorded(), recorded()
			if tt.before != nil {
				tt.before(rec)
				tt.before(rep)
			}
			tt.change(rep)
			d := replaycase.Compare(rec, rep, tt.opts)
			var changed [][]string
			for _, s := range d.Steps {
				changed = append(changed, s.Changed)
			}
			var kinds []string
			for _, x := range d.Differences {
				kinds = append(kinds, x.Kind)
			}
			if diff := cmp.Diff(tt.changed, changed); diff != "" {
				t.Errorf("changed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.kinds, kinds); diff != "" {
				t.Errorf("differences (-want +got):\n%s", diff)
			}
			n := 0
			for _, c := range tt.changed {
				if len(c) > 0 {
					n++
				}
			}
			wantDiffers := n > 0 || len(tt.kinds) > 0
			if d.Summary.StepsCompared != tt.compared || d.Summary.Changed != n || d.Summary.Differs != wantDiffers ||
				len(d.ChangedSteps()) != n || d.Summary.ResultsCompared == tt.opts.NoResults {
				t.Errorf("summary = %+v", d.Summary)
			}
		})
	}
}

func TestCompareExhaustedScriptSaysMore(t *testing.T) {
	t.Parallel()
	rep := recorded()
	rep.Status, rep.Failure = "failed", &runtype.Failure{Kind: runtype.FailureScriptExhausted}
	d := replaycase.Compare(recorded(), rep, replaycase.CompareOptions{})
	if len(d.Differences) == 0 || d.Differences[0].Message != "the replay asked for more model outputs than the 2 recorded" {
		t.Errorf("differences = %+v", d.Differences)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	good := `{"version":1,"agent":"a","input":"hi","future":true,"modelOutputs":[{"toolCalls":[{"id":"c","name":"t","arguments":"{}"}]}],
	  "steps":[{"index":1,"output":1,"toolCallId":"c","tool":"t","argumentsSha256":"x","decision":"allow"}]}`
	c, err := replaycase.Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Steps[0].Decision != "allow" || c.ModelOutputs[0].ToolCalls[0].Arguments != "{}" {
		t.Errorf("parsed %+v", c)
	}
	bad := []struct{ doc, want string }{
		{`{`, "decoding JSON"},
		{`{"agent":"a","input":"x"}`, "version is missing"},
		{`{"version":2,"agent":"a","input":"x"}`, "version 2 is newer than this agentrt reads (1)"},
		{`{"version":1,"input":"x"}`, "agent is missing"},
		{`{"version":1,"agent":"a","input":"x","steps":[{"index":1}]}`, "1 steps, but the model outputs request only 0 tool calls"},
		{`{"version":1,"agent":"a","input":"x","modelOutputs":[{"toolCalls":[{"id":"c"}]}]}`, "model output 1, tool call 1: name is missing"},
		{`{"version":1,"agent":"a","input":"x","history":[{"seq":3,"role":"user"},{"seq":2,"role":"assistant"}]}`, "history message 2 has seq 2, not after 3"},
		{`{"version":1,"agent":"a","input":"x","history":[{"seq":1,"role":"boss"}]}`, `history message 1 (seq 1) has role "boss"`},
	}
	for _, b := range bad {
		_, err := replaycase.Parse([]byte(b.doc))
		if !errors.Is(err, replaycase.ErrInvalid) || !strings.Contains(err.Error(), b.want) {
			t.Errorf("Parse(%s) = %v, want an ErrInvalid saying %q", b.doc, err, b.want)
		}
	}
}

func TestContentSHA256(t *testing.T) {
	t.Parallel()
	if got := replaycase.ContentSHA256("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("ContentSHA256(abc) = %s", got)
	}
}

// TestCompareContexts: a context that differs is reported at its hop;
// none is compared after a changed step's call, nor for a request that
// continued a thread.
func TestCompareContexts(t *testing.T) {
	t.Parallel()
	ctx := func(hop int, hash string) replaycase.Context {
		return replaycase.Context{Hop: hop, Hash: "sha256:" + hash, MessageCount: 2*hop - 1, InstructionsRef: "sha256:i", ToolsRef: "sha256:t"}
	}
	base := func() *replaycase.Case {
		return &replaycase.Case{Version: replaycase.FormatVersion, Agent: "a", Input: "x", Status: "completed",
			ModelOutputs: []replaycase.ModelOutput{{ToolCalls: []replaycase.ToolCall{{ID: "c1", Name: "t", Arguments: "{}"}}}, {Text: "done"}},
			Steps:        []replaycase.Step{{Index: 1, Output: 1, ToolCallID: "c1", Tool: "t", ArgumentsSHA256: "h", Outcome: replaycase.Outcome{Decision: "allow", ResultStatus: "completed", ResultSHA256: "r"}}},
			Contexts:     []replaycase.Context{ctx(1, "a"), ctx(2, "b")}}
	}
	rec, rep := base(), base()
	rep.Contexts[1] = ctx(2, "c")
	d := replaycase.Compare(rec, rep, replaycase.CompareOptions{})
	if len(d.Differences) != 1 || !strings.Contains(d.Differences[0].Message, "hop 2 sent another context than the recording's: a message differs") {
		t.Errorf("differences %+v", d.Differences)
	}
	if d := replaycase.Compare(rec, rep, replaycase.CompareOptions{NoResults: true}); len(d.Differences) != 0 {
		t.Errorf("without results, hop 2 was compared: %+v", d.Differences)
	}
	rep.Steps[0].ResultSHA256 = "other" // the result changed: hop 2's context follows from it
	if d := replaycase.Compare(rec, rep, replaycase.CompareOptions{}); len(d.Differences) != 0 || d.Summary.Changed != 1 {
		t.Errorf("after a changed result: %+v", d)
	}
	rep = base()
	rep.Contexts[0] = ctx(1, "z")
	rec.HistoryMessages = 4
	if d := replaycase.Compare(rec, rep, replaycase.CompareOptions{}); len(d.Differences) != 0 {
		t.Errorf("a request with history was compared: %+v", d.Differences)
	}
}
