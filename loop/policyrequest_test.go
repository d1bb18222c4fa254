package loop_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/tool"
)

// TestPolicyRequestAnnotations: the policy request of a call carries
// every annotation of the tool, and its MCP server, for rules to match.
func TestPolicyRequestAnnotations(t *testing.T) {
	t.Parallel()
	spec := tool.Spec{
		Name: "search_web", Source: "mcp:github",
		Annotations: tool.Annotations{ReadOnly: true, Idempotent: true, OpenWorld: true},
	}
	req := loop.PolicyRequest(spec, json.RawMessage(`{}`))
	want := &policy.Request{
		ToolName: "search_web", Input: json.RawMessage(`{}`), MCPServer: "github", Intent: "read",
		ReadOnly: true, Idempotent: true, OpenWorld: true,
	}
	if diff := cmp.Diff(want, req); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	spec.Annotations = tool.Annotations{Destructive: true}
	if req := loop.PolicyRequest(spec, nil); !req.Destructive || req.ReadOnly || req.Idempotent || req.OpenWorld {
		t.Errorf("request of a destructive tool: %+v", req)
	}
}
