package checker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/policy/checker"
)

func TestBuiltin(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff([]string{"prompt_injection", "secrets"}, checker.Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	names := checker.Names()
	names[0] = "changed"
	if checker.Names()[0] != "prompt_injection" {
		t.Error("Names returned a slice shared between calls")
	}
	for _, name := range checker.Names() {
		if c, ok := checker.Builtin(name); !ok || c == nil {
			t.Errorf("Builtin(%q) = %v, %v; want a checker", name, c, ok)
		}
	}
	if c, ok := checker.Builtin("secrets"); !ok || c != (checker.Secrets{}) {
		t.Errorf("Builtin(secrets) = %#v, %v", c, ok)
	}
	if c, ok := checker.Builtin("prompt_injection"); !ok || c != (checker.PromptInjection{}) {
		t.Errorf("Builtin(prompt_injection) = %#v, %v", c, ok)
	}
	for _, name := range []string{"", "Secrets", "command", "secret"} {
		if c, ok := checker.Builtin(name); ok || c != nil {
			t.Errorf("Builtin(%q) = %v, %v; want none", name, c, ok)
		}
	}
}

// TestBuiltinBadInput: the builtins reject an unknown phase, a nil input
// and a cancelled context with an error, not a verdict.
func TestBuiltinBadInput(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	for _, name := range checker.Names() {
		c, _ := checker.Builtin(name)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := c.Check(t.Context(), &policy.CheckInput{Phase: "during", Output: "x"})
			if !errors.Is(err, checker.ErrUnknownPhase) {
				t.Errorf("Check(phase during) error = %v, want ErrUnknownPhase", err)
			}
			if _, err := c.Check(t.Context(), nil); err == nil {
				t.Error("Check(nil) returned no error")
			}
			_, err = c.Check(cancelled, &policy.CheckInput{Phase: policy.PhaseOutput, Output: "x"})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Check(cancelled) error = %v, want context.Canceled", err)
			}
		})
	}
}
