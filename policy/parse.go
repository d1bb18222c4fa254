package policy

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// The keys each mapping of a rule file accepts.
var (
	fileKeys    = []string{"tier", "rules"}
	ruleKeys    = []string{"id", "description", "priority", "tier", "tools", "mcp_servers", "agents", "intents", "principals", "roles", "modes", "annotations", "when", "command", "checker", "decision", "reason_code", "message"}
	commandKeys = []string{"prefix", "regex", "opaque"}
	decisions   = []string{"allow", "deny", "ask"}
)

// ParseRules parses a rule file; name names it in errors and in each
// rule's Source ("name:line"). The file is a mapping:
//
//	tier: workspace        # admin, workspace, user (the default) or agent
//	rules:
//	  - id: no-rm-rf        # required; letters, digits, _ . : -
//	    description: …
//	    priority: 10        # default 0; higher first within a tier
//	    tier: admin         # overrides the file's tier
//	    tools: [shell]      # globs; a single string is a list of one
//	    mcp_servers: […]    # and agents, intents, principals, roles: globs
//	    modes: [default]    # the modes the rule applies in
//	    annotations: {destructive: true, open_world: false}  # the tool's annotations
//	    when: input.path.startsWith("/etc")   # CEL, must be a bool
//	    command: {prefix: "rm -rf", regex: "…"}  # prefix: a string or a list
//	    # or command: {opaque: true}: lines the policy cannot see into
//	    checker: secrets    # the rule matches only when it flags the input
//	    decision: deny      # required: allow, deny or ask
//	    reason_code: rm_rf  # required; lowercase letters, digits, _
//	    message: …
//
// It returns the rules compiled, in file order, or every problem found as
// Errors, each at a file:line:column.
func ParseRules(name string, data []byte) ([]*Rule, error) {
	p := &ruleParser{name: name, data: data, ids: make(map[string]yamlpos.Pos)}
	rules := p.parse()
	if len(p.errs) > 0 {
		return nil, sortErrors(p.errs, nil)
	}
	return rules, nil
}

// LoadRuleFiles reads and parses rule files, in order, and checks that
// rule ids are unique across them. It returns every problem found as
// Errors; a file that cannot be read is an error of its own.
func LoadRuleFiles(paths ...string) ([]*Rule, error) {
	type seenRule struct {
		file string
		pos  yamlpos.Pos
	}
	var (
		all   []*Rule
		errs  Errors
		order = make(map[string]int, len(paths))
		seen  = make(map[string]seenRule)
	)
	for i, path := range paths {
		order[path] = i
		data, err := yamlpos.ReadFile(path)
		if le := (*yamlpos.LimitError)(nil); errors.As(err, &le) {
			errs = append(errs, le.FileError(path))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading rule file: %w", err)
		}
		p := &ruleParser{name: path, data: data, ids: make(map[string]yamlpos.Pos)}
		rules := p.parse()
		errs = append(errs, p.errs...)
		for id, pos := range p.ids {
			if first, dup := seen[id]; dup && first.file != path {
				errs = append(errs, &Error{File: path, Line: pos.Line, Column: pos.Column,
					Message: fmt.Sprintf("duplicate rule id %q (also defined at %s:%d:%d)", id, first.file, first.pos.Line, first.pos.Column)})
				continue
			}
			seen[id] = seenRule{path, pos}
		}
		all = append(all, rules...)
	}
	if len(errs) > 0 {
		return nil, sortErrors(errs, order)
	}
	return all, nil
}

// ruleParser reads one rule file, collecting errors.
type ruleParser struct {
	name string
	data []byte
	errs Errors
	// ids are where each rule id is first defined.
	ids map[string]yamlpos.Pos
}

func (p *ruleParser) errorAt(pos yamlpos.Pos, format string, args ...any) {
	if pos.Line < 1 {
		pos = yamlpos.Pos{Line: 1, Column: 1}
	}
	if pos.Column < 1 {
		pos.Column = 1
	}
	p.errs = append(p.errs, &Error{File: p.name, Line: pos.Line, Column: pos.Column, Message: fmt.Sprintf(format, args...)})
}

// duplicateKey matches the YAML parser's message for a key defined twice.
var duplicateKey = regexp.MustCompile(`^mapping key (".*") already defined at \[(\d+):(\d+)\]$`)

func (p *ruleParser) parse() []*Rule {
	doc, next, err := yamlpos.Parse(p.data, yamlpos.Options{
		CoreTags:       true,
		EntryPositions: true,
		Report:         func(pr yamlpos.Problem) { p.errorAt(pr.Pos, "%s", pr.Message) },
	})
	var se *yamlpos.SyntaxError
	var le *yamlpos.LimitError
	switch {
	case errors.As(err, &le):
		p.errs = append(p.errs, le.FileError(p.name))
		return nil
	case errors.As(err, &se):
		if m := duplicateKey.FindStringSubmatch(se.Message); m != nil {
			p.errorAt(se.Pos, "duplicate key %s (first defined at line %s, column %s)", m[1], m[2], m[3])
		} else {
			p.errorAt(se.Pos, "syntax error: %s", se.Message)
		}
		return nil
	case err != nil:
		p.errorAt(yamlpos.Pos{}, "syntax error: %v", err)
		return nil
	case doc == nil:
		p.errorAt(yamlpos.Pos{}, "empty rule file; expected a mapping with a rules key")
		return nil
	case next != yamlpos.Pos{}:
		p.errorAt(next, "more than one YAML document; a rule file is a single document")
		return nil
	}
	root := doc.Root()
	if root == nil {
		return nil
	}
	if root.Kind != yamlpos.Map {
		p.errorAt(root.Pos, "top level must be a mapping with a rules key, got %s", root.Describe())
		return nil
	}
	tier := TierUser
	var rulesField *yamlpos.Field
	fields := root.Fields()
	for _, f := range fields {
		switch f.Key {
		case "tier":
			if t, ok := p.tier(f, "tier"); ok {
				tier = t
			}
		case "rules":
			rulesField = &f
		default:
			p.errorAt(f.KeyPos, "unknown top-level key %q%s", f.Key, didYouMean(f.Key, fileKeys))
		}
	}
	if rulesField == nil {
		pos := root.Pos
		if len(fields) > 0 {
			pos = fields[0].KeyPos
		}
		p.errorAt(pos, "no rules key; a rule file lists its rules under rules")
		return nil
	}
	v := rulesField.Value()
	switch {
	case v == nil:
		return nil
	case v.Kind == yamlpos.Null:
		return nil
	case v.Kind != yamlpos.Seq:
		p.errorAt(v.Pos, "rules must be a list of rules, got %s", v.Describe())
		return nil
	}
	var rules []*Rule
	for i, item := range v.Items() {
		if r := p.rule(i, item, tier); r != nil {
			rules = append(rules, r)
		}
	}
	return rules
}

// rule decodes one rule; it returns nil when the rule has errors.
func (p *ruleParser) rule(i int, v *yamlpos.Value, fileTier Tier) *Rule {
	if v == nil {
		return nil
	}
	if v.Kind != yamlpos.Map {
		p.errorAt(v.Pos, "rules[%d] must be a mapping, got %s", i, v.Describe())
		return nil
	}
	nerrs := len(p.errs)
	fields := v.Fields()
	r := &Rule{Tier: fileTier, Source: fmt.Sprintf("%s:%d", p.name, v.Pos.Line)}
	where := fmt.Sprintf("rules[%d]", i)
	for _, f := range fields {
		if f.Key != "id" {
			continue
		}
		fv := f.Value()
		if s, ok := p.str(f, "id in "+where); ok {
			if !idPattern.MatchString(s) {
				p.errorAt(fv.Pos, "invalid rule id %q: use letters, digits, '_', '.', ':' or '-'", s)
				break
			}
			r.ID = s
			where = fmt.Sprintf("rule %q", s)
			if first, dup := p.ids[s]; dup {
				p.errorAt(fv.Pos, "duplicate rule id %q (first defined at line %d, column %d)", s, first.Line, first.Column)
				break
			}
			p.ids[s] = fv.Pos
		}
	}
	var hasDecision, hasReason bool
	for _, f := range fields {
		label := f.Key + " in " + where
		switch f.Key {
		case "id":
		case "description":
			r.Description, _ = p.str(f, label)
		case "message":
			r.Message, _ = p.str(f, label)
		case "checker":
			r.Checker, _ = p.str(f, label)
		case "priority":
			fv := f.Value()
			switch {
			case fv == nil:
			case fv.Kind != yamlpos.Int || !fv.IntOK || fv.Int != int64(int(fv.Int)):
				p.errorAt(fv.Pos, "%s must be an integer, got %s", label, fv.Describe())
			default:
				r.Priority = int(fv.Int)
			}
		case "tier":
			if t, ok := p.tier(f, label); ok {
				r.Tier = t
			}
		case "tools":
			r.Tools = p.globs(f, label)
		case "mcp_servers":
			r.MCPServers = p.globs(f, label)
		case "agents":
			r.Agents = p.globs(f, label)
		case "intents":
			r.Intents = p.globs(f, label)
		case "principals":
			r.Principals = p.globs(f, label)
		case "roles":
			r.Roles = p.globs(f, label)
		case "modes":
			for _, item := range p.strList(f, label) {
				m := Mode(item.Text)
				if !m.Valid() {
					p.errorAt(item.Pos, "%s: unknown mode %q; use %s%s", label, item.Text, modeNames(), didYouMean(item.Text, modeStrings()))
					continue
				}
				r.Modes = append(r.Modes, m)
			}
		case "annotations":
			r.Annotations = p.annotations(f, label)
		case "when":
			p.when(f, label, r)
		case "command":
			r.Command = p.command(f, where)
		case "decision":
			hasDecision = true
			if s, ok := p.str(f, label); ok {
				if !slices.Contains(decisions, s) {
					p.errorAt(f.Value().Pos, "%s must be allow, deny or ask, got %q%s", label, s, didYouMean(s, decisions))
					break
				}
				r.Decision = Outcome(s)
			}
		case "reason_code":
			hasReason = true
			if s, ok := p.str(f, label); ok {
				if !reasonCodePattern.MatchString(s) {
					p.errorAt(f.Value().Pos, "%s must be lowercase letters, digits and '_', got %q", label, s)
					break
				}
				r.ReasonCode = s
			}
		default:
			p.errorAt(f.KeyPos, "unknown key %q in %s%s", f.Key, where, didYouMean(f.Key, ruleKeys))
		}
	}
	if !p.hasKey(fields, "id") {
		p.errorAt(v.Pos, "id is required in %s", where)
	}
	if !hasDecision {
		p.errorAt(v.Pos, "decision is required in %s (allow, deny or ask)", where)
	}
	if !hasReason {
		p.errorAt(v.Pos, "reason_code is required in %s", where)
	}
	if len(p.errs) > nerrs {
		return nil
	}
	c, err := r.compile()
	if err != nil {
		// Every check compile makes was made above with a position.
		p.errorAt(v.Pos, "%v", err)
		return nil
	}
	r.compiled = c
	return r
}

func (p *ruleParser) hasKey(fields []yamlpos.Field, key string) bool {
	return slices.ContainsFunc(fields, func(f yamlpos.Field) bool { return f.Key == key })
}

// str decodes f's value as a string: any scalar, as its text. A null is
// an error too, since every key of a rule needs a value.
func (p *ruleParser) str(f yamlpos.Field, label string) (string, bool) {
	v := f.Value()
	switch {
	case v == nil:
		return "", false
	case !v.Scalar():
		p.errorAt(v.Pos, "%s must be a string, got %s", label, v.Describe())
		return "", false
	}
	return v.Text, true
}

func (p *ruleParser) tier(f yamlpos.Field, label string) (Tier, bool) {
	s, ok := p.str(f, label)
	if !ok {
		return 0, false
	}
	t, err := ParseTier(s)
	if err != nil {
		p.errorAt(f.Value().Pos, "%s must be admin, workspace, user or agent, got %q%s", label, s, didYouMean(s, tierNames))
		return 0, false
	}
	return t, true
}

// strList decodes f's value as a list of strings, or a single string as a
// list of one; it returns the items that are strings.
func (p *ruleParser) strList(f yamlpos.Field, label string) []*yamlpos.Value {
	v := f.Value()
	switch {
	case v == nil:
		return nil
	case v.Scalar():
		return []*yamlpos.Value{v}
	case v.Kind != yamlpos.Seq:
		p.errorAt(v.Pos, "%s must be a string or a list of strings, got %s", label, v.Describe())
		return nil
	}
	items := v.Items()
	if len(items) == 0 {
		p.errorAt(v.Pos, "%s must not be empty; leave the key out to match every call", label)
	}
	var out []*yamlpos.Value
	for _, item := range items {
		switch {
		case item == nil:
		case !item.Scalar():
			p.errorAt(item.Pos, "%s must list strings, got %s", label, item.Describe())
		default:
			out = append(out, item)
		}
	}
	return out
}

// globs decodes a list of path.Match globs.
func (p *ruleParser) globs(f yamlpos.Field, label string) []string {
	var out []string
	for _, item := range p.strList(f, label) {
		if _, err := compileGlobs([]string{item.Text}); err != nil {
			p.errorAt(item.Pos, "%s: %v", label, err)
			continue
		}
		if item.Text == "" {
			p.errorAt(item.Pos, "%s: empty name", label)
			continue
		}
		out = append(out, item.Text)
	}
	return out
}

// annotations decodes an annotations matcher: a mapping of annotation
// names to true or false.
func (p *ruleParser) annotations(f yamlpos.Field, label string) map[Annotation]bool {
	v := f.Value()
	switch {
	case v == nil:
		return nil
	case v.Kind != yamlpos.Map:
		p.errorAt(v.Pos, "%s must be a mapping of annotations to true or false, such as {destructive: true}, got %s", label, v.Describe())
		return nil
	}
	fields := v.Fields()
	if len(fields) == 0 {
		p.errorAt(v.Pos, "%s must not be empty; leave the key out to match every call", label)
		return nil
	}
	out := make(map[Annotation]bool, len(fields))
	for _, af := range fields {
		a := Annotation(af.Key)
		if !a.Valid() {
			p.errorAt(af.KeyPos, "%s: unknown annotation %q; use %s%s", label, af.Key, annotationNames(), didYouMean(af.Key, annotationStrings()))
			continue
		}
		switch av := af.Value(); {
		case av == nil:
		case av.Kind != yamlpos.Bool:
			p.errorAt(av.Pos, "%s: %s must be true or false, got %s", label, af.Key, av.Describe())
		default:
			out[a] = av.Bool
		}
	}
	return out
}

// when compiles a when expression, placing its errors at the expression's
// own line and column when the file writes it on one line.
func (p *ruleParser) when(f yamlpos.Field, label string, r *Rule) {
	s, ok := p.str(f, label)
	if !ok {
		return
	}
	v := f.Value()
	if strings.TrimSpace(s) == "" {
		p.errorAt(v.Pos, "%s must not be empty", label)
		return
	}
	_, err := compileWhen(s)
	var we *whenError
	if !errors.As(err, &we) {
		r.When = s
		return
	}
	offset, exact := p.exprOffset(v)
	for _, is := range we.issues {
		switch {
		case exact && is.line == 1:
			p.errorAt(yamlpos.Pos{Line: v.Pos.Line, Column: v.Pos.Column + offset + is.column - 1}, "%s: %s", label, is.message)
		case is.line > 0:
			p.errorAt(v.Pos, "%s: %s (expression line %d, column %d)", label, is.message, is.line, is.column)
		default:
			p.errorAt(v.Pos, "%s %s", label, is.message)
		}
	}
}

// exprOffset returns the column of the value's first character of text,
// less one, relative to v.Pos (0 plain, 1 quoted) when the source holds
// the text verbatim on one line, so that columns within the expression
// are columns of the file. It looks a little to the left too: the YAML
// parser places a plain scalar with trailing blanks a column late.
func (p *ruleParser) exprOffset(v *yamlpos.Value) (int, bool) {
	if strings.ContainsAny(v.Text, "\n\r") {
		return 0, false
	}
	lines := bytes.Split(p.data, []byte("\n"))
	if v.Pos.Line > len(lines) {
		return 0, false
	}
	// Columns count characters.
	line := []rune(string(lines[v.Pos.Line-1]))
	for delta := 0; delta >= -2; delta-- {
		at := v.Pos.Column - 1 + delta
		if at < 0 || at > len(line) {
			continue
		}
		src := string(line[at:])
		switch {
		case strings.HasPrefix(src, v.Text):
			return delta, true
		case len(src) > 0 && (src[0] == '"' || src[0] == '\'') && strings.HasPrefix(src[1:], v.Text):
			return delta + 1, true
		}
	}
	return 0, false
}

// command decodes a command matcher: a mapping of prefix (a string or a
// list) and regex, or opaque: true.
func (p *ruleParser) command(f yamlpos.Field, where string) *CommandMatch {
	v := f.Value()
	switch {
	case v == nil:
		return nil
	case v.Kind != yamlpos.Map:
		p.errorAt(v.Pos, "command in %s must be a mapping with prefix or regex, got %s", where, v.Describe())
		return nil
	}
	cm := &CommandMatch{}
	for _, cf := range v.Fields() {
		label := "command." + cf.Key + " in " + where
		switch cf.Key {
		case "prefix":
			for _, item := range p.strList(cf, label) {
				if len(strings.Fields(item.Text)) == 0 {
					p.errorAt(item.Pos, "%s must not be blank", label)
					continue
				}
				cm.Prefixes = append(cm.Prefixes, item.Text)
			}
		case "regex":
			s, ok := p.str(cf, label)
			if !ok {
				continue
			}
			if _, err := regexp.Compile(s); err != nil {
				p.errorAt(cf.Value().Pos, "%s: invalid regex: %v", label, err)
				continue
			}
			if s == "" {
				p.errorAt(cf.Value().Pos, "%s must not be empty", label)
				continue
			}
			cm.Regex = s
		case "opaque":
			fv := cf.Value()
			switch {
			case fv == nil:
			case fv.Kind != yamlpos.Bool:
				p.errorAt(fv.Pos, "%s must be true or false, got %s", label, fv.Describe())
			case !fv.Bool:
				p.errorAt(fv.Pos, "%s: false is the default; leave the key out", label)
			default:
				cm.Opaque = true
			}
		default:
			p.errorAt(cf.KeyPos, "unknown key %q in command of %s%s", cf.Key, where, didYouMean(cf.Key, commandKeys))
		}
	}
	fields := v.Fields()
	switch {
	case p.hasKey(fields, "opaque") && (p.hasKey(fields, "prefix") || p.hasKey(fields, "regex")):
		p.errorAt(v.Pos, "command in %s: opaque cannot be combined with prefix or regex (an opaque command has no words to match)", where)
	case !p.hasKey(fields, "prefix") && !p.hasKey(fields, "regex") && !p.hasKey(fields, "opaque"):
		p.errorAt(v.Pos, "command in %s needs a prefix, a regex or opaque: true", where)
	}
	return cm
}

func modeStrings() []string {
	out := make([]string, len(allModes))
	for i, m := range allModes {
		out[i] = string(m)
	}
	return out
}

func modeNames() string { return strings.Join(modeStrings(), ", ") }

// suggest returns the candidate the user probably meant by s, or "": one
// within edit distance 2, ignoring case, or the one candidate holding
// every word of s (split at '_'), as "reason" is of "reason_code".
func suggest(s string, candidates []string) string {
	if best, d := yamlpos.Nearest(s, candidates); best != "" && d < 3 && d < len(s) {
		return best
	}
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == '_' || r == '-' })
	if len(words) == 0 {
		return ""
	}
	var match string
	for _, c := range candidates {
		cw := strings.Split(c, "_")
		if !slices.ContainsFunc(words, func(w string) bool { return !slices.Contains(cw, w) }) {
			if match != "" {
				return ""
			}
			match = c
		}
	}
	return match
}

// didYouMean returns "; did you mean X?" for the suggestion, or "".
func didYouMean(s string, candidates []string) string {
	if m := suggest(s, candidates); m != "" {
		return "; did you mean " + m + "?"
	}
	return ""
}

func annotationStrings() []string {
	out := make([]string, len(allAnnotations))
	for i, a := range allAnnotations {
		out[i] = string(a)
	}
	return out
}

func annotationNames() string { return strings.Join(annotationStrings(), ", ") }
