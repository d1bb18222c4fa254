package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// policyFixture is fixture with rule files and a command checker:
//
//	rules/base.yaml       a rule file
//	rules/extra.yaml      another
//	checkers/check.sh     an executable checker
func policyFixture(t *testing.T) string {
	t.Helper()
	dir := fixture(t)
	writeFile(t, filepath.Join(dir, "rules", "base.yaml"), "tier: workspace\nrules: []\n", 0o644)
	writeFile(t, filepath.Join(dir, "rules", "extra.yaml"), "tier: user\nrules: []\n", 0o644)
	writeFile(t, filepath.Join(dir, "checkers", "check.sh"), "#!/bin/sh\necho '{\"flagged\": false}'\n", 0o755)
	return dir
}

func TestLoadPolicyExample(t *testing.T) {
	t.Parallel()

	f, err := Load("testdata/governed.yaml", Options{Builtins: builtins})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	wantPolicy := &Policy{
		Mode:      ModeDefault,
		RuleFiles: []string{filepath.Join(dir, "rules", "admin.yaml"), filepath.Join(dir, "rules", "workspace.yaml")},
		Principals: map[string]*Principal{
			"alice":             {Roles: []string{"operator", "dev"}, Scopes: []string{"repo:read", "repo:write"}, Restricted: true},
			"ci:deploy":         {Roles: []string{"deployer"}},
			"guest@example.com": {Restricted: true},
		},
		Checkers: map[string]*Checker{
			"pii": {
				Name:    "pii",
				Command: []string{filepath.Join(dir, "checkers", "pii.sh"), "--strict"},
				Timeout: 2 * time.Second,
				Env:     map[string]string{"PII_LEVEL": "high"},
			},
			"judge": {Name: "judge", Command: []string{"python3", "judge.py"}, Timeout: DefaultCheckerTimeout},
		},
		InputChecks: []Check{
			{Checker: CheckerSecrets, Action: ActionDeny},
			{Checker: "pii", Action: ActionAsk},
		},
		OutputChecks: []Check{
			{Checker: CheckerPromptInjection, Action: ActionBlock},
			{Checker: CheckerSecrets, Action: ActionRedact},
			{Checker: "pii", Action: ActionWarn},
		},
		AutoChecker:     "judge",
		ApprovalTimeout: 4 * time.Hour,
		Opaque:          ActionDeny,
		SelfApproval:    SelfApprovalForbid,
	}
	if diff := cmp.Diff(wantPolicy, f.Policy); diff != "" {
		t.Errorf("Policy mismatch (-want +got):\n%s", diff)
	}

	type access struct {
		Mode       string
		Scopes     []string
		Restricted bool
	}
	gotAgents := map[string]access{}
	for name, a := range f.Agents {
		gotAgents[name] = access{a.Mode, a.Scopes, a.ScopesRestricted}
	}
	wantAgents := map[string]access{
		"coder":    {Mode: ModeAcceptEdits, Scopes: []string{"repo:read", "repo:write"}, Restricted: true},
		"reviewer": {Restricted: true},
	}
	if diff := cmp.Diff(wantAgents, gotAgents); diff != "" {
		t.Errorf("agents' modes and scopes mismatch (-want +got):\n%s", diff)
	}

	shell := f.Tools["shell"]
	type governance struct {
		Scopes       []string
		Intent       string
		CommandField string
	}
	want := governance{Scopes: []string{"repo:write"}, Intent: "execute", CommandField: "command"}
	if diff := cmp.Diff(want, governance{shell.Scopes, shell.Intent, shell.CommandField}); diff != "" {
		t.Errorf("tool shell mismatch (-want +got):\n%s", diff)
	}
}

func TestParsePolicyValues(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		yaml string
		get  func(*File) any
		want any
	}{
		{
			name: "NoPolicySection",
			yaml: okAgent,
			get:  func(f *File) any { return f.Policy },
			want: (*Policy)(nil),
		},
		{
			name: "EmptyMappingMeansDefaults",
			yaml: okAgent + "policy: {}\n",
			get:  func(f *File) any { return f.Policy },
			want: &Policy{
				Mode:            ModeDefault,
				Principals:      map[string]*Principal{},
				Checkers:        map[string]*Checker{},
				ApprovalTimeout: DefaultApprovalTimeout,
				Opaque:          ActionAsk,
				SelfApproval:    SelfApprovalAllow,
			},
		},
		{
			name: "NullMeansDefaults",
			yaml: okAgent + "policy:\n",
			get:  func(f *File) any { return f.Policy },
			want: &Policy{
				Mode:            ModeDefault,
				Principals:      map[string]*Principal{},
				Checkers:        map[string]*Checker{},
				ApprovalTimeout: DefaultApprovalTimeout,
				Opaque:          ActionAsk,
				SelfApproval:    SelfApprovalAllow,
			},
		},
		{
			name: "NullKeysMeanDefaults",
			yaml: okAgent + "policy:\n  mode:\n  rules:\n  approval_timeout:\n  principals:\n    bob:\n    carol: {roles:, scopes:}\n",
			get: func(f *File) any {
				p := f.Policy
				return []any{p.Mode, p.RuleFiles, p.ApprovalTimeout, p.Principals}
			},
			want: []any{ModeDefault, []string(nil), DefaultApprovalTimeout, map[string]*Principal{"bob": {}, "carol": {}}},
		},
		{
			name: "SelfApprovalForbid",
			yaml: okAgent + "policy: {self_approval: forbid}\n",
			get:  func(f *File) any { return f.Policy.SelfApproval },
			want: SelfApprovalForbid,
		},
		{
			name: "ForkGrantsDefault",
			yaml: okAgent + "policy: {}\n",
			get:  func(f *File) any { return f.Policy.ForkGrants != ForkGrantsCopy },
			want: true,
		},
		{
			name: "ForkGrantsCopy",
			yaml: okAgent + "policy: {fork_grants: copy}\n",
			get:  func(f *File) any { return f.Policy.ForkGrants },
			want: ForkGrantsCopy,
		},
		{
			name: "ApprovalNever",
			yaml: okAgent + "policy: {approval_timeout: never}\n",
			get:  func(f *File) any { return f.Policy.ApprovalTimeout },
			want: ApprovalNever,
		},
		{
			name: "EveryMode",
			yaml: "agents:\n" +
				"  a: {model: {provider: replay, script: support.replay.yaml}, mode: default}\n" +
				"  b: {model: {provider: replay, script: support.replay.yaml}, mode: read_only}\n" +
				"  c: {model: {provider: replay, script: support.replay.yaml}, mode: accept_edits}\n" +
				"  d: {model: {provider: replay, script: support.replay.yaml}, mode: auto}\n" +
				"  e: {model: {provider: replay, script: support.replay.yaml}}\n" +
				"policy: {mode: bypass}\n",
			get: func(f *File) any {
				var modes []string
				for _, name := range f.AgentNames() {
					modes = append(modes, f.Agents[name].Mode)
				}
				return []any{f.Policy.Mode, modes}
			},
			want: []any{ModeBypass, []string{ModeDefault, ModeReadOnly, ModeAcceptEdits, ModeAuto, ""}},
		},
		{
			name: "RuleFilesResolvedInOrder",
			yaml: okAgent + "policy:\n  rules:\n    - rules/extra.yaml\n    - ./rules/../rules/base.yaml\n",
			get: func(f *File) any {
				rel := make([]string, len(f.Policy.RuleFiles))
				for i, p := range f.Policy.RuleFiles {
					rel[i], _ = filepath.Rel(f.Dir, p)
				}
				return rel
			},
			want: []string{filepath.Join("rules", "extra.yaml"), filepath.Join("rules", "base.yaml")},
		},
		{
			name: "NullScopesAreAbsent",
			yaml: okAgent + "    scopes:\n",
			get:  func(f *File) any { return []any{f.Agents["a"].Scopes, f.Agents["a"].ScopesRestricted} },
			want: []any{[]string(nil), false},
		},
		{
			name: "ToolKeysWithoutPolicy",
			yaml: okAgent + "tools:\n  t:\n    command: [sh]\n" +
				"    input_schema: {type: object, properties: {script: {type: string}}}\n" +
				"    intent: network_read\n    command_field: script\n",
			get:  func(f *File) any { return []any{f.Tools["t"].Intent, f.Tools["t"].CommandField, f.Policy} },
			want: []any{"network_read", "script", (*Policy)(nil)},
		},
		{
			name: "PolicyAfterAgents",
			yaml: okAgent + "    mode: read_only\n    scopes: [a.b, c:d, e_f-g]\n" +
				"tools:\n  t: {command: [jq], input_schema: {type: object}, scopes: [x]}\n" +
				"policy: {checkers: {c: {command: [./checkers/check.sh]}}, auto_checker: c}\n",
			get: func(f *File) any {
				return []any{f.Agents["a"].Mode, f.Agents["a"].Scopes, f.Tools["t"].Scopes, f.Policy.AutoChecker}
			},
			want: []any{ModeReadOnly, []string{"a.b", "c:d", "e_f-g"}, []string{"x"}, "c"},
		},
		{
			name: "ChecksBeforeCheckers",
			yaml: okAgent + "policy:\n  input_checks: [{checker: c, action: warn}]\n" +
				"  checkers:\n    c: {command: [./checkers/check.sh]}\n",
			get:  func(f *File) any { return f.Policy.InputChecks },
			want: []Check{{Checker: "c", Action: ActionWarn}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("agentrt.yaml", []byte(tt.yaml), policyFixture(t), Options{Builtins: builtins})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, tt.get(f)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParsePolicyErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "NotMapping",
			yaml: okAgent + "policy: strict\n",
			want: []string{`agentrt.yaml:4:9: policy must be a mapping, got string "strict"`},
		},
		{
			name: "UnknownKeys",
			yaml: okAgent + "policy:\n  modes: auto\n  rule: [rules/base.yaml]\n  approval_timout: 1h\n  hooks: {}\n",
			want: []string{
				`agentrt.yaml:5:3: unknown key "modes" in policy; did you mean mode?`,
				`agentrt.yaml:6:3: unknown key "rule" in policy; did you mean rules?`,
				`agentrt.yaml:7:3: unknown key "approval_timout" in policy; did you mean approval_timeout?`,
				`agentrt.yaml:8:3: unknown key "hooks" in policy`,
			},
		},
		{
			name: "UnknownTopLevelKeySuggestsPolicy",
			yaml: okAgent + "polcy: {}\n",
			want: []string{`agentrt.yaml:4:1: unknown top-level key "polcy"; did you mean policy?`},
		},
		{
			name: "BadModes",
			yaml: okAgent + "    mode: readonly\n" +
				"  b: {model: {provider: replay, script: support.replay.yaml}, mode: yolo}\n" +
				"  c: {model: {provider: replay, script: support.replay.yaml}, mode: plan}\n" +
				"policy: {mode: Auto}\n",
			want: []string{
				`agentrt.yaml:4:11: mode in agent "a" must be one of default, read_only, accept_edits, auto, bypass, got "readonly"; did you mean read_only?`,
				`agentrt.yaml:5:69: mode in agent "b" must be one of default, read_only, accept_edits, auto, bypass, got "yolo"`,
				`agentrt.yaml:6:69: mode in agent "c" must be one of default, read_only, accept_edits, auto, bypass, got "plan"; did you mean read_only (plan mode)?`,
				`agentrt.yaml:7:16: policy.mode must be one of default, read_only, accept_edits, auto, bypass, got "Auto"; did you mean auto?`,
			},
		},
		{
			name: "RuleFiles",
			yaml: okAgent + "policy:\n  rules:\n    - rules/missing.yaml\n    - rules\n    - \"\"\n    - [a]\n" +
				"    - rules/base.yaml\n    - ./rules/base.yaml\n",
			want: []string{
				`agentrt.yaml:6:7: rule file "rules/missing.yaml" in policy.rules does not exist (resolved to $DIR/rules/missing.yaml)`,
				`agentrt.yaml:7:7: rule file "rules" in policy.rules is a directory, not a file`,
				`agentrt.yaml:8:7: rule file in policy.rules must not be empty`,
				`agentrt.yaml:9:7: policy.rules must list rule file paths, got a list`,
				`agentrt.yaml:11:7: rule file "./rules/base.yaml" is listed twice in policy.rules`,
			},
		},
		{
			name: "RulesNotList",
			yaml: okAgent + "policy: {rules: rules/base.yaml}\n",
			want: []string{`agentrt.yaml:4:17: policy.rules must be a list of rule file paths, got string "rules/base.yaml"`},
		},
		{
			name: "UnknownCheckerSuggests",
			yaml: okAgent + "policy:\n  checkers:\n    pii: {command: [./checkers/check.sh]}\n" +
				"  input_checks:\n    - {checker: secret, action: deny}\n    - {checker: pi, action: ask}\n    - {checker: virus, action: warn}\n" +
				"  output_checks: [{checker: prompt-injection, action: block}]\n" +
				"  auto_checker: jugde\n",
			want: []string{
				`agentrt.yaml:8:17: policy.input_checks[0] uses checker "secret", which is neither defined under policy.checkers nor a builtin; did you mean secrets?`,
				`agentrt.yaml:9:17: policy.input_checks[1] uses checker "pi", which is neither defined under policy.checkers nor a builtin; did you mean pii?`,
				`agentrt.yaml:10:17: policy.input_checks[2] uses checker "virus", which is neither defined under policy.checkers nor a builtin (the builtins are secrets and prompt_injection)`,
				`agentrt.yaml:11:29: policy.output_checks[0] uses checker "prompt-injection", which is neither defined under policy.checkers nor a builtin; did you mean prompt_injection?`,
				`agentrt.yaml:12:17: policy.auto_checker uses checker "jugde", which is neither defined under policy.checkers nor a builtin (the builtins are secrets and prompt_injection)`,
			},
		},
		{
			name: "RedefinedBuiltinChecker",
			yaml: okAgent + "policy:\n  checkers:\n    secrets: {command: [./checkers/check.sh]}\n    prompt_injection: {command: [jq]}\n" +
				"  input_checks: [{checker: secrets, action: deny}]\n",
			want: []string{
				`agentrt.yaml:6:5: checker "secrets" has the same name as a builtin checker; rename it`,
				`agentrt.yaml:7:5: checker "prompt_injection" has the same name as a builtin checker; rename it`,
			},
		},
		{
			name: "Checkers",
			yaml: okAgent + "policy:\n  checkers:\n" +
				"    none: {timeout: 1s}\n" +
				"    empty:\n" +
				"    plain: {command: [./tools/plain.sh]}\n" +
				"    slow: {command: [jq], timeout: 0s, env: {BAD-NAME: x}, args: []}\n" +
				"    bad name: {command: [jq]}\n",
			want: []string{
				`agentrt.yaml:6:5: command is required in checker "none"`,
				`agentrt.yaml:7:5: command is required in checker "empty"`,
				`agentrt.yaml:8:23: command "./tools/plain.sh" in checker "plain" is not executable (chmod +x $DIR/tools/plain.sh)`,
				`agentrt.yaml:9:36: timeout in checker "slow" must be positive, got string "0s"`,
				`agentrt.yaml:9:46: env key "BAD-NAME" in checker "slow" is not a valid variable name`,
				`agentrt.yaml:9:60: unknown key "args" in checker "slow"`,
				`agentrt.yaml:10:5: invalid checker name "bad name": use 1 to 64 letters, digits, '_' or '-'`,
			},
		},
		{
			name: "ActionsForInputAndOutput",
			yaml: okAgent + "policy:\n" +
				"  input_checks:\n    - {checker: secrets, action: redact}\n    - {checker: prompt_injection, action: dney}\n" +
				"  output_checks:\n    - {checker: secrets, action: ask}\n    - {checker: prompt_injection, action: deny}\n",
			want: []string{
				`agentrt.yaml:6:34: action in policy.input_checks[0] must be one of deny, ask, warn, got "redact" (redact is for policy.output_checks)`,
				`agentrt.yaml:7:43: action in policy.input_checks[1] must be one of deny, ask, warn, got "dney"; did you mean deny?`,
				`agentrt.yaml:9:34: action in policy.output_checks[0] must be one of warn, redact, block, got "ask" (ask is for policy.input_checks)`,
				`agentrt.yaml:10:43: action in policy.output_checks[1] must be one of warn, redact, block, got "deny" (deny is for policy.input_checks)`,
			},
		},
		{
			name: "CheckShapes",
			yaml: okAgent + "policy:\n  input_checks:\n" +
				"    - secrets\n" +
				"    - {checker: secrets}\n" +
				"    - {action: deny, when: always}\n" +
				"    - {checker: secrets, action: ask}\n" +
				"  output_checks: {checker: secrets}\n",
			want: []string{
				`agentrt.yaml:6:7: policy.input_checks[0] must be a mapping with checker and action, got string "secrets"`,
				`agentrt.yaml:7:7: action is required in policy.input_checks[1] (one of deny, ask, warn)`,
				`agentrt.yaml:8:7: checker is required in policy.input_checks[2]`,
				`agentrt.yaml:8:22: unknown key "when" in policy.input_checks[2]`,
				`agentrt.yaml:9:17: checker "secrets" is listed twice in policy.input_checks`,
				`agentrt.yaml:10:18: policy.output_checks must be a list of {checker, action} mappings, got a mapping`,
			},
		},
		{
			name: "Opaque",
			yaml: okAgent + "policy: {opaque: allow}\n",
			want: []string{
				`agentrt.yaml:4:18: policy.opaque must be ask or deny, got "allow" (the policy cannot allow what it cannot see; a rule with command: {opaque: true} can)`,
			},
		},
		{
			name: "OpaqueTypo",
			yaml: okAgent + "policy: {opaque: dney}\n",
			want: []string{`agentrt.yaml:4:18: policy.opaque must be ask or deny, got "dney"; did you mean deny?`},
		},
		{
			name: "SelfApprovalUnknown",
			yaml: okAgent + "policy:\n  self_approval: deny\n  approval_timeout: 1h\n",
			want: []string{
				`agentrt.yaml:5:18: policy.self_approval must be one of allow, forbid, got "deny"`,
			},
		},
		{
			name: "ForkGrantsUnknown",
			yaml: okAgent + "policy: {fork_grants: share}\n",
			want: []string{`agentrt.yaml:4:23: policy.fork_grants must be one of none, copy, got "share"`},
		},
		{
			name: "ApprovalTimeoutZero",
			yaml: okAgent + "policy: {approval_timeout: 0s}\n",
			want: []string{
				`agentrt.yaml:4:28: policy.approval_timeout must be positive, or never for no expiry, got string "0s"`,
			},
		},
		{
			name: "ApprovalTimeoutNegative",
			yaml: okAgent + "policy: {approval_timeout: -1ns}\n",
			want: []string{
				`agentrt.yaml:4:28: policy.approval_timeout must be positive, or never for no expiry, got string "-1ns"`,
			},
		},
		{
			name: "ApprovalTimeoutNotDuration",
			yaml: okAgent + "policy:\n  approval_timeout: forever\n" +
				"  b: {model: {provider: replay, script: support.replay.yaml}}\n",
			want: []string{
				`agentrt.yaml:5:21: policy.approval_timeout must be a duration such as 24h or 30m, or never, got string "forever"`,
				`agentrt.yaml:6:3: unknown key "b" in policy`,
			},
		},
		{
			name: "ApprovalTimeoutNumber",
			yaml: okAgent + "policy: {approval_timeout: 24}\n",
			want: []string{
				`agentrt.yaml:4:28: policy.approval_timeout must be a duration such as 24h or 30m, or never, got integer 24`,
			},
		},
		{
			name: "Principals",
			yaml: okAgent + "policy:\n  principals:\n" +
				"    alice: {roles: [ops team, dev, dev], scopes: [\"repo:*\"], groups: []}\n" +
				"    bob: {roles: operator, scopes: [{a: b}]}\n" +
				"    \"has space\": {}\n" +
				"    carol: [operator]\n",
			want: []string{
				`agentrt.yaml:6:21: invalid role name "ops team" in principal "alice": use 1 to 64 letters, digits, '_', '.', ':' or '-'`,
				`agentrt.yaml:6:36: role "dev" is listed twice in principal "alice"`,
				`agentrt.yaml:6:51: invalid scope name "repo:*" in principal "alice": use 1 to 64 letters, digits, '_', '.', ':' or '-'`,
				`agentrt.yaml:6:62: unknown key "groups" in principal "alice"`,
				`agentrt.yaml:7:18: roles in principal "bob" must be a list of role names, got string "operator"`,
				`agentrt.yaml:7:37: scopes in principal "bob" must list scope names, got a mapping`,
				`agentrt.yaml:8:5: invalid principal name "has space": use 1 to 128 letters, digits, '_', '.', ':', '@' or '-'`,
				`agentrt.yaml:9:12: principal "carol" must be a mapping, got a list`,
			},
		},
		{
			name: "UnquotedColonInFlowMapping",
			yaml: okAgent + "policy:\n  principals:\n    alice: {scopes: [repo:read]}\n",
			want: []string{
				`agentrt.yaml:6:26: scopes in principal "alice" must list scope names, got a mapping (inside {…}, quote a name holding ':', as "repo:read")`,
			},
		},
		{
			name: "Scopes",
			yaml: okAgent + "    scopes: [" + strings.Repeat("s", 65) + ", ok, ok]\n" +
				"tools:\n  t: {command: [jq], input_schema: {type: object}, scopes: write}\n" +
				"policy: {}\n",
			want: []string{
				`agentrt.yaml:4:14: invalid scope name "sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss" in agent "a": use 1 to 64 letters, digits, '_', '.', ':' or '-'`,
				`agentrt.yaml:4:85: scope "ok" is listed twice in agent "a"`,
				`agentrt.yaml:6:60: scopes in tool "t" must be a list of scope names, got string "write"`,
			},
		},
		{
			name: "KeysThatNeedPolicy",
			yaml: okAgent + "    mode: read_only\n    scopes: []\n" +
				"tools:\n  t:\n    command: [jq]\n    input_schema: {type: object}\n    scopes: [net]\n",
			want: []string{
				"agentrt.yaml:4:5: agents.a.mode needs a policy section: add `policy:` to turn the policy kernel on",
				"agentrt.yaml:5:5: agents.a.scopes needs a policy section: add `policy:` to turn the policy kernel on",
				"agentrt.yaml:10:5: tools.t.scopes needs a policy section: add `policy:` to turn the policy kernel on",
			},
		},
		{
			name: "BadPolicyDoesNotAlsoReportMissingPolicy",
			yaml: okAgent + "    mode: auto\npolicy: [rules/base.yaml]\n",
			want: []string{
				`agentrt.yaml:5:9: policy must be a mapping, got a list`,
			},
		},
		{
			name: "Intent",
			yaml: okAgent + "tools:\n" +
				"  a: {command: [jq], input_schema: {type: object}, intent: Read}\n" +
				"  b: {command: [jq], input_schema: {type: object}, intent: \"\"}\n" +
				"  c: {command: [jq], input_schema: {type: object}, intent: [read]}\n" +
				"  d: {command: [jq], input_schema: {type: object}, intent: " + strings.Repeat("x", 33) + "}\n",
			want: []string{
				`agentrt.yaml:5:60: intent in tool "a" must be 1 to 32 lowercase letters or '_', such as read or execute, got "Read"`,
				`agentrt.yaml:6:60: intent in tool "b" must be 1 to 32 lowercase letters or '_', such as read or execute, got ""`,
				`agentrt.yaml:7:60: intent in tool "c" must be a string, got a list`,
				`agentrt.yaml:8:60: intent in tool "d" must be 1 to 32 lowercase letters or '_', such as read or execute, got "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"`,
			},
		},
		{
			name: "CommandField",
			yaml: okAgent + "tools:\n" +
				"  missing:\n    command: [sh]\n    command_field: comand\n" +
				"    input_schema: {type: object, properties: {command: {type: string}, cwd: {type: string}}}\n" +
				"  number:\n    command: [sh]\n    input_schema: {type: object, properties: {n: {type: integer}}}\n    command_field: n\n" +
				"  untyped:\n    command: [sh]\n    input_schema: {type: object, properties: {cmd: {}}}\n    command_field: cmd\n" +
				"  union:\n    command: [sh]\n    input_schema: {type: object, properties: {cmd: {type: [string, \"null\"]}}}\n    command_field: cmd\n" +
				"  none:\n    command: [sh]\n    input_schema: {type: object}\n    command_field: cmd\n" +
				"  badschema:\n    command: [sh]\n    input_schema: {type: string}\n    command_field: cmd\n",
			want: []string{
				`agentrt.yaml:7:20: command_field in tool "missing" names "comand", which is not a property of its input_schema; did you mean command?`,
				`agentrt.yaml:12:20: command_field in tool "number" names "n", which must have type: string in its input_schema (its type is integer)`,
				`agentrt.yaml:16:20: command_field in tool "untyped" names "cmd", which must have type: string in its input_schema (it has no type)`,
				`agentrt.yaml:20:20: command_field in tool "union" names "cmd", which must have type: string in its input_schema (its type is ["string","null"])`,
				`agentrt.yaml:24:20: command_field in tool "none" names "cmd", which is not a property of its input_schema; it declares no properties`,
				`agentrt.yaml:27:26: input_schema in tool "badschema" must have type: object, got string "string"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := policyFixture(t)
			f, err := Parse("agentrt.yaml", []byte(tt.yaml), dir, Options{Builtins: builtins})
			if err == nil {
				t.Fatal("Parse: no error")
			}
			if f != nil {
				t.Errorf("Parse returned a file along with errors")
			}
			got := errorLines(t, err, dir)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s\ngot:\n%s", diff, "\t`"+strings.Join(got, "`,\n\t`")+"`,")
			}
		})
	}
}
