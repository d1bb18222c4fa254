package config

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stateBase declares the command tools "run" and "other" and the agents
// "plain" and "case", which lists run; tests append keys of "case" from
// line 14.
const stateBase = `tools:
  run:
    input_schema: {type: object}
    command: [tools/run.sh]
  other:
    input_schema: {type: object}
    command: [tools/run.sh]
agents:
  plain:
    model: {provider: replay, script: support.replay.yaml}
  case:
    model: {provider: replay, script: support.replay.yaml}
    tools: [run]
`

func TestParseStateValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, state string // keys of agent "case"
		want        *State
	}{
		{name: "None"},
		{
			name:  "SchemaOnly",
			state: "    state: {schema: {type: object}}\n",
			want:  &State{Version: 1, Schema: json.RawMessage(`{"type":"object"}`)},
		},
		{
			name: "Everything",
			state: `    state:
      version: 2
      schema:
        type: object
        properties:
          status: {enum: [new, open, waiting, closed]}
          notes: {type: array, items: {type: string}}
        required: [status]
      initial: {status: new, notes: []}
      migrate: run
`,
			want: &State{
				Version: 2,
				Schema: json.RawMessage(`{"type":"object","properties":{"status":{"enum":["new","open","waiting","closed"]},` +
					`"notes":{"type":"array","items":{"type":"string"}}},"required":["status"]}`),
				Initial: json.RawMessage(`{"status":"new","notes":[]}`),
				Migrate: "run",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			f, err := Parse("agentrt.yaml", []byte(stateBase+tt.state), dir, Options{Builtins: builtins})
			if err != nil {
				t.Fatalf("Parse:\n%v", err)
			}
			if diff := cmp.Diff(tt.want, f.Agents["case"].State); diff != "" {
				t.Errorf("State mismatch (-want +got):\n%s", diff)
			}
			if f.Agents["plain"].State != nil {
				t.Errorf("agent plain has a state: %+v", f.Agents["plain"].State)
			}
		})
	}
}

func TestParseStateErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, state string // keys of agent "case", from line 14
		want        []string
	}{
		{
			name:  "NotMapping",
			state: "    state: [status]\n",
			want:  []string{`agentrt.yaml:14:12: state in agent "case" must be a mapping, got a list`},
		},
		{
			name:  "Empty",
			state: "    state:\n",
			want:  []string{`agentrt.yaml:14:5: state in agent "case" is empty: it needs a schema`},
		},
		{
			name:  "NoSchema",
			state: "    state: {version: 1, initial: {status: new}}\n",
			want:  []string{`agentrt.yaml:14:5: schema is required in state in agent "case": the JSON Schema of the instances' state`},
		},
		{
			name: "BadValues",
			state: `    state:
      version: 0
      schema: {type: object, properties: {status: {type: 5}}}
      initial: [new]
      migrate: [run]
      intial: {}
`,
			want: []string{
				`agentrt.yaml:15:16: version in state in agent "case" must be between 1 and 1000000, got 0`,
				`agentrt.yaml:16:15: schema in state in agent "case" is not a valid JSON Schema: at '/properties/status/type': value must be one of ` +
					`'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'; at '/properties/status/type': got number, want array`,
				`agentrt.yaml:17:16: initial in state in agent "case" must be a mapping, got a list`,
				`agentrt.yaml:18:16: migrate in state in agent "case" must be a string, got a list`,
				`agentrt.yaml:19:7: unknown key "intial" in state in agent "case"; did you mean initial?`,
			},
		},
		{
			name: "SchemaNotMapping",
			state: `    state:
      schema: object
`,
			want: []string{`agentrt.yaml:15:15: schema in state in agent "case" must be a mapping holding a JSON Schema, got string "object"`},
		},
		{
			name: "InitialRefused",
			state: `    state:
      schema: {type: object, properties: {status: {enum: [new, open]}}, required: [status]}
      initial: {status: lost}
`,
			want: []string{`agentrt.yaml:16:16: initial in state in agent "case" does not match its schema: at '/status': value must be one of 'new', 'open'`},
		},
		{
			// Without initial, a new instance starts at {}, which the
			// schema must accept.
			name: "DefaultInitialRefused",
			state: `    state:
      schema: {type: object, required: [status]}
`,
			want: []string{`agentrt.yaml:14:5: the initial state {} (initial is not written) of state in agent "case" does not match its schema: missing property 'status'`},
		},
		{
			name: "VersionNeedsMigrate",
			state: `    state:
      version: 3
      schema: {type: object}
`,
			want: []string{`agentrt.yaml:15:16: version 3 in state in agent "case" needs migrate: the command tool that migrates an instance's state from an older version`},
		},
		{
			name: "MigrateNotDeclared",
			state: `    state:
      version: 2
      schema: {type: object}
      migrate: rn
`,
			want: []string{`agentrt.yaml:17:16: migrate "rn" in state in agent "case" is not a tool declared under tools: a migration is a command tool; did you mean run?`},
		},
		{
			name: "MigrateBuiltin",
			state: `    state:
      schema: {type: object}
      migrate: read_file
`,
			want: []string{`agentrt.yaml:16:16: migrate "read_file" in state in agent "case" is not a tool declared under tools: a migration is a command tool`},
		},
		{
			name: "MigrateNotTheAgents",
			state: `    state:
      version: 2
      schema: {type: object}
      migrate: other
`,
			want: []string{`agentrt.yaml:17:16: migrate "other" in state in agent "case" is not in the tools of agent "case"; add it there`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			_, err := Parse("agentrt.yaml", []byte(stateBase+tt.state), dir, Options{Builtins: builtins})
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

// instanceBase is the agents "case", with a state, and "plain", without;
// tests append a schedules section from line 8.
const instanceBase = `agents:
  case:
    model: {provider: replay, script: support.replay.yaml}
    state: {schema: {type: object}}
  plain:
    model: {provider: replay, script: support.replay.yaml}
schedules:
`

func TestParseScheduleInstance(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	src := instanceBase + `  - {name: follow-up, agent: case, instance: "case/4711", every: 24h, input: "Follow up on {{.Name}}"}
  - {name: tenant-wide, agent: case, every: 1h, input: x}
  - {name: odd, agent: case, instance: "acme:eu/case_9.v2-b", every: 1h, input: x}
`
	f, err := Parse("agentrt.yaml", []byte(src), dir, Options{Builtins: builtins})
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	var got []string
	for _, s := range f.Schedules {
		got = append(got, s.Name+"="+s.Instance)
	}
	if diff := cmp.Diff([]string{"follow-up=case/4711", "tenant-wide=", "odd=acme:eu/case_9.v2-b"}, got); diff != "" {
		t.Errorf("instances mismatch (-want +got):\n%s", diff)
	}
}

func TestParseScheduleInstanceErrors(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	src := instanceBase + `  - {name: a, agent: case, every: 1h, input: x, instance: "/case/1"}
  - {name: b, agent: case, every: 1h, input: x, instance: "case/1/"}
  - {name: c, agent: case, every: 1h, input: x, instance: "case/../1"}
  - {name: d, agent: case, every: 1h, input: x, instance: "case 1"}
  - {name: e, agent: case, every: 1h, input: x, instance: "` + strings.Repeat("x", 201) + `"}
  - {name: f, agent: case, every: 1h, input: x, instance: [case/1]}
  - {name: g, agent: plain, every: 1h, input: x, instance: case/1}
`
	_, err := Parse("agentrt.yaml", []byte(src), dir, Options{Builtins: builtins})
	if err == nil {
		t.Fatal("Parse: no error")
	}
	got := errorLines(t, err, dir)
	want := []string{
		`agentrt.yaml:8:59: instance in schedule "a": "/case/1" must not begin or end with '/'`,
		`agentrt.yaml:9:59: instance in schedule "b": "case/1/" must not begin or end with '/'`,
		`agentrt.yaml:10:59: instance in schedule "c": "case/../1" must not contain '..'`,
		`agentrt.yaml:11:59: instance in schedule "d": "case 1" is not 1 to 200 letters, digits, '/', '_', '-', '.' or ':'`,
		`agentrt.yaml:12:59: instance in schedule "e": "` + strings.Repeat("x", 201) + `" is not 1 to 200 letters, digits, '/', '_', '-', '.' or ':'`,
		`agentrt.yaml:13:59: instance in schedule "f" must be a string, got a list`,
		`agentrt.yaml:14:60: instance "case/1" in schedule "g" needs agent "plain" to have a state section: only an agent with a state has named instances`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s\ngot:\n%s", diff, "\t`"+strings.Join(got, "`,\n\t`")+"`,")
	}
}

// TestParseInstanceStateTool: an agent with a state may list the
// instance_state tool it is given anyway; an agent without one may not.
func TestParseInstanceStateTool(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	src := `agents:
  case:
    model: {provider: replay, script: support.replay.yaml}
    tools: [instance_state]
    state: {schema: {type: object}}
  plain:
    model: {provider: replay, script: support.replay.yaml}
    tools: [instance_state]
`
	_, err := Parse("agentrt.yaml", []byte(src), dir, Options{Builtins: builtins})
	if err == nil {
		t.Fatal("Parse: no error")
	}
	want := []string{`agentrt.yaml:8:13: agent "plain" lists tool "instance_state", which only an agent with a state section has; add state or remove it`}
	if diff := cmp.Diff(want, errorLines(t, err, dir)); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
}
