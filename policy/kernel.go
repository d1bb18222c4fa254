package policy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Input checker actions: what a flagged InputCheck does to the decision.
const (
	ActionDeny = "deny" // deny the call; nothing overrides it
	ActionAsk  = "ask"  // turn an allow into an ask (except in bypass mode)
	ActionWarn = "warn" // record the checker on the decision only
)

// KernelConfig configures a Kernel.
type KernelConfig struct {
	// Rules are the rules of every tier, from rule files (see
	// LoadRuleFiles) or built in code. Ids must be unique.
	Rules []*Rule
	// DefaultMode is the mode of calls whose session and agent set none;
	// empty is ModeDefault.
	DefaultMode Mode
	// AgentModes are agents' modes.
	AgentModes map[string]Mode
	// AgentScopes are the scopes agents are granted. An agent absent from
	// the map is unrestricted.
	AgentScopes map[string][]string
	// Principals are the known principals, by id. A principal absent
	// from the map has no roles and is unrestricted.
	Principals map[string]Principal
	// Checkers are the checkers rules, InputCheckers and AutoChecker name.
	Checkers map[string]Checker
	// InputCheckers are consulted on every call, in order.
	InputCheckers []InputCheck
	// AutoChecker names the checker auto mode consults for calls that
	// would ask; without one, auto mode asks as default mode does.
	AutoChecker string
	// Opaque is what a shell-like call gets when its command line runs
	// something the policy cannot see (an opaque command, see
	// OpaqueReason) and neither a deny rule nor a rule with
	// CommandMatch.Opaque decides it: Ask (the default) or Deny. It holds
	// in every mode: bypass does not turn it into allow (auto mode's
	// checker may). The policy cannot allow what it cannot see; a rule
	// with CommandMatch.Opaque can, in its own scope.
	Opaque Outcome
}

// Principal is what the kernel knows of a principal.
type Principal struct {
	Roles []string
	// Scopes are the principal's grant when Restricted; an unrestricted
	// principal is granted every scope.
	Scopes     []string
	Restricted bool
}

// InputCheck is a checker consulted on every call's input.
type InputCheck struct {
	Name string
	// Action is what a flagged input does: ActionDeny, ActionAsk or
	// ActionWarn.
	Action string
}

// WithDefaults returns c with DefaultMode and Opaque set when empty.
func (c KernelConfig) WithDefaults() KernelConfig {
	if c.DefaultMode == "" {
		c.DefaultMode = ModeDefault
	}
	if c.Opaque == "" {
		c.Opaque = Ask
	}
	return c
}

func (c *KernelConfig) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !c.DefaultMode.Valid() {
		bad("unknown default mode %q", c.DefaultMode)
	}
	if c.Opaque != Ask && c.Opaque != Deny {
		bad("opaque must be ask or deny, got %q: the policy cannot allow what it cannot see (a rule with command opaque can)", c.Opaque)
	}
	for _, agent := range slices.Sorted(maps.Keys(c.AgentModes)) {
		if m := c.AgentModes[agent]; !m.Valid() {
			bad("agent %q has unknown mode %q", agent, m)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Checkers)) {
		if c.Checkers[name] == nil {
			bad("checker %q is nil", name)
		}
	}
	for i, ic := range c.InputCheckers {
		if _, ok := c.Checkers[ic.Name]; !ok {
			bad("input checker %d names unknown checker %q", i, ic.Name)
		}
		switch ic.Action {
		case ActionDeny, ActionAsk, ActionWarn:
		default:
			bad("input checker %q has unknown action %q: use deny, ask or warn", ic.Name, ic.Action)
		}
	}
	if _, ok := c.Checkers[c.AutoChecker]; c.AutoChecker != "" && !ok {
		bad("auto checker %q is not a configured checker", c.AutoChecker)
	}
	seen := make(map[string]*Rule, len(c.Rules))
	for _, r := range c.Rules {
		if r == nil {
			bad("nil rule")
			continue
		}
		if first, dup := seen[r.ID]; dup {
			bad("duplicate rule id %q (%s and %s)", r.ID, cmp.Or(first.Source, "?"), cmp.Or(r.Source, "?"))
		}
		seen[r.ID] = r
		if _, ok := c.Checkers[r.Checker]; r.Checker != "" && !ok {
			bad("rule %q names unknown checker %q", r.ID, r.Checker)
		}
	}
	return errors.Join(errs...)
}

// Kernel is the policy evaluation point: rules in tiers, modes, scopes and
// checkers (see the package doc for the order it applies them in). It is
// immutable and safe for concurrent use.
type Kernel struct {
	cfg KernelConfig
	// rules are the kernel's rules in rank order.
	rules []ruleEntry
	// byTool holds, for each tool name, the rules (indexes into rules, in
	// rank order) that name it exactly and have no tool glob; general
	// holds the others, which must be tried on every call.
	byTool  map[string][]int32
	general []int32
	// forTool memoizes, by tool name, the rules (indexes into rules, in
	// rank order) whose tool matchers can match that name: byTool's and
	// the general rules whose globs match it. It is derived from the
	// immutable rules only, so sharing it across calls and goroutines is
	// safe; it holds at most maxToolCandidates names.
	forTool      sync.Map // string → []int32
	forToolCount atomic.Int32
}

// maxToolCandidates bounds Kernel.forTool: tool names come from the
// registry, but a model may call any name.
const maxToolCandidates = 1024

// ruleEntry is a rule with its compiled matchers.
type ruleEntry struct {
	r *Rule
	c *compiledRule
}

var _ Evaluator = (*Kernel)(nil)

// NewKernel checks cfg and builds a kernel. It compiles rules built in
// code without modifying them.
func NewKernel(cfg KernelConfig) (*Kernel, error) {
	cfg = cfg.WithDefaults()
	cfg.Rules = slices.Clone(cfg.Rules)
	cfg.AgentModes = maps.Clone(cfg.AgentModes)
	cfg.AgentScopes = maps.Clone(cfg.AgentScopes)
	cfg.Principals = maps.Clone(cfg.Principals)
	cfg.Checkers = maps.Clone(cfg.Checkers)
	cfg.InputCheckers = slices.Clone(cfg.InputCheckers)
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("invalid policy kernel config: %w", err)
	}
	k := &Kernel{cfg: cfg, byTool: make(map[string][]int32)}
	var errs []error
	for _, r := range cfg.Rules {
		c := r.compiled
		if c == nil {
			var err error
			if c, err = r.compile(); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		k.rules = append(k.rules, ruleEntry{r, c})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid policy kernel config: %w", errors.Join(errs...))
	}
	slices.SortStableFunc(k.rules, func(a, b ruleEntry) int { return compareRank(a.r, b.r) })
	for i, e := range k.rules {
		if len(e.c.tools.globs) > 0 || len(e.c.tools.exact) == 0 {
			k.general = append(k.general, int32(i))
			continue
		}
		for _, name := range slices.Compact(slices.Sorted(slices.Values(e.c.tools.exact))) {
			k.byTool[name] = append(k.byTool[name], int32(i))
		}
	}
	return k, nil
}

// toolCandidates returns the rules a call of tool name can match by its
// tool matchers, in rank order: the rules naming it exactly and the
// general rules (globs, or no tool matcher) whose tools match it.
func (k *Kernel) toolCandidates(name string) []int32 {
	if v, ok := k.forTool.Load(name); ok {
		return v.([]int32)
	}
	exact := k.byTool[name]
	out := make([]int32, 0, len(exact)+len(k.general))
	general := k.general
	for len(exact) > 0 || len(general) > 0 {
		var i int32
		if len(general) == 0 || (len(exact) > 0 && exact[0] < general[0]) {
			i, exact = exact[0], exact[1:]
		} else {
			i, general = general[0], general[1:]
			if t := &k.rules[i].c.tools; !t.empty() && !t.match(name) {
				continue
			}
		}
		out = append(out, i)
	}
	if k.forToolCount.Add(1) <= maxToolCandidates {
		k.forTool.Store(name, out)
	}
	return out
}

// Rules returns the kernel's rules, highest ranked first.
func (k *Kernel) Rules() []*Rule {
	out := make([]*Rule, len(k.rules))
	for i, e := range k.rules {
		out[i] = e.r
	}
	return out
}

// Evaluate implements Evaluator.
func (k *Kernel) Evaluate(ctx context.Context, req *Request) (Decision, error) {
	return k.decide(ctx, req, nil)
}

// modeOf returns the call's mode and where it came from: the session,
// the agent or the kernel's default.
func (k *Kernel) modeOf(req *Request) (Mode, string) {
	if req.Mode != "" {
		return req.Mode, "session"
	}
	mode, from := k.agentMode(req.Agent)
	for _, p := range req.ParentAgents {
		// A child is never less restricted than the agents above it.
		if pm, pfrom := k.agentMode(p); pm.strictness() > mode.strictness() {
			mode, from = pm, "parent agent "+p+" ("+pfrom+")"
		}
	}
	return mode, from
}

// agentMode returns an agent's own mode and where it came from.
func (k *Kernel) agentMode(agent string) (Mode, string) {
	if m, ok := k.cfg.AgentModes[agent]; ok && m != "" {
		return m, "agent"
	}
	return k.cfg.DefaultMode, "default"
}

// modeSource words where modeOf found a mode.
func modeSource(from string, req *Request) string {
	switch from {
	case "session":
		return "the session"
	case "agent":
		return "agent " + req.Agent
	case "default":
		return "the kernel default"
	}
	return from // inherited: "parent NAME (agent|default)"
}

// strictness orders modes by how much they let through without a person:
// read_only the least, bypass the most; an unknown mode counts as the
// strictest (it denies everything).
func (m Mode) strictness() int {
	switch m {
	case ModeBypass:
		return 0
	case ModeAcceptEdits:
		return 1
	case ModeAuto:
		return 2
	case ModeDefault:
		return 3
	case ModeReadOnly:
		return 4
	}
	return 5
}

// decide evaluates req; tr, when not nil, collects the explanation.
func (k *Kernel) decide(ctx context.Context, req *Request, tr *Explanation) (Decision, error) {
	if req == nil {
		return Decision{}, errors.New("evaluating policy: nil request")
	}
	c := newCall(ctx, k, req, tr)
	defer c.release()

	// The steps are numbered as in the package doc.
	// 1. Mode.
	mode, modeFrom := k.modeOf(req)
	c.mode = mode
	if tr != nil {
		tr.step("mode", "%s (from %s)", mode, modeSource(modeFrom, req))
	}
	if !mode.Valid() {
		return Decision{Outcome: Deny, Source: SourceMode, ReasonCode: "mode_unknown", Mode: mode,
			Message: fmt.Sprintf("unknown mode %q (from %s); denying the call", mode, modeSource(modeFrom, req))}, nil
	}

	// 2. Roles.
	if c.roles == nil {
		c.roles = k.cfg.Principals[req.PrincipalID].Roles
		if tr != nil {
			tr.step("roles", "%s (from principal %s)", list(c.roles), orNone(req.PrincipalID))
		}
	} else if tr != nil {
		tr.step("roles", "%s (from the request)", list(c.roles))
	}

	// 3. Scopes.
	missing := k.missingScopes(req, tr)

	// 4. Rules, or the mode when none matches. Explaining tries the rules
	// even when a scope is missing.
	extra, err := k.extraRules(req)
	if err != nil {
		return Decision{}, err
	}
	var d Decision
	decided, byOpaqueRule := false, false
	if len(missing) == 0 || tr != nil {
		var buf [8]*ruleEntry
		matched := k.matchRules(c, extra, buf[:0])
		if len(missing) == 0 && len(matched) > 0 {
			d, decided = ruleDecision(matched), true
			byOpaqueRule = matched[0].c.command != nil && matched[0].c.command.opaque
		}
	}
	if len(missing) > 0 {
		d = Decision{Outcome: Deny, Source: SourceScope, ReasonCode: "scope_missing", MissingScopes: missing,
			Message: fmt.Sprintf("%s needs scopes it is not granted: %s", req.ToolName, strings.Join(missing, ", "))}
		decided = true
	}
	if !decided {
		d = fallback(mode, req)
	}
	// 4b. A command line the policy cannot see into: what no rule can
	// see, no rule or mode allows.
	if req.Command != "" && d.Outcome != Deny && !byOpaqueRule {
		k.opaqueLine(c, &d)
	}
	d.Mode = mode

	// 5. Read-only mode denies what is not read-only, before any checker
	// runs.
	if mode == ModeReadOnly && !req.ReadOnly && d.Outcome != Deny {
		d.Outcome, d.Source, d.ReasonCode = Deny, SourceMode, "mode_read_only"
		d.Message = fmt.Sprintf("read_only mode denies %s, which is not read-only", req.ToolName)
	}

	// 6. Input checkers.
	k.inputChecks(c, &d)

	// 7. Mode again.
	switch {
	case d.Outcome == Ask && mode == ModeBypass && d.Source == SourceRule:
		d.Outcome, d.Source, d.ReasonCode = Allow, SourceMode, "mode_bypass"
		d.Message = fmt.Sprintf("bypass mode allows what rule %s asks for", d.RuleIDs[0])
		if tr != nil {
			tr.step("mode", "bypass turns the rule's ask into allow")
		}
	case d.Outcome == Ask && mode == ModeAuto && (d.Source == SourceRule || d.Source == SourceMode || c.opaque):
		k.auto(c, &d)
	default:
		if tr != nil {
			tr.step("mode", "%s mode keeps the decision", mode)
		}
	}

	// 8. A wider sandbox is granted only by a rule (or a person), in
	// every mode.
	if req.Intent == IntentEscalate && d.Outcome == Allow && d.Source != SourceRule {
		d.Outcome, d.Source, d.ReasonCode = Ask, SourceMode, ReasonEscalationNeedsApproval
		d.Message = fmt.Sprintf("no rule allows rerunning %s under a wider sandbox, and %s mode does not grant one by itself; a person decides", req.ToolName, mode)
		if tr != nil {
			tr.step("escalate", "no rule allows intent escalate; the call asks")
		}
	}

	// A checker that failed fails the call closed.
	if c.failed != nil && d.Outcome != Deny {
		d.Outcome, d.Source, d.ReasonCode, d.Checker = Deny, SourceChecker, "checker_error", c.failed.name
		d.Message = fmt.Sprintf("checker %s failed, so the call is denied: %v", c.failed.name, c.failed.err)
		if tr != nil {
			tr.step("checkers", "checker %s failed; denying the call", c.failed.name)
		}
	}
	return d, nil
}

// opaqueLine gives a shell-like call whose command line has an opaque
// command the kernel's Opaque decision.
func (k *Kernel) opaqueLine(c *call, d *Decision) {
	cmd, why := c.shellCmd().opaque()
	if why == "" {
		if c.tr != nil {
			c.tr.step("opaque", "no simple command is opaque")
		}
		return
	}
	c.opaque = true
	what := "the command line"
	if cmd != nil {
		what = fmt.Sprintf("simple command %q", cmd.text)
	}
	does := "asks"
	if k.cfg.Opaque == Deny {
		does = "denies"
	}
	*d = Decision{Outcome: k.cfg.Opaque, Source: SourceHost, ReasonCode: ReasonOpaqueCommand,
		Message: fmt.Sprintf("%s is opaque: %s (%s); the policy cannot see what it runs, so it %s", what, why.Describe(), why, does)}
	if c.tr != nil {
		c.tr.step("opaque", "%s is opaque: %s (%s); the opaque setting (%s) decides", what, why.Describe(), why, k.cfg.Opaque)
	}
}

// missingScopes returns the scopes req needs that the agent's and the
// principal's grants do not both hold.
func (k *Kernel) missingScopes(req *Request, tr *Explanation) []string {
	if len(req.RequiredScopes) == 0 {
		if tr != nil {
			tr.step("scope", "the tool requires no scopes")
		}
		return nil
	}
	agentGrant, agentLimited := k.cfg.AgentScopes[req.Agent]
	p := k.cfg.Principals[req.PrincipalID]
	var missing []string
	for _, s := range req.RequiredScopes {
		if (agentLimited && !slices.Contains(agentGrant, s)) || (p.Restricted && !slices.Contains(p.Scopes, s)) {
			if !slices.Contains(missing, s) {
				missing = append(missing, s)
			}
		}
	}
	if tr != nil {
		var grants []string
		if agentLimited {
			grants = append(grants, fmt.Sprintf("agent %s grants %s", req.Agent, list(agentGrant)))
		} else {
			grants = append(grants, fmt.Sprintf("agent %s is unrestricted", cmp.Or(req.Agent, "(none)")))
		}
		if p.Restricted {
			grants = append(grants, fmt.Sprintf("principal %s grants %s", req.PrincipalID, list(p.Scopes)))
		} else {
			grants = append(grants, fmt.Sprintf("principal %s is unrestricted", cmp.Or(req.PrincipalID, "(none)")))
		}
		verdict := "all granted"
		if len(missing) > 0 {
			verdict = "missing " + list(missing) + "; the call is denied"
		}
		tr.step("scope", "requires %s; %s; %s", list(req.RequiredScopes), strings.Join(grants, ", "), verdict)
	}
	return missing
}

// fallback is what mode decides for a call no rule decides.
func fallback(mode Mode, req *Request) Decision {
	d := Decision{Source: SourceMode}
	switch {
	case mode == ModeBypass:
		d.Outcome, d.ReasonCode = Allow, "mode_bypass"
		d.Message = fmt.Sprintf("no rule decides %s; bypass mode allows it", req.ToolName)
	case mode == ModeReadOnly && req.ReadOnly:
		d.Outcome, d.ReasonCode = Allow, "mode_read_only_allowed"
		d.Message = fmt.Sprintf("no rule decides %s; read_only mode allows read-only tools", req.ToolName)
	case mode == ModeReadOnly:
		d.Outcome, d.ReasonCode = Deny, "mode_read_only"
		d.Message = fmt.Sprintf("read_only mode denies %s, which is not read-only", req.ToolName)
	case req.Destructive:
		d.Outcome, d.ReasonCode = Ask, "destructive_requires_approval"
		d.Message = fmt.Sprintf("%s is destructive and no rule allows it; %s mode asks", req.ToolName, mode)
	case mode == ModeAcceptEdits:
		d.Outcome, d.ReasonCode = Allow, "mode_accept_edits"
		d.Message = fmt.Sprintf("no rule decides %s; accept_edits mode allows tools that are not destructive", req.ToolName)
	case req.ReadOnly:
		d.Outcome, d.ReasonCode = Allow, "mode_default_read_only"
		d.Message = fmt.Sprintf("no rule decides %s; %s mode allows read-only tools", req.ToolName, mode)
	default:
		d.Outcome, d.ReasonCode = Ask, "mode_default_ask"
		d.Message = fmt.Sprintf("no rule decides %s; %s mode asks", req.ToolName, mode)
	}
	return d
}

// inputChecks consults the input checkers, unless the call is already
// denied.
func (k *Kernel) inputChecks(c *call, d *Decision) {
	if len(k.cfg.InputCheckers) == 0 {
		if c.tr != nil {
			c.tr.step("checkers", "no input checkers are configured")
		}
		return
	}
	if d.Outcome == Deny {
		if c.tr != nil {
			c.tr.step("checkers", "skipped: the call is already denied")
		}
		return
	}
	for _, ic := range k.cfg.InputCheckers {
		run := c.check(ic.Name)
		switch {
		case run.err != nil:
			if c.tr != nil {
				c.tr.step("checkers", "checker %s (%s) failed: %v", ic.Name, ic.Action, run.err)
			}
			return // decide denies the call
		case !run.res.Flagged:
			if c.tr != nil {
				c.tr.step("checkers", "checker %s (%s) does not flag the input", ic.Name, ic.Action)
			}
		case ic.Action == ActionDeny:
			d.Outcome, d.Source, d.ReasonCode, d.Checker = Deny, SourceChecker, run.res.ReasonCode, ic.Name
			d.Message = fmt.Sprintf("checker %s flagged the input: %s", ic.Name, cmp.Or(run.res.Message, run.res.ReasonCode))
			if c.tr != nil {
				c.tr.step("checkers", "checker %s (deny) flags the input (%s); the call is denied", ic.Name, run.res.ReasonCode)
			}
			return
		case ic.Action == ActionAsk && d.Outcome == Allow && c.mode != ModeBypass:
			d.Outcome, d.Source, d.ReasonCode, d.Checker = Ask, SourceChecker, run.res.ReasonCode, ic.Name
			d.Message = fmt.Sprintf("checker %s flagged the input: %s", ic.Name, cmp.Or(run.res.Message, run.res.ReasonCode))
			if c.tr != nil {
				c.tr.step("checkers", "checker %s (ask) flags the input (%s); the call asks", ic.Name, run.res.ReasonCode)
			}
		default:
			// warn, or an ask that changes nothing: record it.
			if d.Checker == "" {
				d.Checker = ic.Name
			}
			d.Message += fmt.Sprintf(" (checker %s flagged %s)", ic.Name, run.res.ReasonCode)
			if c.tr != nil {
				c.tr.step("checkers", "checker %s (%s) flags the input (%s); recorded only", ic.Name, ic.Action, run.res.ReasonCode)
			}
		}
	}
}

// auto lets the auto checker decide a call that would ask.
func (k *Kernel) auto(c *call, d *Decision) {
	name := k.cfg.AutoChecker
	if name == "" {
		d.Message += " (auto mode has no checker configured, so it asks as default mode does)"
		if c.tr != nil {
			c.tr.step("mode", "auto mode has no checker; the call asks")
		}
		return
	}
	run := c.check(name)
	switch {
	case run.err != nil:
		if c.tr != nil {
			c.tr.step("mode", "auto checker %s failed: %v", name, run.err)
		}
		return // decide denies the call
	case run.res.Flagged:
		d.Outcome, d.Source, d.ReasonCode, d.Checker = Deny, SourceChecker, run.res.ReasonCode, name
		d.Message = fmt.Sprintf("auto mode: checker %s flagged %s: %s", name, c.req.ToolName, cmp.Or(run.res.Message, run.res.ReasonCode))
		if c.tr != nil {
			c.tr.step("mode", "auto checker %s flags the call (%s); denied", name, run.res.ReasonCode)
		}
	default:
		d.Outcome, d.Source, d.ReasonCode, d.Checker = Allow, SourceChecker, "auto_checker_allowed", name
		d.Message = fmt.Sprintf("auto mode: checker %s did not flag %s", name, c.req.ToolName)
		if c.tr != nil {
			c.tr.step("mode", "auto checker %s does not flag the call; allowed", name)
		}
	}
}

// list formats names for messages: [a, b].
func list[S ~string](names []S) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(n))
	}
	b.WriteByte(']')
	return b.String()
}

func orNone(s string) string { return cmp.Or(s, "(none)") }
