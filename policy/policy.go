// Package policy is the permission evaluation point every tool call passes
// before it runs. An Evaluator turns a Request into a Decision: allow,
// deny or ask. The coordinator records every decision as a
// permission.evaluated event. A denial is a Decision value, not an error.
//
// DefaultEvaluator, used when no policy is configured, allows every call
// and says so as its decision source. Kernel is the evaluator agentrt uses
// when a policy is configured: rules in tiers, a mode per agent or
// session, scopes, and checkers (see Checker and package policy/checker).
//
// # Rules
//
// Rules come from YAML rule files (ParseRules, LoadRuleFiles), whose
// errors carry a file:line:column, or are built in code and compiled with
// Rule.Compile. A rule matches a call when all its matchers do: tool,
// MCP server, agent, intent, principal and role globs, modes, the tool's
// annotations (read_only, destructive, idempotent, open_world; for an MCP
// tool, its server's hints, which a matching rule overrides), a CEL
// condition (when) over the input and the call, a command prefix or
// regex for shell-like tools, and a checker that must flag the input.
// Matching rules are ranked: higher tier first (admin > workspace > user
// > agent), then higher priority, then deny > ask > allow, so deny wins a
// tie. The first ranked rule decides. Command matchers see every simple
// command of a command line, wrappers (sudo, env, timeout, xargs,
// find -exec, sh -c, …) unwrapped to the commands they run; a deny or ask
// rule matches when any simple command matches, an allow rule only when
// all do (see CommandMatch). A command whose program cannot be determined
// statically ($cmd, … | sh, python -c) is opaque (see OpaqueReason).
//
// # Evaluation order
//
// Kernel.Evaluate decides a call in these steps; Kernel.Explain takes the
// same steps and reports each.
//
//  1. Mode: the request's (the session's), else the agent's, else the
//     kernel's default, else default. An unknown mode denies the call
//     (reason mode_unknown).
//  2. Roles: the request's, or the principal's from KernelConfig.Principals.
//  3. Scopes: the effective grant is the agent's grant ∩ the principal's
//     (an unrestricted side drops out). A required scope outside it denies
//     the call: source scope, reason scope_missing, MissingScopes set.
//     Nothing later overrides that denial.
//  4. Rules: the kernel's rules and the request's Extra rules (those with
//     a SessionID only in that session). The first ranked matching rule
//     decides (source rule); RuleRefs list it, then the other matches.
//     When no rule matches, the mode decides (source mode):
//     default and auto ask (destructive_requires_approval for destructive
//     tools, else mode_default_ask) but allow read-only tools
//     (mode_default_read_only); accept_edits allows what is not
//     destructive (mode_accept_edits) and asks for the rest; read_only
//     allows read-only tools (mode_read_only_allowed); bypass allows
//     (mode_bypass). Then a shell-like call whose command line has an
//     opaque command, unless a deny rule or a rule matching opaque lines
//     (CommandMatch.Opaque) decided it, gets KernelConfig.Opaque: ask
//     (the default) or deny, source host, reason opaque_command.
//  5. Read-only mode denies every call that is not read-only, whatever a
//     rule said (source mode, mode_read_only).
//  6. Input checkers, in order, unless the call is already denied: a
//     flagged deny checker denies (source checker, the checker's reason
//     code), and nothing overrides it; a flagged ask checker turns an
//     allow into ask, except in bypass mode; a flagged warn checker is
//     only recorded (Decision.Checker and the message).
//  7. Mode again: bypass turns a rule's ask into allow (mode_bypass); auto
//     hands a rule's or the mode's ask to KernelConfig.AutoChecker, which
//     denies what it flags and allows the rest (auto_checker_allowed);
//     auto without a checker asks, as default does. An opaque line's ask
//     goes to the auto checker too, but bypass does not allow it. No mode
//     turns a deny into anything else.
//  8. Escalation: a request with intent escalate (rerun a call the
//     sandbox refused under a wider profile) that something other than
//     a rule allowed asks instead (escalation_needs_approval): only a
//     rule, or a person, grants a wider sandbox, in every mode.
//
// A checker that returns an error fails the call closed: deny, reason
// checker_error. Every decision has a reason code and the mode it was
// decided in.
package policy

import (
	"context"
	"encoding/json"

	"github.com/agentrt/agentrt/runtype"
)

// Reason codes the kernel decides with that callers match.
const (
	// ReasonOpaqueCommand: the command line runs something the policy
	// cannot see (KernelConfig.Opaque decided; source host).
	ReasonOpaqueCommand = "opaque_command"
	// ReasonEscalationNeedsApproval: no rule allows a sandbox escalation
	// (intent IntentEscalate), so a person decides, whatever the mode.
	ReasonEscalationNeedsApproval = "escalation_needs_approval"
)

// IntentEscalate is the intent of the request that asks whether a call
// the sandbox refused may rerun under a wider profile. Only a rule that
// allows it (or a person answering the ask) grants one: no mode does.
const IntentEscalate = "escalate"

// Outcome is allow, deny or ask.
type Outcome string

// Outcomes.
const (
	Allow Outcome = "allow"
	Deny  Outcome = "deny"
	Ask   Outcome = "ask"
)

// Source says what produced a decision.
type Source string

// Decision sources, as the standard names them.
const (
	SourceDefault Source = "default" // no policy configured
	SourceRule    Source = "rule"
	SourceMode    Source = "mode"
	SourceHook    Source = "hook"
	SourceChecker Source = "checker"
	SourceHuman   Source = "human"
	SourceHost    Source = "host"
	// SourceScope: the call needs a scope the agent or principal lacks.
	SourceScope Source = "scope"
)

// Request is one tool call to decide.
type Request struct {
	// Owner is the turn's tenant and principal (who submitted the turn).
	runtype.Owner
	// Roles are the principal's roles (resolved by the caller from its
	// principal table; Kernel fills them from KernelConfig.Principals
	// when nil).
	Roles []string
	Agent string
	// ParentAgents are the agents above Agent in a delegation tree,
	// nearest first (empty for a task nobody delegated). A child
	// inherits from them: its mode is never less restrictive than
	// theirs, and their deny and ask rules apply to it (allow rules do
	// not: what a parent may do a child may not by inheritance).
	ParentAgents []string
	SessionID    string
	TurnID       string
	ToolName     string
	// Input is the validated call input.
	Input json.RawMessage
	// ArgumentsSHA256 is the hex SHA-256 of the canonical input.
	ArgumentsSHA256 string
	// ReadOnly, Destructive, Idempotent and OpenWorld are the tool's
	// annotations (for an MCP tool, its server's hints): rules match them
	// (Rule.Annotations), and the mode decides by ReadOnly and
	// Destructive when no rule does.
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
	// Intent is what the call does, from the tool's declaration: read,
	// write, execute, network, … (empty when the tool declares none).
	Intent string
	// MCPServer names the MCP server the tool comes from; empty for
	// builtin and command tools.
	MCPServer string
	// Command is the shell command line of a shell-like tool (the input
	// field its spec names), parsed by the kernel so that command matchers
	// see every simple command of it. Empty for other tools.
	Command string
	// CommandInput is what the command line's standard input holds when
	// the runtime decides every later write to it: a process tool's stdin
	// text, with write_process_stdin to a shell decided as a shell call. A
	// shell at the top of the line that reads its input then runs this
	// text, parsed like sh -c's script, and nothing the policy does not
	// see. Nil means the input is unknown: such a shell is opaque.
	CommandInput *string
	// RequiredScopes are the scopes the tool declares it needs.
	RequiredScopes []string
	// Mode is the session's mode when it was switched through the control
	// plane; empty uses the agent's mode, then the kernel's default.
	Mode Mode
	// Extra are rules that apply to this call beyond the kernel's own:
	// the ones people added by approving a call for the session or always
	// (source human). The caller looks them up.
	Extra []*Rule
}

// RuleRef names a rule that took part in a decision.
type RuleRef struct {
	ID   string `json:"id"`
	Tier Tier   `json:"tier"`
	// Source is where the rule came from: its file (file:line), or
	// "human" for a rule added by an approval.
	Source string `json:"source,omitempty"`
}

// Decision is the outcome of evaluating a Request.
type Decision struct {
	Outcome Outcome
	Source  Source
	// RuleIDs are the ids of RuleRefs, kept for callers that need only
	// those.
	RuleIDs  []string
	RuleRefs []RuleRef
	// ReasonCode is never empty: every decision says why in a stable,
	// machine-readable code.
	ReasonCode string
	Message    string
	// Mode is the mode the call was decided in; empty when no policy is
	// configured.
	Mode Mode
	// MissingScopes are the scopes the call needed and did not have
	// (source scope).
	MissingScopes []string
	// Checker names the checker that decided or flagged the call.
	Checker string
}

// Evaluator decides tool calls. Implementations are safe for concurrent use
// and must not block on people: asking is expressed by the Ask outcome.
type Evaluator interface {
	Evaluate(ctx context.Context, req *Request) (Decision, error)
}

// DefaultEvaluator allows every call. Its decisions say so: source
// "default", reason "no_policy_configured".
type DefaultEvaluator struct{}

var defaultDecision = Decision{
	Outcome:    Allow,
	Source:     SourceDefault,
	ReasonCode: "no_policy_configured",
	Message:    "no policy is configured; the default evaluator allows every call",
}

// Evaluate implements Evaluator.
func (DefaultEvaluator) Evaluate(context.Context, *Request) (Decision, error) {
	return defaultDecision, nil
}

// Tier is a rule's source tier. A rule of a higher tier always beats one
// of a lower tier, whatever their priorities.
type Tier int

// Tiers, lowest first.
const (
	TierAgent     Tier = iota + 1 // an agent's defaults
	TierUser                      // the user's own rules, and rules people add by approving
	TierWorkspace                 // the workspace (project) rules
	TierAdmin                     // the administrator's rules
)

// Mode is a permission mode: what happens to calls no rule decides.
type Mode string

// Modes.
const (
	// ModeDefault asks for anything a rule does not allow; destructive
	// tools ask.
	ModeDefault Mode = "default"
	// ModeReadOnly denies every tool that is not read-only (plan mode).
	ModeReadOnly Mode = "read_only"
	// ModeAcceptEdits allows what is not destructive without asking.
	ModeAcceptEdits Mode = "accept_edits"
	// ModeAuto lets a checker decide what would ask.
	ModeAuto Mode = "auto"
	// ModeBypass allows everything, except what deny rules deny.
	ModeBypass Mode = "bypass"
)

// Checker is a pluggable safety check: in-process Go, or an external
// command speaking JSON (package policy/checker has both, and the
// builtins). Implementations are safe for concurrent use.
type Checker interface {
	Check(ctx context.Context, in *CheckInput) (CheckResult, error)
}

// Check phases.
const (
	PhaseInput  = "input"  // before the call runs, on its input
	PhaseOutput = "output" // after it ran, on its output
)

// CheckInput is what a checker looks at.
type CheckInput struct {
	// Phase is PhaseInput or PhaseOutput.
	Phase     string          `json:"phase"`
	ToolName  string          `json:"toolName"`
	Agent     string          `json:"agent,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Principal string          `json:"principal,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	// Output is the tool's output (PhaseOutput only).
	Output string `json:"output,omitempty"`
}

// CheckResult is a checker's verdict.
type CheckResult struct {
	// Flagged: the checker found what it looks for.
	Flagged bool `json:"flagged"`
	// ReasonCode is a stable code for what it found (secret_in_input,
	// prompt_injection, …); required when Flagged.
	ReasonCode string `json:"reasonCode,omitempty"`
	Message    string `json:"message,omitempty"`
	// Findings locate what was found, for redaction.
	Findings []Finding `json:"findings,omitempty"`
}

// Finding is one thing a checker found: a byte range of the checked text
// (Input for PhaseInput, Output for PhaseOutput).
type Finding struct {
	Kind  string `json:"kind"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}
