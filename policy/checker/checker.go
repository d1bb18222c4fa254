package checker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/policy"
)

// Builtin checker names.
const (
	NameSecrets         = "secrets"
	NamePromptInjection = "prompt_injection"
)

// Reason codes of the builtin checkers.
const (
	ReasonSecretInInput   = "secret_in_input"
	ReasonSecretInOutput  = "secret_in_output"
	ReasonPromptInjection = "prompt_injection"
)

// ErrUnknownPhase is returned for a CheckInput whose Phase is neither
// policy.PhaseInput nor policy.PhaseOutput.
var ErrUnknownPhase = errors.New("unknown check phase")

// Compile-time guards.
var (
	_ policy.Checker = Secrets{}
	_ policy.Checker = PromptInjection{}
	_ policy.Checker = (*Command)(nil)
)

// Builtin returns the builtin checker called name: "secrets" or
// "prompt_injection". The checkers hold no state, so every call may
// return a new value.
func Builtin(name string) (policy.Checker, bool) {
	switch name {
	case NameSecrets:
		return Secrets{}, true
	case NamePromptInjection:
		return PromptInjection{}, true
	}
	return nil, false
}

// Names returns the names of the builtin checkers, sorted. The slice is
// the caller's.
func Names() []string {
	return []string{NamePromptInjection, NameSecrets}
}

// checkedText returns the text a checker looks at in the phase of in: the
// raw input JSON before the call, the output after it.
func checkedText(in *policy.CheckInput) (string, error) {
	if in == nil {
		return "", errors.New("check input is nil")
	}
	switch in.Phase {
	case policy.PhaseInput:
		return string(in.Input), nil
	case policy.PhaseOutput:
		return in.Output, nil
	}
	return "", fmt.Errorf("%w %q: want %q or %q", ErrUnknownPhase, in.Phase, policy.PhaseInput, policy.PhaseOutput)
}

// check runs find on the text of in's phase and builds the result.
// reason chooses the reason code from the phase; what names what was
// found, for the message.
func check(ctx context.Context, in *policy.CheckInput, find func(string) []policy.Finding,
	reason func(phase string) string, what string) (policy.CheckResult, error) {
	if err := ctx.Err(); err != nil {
		return policy.CheckResult{}, context.Cause(ctx)
	}
	text, err := checkedText(in)
	if err != nil {
		return policy.CheckResult{}, err
	}
	found := find(text)
	if len(found) == 0 {
		return policy.CheckResult{}, nil
	}
	return policy.CheckResult{
		Flagged:    true,
		ReasonCode: reason(in.Phase),
		Message:    fmt.Sprintf("the tool %s holds %s (%s)", in.Phase, what, strings.Join(kinds(found), ", ")),
		Findings:   found,
	}, nil
}

// kinds returns the distinct kinds of found in order of first appearance.
func kinds(found []policy.Finding) []string {
	var ks []string
	for _, f := range found {
		if !slices.Contains(ks, f.Kind) {
			ks = append(ks, f.Kind)
		}
	}
	return ks
}

// sortFindings orders findings by start, longer first at equal starts.
func sortFindings(fs []policy.Finding) {
	slices.SortFunc(fs, func(a, b policy.Finding) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(b.End, a.End))
	})
}

// mergeFindings sorts fs and unites overlapping findings in place; a
// union keeps the kind of the finding that starts first (the longer one
// at equal starts). Adjacent findings stay apart.
func mergeFindings(fs []policy.Finding) []policy.Finding {
	if len(fs) < 2 {
		return fs
	}
	sortFindings(fs)
	out := fs[:1]
	for _, f := range fs[1:] {
		last := &out[len(out)-1]
		if f.Start < last.End {
			last.End = max(last.End, f.End)
			continue
		}
		out = append(out, f)
	}
	return out
}
