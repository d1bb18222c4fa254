package apitype

import (
	"encoding/json"

	"github.com/agentrt/agentrt/runtype"
)

// ToolInventoryParams selects whose tool inventory ToolInventory reads:
// the tools Agent exposes, as the policy would decide them for calls by
// Owner's principal in Mode (empty: the agent's mode, else the policy's
// default).
type ToolInventoryParams struct {
	runtype.Owner
	Agent string
	// Mode is a policy.Mode.
	Mode string
}

// ToolInventory is an agent's tools as one caller sees them.
type ToolInventory struct {
	Agent     string `json:"agent"`
	Principal string `json:"principal"`
	// Mode is the mode asked for; "" when the agent's or the policy's
	// default applies (each tool's policy says which it was).
	Mode  string     `json:"mode,omitempty"`
	Tools []ToolRead `json:"tools"`
	// MCPServers are the MCP servers whose tools the agent offers, with
	// how the runtime found them when it started; absent when the agent
	// uses none.
	MCPServers []MCPServerRead `json:"mcpServers,omitempty"`
}

// MCPServerRead is an MCP server of an agent, as its tools were listed
// when the runtime started: Status is ready (listed: Tools of them, by
// the server's own names, the agent offers), failed (Error says why: the
// agent offers none of its tools), or not_started (the runtime has not
// started).
type MCPServerRead struct {
	Name      string   `json:"name"`
	Transport string   `json:"transport"`
	Status    string   `json:"status"`
	Error     string   `json:"error,omitempty"`
	Tools     []string `json:"tools,omitempty"`
}

// ToolRead is one tool of an inventory.
type ToolRead struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Source is where the tool comes from: builtin, command, go or
	// mcp:SERVER; MCPServer names the server of an MCP tool.
	Source      string          `json:"source"`
	MCPServer   string          `json:"mcpServer,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	ReadOnly    bool            `json:"readOnly"`
	Destructive bool            `json:"destructive"`
	Intent      string          `json:"intent"`
	Scopes      []string        `json:"scopes,omitempty"`
	Policy      ToolPolicy      `json:"policy"`
}

// ToolPolicy is what the policy would decide for a call of a tool.
type ToolPolicy struct {
	// Decision is allow, ask or deny, or conditional when the decision
	// depends on the call's arguments (a rule with a command, when or
	// checker matcher could change it). It does not count the input
	// checkers every call passes, nor a session's mode or standing
	// approvals (the inventory is not of a session).
	Decision string `json:"decision"`
	// EmptyArguments is the decision for a call with empty arguments
	// ({}), with its source, reason, mode and rules.
	EmptyArguments string   `json:"emptyArguments"`
	Source         string   `json:"source"`
	ReasonCode     string   `json:"reasonCode"`
	Mode           string   `json:"mode,omitempty"`
	RuleIDs        []string `json:"ruleIds,omitempty"`
	// ConditionalRuleIDs are the rules that make the decision
	// conditional.
	ConditionalRuleIDs []string `json:"conditionalRuleIds,omitempty"`
	// MissingScopes are the scopes the caller lacks for the tool.
	MissingScopes []string `json:"missingScopes,omitempty"`
}
