package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/internal/yamlpos"
	"github.com/agentrt/agentrt/runtype"
)

// The keys of the policy section's mappings.
var (
	policyKeys    = []string{"mode", "rules", "principals", "checkers", "input_checks", "output_checks", "auto_checker", "approval_timeout", "opaque", "self_approval", "fork_grants"}
	principalKeys = []string{"roles", "scopes"}
	checkerKeys   = []string{"command", "timeout", "env"}
	checkKeys     = []string{"checker", "action"}
)

// accessNamePattern is what role and scope names must match.
var accessNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// checkerRef is a checker the policy section names, resolved once every
// checker is known.
type checkerRef struct {
	where string // as policy.input_checks[0]
	name  string
	pos   yamlpos.Pos
}

// policy decodes the policy section. A null section turns the kernel on
// with every default, as `policy: {}` does; nil means the section is not a
// mapping, which is reported.
func (d *decoder) policy(e yamlpos.Field) *Policy {
	m, st := d.mapping(e, "policy")
	if st == valBad {
		return nil
	}
	p := &Policy{
		Mode:            ModeDefault,
		Principals:      make(map[string]*Principal),
		Checkers:        make(map[string]*Checker),
		ApprovalTimeout: DefaultApprovalTimeout,
		Opaque:          ActionAsk,
		SelfApproval:    SelfApprovalAllow,
	}
	var refs []checkerRef
	for _, f := range m.Fields() {
		label := "policy." + f.Key
		switch f.Key {
		case "mode":
			if s, st := d.mode(f, label); st == valOK {
				p.Mode = s
			}
		case "rules":
			p.RuleFiles = d.ruleFiles(f, label)
		case "principals":
			d.principals(f, p.Principals)
		case "checkers":
			d.checkers(f, p.Checkers)
		case "input_checks":
			p.InputChecks = d.checks(f, label, InputActions, "output_checks", OutputActions, &refs)
		case "output_checks":
			p.OutputChecks = d.checks(f, label, OutputActions, "input_checks", InputActions, &refs)
		case "auto_checker":
			if s, st := d.str(f, label); st == valOK {
				p.AutoChecker = s
				refs = append(refs, checkerRef{where: label, name: s, pos: f.Value().Pos})
			}
		case "approval_timeout":
			if v, st := d.approvalTimeout(f, label); st == valOK {
				p.ApprovalTimeout = v
			}
		case "opaque":
			if s, st := d.str(f, label); st == valOK {
				if !slices.Contains(OpaqueDecisions, s) {
					hint := didYouMean(s, OpaqueDecisions)
					if s == "allow" {
						hint = " (the policy cannot allow what it cannot see; a rule with command: {opaque: true} can)"
					}
					d.errorAt(f.Value().Pos, "%s must be ask or deny, got %q%s", label, s, hint)
					break
				}
				p.Opaque = s
			}
		case "self_approval":
			if v, st := d.oneOf(f, label, SelfApprovals); st == valOK {
				p.SelfApproval = v
			}
		case "fork_grants":
			if v, st := d.oneOf(f, label, ForkGrantsValues); st == valOK {
				p.ForkGrants = v
			}
		default:
			d.unknownKey(f, "policy", policyKeys)
		}
	}
	d.checkCheckerRefs(refs, p.Checkers)
	return p
}

// mode decodes f's value as one of Modes.
func (d *decoder) mode(f yamlpos.Field, label string) (string, status) {
	s, st := d.str(f, label)
	if st != valOK || slices.Contains(Modes, s) {
		return s, st
	}
	hint := didYouMean(s, Modes)
	if s == "plan" {
		hint = "; did you mean read_only (plan mode)?"
	}
	d.errorAt(f.Value().Pos, "%s must be one of %s, got %q%s", label, strings.Join(Modes, ", "), s, hint)
	return "", valBad
}

// checkCheckerRefs reports checkers named but neither defined nor builtin.
func (d *decoder) checkCheckerRefs(refs []checkerRef, defined map[string]*Checker) {
	known := make([]string, 0, len(defined)+len(BuiltinCheckers))
	for name := range defined {
		known = append(known, name)
	}
	slices.Sort(known)
	known = append(known, BuiltinCheckers...)
	for _, r := range refs {
		if defined[r.name] != nil || slices.Contains(BuiltinCheckers, r.name) {
			continue
		}
		hint := didYouMean(r.name, known)
		if hint == "" {
			hint = " (the builtins are " + strings.Join(BuiltinCheckers, " and ") + ")"
		}
		d.errorAt(r.pos, "%s uses checker %q, which is neither defined under policy.checkers nor a builtin%s", r.where, r.name, hint)
	}
}

// ruleFiles decodes policy.rules, a list of paths to existing files.
func (d *decoder) ruleFiles(f yamlpos.Field, label string) []string {
	var out []string
	d.scalarList(f, label, "rule file paths", func(item *yamlpos.Value) {
		p, st := d.pathValue(item, "rule file", " in "+label, 0)
		switch {
		case st != valOK:
		case slices.Contains(out, p):
			d.errorAt(item.Pos, "rule file %q is listed twice in %s", item.Text, label)
		default:
			out = append(out, p)
		}
	})
	return out
}

func (d *decoder) principals(e yamlpos.Field, out map[string]*Principal) {
	m, _ := d.mapping(e, "policy.principals")
	for _, pe := range m.Fields() {
		where := fmt.Sprintf("principal %q", pe.Key)
		if !runtype.PrincipalPattern.MatchString(pe.Key) {
			d.errorAt(pe.KeyPos, "invalid principal name %q: use 1 to 128 letters, digits, '_', '.', ':', '@' or '-'", pe.Key)
		}
		p := &Principal{}
		out[pe.Key] = p
		pm, st := d.mapping(pe, where)
		if st == valBad {
			continue
		}
		for _, f := range pm.Fields() {
			switch f.Key {
			case "roles":
				p.Roles, _ = d.nameList(f, "role", where)
			case "scopes":
				var st status
				p.Scopes, st = d.nameList(f, "scope", where)
				p.Restricted = st == valOK
			default:
				d.unknownKey(f, where, principalKeys)
			}
		}
	}
}

// nameList decodes a list of role or scope names, as what says; the status
// is valOK when the list is written, even empty.
func (d *decoder) nameList(f yamlpos.Field, what, where string) ([]string, status) {
	label := f.Key + " in " + where
	v, st := d.present(f, label, "a list of "+what+" names", is(yamlpos.Seq))
	if st != valOK {
		return nil, st
	}
	var out []string
	for _, item := range v.Items() {
		switch {
		case item == nil:
		case !item.Scalar():
			d.errorAt(item.Pos, "%s must list %s names, got %s%s", label, what, item.Describe(), colonHint(item))
		case !accessNamePattern.MatchString(item.Text):
			d.errorAt(item.Pos, "invalid %s name %q in %s: use 1 to 64 letters, digits, '_', '.', ':' or '-'", what, item.Text, where)
		case slices.Contains(out, item.Text):
			d.errorAt(item.Pos, "%s %q is listed twice in %s", what, item.Text, where)
		default:
			out = append(out, item.Text)
		}
	}
	return out, valOK
}

// colonHint explains a mapping found where a name was expected when it
// was written as one word, key:value: inside a flow mapping the parser
// reads [repo:read] as [{repo: read}], so such names need quotes.
func colonHint(v *yamlpos.Value) string {
	fields := v.Fields()
	if len(fields) != 1 {
		return ""
	}
	f := fields[0]
	val := f.Value()
	if val == nil || !val.Scalar() || val.Pos != (yamlpos.Pos{Line: f.KeyPos.Line, Column: f.KeyPos.Column + len(f.Key) + 1}) {
		return ""
	}
	return fmt.Sprintf(` (inside {…}, quote a name holding ':', as "%s:%s")`, f.Key, val.Text)
}

func (d *decoder) checkers(e yamlpos.Field, out map[string]*Checker) {
	m, _ := d.mapping(e, "policy.checkers")
	for _, ce := range m.Fields() {
		name := ce.Key
		where := fmt.Sprintf("checker %q", name)
		if !namePattern.MatchString(name) {
			d.errorAt(ce.KeyPos, "invalid checker name %q: use 1 to 64 letters, digits, '_' or '-'", name)
		}
		if slices.Contains(BuiltinCheckers, name) {
			d.errorAt(ce.KeyPos, "checker %q has the same name as a builtin checker; rename it", name)
			continue
		}
		c := &Checker{Name: name, Timeout: DefaultCheckerTimeout}
		out[name] = c
		cm, st := d.mapping(ce, where)
		if st == valBad {
			continue
		}
		commandSt := valNull
		for _, f := range cm.Fields() {
			switch f.Key {
			case "command":
				c.Command, commandSt = d.command(f, where)
			case "timeout":
				if v, st := d.duration(f, "timeout in "+where); st == valOK {
					c.Timeout = v
				}
			case "env":
				c.Env = d.env(f, where)
			default:
				d.unknownKey(f, where, checkerKeys)
			}
		}
		if commandSt == valNull {
			d.errorAt(ce.KeyPos, "command is required in %s", where)
		}
	}
}

// checks decodes policy.input_checks or policy.output_checks (label);
// actions are the ones it accepts, and otherKey the list that takes
// otherActions, named when an action belongs there.
func (d *decoder) checks(f yamlpos.Field, label string, actions []string, otherKey string, otherActions []string, refs *[]checkerRef) []Check {
	v, st := d.present(f, label, "a list of {checker, action} mappings", is(yamlpos.Seq))
	if st != valOK {
		return nil
	}
	var out []Check
	var seen []string
	for i, item := range v.Items() {
		where := fmt.Sprintf("%s[%d]", label, i)
		switch {
		case item == nil:
			continue
		case item.Kind != yamlpos.Map:
			d.errorAt(item.Pos, "%s must be a mapping with checker and action, got %s", where, item.Describe())
			continue
		}
		var c Check
		var checkerPos yamlpos.Pos
		checkerSt, actionSt := valNull, valNull
		for _, cf := range item.Fields() {
			switch cf.Key {
			case "checker":
				c.Checker, checkerSt = d.str(cf, "checker in "+where)
				if checkerSt == valOK {
					checkerPos = cf.Value().Pos
				}
			case "action":
				c.Action, actionSt = d.str(cf, "action in "+where)
				if actionSt == valOK && !slices.Contains(actions, c.Action) {
					hint := didYouMean(c.Action, actions)
					if slices.Contains(otherActions, c.Action) {
						hint = fmt.Sprintf(" (%s is for policy.%s)", c.Action, otherKey)
					}
					d.errorAt(cf.Value().Pos, "action in %s must be one of %s, got %q%s", where, strings.Join(actions, ", "), c.Action, hint)
					actionSt = valBad
				}
			default:
				d.unknownKey(cf, where, checkKeys)
			}
		}
		if checkerSt == valNull {
			d.errorAt(item.Pos, "checker is required in %s", where)
		}
		if actionSt == valNull {
			d.errorAt(item.Pos, "action is required in %s (one of %s)", where, strings.Join(actions, ", "))
		}
		if checkerSt == valOK {
			if slices.Contains(seen, c.Checker) {
				d.errorAt(checkerPos, "checker %q is listed twice in %s", c.Checker, label)
				continue
			}
			seen = append(seen, c.Checker)
			*refs = append(*refs, checkerRef{where: where, name: c.Checker, pos: checkerPos})
		}
		if checkerSt == valOK && actionSt == valOK {
			out = append(out, c)
		}
	}
	return out
}

// approvalTimeout decodes policy.approval_timeout: a positive duration, or
// never (ApprovalNever).
func (d *decoder) approvalTimeout(f yamlpos.Field, label string) (time.Duration, status) {
	var dur time.Duration
	never := false
	v, st := d.present(f, label, "a duration such as 24h or 30m, or never", func(v *yamlpos.Value) bool {
		if !v.Scalar() {
			return false
		}
		if v.Text == "never" {
			never = true
			return true
		}
		var err error
		dur, err = time.ParseDuration(v.Text)
		return err == nil
	})
	switch {
	case st != valOK:
		return 0, st
	case never:
		return ApprovalNever, valOK
	case dur <= 0:
		d.errorAt(v.Pos, "%s must be positive, or never for no expiry, got %s", label, v.Describe())
		return 0, valBad
	}
	return dur, valOK
}
