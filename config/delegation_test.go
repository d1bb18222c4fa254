package config

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// delegationAgents are two agents, a parent "a" with tools and a child
// "b"; tests append a subagents key to "a" (line 6 holds it).
const delegationAgents = `agents:
  b:
    model: {provider: replay, script: support.replay.yaml}
  a:
    model: {provider: replay, script: support.replay.yaml}
    tools: [read_file, run]
`

// delegationTools declares the command tools "run", which "a" lists, and
// "other".
const delegationTools = `tools:
  run:
    input_schema: {type: object}
    command: [tools/run.sh]
  other:
    input_schema: {type: object}
    command: [tools/run.sh]
`

func TestParseSubagentValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, subagents string // the subagents key of agent "a"
		want            []*SubagentUse
	}{
		{name: "None"},
		{name: "Empty", subagents: "    subagents: []\n"},
		{
			name:      "Defaults",
			subagents: "    subagents: [{agent: b}]\n",
			want:      []*SubagentUse{{Agent: "b", AsTool: "delegate_b", Workspace: "own"}},
		},
		{
			name: "Everything",
			subagents: `    subagents:
      - agent: b
        as_tool: lookup
        description: Looks an order up.
        input_schema:
          type: object
          properties: {order: {type: string}}
          required: [order]
        max_parallel: 2
        workspace: parent_readonly
      - {agent: a, as_tool: again, input_schema: {properties: {task: {type: string}}}}
`,
			want: []*SubagentUse{
				{
					Agent: "b", AsTool: "lookup", Description: "Looks an order up.",
					InputSchema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}`),
					MaxParallel: 2, Workspace: "parent_readonly",
				},
				// An agent may delegate to itself (max_depth bounds it); a
				// schema without a type gets type: object.
				{Agent: "a", AsTool: "again", Workspace: "own", InputSchema: json.RawMessage(`{"type":"object","properties":{"task":{"type":"string"}}}`)},
			},
		},
		{
			name:      "AsJob",
			subagents: "    subagents: [{agent: b, as_tool: batch, as_job: true, max_parallel: 8}]\n",
			want:      []*SubagentUse{{Agent: "b", AsTool: "batch", MaxParallel: 8, Workspace: "own", AsJob: true}},
		},
		{
			name:      "Context",
			subagents: "    subagents: [{agent: b, context: parent}, {agent: b, as_tool: alone, context: none}]\n",
			want: []*SubagentUse{
				{Agent: "b", AsTool: "delegate_b", Workspace: "own", Context: "parent"},
				{Agent: "b", AsTool: "alone", Workspace: "own", Context: "none"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			f, err := Parse("agentrt.yaml", []byte(delegationAgents+tt.subagents+delegationTools), dir, Options{Builtins: builtins})
			if err != nil {
				t.Fatalf("Parse:\n%v", err)
			}
			if diff := cmp.Diff(tt.want, f.Agents["a"].Subagents); diff != "" {
				t.Errorf("Subagents mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseSubagentSharedTool: two agents may offer one subagent tool
// when they declare the same child with the same schema.
func TestParseSubagentSharedTool(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	src := delegationAgents + "    subagents: [{agent: b, as_tool: ask, input_schema: &s {type: object}}]\n" +
		"  c:\n    model: {provider: replay, script: support.replay.yaml}\n" +
		"    subagents: [{agent: b, as_tool: ask, input_schema: *s, max_parallel: 1}, {agent: b}]\n" +
		"  d:\n    model: {provider: replay, script: support.replay.yaml}\n    subagents: [{agent: b}]\n" + delegationTools
	f, err := Parse("agentrt.yaml", []byte(src), dir, Options{Builtins: builtins})
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	got := []string{}
	for _, name := range []string{"a", "c", "d"} {
		for _, u := range f.Agents[name].Subagents {
			got = append(got, name+":"+u.AsTool+"->"+u.Agent)
		}
	}
	want := []string{"a:ask->b", "c:ask->b", "c:delegate_b->b", "d:delegate_b->b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("subagent tools mismatch (-want +got):\n%s", diff)
	}
}

func TestParseSubagentErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, subagents string // the subagents key of agent "a", from line 7
		want            []string
	}{
		{
			name:      "NotList",
			subagents: "    subagents: {agent: b}\n",
			want:      []string{`agentrt.yaml:7:16: subagents in agent "a" must be a list of mappings such as {agent: NAME}, got a mapping`},
		},
		{
			name:      "ItemNotMapping",
			subagents: "    subagents: [b]\n",
			want:      []string{`agentrt.yaml:7:17: subagents[0] of agent "a" must be a mapping such as {agent: NAME}, got string "b"`},
		},
		{
			name:      "UnknownKeyAndNoAgent",
			subagents: "    subagents: [{as_tol: x}]\n",
			want: []string{
				`agentrt.yaml:7:17: agent is required in subagents[0] of agent "a": the name of the agent to delegate to`,
				`agentrt.yaml:7:18: unknown key "as_tol" in subagents[0] of agent "a"; did you mean as_tool?`,
			},
		},
		{
			name:      "UnknownAgent",
			subagents: "    subagents: [{agent: bb}]\n",
			want:      []string{`agentrt.yaml:7:25: agent "bb" in subagents[0] of agent "a" is not an agent under agents; did you mean b?`},
		},
		{
			name:      "WrongTypes",
			subagents: "    subagents: [{agent: [b], description: {x: 1}, max_parallel: many, as_tool: [x]}]\n",
			want: []string{
				`agentrt.yaml:7:25: agent in subagents[0] of agent "a" must be a string, got a list`,
				`agentrt.yaml:7:43: description in subagents[0] of agent "a" must be a string, got a mapping`,
				`agentrt.yaml:7:65: max_parallel in subagents[0] of agent "a" must be an integer, got string "many"`,
				`agentrt.yaml:7:80: as_tool in subagents[0] of agent "a" must be a string, got a list`,
			},
		},
		{
			name:      "Ranges",
			subagents: "    subagents: [{agent: b, max_parallel: 0, workspace: parent}]\n",
			want: []string{
				`agentrt.yaml:7:42: max_parallel in subagents[0] of agent "a" must be between 1 and 64, got 0`,
				`agentrt.yaml:7:56: workspace in subagents[0] of agent "a" must be one of own, parent_readonly, got "parent"; did you mean parent_readonly?`,
			},
		},
		{
			name:      "Context",
			subagents: "    subagents: [{agent: b, context: all}]\n",
			want:      []string{`agentrt.yaml:7:37: context in subagents[0] of agent "a" must be one of none, parent, got "all"`},
		},
		{
			name:      "BadToolName",
			subagents: "    subagents: [{agent: b, as_tool: ask b}]\n",
			want:      []string{`agentrt.yaml:7:37: invalid as_tool "ask b" in subagents[0] of agent "a": use 1 to 64 letters, digits, '_' or '-'`},
		},
		{
			name:      "DuplicateTool",
			subagents: "    subagents: [{agent: b}, {agent: a, as_tool: delegate_b}]\n",
			want:      []string{`agentrt.yaml:7:49: as_tool "delegate_b" in subagents[1] of agent "a" is already the tool of subagents[0]; give each subagent its own as_tool`},
		},
		{
			name:      "Collisions",
			subagents: "    subagents: [{agent: b, as_tool: read_file}, {agent: b, as_tool: run}, {agent: b, as_tool: other}]\n",
			want: []string{
				`agentrt.yaml:7:37: as_tool "read_file" in subagents[0] of agent "a" is the name of a builtin tool; choose another`,
				`agentrt.yaml:7:69: as_tool "run" in subagents[1] of agent "a" is also in the tools of agent "a"; choose another`,
				`agentrt.yaml:7:95: as_tool "other" in subagents[2] of agent "a" is the name of a tool declared under tools; choose another`,
			},
		},
		{
			name: "SharedToolOtherChild",
			subagents: "    subagents: [{agent: b, as_tool: ask}]\n" +
				"  c:\n    model: {provider: replay, script: support.replay.yaml}\n    subagents: [{agent: a, as_tool: ask}]\n",
			want: []string{`agentrt.yaml:10:37: as_tool "ask" in subagents[0] of agent "c" delegates to agent "a", but subagents[0] of agent "a" (line 7) delegates to "b" under that name; a tool name is one tool across agents: choose another`},
		},
		{
			name: "SharedToolOtherSchema",
			subagents: "    subagents: [{agent: b, as_tool: ask}]\n" +
				"  c:\n    model: {provider: replay, script: support.replay.yaml}\n    subagents: [{agent: b, as_tool: ask, input_schema: {type: object}}]\n",
			want: []string{`agentrt.yaml:10:37: as_tool "ask" in subagents[0] of agent "c" has another input_schema than subagents[0] of agent "a" (line 7); a tool name is one tool across agents: write the same schema (a YAML anchor shares it) or choose another name`},
		},
		{
			name:      "AsJob",
			subagents: "    subagents: [{agent: b, as_job: true, workspace: parent_readonly}, {agent: a, as_job: yes}]\n",
			want: []string{
				`agentrt.yaml:7:53: workspace parent_readonly in subagents[0] of agent "a" cannot be combined with as_job: a job's items each work on the child's own workspace`,
				`agentrt.yaml:7:90: as_job in subagents[1] of agent "a" must be true or false, got string "yes"`,
			},
		},
		{
			name: "SharedToolOtherAsJob",
			subagents: "    subagents: [{agent: b, as_tool: ask}]\n" +
				"  c:\n    model: {provider: replay, script: support.replay.yaml}\n    subagents: [{agent: b, as_tool: ask, as_job: true}]\n",
			want: []string{`agentrt.yaml:10:37: as_tool "ask" in subagents[0] of agent "c" sets as_job true, but subagents[0] of agent "a" (line 7) sets false; a tool name is one tool across agents: choose another`},
		},
		{
			name:      "SchemaNotObject",
			subagents: "    subagents: [{agent: b, input_schema: {type: string}}, {agent: a, input_schema: [task]}]\n",
			want: []string{
				`agentrt.yaml:7:49: input_schema in subagents[0] of agent "a" must have type: object, got string "string"`,
				`agentrt.yaml:7:84: input_schema in subagents[1] of agent "a" must be a mapping holding a JSON Schema, got a list`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			_, err := Parse("agentrt.yaml", []byte(delegationAgents+tt.subagents+delegationTools), dir, Options{Builtins: builtins})
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

func TestParseDelegation(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	for _, tt := range []struct {
		name, section string
		want          Delegation
		errs          []string
	}{
		{name: "None"},
		{name: "Null", section: "delegation:\n"},
		{name: "Depth", section: "delegation: {max_depth: 10}\n", want: Delegation{MaxDepth: 10}},
		{name: "Zero", section: "delegation: {max_depth: 0}\n", errs: []string{`agentrt.yaml:4:25: delegation.max_depth must be between 1 and 10, got 0`}},
		{name: "TooDeep", section: "delegation:\n  max_depth: 11\n", errs: []string{`agentrt.yaml:5:14: delegation.max_depth must be between 1 and 10, got 11`}},
		{name: "NotInteger", section: "delegation: {max_depth: deep}\n", errs: []string{`agentrt.yaml:4:25: delegation.max_depth must be an integer, got string "deep"`}},
		{name: "NotMapping", section: "delegation: 3\n", errs: []string{`agentrt.yaml:4:13: delegation must be a mapping, got integer 3`}},
		{name: "UnknownKey", section: "delegation: {depth: 2}\n", errs: []string{`agentrt.yaml:4:14: unknown key "depth" in delegation; did you mean max_depth?`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("agentrt.yaml", []byte(okAgent+tt.section), dir, Options{Builtins: builtins})
			if tt.errs != nil {
				if err == nil {
					t.Fatal("Parse: no error")
				}
				if diff := cmp.Diff(tt.errs, errorLines(t, err, dir)); diff != "" {
					t.Errorf("errors mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse:\n%v", err)
			}
			if f.Delegation != tt.want {
				t.Errorf("Delegation = %+v, want %+v", f.Delegation, tt.want)
			}
		})
	}
}
