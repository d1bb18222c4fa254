package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// decisionRank orders decisions for ties: deny beats ask beats allow.
func decisionRank(o Outcome) int {
	switch o {
	case Deny:
		return 3
	case Ask:
		return 2
	case Allow:
		return 1
	}
	return 0
}

// compareRank orders rules by rank, highest first: higher tier, then
// higher priority, then deny, ask, allow.
func compareRank(a, b *Rule) int {
	return cmp.Or(
		cmp.Compare(b.Tier, a.Tier),
		cmp.Compare(b.Priority, a.Priority),
		cmp.Compare(decisionRank(b.Decision), decisionRank(a.Decision)),
	)
}

// extraRules returns the request's extra rules that apply to its session,
// compiled, in rank order.
func (k *Kernel) extraRules(req *Request) ([]ruleEntry, error) {
	if len(req.Extra) == 0 {
		return nil, nil
	}
	out := make([]ruleEntry, 0, len(req.Extra))
	for _, r := range req.Extra {
		if r == nil {
			continue
		}
		c := r.compiled
		if c == nil {
			var err error
			if c, err = r.compile(); err != nil {
				return nil, fmt.Errorf("compiling extra rule: %w", err)
			}
		}
		if _, ok := k.cfg.Checkers[r.Checker]; r.Checker != "" && !ok {
			return nil, fmt.Errorf("extra rule %q names unknown checker %q", r.ID, r.Checker)
		}
		out = append(out, ruleEntry{r, c})
	}
	slices.SortStableFunc(out, func(a, b ruleEntry) int { return compareRank(a.r, b.r) })
	return out, nil
}

// matchRules returns the rules that match the call, in rank order.
// Evaluate tries only the rules the call's tool name can match (see
// toolCandidates); explaining tries them all, recording why each did or
// did not match.
func (k *Kernel) matchRules(c *call, extra []ruleEntry, matched []*ruleEntry) []*ruleEntry {
	if c.tr != nil {
		for i := range k.rules {
			if c.matchTraced(&k.rules[i]) {
				matched = append(matched, &k.rules[i])
			}
		}
	} else {
		for _, i := range k.toolCandidates(c.req.ToolName) {
			if ok, _ := c.match(&k.rules[i], false); ok {
				matched = append(matched, &k.rules[i])
			}
		}
	}
	// Merge the extra rules in; the kernel's rule comes first on a tie.
	for i := range extra {
		e := &extra[i]
		ok := false
		if c.tr != nil {
			ok = c.matchTraced(e)
		} else {
			ok, _ = c.match(e, false)
		}
		if !ok {
			continue
		}
		at, _ := slices.BinarySearchFunc(matched, e, func(m, e *ruleEntry) int {
			if r := compareRank(m.r, e.r); r != 0 {
				return r
			}
			return -1
		})
		matched = slices.Insert(matched, at, e)
	}
	if c.tr != nil {
		c.tr.sortRules()
		switch len(matched) {
		case 0:
			c.tr.step("rules", "no rule matches")
		default:
			c.tr.step("rules", "%d rule(s) match; %s (%s, priority %d, %s) ranks first",
				len(matched), matched[0].r.ID, matched[0].r.Tier, matched[0].r.Priority, matched[0].r.Decision)
		}
	}
	return matched
}

// matchTraced matches e and records the result in the explanation.
func (c *call) matchTraced(e *ruleEntry) bool {
	ok, why := c.match(e, true)
	dependent := (e.c.command != nil || e.c.when != nil || e.r.Checker != "") && c.matchFields(e.r, e.c) == matchOK
	c.tr.Rules = append(c.tr.Rules, RuleTrace{Rule: refOf(e.r), Decision: e.r.Decision, Priority: e.r.Priority, Matched: ok, Why: why,
		InputDependent: dependent})
	return ok
}

// match reports whether rule e matches the call and, when why is set and
// it does not, why not. Matchers run cheapest first; the reasons are
// formatted only when asked for.
func (c *call) match(e *ruleEntry, why bool) (bool, string) {
	r, rc, req := e.r, e.c, c.req
	if m := c.matchFields(r, rc); m != matchOK {
		if !why {
			return false, ""
		}
		return false, c.missReason(m, r)
	}
	if rc.command != nil {
		if req.Command == "" {
			if !why {
				return false, ""
			}
			return false, "the call has no command line for command " + rc.command.desc
		}
		if ok, reason := rc.command.match(c.shellCmd(), r.Decision, why); !ok {
			return false, reason
		}
	}
	if rc.when != nil {
		ok, err := rc.when.eval(c)
		switch {
		case err != nil && r.Decision != Allow:
			// Fail closed: a deny or ask rule whose condition cannot be
			// evaluated (a key the input lacks, say) applies.
			if !why {
				return true, ""
			}
			article := "a "
			if r.Decision == Ask {
				article = "an "
			}
			return true, "cel error: " + err.Error() + "; " + article + string(r.Decision) + " rule whose condition cannot be evaluated applies"
		case !why && (err != nil || !ok):
			return false, ""
		case err != nil:
			return false, "cel error: " + err.Error()
		case !ok:
			return false, "when: " + rc.when.expr + " is false"
		}
	}
	if r.Checker != "" {
		run := c.check(r.Checker)
		switch {
		case !why && (run.err != nil || !run.res.Flagged):
			return false, ""
		case run.err != nil:
			return false, fmt.Sprintf("checker %s failed: %v", r.Checker, run.err)
		case !run.res.Flagged:
			return false, fmt.Sprintf("checker %s does not flag the input", r.Checker)
		}
	}
	return true, ""
}

// fieldMatch says which of a rule's name matchers a call misses.
type fieldMatch uint8

const (
	matchOK fieldMatch = iota
	missSession
	missTool
	missMode
	missAgent
	missPrincipal
	missRoles
	missIntent
	missMCPServer
	missAnnotations
)

// matchFields applies the rule's matchers of names and modes.
func (c *call) matchFields(r *Rule, rc *compiledRule) fieldMatch {
	req := c.req
	switch {
	case r.SessionID != "" && r.SessionID != req.SessionID:
		return missSession
	case !rc.tools.empty() && !rc.tools.match(req.ToolName):
		return missTool
	case len(r.Modes) > 0 && !slices.Contains(r.Modes, c.mode):
		return missMode
	case !rc.agents.empty() && !rc.agents.match(req.Agent) &&
		// A parent's deny and ask rules bind its children; its allow
		// rules do not.
		(r.Decision == Allow || !rc.agents.matchAny(req.ParentAgents)):
		return missAgent
	case !rc.principals.empty() && !rc.principals.match(req.PrincipalID):
		return missPrincipal
	case !rc.roles.empty() && !rc.roles.matchAny(c.roles):
		return missRoles
	case !rc.intents.empty() && !rc.intents.match(req.Intent):
		return missIntent
	case !rc.mcpServers.empty() && !rc.mcpServers.match(req.MCPServer):
		return missMCPServer
	case !matchAnnotations(rc.annotations, req):
		return missAnnotations
	}
	return matchOK
}

// missReason words what matchFields found.
func (c *call) missReason(m fieldMatch, r *Rule) string {
	req := c.req
	switch m {
	case missSession:
		return fmt.Sprintf("rule applies only to session %s, not %s", r.SessionID, orNone(req.SessionID))
	case missTool:
		return fmt.Sprintf("tool %s does not match %s", req.ToolName, list(r.Tools))
	case missMode:
		return fmt.Sprintf("mode %s is not in %s", c.mode, list(r.Modes))
	case missAgent:
		return fmt.Sprintf("agent %s does not match %s", orNone(req.Agent), list(r.Agents))
	case missPrincipal:
		return fmt.Sprintf("principal %s does not match %s", orNone(req.PrincipalID), list(r.Principals))
	case missRoles:
		return fmt.Sprintf("roles %s include none of %s", list(c.roles), list(r.Roles))
	case missIntent:
		return fmt.Sprintf("intent %s does not match %s", orNone(req.Intent), list(r.Intents))
	case missMCPServer:
		return fmt.Sprintf("mcp server %s does not match %s", orNone(req.MCPServer), list(r.MCPServers))
	case missAnnotations:
		var misses []string
		for _, a := range allAnnotations {
			if want, ok := r.Annotations[a]; ok && a.of(req) != want {
				misses = append(misses, fmt.Sprintf("%s is %t, not %t", a, !want, want))
			}
		}
		return fmt.Sprintf("annotations of tool %s: %s", req.ToolName, strings.Join(misses, "; "))
	}
	return ""
}

// matchAnnotations reports whether every annotation matcher holds on req.
func matchAnnotations(want []annotationWant, req *Request) bool {
	for _, a := range want {
		if a.name.of(req) != a.want {
			return false
		}
	}
	return true
}

// ruleDecision is the decision of the first matched rule; RuleRefs list
// it first, then the other matched rules in rank order.
func ruleDecision(matched []*ruleEntry) Decision {
	r := matched[0].r
	d := Decision{
		Outcome:    r.Decision,
		Source:     SourceRule,
		ReasonCode: r.ReasonCode,
		Message:    r.Message,
		RuleIDs:    make([]string, len(matched)),
		RuleRefs:   make([]RuleRef, len(matched)),
	}
	if d.Message == "" {
		d.Message = matched[0].c.message
	}
	for i, m := range matched {
		d.RuleIDs[i] = m.r.ID
		d.RuleRefs[i] = refOf(m.r)
	}
	return d
}

func refOf(r *Rule) RuleRef { return RuleRef{ID: r.ID, Tier: r.Tier, Source: r.Source} }

func verb(o Outcome) string {
	switch o {
	case Allow:
		return "allows"
	case Deny:
		return "denies"
	}
	return "asks for"
}
