package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Explanation is a decision with how the kernel reached it: every rule it
// considered and each step it took. agentrt policy explain prints one.
type Explanation struct {
	// Decision is what Evaluate decides for the same request.
	Decision Decision
	// Rules are every rule considered, the kernel's and the request's
	// extra rules, highest ranked first.
	Rules []RuleTrace
	// Steps are the evaluation steps in order: mode, roles, scope, rules,
	// checkers, mode again.
	Steps []Step
}

// RuleTrace is one rule as the kernel considered it for a call.
type RuleTrace struct {
	Rule     RuleRef
	Decision Outcome
	Priority int
	Matched  bool
	// Deciding marks the matched rule that ranked first.
	Deciding bool
	// Why says why the rule did not match: "tool write_file does not
	// match [read_*]", "when: input.priority == 'urgent' is false", "cel
	// error: no such key: priority".
	Why string
	// InputDependent marks a rule whose name and mode matchers match the
	// call and whose match depends on the call's input too (it has a
	// command, when or checker matcher): another input may change whether
	// it matches.
	InputDependent bool
}

// Step is one evaluation step: its name (mode, roles, scope, rules,
// checkers) and what it found.
type Step struct {
	Name   string
	Detail string
}

// step records a step; the receiver may be nil, but callers check first
// so that Evaluate does not pay for formatting.
func (e *Explanation) step(name, format string, args ...any) {
	if e == nil {
		return
	}
	e.Steps = append(e.Steps, Step{Name: name, Detail: fmt.Sprintf(format, args...)})
}

// sortRules orders the rule traces by rank, keeping the kernel's rules
// before extra rules of equal rank.
func (e *Explanation) sortRules() {
	slices.SortStableFunc(e.Rules, func(a, b RuleTrace) int {
		return compareRank(&Rule{Tier: a.Rule.Tier, Priority: a.Priority, Decision: a.Decision},
			&Rule{Tier: b.Rule.Tier, Priority: b.Priority, Decision: b.Decision})
	})
}

// Explain evaluates req as Evaluate does and says how: it tries every
// rule, even those a missing scope makes moot, and records why each did
// or did not match. It consults the same checkers Evaluate would, and
// those of every rule whose other matchers match.
func (k *Kernel) Explain(ctx context.Context, req *Request) (*Explanation, error) {
	e := &Explanation{}
	d, err := k.decide(ctx, req, e)
	if err != nil {
		return nil, err
	}
	e.Decision = d
	if d.Source != SourceScope && len(d.RuleIDs) > 0 {
		for i := range e.Rules {
			if e.Rules[i].Matched {
				e.Rules[i].Deciding = true
				break
			}
		}
	}
	return e, nil
}

// String formats the explanation for people.
func (e *Explanation) String() string {
	var b strings.Builder
	d := e.Decision
	fmt.Fprintf(&b, "decision: %s (source %s, reason %s, mode %s)\n", d.Outcome, d.Source, d.ReasonCode, d.Mode)
	if d.Message != "" {
		fmt.Fprintf(&b, "message: %s\n", d.Message)
	}
	if len(d.RuleIDs) > 0 {
		fmt.Fprintf(&b, "rules: %s\n", strings.Join(d.RuleIDs, ", "))
	}
	if d.Checker != "" {
		fmt.Fprintf(&b, "checker: %s\n", d.Checker)
	}
	if len(d.MissingScopes) > 0 {
		fmt.Fprintf(&b, "missing scopes: %s\n", strings.Join(d.MissingScopes, ", "))
	}
	b.WriteString("steps:\n")
	for _, s := range e.Steps {
		fmt.Fprintf(&b, "  %-10s%s\n", s.Name+":", s.Detail)
	}
	b.WriteString("rules, highest ranked first:\n")
	if len(e.Rules) == 0 {
		b.WriteString("  (none)\n")
	}
	for _, r := range e.Rules {
		verdict := "no: " + r.Why
		switch {
		case r.Deciding:
			verdict = "matches, decides"
		case r.Matched:
			verdict = "matches"
		}
		if r.Matched && r.Why != "" {
			verdict += " (" + r.Why + ")"
		}
		src := ""
		if r.Rule.Source != "" {
			src = " " + r.Rule.Source
		}
		fmt.Fprintf(&b, "  %s (%s, priority %d, %s%s): %s\n", r.Rule.ID, r.Rule.Tier, r.Priority, r.Decision, src, verdict)
	}
	return b.String()
}
