package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseRules(t *testing.T) {
	t.Parallel()
	src := `tier: workspace
rules:
  - id: no-rm-rf
    description: never delete trees
    priority: 10
    tier: admin
    tools: shell
    command:
      prefix: rm -rf
      regex: ' /$'
    decision: deny
    reason_code: rm_rf
    message: rm -rf is not allowed
  - id: "tickets:urgent"
    tools: [create_ticket, "update_*"]
    mcp_servers: [jira]
    agents: [support]
    intents: [write]
    principals: ["*@corp"]
    roles: [ops, oncall]
    modes: [default, auto]
    annotations: {destructive: true, open_world: false}
    when: input.priority == "urgent"
    checker: secrets
    decision: ask
    reason_code: urgent_ticket
`
	rules, err := ParseRules("rules.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []*Rule{
		{
			ID: "no-rm-rf", Description: "never delete trees", Tier: TierAdmin, Source: "rules.yaml:3", Priority: 10,
			Tools: []string{"shell"}, Command: &CommandMatch{Prefixes: []string{"rm -rf"}, Regex: " /$"},
			Decision: Deny, ReasonCode: "rm_rf", Message: "rm -rf is not allowed",
		},
		{
			ID: "tickets:urgent", Tier: TierWorkspace, Source: "rules.yaml:14",
			Tools: []string{"create_ticket", "update_*"}, MCPServers: []string{"jira"}, Agents: []string{"support"},
			Intents: []string{"write"}, Principals: []string{"*@corp"}, Roles: []string{"ops", "oncall"},
			Modes: []Mode{ModeDefault, ModeAuto}, Annotations: map[Annotation]bool{AnnotationDestructive: true, AnnotationOpenWorld: false},
			When: `input.priority == "urgent"`, Checker: "secrets",
			Decision: Ask, ReasonCode: "urgent_ticket",
		},
	}
	if diff := cmp.Diff(want, rules, cmpopts.IgnoreUnexported(Rule{})); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	for _, r := range rules {
		if r.compiled == nil {
			t.Errorf("rule %s is not compiled", r.ID)
		}
	}
}

func TestParseRulesEmpty(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"rules: []\n", "rules:\n", "tier: admin\nrules: []\n"} {
		rules, err := ParseRules("empty.yaml", []byte(src))
		if err != nil || len(rules) != 0 {
			t.Errorf("ParseRules(%q) = %v, %v; want no rules and no error", src, rules, err)
		}
	}
}

// TestParseErrors pins the message for each kind of mistake in a rule
// file: every error carries file:line:column, and all are reported.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	// rule is a valid rule to build bad files from.
	const head = "rules:\n  - id: r1\n    tools: [shell]\n"
	const tail = "    decision: deny\n    reason_code: bad\n"
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "unknown key with a suggestion",
			src:  head + "    priorty: 3\n" + tail,
			want: []string{`f.yaml:4:5: unknown key "priorty" in rule "r1"; did you mean priority?`},
		},
		{
			name: "unknown key by words",
			src:  "rules:\n  - id: r1\n    decision: deny\n    reason: x\n",
			want: []string{
				`f.yaml:2:5: reason_code is required in rule "r1"`,
				`f.yaml:4:5: unknown key "reason" in rule "r1"; did you mean reason_code?`,
			},
		},
		{
			name: "unknown top-level key",
			src:  "rule:\n  - id: r1\n",
			want: []string{
				`f.yaml:1:1: unknown top-level key "rule"; did you mean rules?`,
				`f.yaml:1:1: no rules key; a rule file lists its rules under rules`,
			},
		},
		{
			name: "unknown command key",
			src:  head + "    command: {prefx: rm}\n" + tail,
			want: []string{
				`f.yaml:4:14: command in rule "r1" needs a prefix, a regex or opaque: true`,
				`f.yaml:4:15: unknown key "prefx" in command of rule "r1"; did you mean prefix?`,
			},
		},
		{
			name: "opaque is a boolean",
			src:  head + "    command: {opaque: yes please}\n" + tail,
			want: []string{`f.yaml:4:23: command.opaque in rule "r1" must be true or false, got string "yes please"`},
		},
		{
			name: "opaque false is the default",
			src:  head + "    command: {opaque: false}\n" + tail,
			want: []string{`f.yaml:4:23: command.opaque in rule "r1": false is the default; leave the key out`},
		},
		{
			name: "opaque with a prefix",
			src:  head + "    command: {opaque: true, prefix: rm}\n" + tail,
			want: []string{`f.yaml:4:14: command in rule "r1": opaque cannot be combined with prefix or regex (an opaque command has no words to match)`},
		},
		{
			name: "unknown annotation with a suggestion",
			src:  head + "    annotations: {read_only: true, destructiv: true}\n" + tail,
			want: []string{`f.yaml:4:36: annotations in rule "r1": unknown annotation "destructiv"; use read_only, destructive, idempotent, open_world; did you mean destructive?`},
		},
		{
			name: "MCP hint name as an annotation",
			src:  head + "    annotations:\n      readOnlyHint: true\n" + tail,
			want: []string{`f.yaml:5:7: annotations in rule "r1": unknown annotation "readOnlyHint"; use read_only, destructive, idempotent, open_world`},
		},
		{
			name: "annotation not a bool",
			src:  head + "    annotations: {destructive: yes please, open_world: 1}\n" + tail,
			want: []string{
				`f.yaml:4:32: annotations in rule "r1": destructive must be true or false, got string "yes please"`,
				`f.yaml:4:56: annotations in rule "r1": open_world must be true or false, got integer 1`,
			},
		},
		{
			name: "annotations not a mapping",
			src:  head + "    annotations: [destructive]\n" + tail,
			want: []string{`f.yaml:4:18: annotations in rule "r1" must be a mapping of annotations to true or false, such as {destructive: true}, got a list`},
		},
		{
			name: "annotations empty",
			src:  head + "    annotations: {}\n" + tail,
			want: []string{`f.yaml:4:18: annotations in rule "r1" must not be empty; leave the key out to match every call`},
		},
		{
			name: "bad CEL",
			src:  head + "    when: input.x == \n" + tail,
			want: []string{`f.yaml:4:21: when in rule "r1": Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}`},
		},
		{
			name: "CEL column inside a quoted expression",
			src:  head + "    when: \"tool == nope\"\n" + tail,
			want: []string{`f.yaml:4:20: when in rule "r1": undeclared reference to 'nope'`},
		},
		{
			name: "CEL not bool",
			src:  head + "    when: input.count + 1\n" + tail,
			want: []string{`f.yaml:4:11: when in rule "r1" must be a bool expression, got int`},
		},
		{
			name: "CEL in a block scalar",
			src:  head + "    when: |\n      tool == 'x' &&\n        nope\n" + tail,
			want: []string{`f.yaml:4:11: when in rule "r1": undeclared reference to 'nope' (expression line 2, column 3)`},
		},
		{
			name: "duplicate id",
			src:  head + tail + "  - id: r1\n    decision: allow\n    reason_code: ok\n",
			want: []string{`f.yaml:6:9: duplicate rule id "r1" (first defined at line 2, column 9)`},
		},
		{
			name: "bad decision",
			src:  head + "    decision: denied\n    reason_code: bad\n",
			want: []string{`f.yaml:4:15: decision in rule "r1" must be allow, deny or ask, got "denied"`},
		},
		{
			name: "bad glob",
			src:  "rules:\n  - id: r1\n    tools: [\"read_[\"]\n" + tail,
			want: []string{`f.yaml:3:13: tools in rule "r1": invalid glob "read_[": syntax error in pattern`},
		},
		{
			name: "bad regex",
			src:  head + "    command: {regex: 'rm (-rf'}\n" + tail,
			want: []string{"f.yaml:4:22: command.regex in rule \"r1\": invalid regex: error parsing regexp: missing closing ): `rm (-rf`"},
		},
		{
			name: "missing reason_code and decision",
			src:  head,
			want: []string{
				`f.yaml:2:5: decision is required in rule "r1" (allow, deny or ask)`,
				`f.yaml:2:5: reason_code is required in rule "r1"`,
			},
		},
		{
			name: "missing id",
			src:  "rules:\n  - tools: [x]\n" + tail,
			want: []string{`f.yaml:2:5: id is required in rules[0]`},
		},
		{
			name: "bad id and reason code",
			src:  "rules:\n  - id: a b\n    decision: allow\n    reason_code: Bad-Code\n",
			want: []string{
				`f.yaml:2:9: invalid rule id "a b": use letters, digits, '_', '.', ':' or '-'`,
				`f.yaml:4:18: reason_code in rules[0] must be lowercase letters, digits and '_', got "Bad-Code"`,
			},
		},
		{
			name: "YAML syntax",
			src:  "rules:\n  - id: r1\n    tools: [shell\n",
			want: []string{`f.yaml:3:12: syntax error: sequence end token ']' not found`},
		},
		{
			name: "wrong types",
			src:  "tier: root\nrules:\n  - id: r1\n    priority: high\n    tools: {a: b}\n    modes: [plan]\n    command: rm\n" + tail,
			want: []string{
				`f.yaml:1:7: tier must be admin, workspace, user or agent, got "root"`,
				`f.yaml:4:15: priority in rule "r1" must be an integer, got string "high"`,
				`f.yaml:5:12: tools in rule "r1" must be a string or a list of strings, got a mapping`,
				`f.yaml:6:13: modes in rule "r1": unknown mode "plan"; use default, read_only, accept_edits, auto, bypass`,
				`f.yaml:7:14: command in rule "r1" must be a mapping with prefix or regex, got string "rm"`,
			},
		},
		{
			name: "rules not a list",
			src:  "rules: {id: x}\n",
			want: []string{`f.yaml:1:8: rules must be a list of rules, got a mapping`},
		},
		{
			name: "top level not a mapping",
			src:  "- id: x\n",
			want: []string{`f.yaml:1:1: top level must be a mapping with a rules key, got a list`},
		},
		{
			name: "empty file",
			src:  "# nothing\n",
			want: []string{`f.yaml:1:1: empty rule file; expected a mapping with a rules key`},
		},
		{
			name: "two documents",
			src:  "rules: []\n---\nrules: []\n",
			want: []string{`f.yaml:2:1: more than one YAML document; a rule file is a single document`},
		},
		{
			name: "duplicate key",
			src:  head + tail + "    decision: allow\n",
			want: []string{`f.yaml:6:5: duplicate key "decision" (first defined at line 4, column 5)`},
		},
		{
			name: "unknown alias",
			src:  head + "    message: *nope\n" + tail,
			want: []string{`f.yaml:4:14: unknown alias *nope`},
		},
		{
			name: "every error of several rules",
			src:  "rules:\n  - id: a\n    decision: maybe\n    reason_code: x\n  - id: b\n    decision: allow\n    reason_code: y\n    tools: ['[']\n",
			want: []string{
				`f.yaml:3:15: decision in rule "a" must be allow, deny or ask, got "maybe"`,
				`f.yaml:8:13: tools in rule "b": invalid glob "[": syntax error in pattern`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rules, err := ParseRules("f.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("ParseRules succeeded with %d rules", len(rules))
			}
			if rules != nil {
				t.Errorf("ParseRules returned rules with an error")
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error is %T, want Errors", err)
			}
			var got []string
			for _, e := range es {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			var one *Error
			if !errors.As(err, &one) || one.File != "f.yaml" || one.Line < 1 || one.Column < 1 {
				t.Errorf("errors.As(*Error) = %+v", one)
			}
		})
	}
}

func TestLoadRuleFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.yaml", "tier: admin\nrules:\n  - id: one\n    decision: deny\n    reason_code: x\n")
	b := write("b.yaml", "rules:\n  - id: two\n    decision: allow\n    reason_code: y\n")
	dup := write("dup.yaml", "rules:\n  - id: two\n    decision: allow\n    reason_code: y\n  - id: one\n    decision: allow\n    reason_code: z\n")
	bad := write("bad.yaml", "rules:\n  - id: three\n")

	t.Run("ok", func(t *testing.T) {
		t.Parallel()
		rules, err := LoadRuleFiles(a, b)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rules {
			got = append(got, r.ID+"@"+filepath.Base(r.Source)+"/"+r.Tier.String())
		}
		if diff := cmp.Diff([]string{"one@a.yaml:3/admin", "two@b.yaml:2/user"}, got); diff != "" {
			t.Errorf("rules (-want +got):\n%s", diff)
		}
	})
	t.Run("duplicates across files", func(t *testing.T) {
		t.Parallel()
		_, err := LoadRuleFiles(a, b, dup, bad)
		if err == nil {
			t.Fatal("no error")
		}
		want := strings.Join([]string{
			dup + `:2:9: duplicate rule id "two" (also defined at ` + b + `:2:9)`,
			dup + `:5:9: duplicate rule id "one" (also defined at ` + a + `:3:9)`,
			bad + `:2:5: decision is required in rule "three" (allow, deny or ask)`,
			bad + `:2:5: reason_code is required in rule "three"`,
		}, "\n")
		if diff := cmp.Diff(want, err.Error()); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		_, err := LoadRuleFiles(a, filepath.Join(dir, "nope.yaml"))
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error = %v, want one wrapping os.ErrNotExist", err)
		}
	})
}

func TestRuleCompile(t *testing.T) {
	t.Parallel()
	good := &Rule{ID: "human-1", Tier: TierUser, Tools: []string{"write_*"}, Decision: Allow, ReasonCode: "approved_for_session"}
	if err := good.Compile(); err != nil {
		t.Fatal(err)
	}
	bad := &Rule{ID: "x y", Tools: []string{"["}, Modes: []Mode{"plan"}, Annotations: map[Annotation]bool{"readOnlyHint": true}, Command: &CommandMatch{Regex: "("}, When: "1", Decision: "maybe"}
	err := bad.Compile()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`invalid rule id "x y"`, "tier must be", `decision must be allow, deny or ask, got "maybe"`,
		"reason code must be", `unknown mode "plan"`, `tools: invalid glob "["`, "invalid command regex",
		"when: must be a bool expression, got int",
		`annotations: unknown annotation "readOnlyHint"; use read_only, destructive, idempotent, open_world`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if bad.compiled != nil {
		t.Error("a rule that does not compile has compiled matchers")
	}
}
