package policy

import "time"

// Rule is one policy rule. Matchers left empty match every call; a rule
// applies to a call when all its matchers match.
type Rule struct {
	// ID is unique across all loaded rules.
	ID          string
	Description string
	Tier        Tier
	// Source is where the rule came from: "file:line" for a rule file,
	// "human" for a rule added by an approval, "config" for the inline
	// policy of agentrt.yaml.
	Source   string
	Priority int

	// Tools are tool name globs (path.Match syntax).
	Tools      []string
	MCPServers []string
	Agents     []string
	Intents    []string
	Principals []string
	// Roles match when the principal has any of them.
	Roles []string
	Modes []Mode
	// When is a CEL expression over the tool input (bound as input) and
	// the call (tool, agent, principal, roles, mode); it must evaluate to
	// a bool.
	When string
	// Command matches shell-like tools: a prefix (word-wise) or regex that
	// must match at least one simple command of the call's command line —
	// every simple command of a compound command is checked.
	Command *CommandMatch
	// Checker names a checker: the rule matches only when it flags the
	// call's input.
	Checker string
	// SessionID limits a rule to one session (a rule added by
	// approve_for_session).
	SessionID string

	Decision   Outcome
	ReasonCode string
	Message    string

	// AddedBy and AddedAt say who added a human rule, and when.
	AddedBy string
	AddedAt time.Time
}

// CommandMatch matches the simple commands of a shell command line.
type CommandMatch struct {
	// Prefixes match a simple command whose words start with the
	// prefix's words ("rm -rf" matches "rm -rf /tmp", not "rm -r").
	Prefixes []string
	// Regex matches a simple command's words joined by single spaces.
	Regex string
}
