package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// workflowAgents is one agent "b"; tests append a workflows section from
// line 4.
const workflowAgents = `agents:
  b:
    model: {provider: replay, script: support.replay.yaml}
`

func TestParseWorkflows(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	f, err := Parse("agentrt.yaml", []byte(workflowAgents+`workflows:
  triage:
    input_schema: {type: object}
    steps:
      - {id: classify, agent: b, input: "{{.Input.text}}"}
      - {id: ask, human: "Go on?", needs: [classify], when: steps.classify.json.urgent}
      - {id: later, wait: 2h, needs: [ask, classify], join: n_of, n: 1}
      - {id: at, until: "2026-07-01T09:00:00Z", needs: [later], join: any}
`), dir, Options{Builtins: builtins})
	if err != nil {
		t.Fatal(err)
	}
	want := &Workflow{InputSchema: []byte(`{"type":"object"}`), Steps: []*WorkflowStep{
		{ID: "classify", Agent: "b", Input: "{{.Input.text}}"},
		{ID: "ask", Human: "Go on?", Needs: []string{"classify"}, When: "steps.classify.json.urgent"},
		{ID: "later", Wait: 2 * time.Hour, Needs: []string{"ask", "classify"}, Join: "n_of", N: 1},
		{ID: "at", Until: time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC), Needs: []string{"later"}, Join: "any"},
	}}
	if d := cmp.Diff(want, f.Workflows["triage"]); d != "" {
		t.Errorf("workflow (-want +got):\n%s", d)
	}
}

func TestParseWorkflowErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, workflows string // from line 4
		want            []string
	}{
		{
			name:      "NoSteps",
			workflows: "workflows:\n  w: {input_schema: {type: object}}\n",
			want:      []string{`agentrt.yaml:5:3: workflow "w" has no steps: add a steps list`},
		},
		{
			name:      "UnknownAgentAndNeed",
			workflows: "workflows:\n  w:\n    steps:\n      - {id: a, agent: bb, needs: [zz]}\n",
			want: []string{
				`agentrt.yaml:7:24: agent "bb" in steps[0] of workflow "w" is not an agent under agents; did you mean b?`,
				`agentrt.yaml:7:36: need "zz" in steps[0] of workflow "w" is not the id of a step of workflow "w"`,
			},
		},
		{
			name:      "Kinds",
			workflows: "workflows:\n  w:\n    steps:\n      - {id: a}\n      - {id: c, agent: b, wait: 1m}\n",
			want: []string{
				`agentrt.yaml:7:9: steps[0] of workflow "w" needs one of agent, wait, until or human`,
				`agentrt.yaml:8:27: steps[1] of workflow "w" has more than one of agent, wait, until and human: a step is one thing`,
			},
		},
		{
			name:      "BadValues",
			workflows: "workflows:\n  w:\n    steps:\n      - {id: 1a, human: x, join: most, until: tomorrow, colour: red}\n",
			want: []string{
				`agentrt.yaml:7:14: invalid id "1a" in steps[0] of workflow "w": start with a letter, then letters, digits or '_' (at most 64)`,
				`agentrt.yaml:7:34: join in steps[0] of workflow "w" must be one of all, any, n_of, got "most"`,
				`agentrt.yaml:7:47: until in steps[0] of workflow "w" must be an RFC 3339 time such as 2026-07-01T09:00:00Z, got "tomorrow"`,
				`agentrt.yaml:7:57: unknown key "colour" in steps[0] of workflow "w"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			_, err := Parse("agentrt.yaml", []byte(workflowAgents+tt.workflows), dir, Options{Builtins: builtins})
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
