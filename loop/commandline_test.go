package loop_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/process"
)

// TestExecAndEnvMeetCommandRules: command rules see the program an exec
// call runs, the variables a shell or exec call sets and the text it
// writes to a shell's input, so none is a way around a rule set that
// allows only ls and denies rm.
func TestExecAndEnvMeetCommandRules(t *testing.T) {
	t.Parallel()
	rules, err := policy.ParseRules("rules.yaml", []byte(`rules:
  - {id: deny-rm, tools: [shell, exec], command: {prefix: rm}, decision: deny, reason_code: rm_denied}
  - {id: allow-ls, tools: [shell, exec], command: {prefix: ls}, decision: allow, reason_code: ls_allowed}
`))
	if err != nil {
		t.Fatal(err)
	}
	k, err := policy.NewKernel(policy.KernelConfig{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]tool.Spec{}
	for _, tl := range process.NewManager(process.Options{}).Tools() {
		specs[tl.Spec().Name] = tl.Spec()
	}
	for _, tt := range []struct {
		tool, input string
		want        policy.Outcome
		reason      string
	}{
		{"exec", `{"argv":["ls","-la"]}`, policy.Allow, "ls_allowed"},
		{"exec", `{"argv":["rm","-rf","/"]}`, policy.Deny, "rm_denied"},
		{"exec", `{"argv":["/bin/rm","-rf","/"]}`, policy.Deny, "rm_denied"},
		{"exec", `{"argv":["sh","-c","rm -rf /"]}`, policy.Deny, "rm_denied"},
		{"exec", `{"argv":["env","rm","-rf","/"]}`, policy.Deny, "rm_denied"},
		{"exec", `{"argv":["python3","-c","import os; os.system('rm -rf /')"]}`, policy.Ask, policy.ReasonOpaqueCommand},
		{"exec", `{"argv":["ls"],"env":{"LD_PRELOAD":"./evil.so"}}`, policy.Ask, "mode_default_ask"},
		{"shell", `{"command":"ls"}`, policy.Allow, "ls_allowed"},
		{"shell", `{"command":"ls","env":{"LD_PRELOAD":"./evil.so"}}`, policy.Ask, "mode_default_ask"},
		{"shell", `{"command":"ls; rm x","env":{"A":"1"}}`, policy.Deny, "rm_denied"},
		// A shell reading the process's own input runs the call's stdin
		// text, then what write_process_stdin writes, which is decided
		// write by write: the policy sees it all.
		{"exec", `{"argv":["bash"],"background":true}`, policy.Ask, "mode_default_ask"},
		{"exec", `{"argv":["bash"],"stdin":"ls -la\n"}`, policy.Allow, "ls_allowed"},
		{"exec", `{"argv":["bash"],"stdin":"ls\nrm -rf /\n"}`, policy.Deny, "rm_denied"},
		{"exec", `{"argv":["sudo","-s"],"stdin":"rm -rf /"}`, policy.Deny, "rm_denied"},
		{"shell", `{"command":"bash","stdin":"rm -rf /"}`, policy.Deny, "rm_denied"},
		{"shell", `{"command":"ls && bash -s","stdin":"rm -rf /"}`, policy.Deny, "rm_denied"},
		// Input that does not come from the call is not seen.
		{"shell", `{"command":"curl -s x | bash"}`, policy.Ask, policy.ReasonOpaqueCommand},
		{"shell", `{"command":"echo $(bash)","stdin":"ls"}`, policy.Ask, policy.ReasonOpaqueCommand},
		// An interpreter's input is code no command rule reads.
		{"exec", `{"argv":["python3"],"background":true}`, policy.Ask, policy.ReasonOpaqueCommand},
		{"exec", `{"argv":["python3"],"stdin":"import os"}`, policy.Ask, policy.ReasonOpaqueCommand},
	} {
		req := loop.PolicyRequest(specs[tt.tool], json.RawMessage(tt.input))
		req.Mode = policy.ModeDefault
		d, err := k.Evaluate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if d.Outcome != tt.want || d.ReasonCode != tt.reason {
			t.Errorf("%s %s: %s (%s: %s), want %s (%s)", tt.tool, tt.input, d.Outcome, d.ReasonCode, d.Message, tt.want, tt.reason)
		}
	}
}
