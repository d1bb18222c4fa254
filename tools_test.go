package agentrt_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
)

const inventoryRules = `tier: workspace
rules:
  - id: ask-writes
    tools: [write_file]
    decision: ask
    reason_code: writes_need_approval
  - id: no-etc
    tools: [read_file]
    when: has(input.path) && input.path.startsWith("/etc")
    decision: deny
    reason_code: etc_is_private
`

// inventoryRuntime runs agent "support" with read_file, list_dir and
// write_file under inventoryRules, requiring completion.
func inventoryRuntime(t *testing.T) *agentrt.Runtime {
	t.Helper()
	rules, err := policy.ParseRules("rules.yaml", []byte(inventoryRules))
	if err != nil {
		t.Fatal(err)
	}
	k, err := policy.NewKernel(policy.KernelConfig{Rules: rules, DefaultMode: policy.ModeDefault})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := replay.Parse("t.replay.yaml", []byte("responses: [{text: hi}]"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := agentrt.New(agentrt.Config{
		NoWorkers: true, Policy: k,
		Agents: map[string]*agentrt.Agent{"support": {
			Instructions: "help", Provider: replay.New(sc), Tools: []string{"read_file", "list_dir", "write_file"}, RequireCompletion: true,
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	return rt
}

func TestToolInventory(t *testing.T) {
	t.Parallel()
	rt := inventoryRuntime(t)
	owner := runtype.Owner{PrincipalID: "alice"}
	type want struct{ decision, empty, reason, rule, conditional string }
	for _, tt := range []struct {
		mode policy.Mode
		want map[string]want
	}{
		{"", map[string]want{
			// /etc paths are denied: the empty call is allowed, but not
			// every call.
			"read_file":     {"conditional", "allow", "mode_default_read_only", "", "no-etc"},
			"list_dir":      {"allow", "allow", "mode_default_read_only", "", ""},
			"write_file":    {"ask", "ask", "writes_need_approval", "ask-writes", ""},
			"complete_task": {"ask", "ask", "mode_default_ask", "", ""},
		}},
		{policy.ModeReadOnly, map[string]want{
			"read_file": {"conditional", "allow", "", "", "no-etc"},
			// read_only refuses a write whatever its arguments.
			"write_file": {"deny", "deny", "mode_read_only", "ask-writes", ""},
		}},
	} {
		inv, err := rt.ToolInventory(t.Context(), &apitype.ToolInventoryParams{Owner: owner, Agent: "support", Mode: string(tt.mode)})
		if err != nil {
			t.Fatalf("ToolInventory(%q): %v", tt.mode, err)
		}
		if inv.Agent != "support" || inv.Principal != "alice" || inv.Mode != string(tt.mode) {
			t.Errorf("inventory of %q: agent %s, principal %s, mode %q", tt.mode, inv.Agent, inv.Principal, inv.Mode)
		}
		var names []string
		for _, tr := range inv.Tools {
			names = append(names, tr.Name)
			if tr.Source != "builtin" || tr.Description == "" || !json.Valid(tr.InputSchema) {
				t.Errorf("%s: source %q, description %q, schema %s", tr.Name, tr.Source, tr.Description, tr.InputSchema)
			}
			w, ok := tt.want[tr.Name]
			if !ok {
				continue
			}
			p := tr.Policy
			if p.Decision != w.decision || p.EmptyArguments != w.empty || (w.reason != "" && p.ReasonCode != w.reason) ||
				(w.rule != "" && !slices.Contains(p.RuleIDs, w.rule)) || (w.conditional != "" && !slices.Contains(p.ConditionalRuleIDs, w.conditional)) ||
				(w.conditional == "" && len(p.ConditionalRuleIDs) > 0) {
				t.Errorf("mode %q, %s: policy %+v, want %+v", tt.mode, tr.Name, p, w)
			}
		}
		if !slices.Equal(names, []string{"read_file", "list_dir", "write_file", "complete_task"}) {
			t.Errorf("tools = %v, want the agent's, then complete_task", names)
		}
	}

	_, err := rt.ToolInventory(t.Context(), &apitype.ToolInventoryParams{Agent: "nobody"})
	if !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("unknown agent: error = %v, want ErrNotFound", err)
	}
	_, err = rt.ToolInventory(t.Context(), &apitype.ToolInventoryParams{Agent: "support", Mode: "yolo"})
	var inv *apitype.InvalidError
	if !errors.As(err, &inv) || inv.Field != "mode" {
		t.Errorf("unknown mode: error = %v, want an invalid mode", err)
	}
}
