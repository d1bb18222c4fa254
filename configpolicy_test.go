package agentrt_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// TestPolicyFromConfigFile: the policy section of agentrt.yaml builds the
// kernel: rule files, agent scopes against a tool's scopes, principals'
// roles, and the secrets input check — each decision named in events.
func TestPolicyFromConfigFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"agentrt.yaml": `
policy:
  rules: [rules.yaml]
  principals:
    local: {roles: [operator, support]}
  input_checks:
    - {checker: secrets, action: deny}
agents:
  a:
    model: {provider: replay, script: a.replay.yaml}
    tools: [open_ticket, lookup]
    scopes: [orders:read]
tools:
  open_ticket:
    description: Open a ticket.
    input_schema: {type: object, properties: {note: {type: string}}}
    command: [./ok.sh]
    scopes: ["tickets:write"]
  lookup:
    description: Look an order up.
    input_schema: {type: object, properties: {note: {type: string}}}
    command: [./ok.sh]
    scopes: ["orders:read"]
    annotations: {read_only: true}
`,
		"rules.yaml": `
tier: workspace
rules:
  - {id: support-may, tools: ["*"], roles: [support], decision: allow, reason_code: support_role}
`,
		"a.replay.yaml": `
responses:
  - tool_calls:
      - {name: open_ticket, input: {note: "x"}}
      - {name: lookup, input: {note: "x"}}
      - {name: lookup, input: {note: "key sk-proj-Zq3vR8tY2uW6xA1bC4dE7fG0hJ5kL9mN3pQ8rS2tU6vW"}}
  - {text: done}
`,
		"ok.sh": "#!/bin/sh\necho ok\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _, err := agentrt.LoadConfig(filepath.Join(dir, "agentrt.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(context.Background())
	b := &testBundle{rt: rt}
	res, turn := b.submit(t, &agentrt.SubmitTurnParams{Agent: "a", Input: "go"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn %s (%s)", turn.Status, turn.StatusReason)
	}
	var got []string
	for _, e := range eventsOf(b.sessionEvents(t, runtype.Owner{}, res.SessionID), event.PermissionEvaluated) {
		d := e.PermissionDecision
		got = append(got, d.ToolName+" "+d.Decision+" "+d.Source+" "+d.ReasonCode+" "+strings.Join(d.MissingScopes, ","))
	}
	want := []string{
		"open_ticket deny scope scope_missing tickets:write",
		"lookup allow rule support_role ",
		"lookup deny checker secret_in_input ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("decisions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
