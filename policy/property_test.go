package policy

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// The small alphabets random rule sets and calls draw from, so that rules
// often match.
var (
	propTools    = []string{"a", "b", "ab", "ba", "c"}
	propGlobs    = []string{"a", "b", "ab", "*", "a*", "*a", "?", "?b", "[ab]", "[!a]*", "c"}
	propRoles    = []string{"ops", "dev"}
	propScopes   = []string{"s1", "s2", "s3"}
	propOutcomes = []Outcome{Allow, Deny, Ask}
)

// propWorld is a random kernel without checkers (whose verdicts the
// properties would have to model) and a random call.
type propWorld struct {
	rules []*Rule
	k     *Kernel
	req   *Request
}

func drawWorld(t *rapid.T) *propWorld {
	w := &propWorld{}
	n := rapid.IntRange(0, 12).Draw(t, "rules")
	for i := range n {
		r := &Rule{
			ID:         fmt.Sprintf("r%d", i),
			Tier:       Tier(rapid.IntRange(int(TierAgent), int(TierAdmin)).Draw(t, "tier")),
			Priority:   rapid.IntRange(-2, 2).Draw(t, "priority"),
			Decision:   rapid.SampledFrom(propOutcomes).Draw(t, "decision"),
			ReasonCode: fmt.Sprintf("reason_%d", i),
			Tools:      rapid.SliceOfN(rapid.SampledFrom(propGlobs), 0, 2).Draw(t, "tools"),
		}
		if rapid.IntRange(0, 3).Draw(t, "hasRoles") == 0 {
			r.Roles = rapid.SliceOfN(rapid.SampledFrom(propRoles), 1, 2).Draw(t, "roles")
		}
		if rapid.IntRange(0, 3).Draw(t, "hasModes") == 0 {
			r.Modes = rapid.SliceOfN(rapid.SampledFrom(allModes), 1, 2).Draw(t, "modes")
		}
		if rapid.IntRange(0, 3).Draw(t, "hasAnnotations") == 0 {
			r.Annotations = rapid.MapOfN(rapid.SampledFrom(allAnnotations), rapid.Bool(), 1, 2).Draw(t, "annotations")
		}
		w.rules = append(w.rules, r)
	}
	cfg := KernelConfig{
		Rules:       w.rules,
		DefaultMode: rapid.SampledFrom(allModes).Draw(t, "defaultMode"),
		Principals:  map[string]Principal{},
		AgentScopes: map[string][]string{},
	}
	if rapid.Bool().Draw(t, "agentRestricted") {
		cfg.AgentScopes["agent"] = rapid.SliceOfN(rapid.SampledFrom(propScopes), 0, 3).Draw(t, "agentScopes")
	}
	cfg.Principals["p"] = Principal{
		Roles:      rapid.SliceOfN(rapid.SampledFrom(propRoles), 0, 2).Draw(t, "principalRoles"),
		Scopes:     rapid.SliceOfN(rapid.SampledFrom(propScopes), 0, 3).Draw(t, "principalScopes"),
		Restricted: rapid.Bool().Draw(t, "principalRestricted"),
	}
	k, err := NewKernel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.k = k
	w.req = &Request{
		Agent:          "agent",
		ToolName:       rapid.SampledFrom(propTools).Draw(t, "tool"),
		ReadOnly:       rapid.Bool().Draw(t, "readOnly"),
		Destructive:    rapid.Bool().Draw(t, "destructive"),
		Idempotent:     rapid.Bool().Draw(t, "idempotent"),
		OpenWorld:      rapid.Bool().Draw(t, "openWorld"),
		RequiredScopes: rapid.SliceOfN(rapid.SampledFrom(propScopes), 0, 2).Draw(t, "requiredScopes"),
		Mode:           rapid.SampledFrom(append([]Mode{""}, allModes...)).Draw(t, "mode"),
	}
	w.req.PrincipalID = "p"
	if rapid.Bool().Draw(t, "requestRoles") {
		w.req.Roles = rapid.SliceOfN(rapid.SampledFrom(propRoles), 0, 2).Draw(t, "roles")
		if w.req.Roles == nil {
			w.req.Roles = []string{}
		}
	}
	return w
}

// mode is the call's mode as the kernel picks it.
func (w *propWorld) mode(req *Request) Mode {
	return cmp.Or(req.Mode, w.k.cfg.DefaultMode)
}

// roles are the call's roles as the kernel picks them.
func (w *propWorld) roles(req *Request) []string {
	if req.Roles != nil {
		return req.Roles
	}
	return w.k.cfg.Principals[req.PrincipalID].Roles
}

// matching is a model of rule matching and ranking, written apart from
// the kernel's: the matching rules, best first.
func (w *propWorld) matching(req *Request) []*Rule {
	var out []*Rule
	for _, r := range w.rules {
		toolOK := len(r.Tools) == 0 || slices.ContainsFunc(r.Tools, func(g string) bool {
			ok, _ := path.Match(g, req.ToolName)
			return ok
		})
		modeOK := len(r.Modes) == 0 || slices.Contains(r.Modes, w.mode(req))
		roleOK := len(r.Roles) == 0 || slices.ContainsFunc(r.Roles, func(role string) bool {
			return slices.Contains(w.roles(req), role)
		})
		annotations := map[Annotation]bool{
			"read_only": req.ReadOnly, "destructive": req.Destructive, "idempotent": req.Idempotent, "open_world": req.OpenWorld,
		}
		annotationsOK := true
		for a, want := range r.Annotations {
			annotationsOK = annotationsOK && annotations[a] == want
		}
		if toolOK && modeOK && roleOK && annotationsOK {
			out = append(out, r)
		}
	}
	key := func(r *Rule) int {
		return int(r.Tier)*1000 + (r.Priority+10)*10 + map[Outcome]int{Deny: 3, Ask: 2, Allow: 1}[r.Decision]
	}
	slices.SortStableFunc(out, func(a, b *Rule) int { return key(b) - key(a) })
	return out
}

// missing is a model of the scope check.
func (w *propWorld) missing(req *Request) bool {
	agent, limited := w.k.cfg.AgentScopes[req.Agent]
	p := w.k.cfg.Principals[req.PrincipalID]
	for _, s := range req.RequiredScopes {
		if (limited && !slices.Contains(agent, s)) || (p.Restricted && !slices.Contains(p.Scopes, s)) {
			return true
		}
	}
	return false
}

func evaluate(t *rapid.T, k *Kernel, req *Request) Decision {
	d, err := k.Evaluate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestPropertyRanking: the kernel's matching and ranking agree with the
// model, and a deny rule is overridden only by a matching rule that
// outranks it by tier or by priority within its tier — never by a rule of
// an equal or lower rank, nor by any mode.
func TestPropertyRanking(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		w := drawWorld(t)
		d := evaluate(t, w.k, w.req)
		matching := w.matching(w.req)
		if w.missing(w.req) {
			if d.Outcome != Deny || d.Source != SourceScope {
				t.Fatalf("scope missing, decision %+v", d)
			}
			return
		}
		var ids []string
		for _, r := range matching {
			ids = append(ids, r.ID)
		}
		if diff := gocmp.Diff(ids, d.RuleIDs); diff != "" {
			t.Fatalf("rule ids (-model +kernel):\n%s", diff)
		}
		if len(matching) == 0 {
			return
		}
		top := matching[0]
		for _, r := range matching {
			if r.Decision != Deny {
				continue
			}
			outranked := top.Tier > r.Tier || (top.Tier == r.Tier && top.Priority > r.Priority)
			if !outranked && d.Outcome != Deny {
				t.Fatalf("deny rule %s (tier %v, priority %d) matches, nothing outranks it, yet the decision is %+v", r.ID, r.Tier, r.Priority, d)
			}
		}
		if top.Decision == Deny && (d.Outcome != Deny || d.Source != SourceRule || d.ReasonCode != top.ReasonCode) {
			t.Fatalf("deny rule %s decides, yet the decision is %+v", top.ID, d)
		}
		if top.Decision != Deny && d.Outcome == Deny && !(w.mode(w.req) == ModeReadOnly && !w.req.ReadOnly) {
			t.Fatalf("%s rule %s decides, yet the decision is %+v", top.Decision, top.ID, d)
		}
	})
}

// TestPropertyBypass: bypass never lifts a denial that came from a rule
// or a scope (unless a rule says it applies only in some modes), and
// without checkers it denies exactly those and allows everything else.
func TestPropertyBypass(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		w := drawWorld(t)
		def, byp := *w.req, *w.req
		def.Mode, byp.Mode = ModeDefault, ModeBypass
		dd, db := evaluate(t, w.k, &def), evaluate(t, w.k, &byp)
		modeRules := slices.ContainsFunc(w.rules, func(r *Rule) bool { return len(r.Modes) > 0 })
		if !modeRules && dd.Outcome == Deny && (dd.Source == SourceRule || dd.Source == SourceScope) &&
			(db.Outcome != Deny || db.Source != dd.Source || db.ReasonCode != dd.ReasonCode) {
			t.Fatalf("default mode: %+v\nbypass mode: %+v", dd, db)
		}
		matching := w.matching(&byp)
		wantDeny := w.missing(&byp) || (len(matching) > 0 && matching[0].Decision == Deny)
		switch {
		case wantDeny && db.Outcome != Deny:
			t.Fatalf("bypass should deny: %+v", db)
		case !wantDeny && db.Outcome != Allow:
			t.Fatalf("bypass should allow: %+v", db)
		}
	})
}

// TestPropertyDecisions: every decision has a reason code, a message and
// its mode; Explain agrees with Evaluate; read_only denies what is not
// read-only; an admin deny rule that matches everything always wins.
func TestPropertyDecisions(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		w := drawWorld(t)
		d := evaluate(t, w.k, w.req)
		if d.ReasonCode == "" || d.Message == "" || d.Mode != w.mode(w.req) {
			t.Fatalf("decision %+v (mode %s)", d, w.mode(w.req))
		}
		if len(d.RuleIDs) != len(d.RuleRefs) {
			t.Fatalf("rule ids %v, refs %v", d.RuleIDs, d.RuleRefs)
		}
		ex, err := w.k.Explain(context.Background(), w.req)
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(d, ex.Decision); diff != "" {
			t.Fatalf("Explain differs from Evaluate (-evaluate +explain):\n%s", diff)
		}
		if len(ex.Rules) != len(w.rules) {
			t.Fatalf("Explain lists %d rules, want %d", len(ex.Rules), len(w.rules))
		}
		if w.mode(w.req) == ModeReadOnly && !w.req.ReadOnly && d.Outcome != Deny {
			t.Fatalf("read_only mode, call not read-only: %+v", d)
		}
		// Deny rules are always inherited.
		req := *w.req
		req.Extra = []*Rule{{ID: "admin-deny-all", Tier: TierAdmin, Priority: 1 << 20, Decision: Deny, ReasonCode: "locked_down"}}
		d = evaluate(t, w.k, &req)
		if d.Outcome != Deny || (d.Source != SourceScope && d.ReasonCode != "locked_down") {
			t.Fatalf("an admin deny for everything: %+v", d)
		}
	})
}

// TestPropertyGlob: the glob fast path agrees with path.Match.
func TestPropertyGlob(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]rune("ab/_*"))
		pattern := rapid.StringOfN(alphabet, 1, 6, -1).Draw(t, "pattern")
		s := rapid.StringOfN(rapid.SampledFrom([]rune("ab/_")), 1, 6, -1).Draw(t, "name")
		g, err := compileGlobs([]string{pattern})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := path.Match(pattern, s)
		if got := g.match(s); got != want {
			t.Fatalf("glob %q on %q: %v, path.Match says %v", pattern, s, got, want)
		}
	})
}

// TestPropertyShell: on command lines built from known simple commands,
// a deny prefix rule matches when any of them matches and an allow prefix
// rule only when all do.
func TestPropertyShell(t *testing.T) {
	t.Parallel()
	deny, err := compileCommand(&CommandMatch{Prefixes: []string{"rm -rf"}})
	if err != nil {
		t.Fatal(err)
	}
	allow, err := compileCommand(&CommandMatch{Prefixes: []string{"ls"}})
	if err != nil {
		t.Fatal(err)
	}
	simple := []string{"ls", "ls -la", "rm -rf /", "rm -r x", "echo hi", "cat f", "'rm' -rf y", "ls rm -rf"}
	rapid.Check(t, func(t *rapid.T) {
		cmds := rapid.SliceOfN(rapid.SampledFrom(simple), 1, 5).Draw(t, "commands")
		var b strings.Builder
		anyRM, allLS := false, true
		for i, c := range cmds {
			if i > 0 {
				b.WriteString(rapid.SampledFrom([]string{" && ", " || ", "; ", " | ", "\n"}).Draw(t, "op"))
			}
			rm := strings.HasPrefix(c, "rm -rf") || strings.HasPrefix(c, "'rm' -rf")
			anyRM = anyRM || rm
			switch rapid.IntRange(0, 4).Draw(t, "wrap") {
			case 0:
				c = "(" + c + ")"
			case 1:
				c = "echo $(" + c + ")"
				allLS = false // echo is a simple command too
			case 2:
				c = "bash -c '" + strings.ReplaceAll(c, "'", `'\''`) + "'"
			}
			allLS = allLS && strings.HasPrefix(cmds[i], "ls")
			b.WriteString(c)
		}
		sc := parseShell(b.String())
		if sc.err != nil {
			t.Fatalf("%q: %v", b.String(), sc.err)
		}
		if got, _ := deny.match(sc, Deny, false); got != anyRM {
			t.Fatalf("deny rm -rf on %q: %v, want %v", b.String(), got, anyRM)
		}
		if got, _ := allow.match(sc, Allow, false); got != allLS {
			t.Fatalf("allow ls on %q: %v, want %v", b.String(), got, allLS)
		}
	})
}

// TestPropertyToolIndex: a kernel deciding many calls, with the rules
// each tool name can match memoized, decides each as explaining (which
// tries every rule in order) does, also past the memo's bound.
func TestPropertyToolIndex(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		w := drawWorld(t)
		names := append(slices.Clone(propTools), "", "d", "aa", "bab")
		if rapid.Bool().Draw(t, "memoFull") {
			w.k.forToolCount.Store(maxToolCandidates)
		}
		for range rapid.IntRange(1, 20).Draw(t, "calls") {
			req := *w.req
			req.ToolName = rapid.SampledFrom(names).Draw(t, "tool")
			d := evaluate(t, w.k, &req)
			ex, err := w.k.Explain(context.Background(), &req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := gocmp.Diff(ex.Decision, d); diff != "" {
				t.Fatalf("tool %q: Evaluate differs from Explain (-explain +evaluate):\n%s", req.ToolName, diff)
			}
		}
	})
}
