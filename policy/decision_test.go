package policy

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	yaml "github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenCase is one file of testdata/decisions: a kernel, its rule files
// and calls with the decisions they must get.
type goldenCase struct {
	Kernel struct {
		DefaultMode string              `yaml:"default_mode"`
		AgentModes  map[string]string   `yaml:"agent_modes"`
		AgentScopes map[string][]string `yaml:"agent_scopes"`
		Principals  map[string]struct {
			Roles      []string `yaml:"roles"`
			Scopes     []string `yaml:"scopes"`
			Restricted bool     `yaml:"restricted"`
		} `yaml:"principals"`
		// Checkers are fakeCheckers by name.
		Checkers map[string]struct {
			Flags string `yaml:"flags"`
			Code  string `yaml:"code"`
			Error string `yaml:"error"`
		} `yaml:"checkers"`
		InputCheckers []struct {
			Name   string `yaml:"name"`
			Action string `yaml:"action"`
		} `yaml:"input_checkers"`
		AutoChecker string `yaml:"auto_checker"`
	} `yaml:"kernel"`
	// Files are rule files, loaded in order.
	Files []struct {
		Name string `yaml:"name"`
		Text string `yaml:"text"`
	} `yaml:"files"`
	// Extra are rules people added by approving calls; each call carries
	// them all in Request.Extra.
	Extra []struct {
		Session string `yaml:"session"`
		Text    string `yaml:"text"`
	} `yaml:"extra"`
	Calls []goldenCall `yaml:"calls"`
}

type goldenCall struct {
	Name        string         `yaml:"name"`
	Tool        string         `yaml:"tool"`
	Agent       string         `yaml:"agent"`
	Principal   string         `yaml:"principal"`
	Roles       *[]string      `yaml:"roles"` // nil: from the principal
	Session     string         `yaml:"session"`
	Mode        string         `yaml:"mode"`
	Intent      string         `yaml:"intent"`
	MCPServer   string         `yaml:"mcp_server"`
	Command     string         `yaml:"command"`
	Input       map[string]any `yaml:"input"`
	ReadOnly    bool           `yaml:"read_only"`
	Destructive bool           `yaml:"destructive"`
	Idempotent  bool           `yaml:"idempotent"`
	OpenWorld   bool           `yaml:"open_world"`
	Scopes      []string       `yaml:"scopes"`
	Want        goldenDecision `yaml:"want"`
}

// goldenDecision is the part of a Decision the golden files pin.
type goldenDecision struct {
	Outcome string   `yaml:"outcome"`
	Source  string   `yaml:"source"`
	Reason  string   `yaml:"reason"`
	Rules   []string `yaml:"rules"`
	Missing []string `yaml:"missing"`
	Checker string   `yaml:"checker"`
	Mode    string   `yaml:"mode"`
}

func loadGolden(t *testing.T, path string) (*Kernel, *goldenCase, []*Rule) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var gc goldenCase
	if err := yaml.UnmarshalWithOptions(data, &gc, yaml.Strict()); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	dir := t.TempDir()
	var paths []string
	for _, f := range gc.Files {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, []byte(f.Text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	rules, err := LoadRuleFiles(paths...)
	if err != nil {
		t.Fatalf("%s: loading rules: %v", path, err)
	}
	for _, r := range rules {
		r.Source = strings.TrimPrefix(r.Source, dir+string(filepath.Separator))
	}
	cfg := KernelConfig{
		Rules:       rules,
		DefaultMode: Mode(gc.Kernel.DefaultMode),
		AgentScopes: gc.Kernel.AgentScopes,
		AutoChecker: gc.Kernel.AutoChecker,
		AgentModes:  map[string]Mode{},
		Principals:  map[string]Principal{},
		Checkers:    map[string]Checker{},
	}
	for a, m := range gc.Kernel.AgentModes {
		cfg.AgentModes[a] = Mode(m)
	}
	for id, p := range gc.Kernel.Principals {
		cfg.Principals[id] = Principal{Roles: p.Roles, Scopes: p.Scopes, Restricted: p.Restricted}
	}
	for name, c := range gc.Kernel.Checkers {
		cfg.Checkers[name] = fakeChecker{flags: c.Flags, code: c.Code, err: c.Error}
	}
	for _, ic := range gc.Kernel.InputCheckers {
		cfg.InputCheckers = append(cfg.InputCheckers, InputCheck{Name: ic.Name, Action: ic.Action})
	}
	k, err := NewKernel(cfg)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var extra []*Rule
	for _, e := range gc.Extra {
		for _, r := range mustParse(t, "human", e.Text) {
			r.SessionID = e.Session
			r.Source = "human"
			extra = append(extra, r)
		}
	}
	return k, &gc, extra
}

func (gc *goldenCall) request(t *testing.T, extra []*Rule) *Request {
	req := &Request{
		Agent:          gc.Agent,
		SessionID:      gc.Session,
		ToolName:       gc.Tool,
		Intent:         gc.Intent,
		MCPServer:      gc.MCPServer,
		Command:        gc.Command,
		ReadOnly:       gc.ReadOnly,
		Destructive:    gc.Destructive,
		Idempotent:     gc.Idempotent,
		OpenWorld:      gc.OpenWorld,
		RequiredScopes: gc.Scopes,
		Mode:           Mode(gc.Mode),
		Extra:          extra,
	}
	req.PrincipalID = gc.Principal
	if gc.Roles != nil {
		req.Roles = *gc.Roles
		if req.Roles == nil {
			req.Roles = []string{}
		}
	}
	if gc.Input != nil {
		req.Input = jsonInput(t, gc.Input)
	}
	return req
}

// TestDecisions runs every golden file in testdata/decisions: each call
// must get its decision from Evaluate, and Explain must agree.
func TestDecisions(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/decisions/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 8 {
		t.Fatalf("found %d golden files, want at least 8", len(files))
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			t.Parallel()
			k, gc, extra := loadGolden(t, path)
			if len(gc.Calls) == 0 {
				t.Fatal("no calls")
			}
			seen := map[string]bool{}
			for _, call := range gc.Calls {
				if seen[call.Name] {
					t.Fatalf("call %q is listed twice", call.Name)
				}
				seen[call.Name] = true
				t.Run(call.Name, func(t *testing.T) {
					t.Parallel()
					req := call.request(t, extra)
					d, err := k.Evaluate(context.Background(), req)
					if err != nil {
						t.Fatal(err)
					}
					got := goldenDecision{
						Outcome: string(d.Outcome), Source: string(d.Source), Reason: d.ReasonCode,
						Rules: d.RuleIDs, Missing: d.MissingScopes, Checker: d.Checker, Mode: string(d.Mode),
					}
					want := call.Want
					if want.Mode == "" {
						want.Mode = got.Mode // pinned only where it matters
					}
					if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("decision (-want +got):\n%s\nmessage: %s", diff, d.Message)
					}
					checkDecision(t, d)
					ex, err := k.Explain(context.Background(), req)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(d, ex.Decision); diff != "" {
						t.Errorf("Explain's decision differs from Evaluate's (-evaluate +explain):\n%s", diff)
					}
				})
			}
		})
	}
}

// checkDecision checks what every decision must hold.
func checkDecision(t *testing.T, d Decision) {
	t.Helper()
	switch {
	case d.ReasonCode == "":
		t.Errorf("decision has no reason code: %+v", d)
	case d.Mode == "" || (!d.Mode.Valid() && d.ReasonCode != "mode_unknown"):
		t.Errorf("decision has mode %q: %+v", d.Mode, d)
	case d.Outcome != Allow && d.Outcome != Deny && d.Outcome != Ask:
		t.Errorf("decision has outcome %q", d.Outcome)
	case d.Message == "":
		t.Errorf("decision has no message: %+v", d)
	case len(d.RuleIDs) != len(d.RuleRefs):
		t.Errorf("decision has %d rule ids and %d rule refs", len(d.RuleIDs), len(d.RuleRefs))
	}
	for i := range d.RuleRefs {
		if i < len(d.RuleIDs) && d.RuleRefs[i].ID != d.RuleIDs[i] {
			t.Errorf("RuleRefs[%d] is %q, RuleIDs[%d] is %q", i, d.RuleRefs[i].ID, i, d.RuleIDs[i])
		}
	}
}

// TestExplainGolden pins the text agentrt policy explain prints for a few
// calls of testdata/decisions/explain.yaml; -update rewrites it.
func TestExplainGolden(t *testing.T) {
	t.Parallel()
	k, gc, extra := loadGolden(t, "testdata/decisions/explain.yaml")
	var b strings.Builder
	for _, call := range gc.Calls {
		ex, err := k.Explain(context.Background(), call.request(t, extra))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("## " + call.Name + "\n")
		b.WriteString(ex.String())
		b.WriteString("\n")
	}
	const golden = "testdata/explain.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestExplainGolden -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("explanations (-want +got):\n%s", diff)
	}
}
