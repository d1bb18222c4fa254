package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewKernelInvalid(t *testing.T) {
	t.Parallel()
	ok := &Rule{ID: "r", Tier: TierUser, Decision: Allow, ReasonCode: "ok"}
	tests := []struct {
		name string
		cfg  KernelConfig
		want []string
	}{
		{"unknown default mode", KernelConfig{DefaultMode: "plan"}, []string{`unknown default mode "plan"`}},
		{"unknown agent mode", KernelConfig{AgentModes: map[string]Mode{"a": "yolo"}}, []string{`agent "a" has unknown mode "yolo"`}},
		{"duplicate ids", KernelConfig{Rules: []*Rule{ok, {ID: "r", Tier: TierAdmin, Decision: Deny, ReasonCode: "x", Source: "b.yaml:3"}}},
			[]string{`duplicate rule id "r" (? and b.yaml:3)`}},
		{"unknown rule checker", KernelConfig{Rules: []*Rule{{ID: "c", Tier: TierUser, Decision: Deny, ReasonCode: "x", Checker: "secrets"}}},
			[]string{`rule "c" names unknown checker "secrets"`}},
		{"unknown input checker", KernelConfig{InputCheckers: []InputCheck{{Name: "pii", Action: ActionWarn}}},
			[]string{`input checker 0 names unknown checker "pii"`}},
		{"bad action", KernelConfig{Checkers: map[string]Checker{"pii": fakeChecker{}}, InputCheckers: []InputCheck{{Name: "pii", Action: "block"}}},
			[]string{`input checker "pii" has unknown action "block"`}},
		{"unknown auto checker", KernelConfig{AutoChecker: "judge"}, []string{`auto checker "judge" is not a configured checker`}},
		{"opaque allow", KernelConfig{Opaque: Allow}, []string{`opaque must be ask or deny, got "allow"`}},
		{"nil checker", KernelConfig{Checkers: map[string]Checker{"x": nil}}, []string{`checker "x" is nil`}},
		{"nil rule", KernelConfig{Rules: []*Rule{nil}}, []string{"nil rule"}},
		{"invalid rule", KernelConfig{Rules: []*Rule{{ID: "bad", Tier: TierUser, Decision: "maybe", ReasonCode: "x"}}},
			[]string{`rule "bad": decision must be allow, deny or ask, got "maybe"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewKernel(tt.cfg)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestNewKernelCompilesCopies checks that NewKernel does not modify rules
// built in code, which callers may share.
func TestNewKernelCompilesCopies(t *testing.T) {
	t.Parallel()
	r := &Rule{ID: "r", Tier: TierUser, Tools: []string{"x*"}, Decision: Deny, ReasonCode: "no_x"}
	k := mustKernel(t, KernelConfig{Rules: []*Rule{r}})
	if r.compiled != nil {
		t.Error("NewKernel compiled the caller's rule in place")
	}
	d, err := k.Evaluate(context.Background(), &Request{ToolName: "xy"})
	if err != nil || d.Outcome != Deny {
		t.Errorf("Evaluate = %+v, %v", d, err)
	}
	if diff := cmp.Diff([]*Rule{r}, k.Rules(), cmp.Comparer(func(a, b *Rule) bool { return a == b })); diff != "" {
		t.Errorf("Rules (-want +got):\n%s", diff)
	}
}

// TestCheckerRunsOncePerCall: a checker that gates a rule, runs on every
// input and decides auto mode is consulted once per call.
func TestCheckerRunsOncePerCall(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	k := mustKernel(t, KernelConfig{
		Rules: mustParse(t, "r.yaml", `rules:
  - id: gated
    checker: judge
    decision: deny
    reason_code: judged
`),
		DefaultMode:   ModeAuto,
		Checkers:      map[string]Checker{"judge": fakeChecker{flags: "bad", code: "bad_input", calls: &calls}},
		InputCheckers: []InputCheck{{Name: "judge", Action: ActionAsk}},
		AutoChecker:   "judge",
	})
	d, err := k.Evaluate(context.Background(), &Request{ToolName: "write", Input: json.RawMessage(`{"x":"good"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != Allow || d.ReasonCode != "auto_checker_allowed" {
		t.Errorf("decision = %+v", d)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the checker ran %d times, want 1", n)
	}
}

type panicChecker struct{}

func (panicChecker) Check(context.Context, *CheckInput) (CheckResult, error) { panic("boom") }

func TestCheckerPanicFailsClosed(t *testing.T) {
	t.Parallel()
	k := mustKernel(t, KernelConfig{
		DefaultMode:   ModeBypass,
		Checkers:      map[string]Checker{"p": panicChecker{}},
		InputCheckers: []InputCheck{{Name: "p", Action: ActionWarn}},
	})
	d, err := k.Evaluate(context.Background(), &Request{ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != Deny || d.ReasonCode != "checker_error" || d.Checker != "p" || !strings.Contains(d.Message, "boom") {
		t.Errorf("decision = %+v", d)
	}
}

func TestExtraRules(t *testing.T) {
	t.Parallel()
	k := mustKernel(t, KernelConfig{Checkers: map[string]Checker{"c": fakeChecker{}}})
	ctx := context.Background()

	// A rule built in code need not be compiled first.
	human := &Rule{ID: "human-1", Tier: TierUser, Source: "human", Tools: []string{"write_*"}, SessionID: "ses_1",
		Decision: Allow, ReasonCode: "approved_for_session"}
	d, err := k.Evaluate(ctx, &Request{ToolName: "write_file", SessionID: "ses_1", Extra: []*Rule{nil, human}})
	if err != nil {
		t.Fatal(err)
	}
	want := Decision{Outcome: Allow, Source: SourceRule, RuleIDs: []string{"human-1"},
		RuleRefs:   []RuleRef{{ID: "human-1", Tier: TierUser, Source: "human"}},
		ReasonCode: "approved_for_session", Message: "rule human-1 allows the call", Mode: ModeDefault}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
	if human.compiled != nil {
		t.Error("Evaluate compiled the extra rule in place")
	}

	// An extra rule that does not compile, or names an unknown checker,
	// is an error: the caller denies the call.
	for _, bad := range []*Rule{
		{ID: "bad", Tier: TierUser, Tools: []string{"["}, Decision: Allow, ReasonCode: "x"},
		{ID: "bad", Tier: TierUser, Checker: "nope", Decision: Allow, ReasonCode: "x"},
	} {
		if _, err := k.Evaluate(ctx, &Request{ToolName: "x", Extra: []*Rule{bad}}); err == nil {
			t.Errorf("Evaluate with extra rule %+v: no error", bad)
		}
		if _, err := k.Explain(ctx, &Request{ToolName: "x", Extra: []*Rule{bad}}); err == nil {
			t.Errorf("Explain with extra rule %+v: no error", bad)
		}
	}
}

// TestCELInputs checks how when expressions see unusual inputs: any
// error is no match, and Explain says why.
func TestCELInputs(t *testing.T) {
	t.Parallel()
	k := mustKernel(t, KernelConfig{
		DefaultMode: ModeBypass,
		Rules: mustParse(t, "r.yaml", `rules:
  - id: flagged
    when: has(input.flag) && input.flag == true
    decision: deny
    reason_code: flagged
  - id: many
    when: input.items.all(i, i.all(j, j < 1000))
    decision: deny
    reason_code: all_small
`),
	})
	big := make([][]int, 300)
	for i := range big {
		big[i] = make([]int, 300)
	}
	tests := []struct {
		name  string
		input string
		rule  string // the rule that decides, or ""
		why   map[string]string
	}{
		// A deny rule whose condition cannot be evaluated applies (fail
		// closed); guarded conditions evaluate.
		{"flag", `{"flag":true}`, "flagged", map[string]string{"many": "cel error: no such key: items; a deny rule whose condition cannot be evaluated applies"}},
		{"not an object", `[1,2]`, "flagged", map[string]string{"flagged": "cel error: input is not a JSON object; a deny rule whose condition cannot be evaluated applies"}},
		{"invalid JSON", `{"flag":tru}`, "flagged", map[string]string{"flagged": "cel error: decoding input at offset 8: invalid literal; a deny rule whose condition cannot be evaluated applies"}},
		{"trailing data", `{"flag":true} {}`, "flagged", map[string]string{"flagged": "cel error: decoding input at offset 14: data after the JSON object; a deny rule whose condition cannot be evaluated applies"}},
		{"null", `null`, "many", map[string]string{"many": "cel error: no such key: items; a deny rule whose condition cannot be evaluated applies"}},
		{"small items", `{"items":[[1,2],[3]]}`, "many", nil},
		{"big items", `{"items":[[1,2000]]}`, "", map[string]string{"many": "when: input.items.all(i, i.all(j, j < 1000)) is false"}},
		{"cost limit", string(jsonInput(t, map[string]any{"items": big})), "many", map[string]string{"many": "cel error: operation cancelled: actual cost limit exceeded; a deny rule whose condition cannot be evaluated applies"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &Request{ToolName: "t", Input: json.RawMessage(tt.input)}
			ex, err := k.Explain(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if len(ex.Decision.RuleIDs) > 0 {
				got = ex.Decision.RuleIDs[0]
			}
			if got != tt.rule {
				t.Errorf("deciding rule = %q, want %q\n%s", got, tt.rule, ex)
			}
			for _, r := range ex.Rules {
				if w, ok := tt.why[r.Rule.ID]; ok && r.Why != w {
					t.Errorf("rule %s: why = %q, want %q", r.Rule.ID, r.Why, w)
				}
			}
		})
	}
}

// TestEvaluateConcurrent runs many evaluations at once; with -race it
// checks that the kernel and its pooled call state are safe to share.
func TestEvaluateConcurrent(t *testing.T) {
	t.Parallel()
	k := mustKernel(t, KernelConfig{
		Rules: mustParse(t, "r.yaml", `rules:
  - id: urgent
    tools: [ticket]
    when: input.priority == "urgent"
    decision: ask
    reason_code: urgent
  - id: ls
    tools: [shell]
    command: {prefix: ls}
    decision: allow
    reason_code: ls
  - id: rm
    tools: [shell]
    command: {prefix: rm}
    decision: deny
    reason_code: rm
`),
		Checkers:      map[string]Checker{"s": fakeChecker{flags: "secret", code: "secret"}},
		InputCheckers: []InputCheck{{Name: "s", Action: ActionDeny}},
	})
	reqs := []*Request{
		{ToolName: "ticket", Input: json.RawMessage(`{"priority":"urgent"}`)},
		{ToolName: "ticket", Input: json.RawMessage(`{"priority":"low"}`)},
		{ToolName: "shell", Command: "ls -l"},
		{ToolName: "shell", Command: "ls; rm x"},
		{ToolName: "shell", Command: "ls", Input: json.RawMessage(`{"x":"secret"}`)},
	}
	want := make([]Decision, len(reqs))
	for i, r := range reqs {
		var err error
		if want[i], err = k.Evaluate(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(reqs))
	for g := range 8 {
		wg.Go(func() {
			for n := range 50 {
				i := (g + n) % len(reqs)
				d, err := k.Evaluate(context.Background(), reqs[i])
				if err == nil && !cmp.Equal(d, want[i]) {
					err = fmt.Errorf("request %d: got %+v, want %+v", i, d, want[i])
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestDecodeInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want map[string]any
		err  string
	}{
		{``, map[string]any{}, ""},
		{` null `, map[string]any{}, ""},
		{`{}`, map[string]any{}, ""},
		{`{"a":1,"b":-2.5,"c":"x","d":[true,false,null],"e":{"f":1e3},"g":"\u00e9\n","h":9223372036854775808}`, map[string]any{
			"a": int64(1), "b": -2.5, "c": "x", "d": []any{true, false, nil}, "e": map[string]any{"f": 1000.0},
			"g": "é\n", "h": 9223372036854775808.0,
		}, ""},
		{`{"a":1,"a":2}`, map[string]any{"a": int64(2)}, ""},
		{`{"s":"` + "\xff" + `"}`, map[string]any{"s": "\ufffd"}, ""},
		{`[]`, nil, "input is not a JSON object"},
		{`"x"`, nil, "input is not a JSON object"},
		{`nul`, nil, "invalid literal"},
		{`{"a":01}`, nil, "expected ',' or '}'"},
		{`{"a":1.}`, nil, "invalid number"},
		{`{"a":"` + "\x01" + `"}`, nil, "control character in string"},
		{`{"a":"\x"}`, nil, "invalid string"},
		{`{"a" 1}`, nil, "expected ':'"},
		{`{"a":1`, nil, "unexpected end of input"},
		{`{a:1}`, nil, "expected a string key"},
		{strings.Repeat(`{"a":`, maxInputDepth+1), nil, "nested more than 1000 levels deep"},
	}
	for _, tt := range tests {
		got, err := decodeInput(json.RawMessage(tt.in))
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("decodeInput(%.40q) error = %v, want %q", tt.in, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("decodeInput(%.40q): %v", tt.in, err)
		case tt.err == "":
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decodeInput(%.40q) (-want +got):\n%s", tt.in, diff)
			}
		}
	}
}

func TestErrorsAs(t *testing.T) {
	t.Parallel()
	_, err := ParseRules("x.yaml", []byte("rules: [1]"))
	var e *Error
	if !errors.As(err, &e) || e.Line != 1 || e.Column != 9 {
		t.Fatalf("errors.As = %+v (%v)", e, err)
	}
}

// TestEscalationNeedsARule: a request to rerun a call under a wider
// sandbox (intent escalate) is allowed only by a rule that allows it: no
// mode grants one by itself, not bypass, not auto's checker.
func TestEscalationNeedsARule(t *testing.T) {
	t.Parallel()
	checkers := map[string]Checker{"judge": fakeChecker{}}
	none := mustKernel(t, KernelConfig{Checkers: checkers, AutoChecker: "judge", Rules: mustParse(t, "r.yaml", `rules:
  - {id: ask-shell, tools: [shell], decision: ask, reason_code: review}
`)})
	allowed := mustKernel(t, KernelConfig{Checkers: checkers, AutoChecker: "judge", Rules: mustParse(t, "r.yaml", `rules:
  - {id: widen, intents: [escalate], decision: allow, reason_code: widen_ok}
`)})
	for _, mode := range []Mode{ModeDefault, ModeAcceptEdits, ModeAuto, ModeBypass} {
		req := &Request{ToolName: "shell", Intent: IntentEscalate, Destructive: true, Mode: mode, Input: json.RawMessage(`{}`)}
		d, err := none.Evaluate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if d.Outcome != Ask {
			t.Errorf("%s mode without an escalate rule: %s (%s, %s), want ask", mode, d.Outcome, d.Source, d.ReasonCode)
		}
		if mode == ModeBypass || mode == ModeAuto {
			if d.ReasonCode != ReasonEscalationNeedsApproval {
				t.Errorf("%s mode: reason %s, want %s", mode, d.ReasonCode, ReasonEscalationNeedsApproval)
			}
			ex, err := none.Explain(context.Background(), req)
			if err != nil || !slices.ContainsFunc(ex.Steps, func(s Step) bool { return s.Name == "escalate" }) {
				t.Errorf("%s mode: explanation %+v, %v; want an escalate step", mode, ex, err)
			}
		}
		d, err = allowed.Evaluate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if d.Outcome != Allow || d.ReasonCode != "widen_ok" {
			t.Errorf("%s mode with an escalate rule: %s (%s), want allow (widen_ok)", mode, d.Outcome, d.ReasonCode)
		}
	}
}

// TestWhenRegexCompiledOnce checks that a when expression's constant
// regular expression is compiled with the rule, not on every evaluation
// (compiling one allocates dozens of objects), and that one that does not
// compile still fails closed when evaluated. Not parallel:
// testing.AllocsPerRun counts the whole process's allocations.
func TestWhenRegexCompiledOnce(t *testing.T) {
	k := mustKernel(t, KernelConfig{Rules: mustParse(t, "re.yaml", `rules:
  - id: no-passwords
    tools: [echo]
    when: 'input.text.matches("(?i)password\\s*=\\s*[a-z0-9]{8,}")'
    decision: deny
    reason_code: password
  - id: bad-regex
    tools: [shout]
    when: 'input.text.matches("(unclosed")'
    decision: deny
    reason_code: bad_regex
  - id: allow
    tools: [echo, shout]
    decision: allow
    reason_code: ok
`)})
	ctx := context.Background()
	req := &Request{ToolName: "echo", Input: []byte(`{"text":"nothing to see here"}`)}
	allocs := testing.AllocsPerRun(100, func() {
		if d, err := k.Evaluate(ctx, req); err != nil || d.Outcome != Allow {
			t.Fatalf("Evaluate = %+v, %v; want allow", d, err)
		}
	})
	if allocs > 25 {
		t.Errorf("Evaluate allocates %.0f objects, want ≤ 25: is the regex compiled per call?", allocs)
	}
	d, err := k.Evaluate(ctx, &Request{ToolName: "shout", Input: []byte(`{"text":"hi"}`)})
	if err != nil || d.Outcome != Deny || d.RuleIDs[0] != "bad-regex" {
		t.Errorf("a regex that does not compile: Evaluate = %+v, %v; want denied by bad-regex", d, err)
	}
}

// TestParentAgents: a child (a request with ParentAgents) is bound by its
// ancestors' deny and ask rules but not their allow rules, and decides in
// the strictest of its own mode and theirs.
func TestParentAgents(t *testing.T) {
	t.Parallel()
	k, err := NewKernel(KernelConfig{
		DefaultMode: ModeDefault,
		AgentModes:  map[string]Mode{"child": ModeBypass, "planner": ModeReadOnly},
		Rules: []*Rule{
			{ID: "parent-no-shell", Tier: TierAdmin, Tools: []string{"shell"}, Agents: []string{"parent"}, Decision: Deny, ReasonCode: "no_shell"},
			{ID: "parent-ask-net", Tier: TierAdmin, Tools: []string{"fetch"}, Agents: []string{"parent"}, Decision: Ask, ReasonCode: "net"},
			{ID: "parent-writes", Tier: TierAdmin, Tools: []string{"write_file"}, Agents: []string{"parent"}, Decision: Allow, ReasonCode: "writes"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		req     Request
		outcome Outcome
		mode    Mode
		rule    string
	}{
		{"parent's deny binds", Request{Agent: "child", ParentAgents: []string{"parent"}, ToolName: "shell"}, Deny, ModeDefault, "parent-no-shell"},
		{"grandparent's deny binds", Request{Agent: "child", ParentAgents: []string{"middle", "parent"}, ToolName: "shell"}, Deny, ModeDefault, "parent-no-shell"},
		{"parent's ask binds", Request{Agent: "child", ParentAgents: []string{"parent"}, ToolName: "fetch"}, Ask, ModeDefault, "parent-ask-net"},
		{"parent's allow does not", Request{Agent: "child", ParentAgents: []string{"parent"}, ToolName: "write_file"}, Ask, ModeDefault, ""},
		{"the parent itself", Request{Agent: "parent", ToolName: "write_file"}, Allow, ModeDefault, "parent-writes"},
		{"bypass alone", Request{Agent: "child", ToolName: "write_file"}, Allow, ModeBypass, ""},
		{"stricter ancestor", Request{Agent: "child", ParentAgents: []string{"planner"}, ToolName: "write_file"}, Deny, ModeReadOnly, ""},
		{"session mode wins", Request{Agent: "child", ParentAgents: []string{"planner"}, ToolName: "write_file", Mode: ModeBypass}, Allow, ModeBypass, ""},
	} {
		dec, err := k.Evaluate(context.Background(), &tt.req)
		if err != nil {
			t.Fatal(err)
		}
		rule := ""
		if len(dec.RuleIDs) > 0 {
			rule = dec.RuleIDs[0]
		}
		if dec.Outcome != tt.outcome || dec.Mode != tt.mode || rule != tt.rule {
			t.Errorf("%s: %s in mode %s by %q (%s), want %s in mode %s by %q", tt.name, dec.Outcome, dec.Mode, rule, dec.Message, tt.outcome, tt.mode, tt.rule)
		}
	}
}
