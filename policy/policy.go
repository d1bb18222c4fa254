// Package policy is the permission evaluation point every tool call passes
// before it runs. An Evaluator turns a Request into a Decision: allow,
// deny or ask. The coordinator records every decision as a
// permission.evaluated event. A denial is a Decision value, not an error.
//
// Today agentrt ships DefaultEvaluator, which allows every call and says
// so as its decision source; the rule engine, modes and scopes come later
// behind the same interface.
package policy

import (
	"context"
	"encoding/json"

	"github.com/agentrt/agentrt/runtype"
)

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
)

// Request is one tool call to decide.
type Request struct {
	runtype.Owner
	Agent     string
	SessionID string
	TurnID    string
	ToolName  string
	// Input is the validated call input.
	Input json.RawMessage
	// ArgumentsSHA256 is the hex SHA-256 of the canonical input.
	ArgumentsSHA256 string
	ReadOnly        bool
	Destructive     bool
}

// Decision is the outcome of evaluating a Request.
type Decision struct {
	Outcome    Outcome
	Source     Source
	RuleIDs    []string
	ReasonCode string
	Message    string
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
