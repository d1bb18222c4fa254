package policy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeChecker flags inputs that contain a substring; a hand-written fake
// of the Checker interface.
type fakeChecker struct {
	flags string // flag inputs containing this; "" flags nothing
	code  string // the reason code when flagged
	err   string // fail with this error
	calls *atomic.Int64
}

func (f fakeChecker) Check(ctx context.Context, in *CheckInput) (CheckResult, error) {
	if f.calls != nil {
		f.calls.Add(1)
	}
	if in.Phase != PhaseInput {
		return CheckResult{}, errors.New("fakeChecker: unexpected phase " + in.Phase)
	}
	if f.err != "" {
		return CheckResult{}, errors.New(f.err)
	}
	if f.flags != "" && strings.Contains(string(in.Input), f.flags) {
		return CheckResult{Flagged: true, ReasonCode: f.code, Message: "found " + f.flags}, nil
	}
	return CheckResult{}, nil
}

// mustParse parses a rule file or fails the test.
func mustParse(t testing.TB, name, src string) []*Rule {
	t.Helper()
	rules, err := ParseRules(name, []byte(src))
	if err != nil {
		t.Fatalf("parsing %s:\n%v", name, err)
	}
	return rules
}

// mustKernel builds a kernel or fails the test.
func mustKernel(t testing.TB, cfg KernelConfig) *Kernel {
	t.Helper()
	k, err := NewKernel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// jsonInput encodes v as a call input.
func jsonInput(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
