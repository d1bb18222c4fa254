package policy

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

var (
	// idPattern is what rule ids must match.
	idPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)
	// reasonCodePattern is what reason codes must match.
	reasonCodePattern = regexp.MustCompile(`^[a-z0-9_]+$`)
)

// allModes lists the modes, in the order messages name them.
var allModes = []Mode{ModeDefault, ModeReadOnly, ModeAcceptEdits, ModeAuto, ModeBypass}

// Valid reports whether m is one of the modes.
func (m Mode) Valid() bool { return slices.Contains(allModes, m) }

// tierNames are the tiers as rule files write them, highest first.
var tierNames = []string{"admin", "workspace", "user", "agent"}

// String returns the tier's name as rule files write it: admin,
// workspace, user or agent.
func (t Tier) String() string {
	switch t {
	case TierAdmin:
		return "admin"
	case TierWorkspace:
		return "workspace"
	case TierUser:
		return "user"
	case TierAgent:
		return "agent"
	}
	return fmt.Sprintf("Tier(%d)", int(t))
}

// ParseTier returns the tier a rule file names: admin, workspace, user or
// agent.
func ParseTier(s string) (Tier, error) {
	switch s {
	case "admin":
		return TierAdmin, nil
	case "workspace":
		return TierWorkspace, nil
	case "user":
		return TierUser, nil
	case "agent":
		return TierAgent, nil
	}
	return 0, fmt.Errorf("unknown tier %q: use admin, workspace, user or agent", s)
}

// compiledRule is a rule's matchers, prepared once.
type compiledRule struct {
	tools, mcpServers, agents, intents, principals, roles globSet
	// annotations are the rule's annotation matchers in the order of
	// allAnnotations.
	annotations []annotationWant
	command     *commandMatcher
	when        *whenProgram
	// message is the decision message when the rule has none.
	message string
}

// annotationWant is one annotation matcher: the annotation and the value
// the call must have.
type annotationWant struct {
	name Annotation
	want bool
}

// globSet matches names against path.Match globs.
type globSet struct {
	exact []string // patterns without meta characters
	globs []glob
}

// glob is a compiled path.Match pattern. The common shapes, one star and
// no other meta character ("read_*", "*_ticket", "*"), match without
// path.Match.
type glob struct {
	pattern        string
	simple         bool
	prefix, suffix string // around the star of a simple glob
}

func (g *glob) match(s string) bool {
	if g.simple {
		// A star matches any run of characters but '/'.
		return len(s) >= len(g.prefix)+len(g.suffix) &&
			strings.HasPrefix(s, g.prefix) && strings.HasSuffix(s, g.suffix) &&
			strings.IndexByte(s[len(g.prefix):len(s)-len(g.suffix)], '/') < 0
	}
	ok, _ := path.Match(g.pattern, s)
	return ok
}

func hasMeta(p string) bool { return strings.ContainsAny(p, `*?[\`) }

// compileGlobs checks patterns and sorts them into exact names and globs.
func compileGlobs(patterns []string) (globSet, error) {
	var g globSet
	for _, p := range patterns {
		if !hasMeta(p) {
			g.exact = append(g.exact, p)
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			return globSet{}, fmt.Errorf("invalid glob %q: %w", p, err)
		}
		gl := glob{pattern: p}
		if i := strings.IndexByte(p, '*'); strings.Count(p, "*") == 1 && !strings.ContainsAny(p, `?[\`) {
			gl.simple, gl.prefix, gl.suffix = true, p[:i], p[i+1:]
		}
		g.globs = append(g.globs, gl)
	}
	return g, nil
}

func (g *globSet) empty() bool { return len(g.exact) == 0 && len(g.globs) == 0 }

// match reports whether s matches a pattern. An empty s (a call without an
// MCP server, say) matches none.
func (g *globSet) match(s string) bool {
	if s == "" {
		return false
	}
	for _, e := range g.exact {
		if e == s {
			return true
		}
	}
	for i := range g.globs {
		if g.globs[i].match(s) {
			return true
		}
	}
	return false
}

// matchAny reports whether any of ss matches a pattern.
func (g *globSet) matchAny(ss []string) bool {
	return slices.ContainsFunc(ss, g.match)
}

// Compile checks the rule and prepares its matchers: its globs, its
// command regex and its when expression. ParseRules compiles the rules it
// returns; call Compile on a rule built in code (a rule added by an
// approval, say) before sharing it, so that each evaluation need not
// compile it again. Compile must not run concurrently with an evaluation
// that uses the rule.
func (r *Rule) Compile() error {
	c, err := r.compile()
	if err != nil {
		return err
	}
	r.compiled = c
	return nil
}

// compile checks the rule and returns its compiled matchers without
// storing them.
func (r *Rule) compile() (*compiledRule, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}
	if !idPattern.MatchString(r.ID) {
		bad("invalid rule id %q: use letters, digits, '_', '.', ':' or '-'", r.ID)
	}
	if r.Tier < TierAgent || r.Tier > TierAdmin {
		bad("tier must be admin, workspace, user or agent, got %v", r.Tier)
	}
	switch r.Decision {
	case Allow, Deny, Ask:
	default:
		bad("decision must be allow, deny or ask, got %q", r.Decision)
	}
	if !reasonCodePattern.MatchString(r.ReasonCode) {
		bad("reason code must be lowercase letters, digits and '_', got %q", r.ReasonCode)
	}
	for _, m := range r.Modes {
		if !m.Valid() {
			bad("unknown mode %q", m)
		}
	}
	c := &compiledRule{message: fmt.Sprintf("rule %s %s the call", r.ID, verb(r.Decision))}
	for _, g := range []struct {
		dst  *globSet
		src  []string
		name string
	}{
		{&c.tools, r.Tools, "tools"},
		{&c.mcpServers, r.MCPServers, "mcp_servers"},
		{&c.agents, r.Agents, "agents"},
		{&c.intents, r.Intents, "intents"},
		{&c.principals, r.Principals, "principals"},
		{&c.roles, r.Roles, "roles"},
	} {
		var err error
		if *g.dst, err = compileGlobs(g.src); err != nil {
			bad("%s: %w", g.name, err)
		}
	}
	for a := range r.Annotations {
		if !a.Valid() {
			bad("annotations: unknown annotation %q; use %s", a, annotationNames())
		}
	}
	for _, a := range allAnnotations {
		if want, ok := r.Annotations[a]; ok {
			c.annotations = append(c.annotations, annotationWant{a, want})
		}
	}
	if r.Command != nil {
		var err error
		if c.command, err = compileCommand(r.Command); err != nil {
			bad("%w", err)
		}
	}
	if r.When != "" {
		var err error
		if c.when, err = compileWhen(r.When); err != nil {
			bad("when: %w", err)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("rule %q: %w", r.ID, errors.Join(errs...))
	}
	return c, nil
}
