package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// hookKeys are the keys of an item of the hooks section.
var hookKeys = []string{"point", "name", "matcher", "command", "url", "headers", "env", "timeout", "fail_mode"}

// claudeHookEvents maps Claude Code's hook event names to hook points, so
// that hooks written for Claude Code can name their event as it does.
var claudeHookEvents = map[string]string{
	"SessionStart":       "session_start",
	"UserPromptSubmit":   "user_prompt_submit",
	"PreToolUse":         "pre_tool_use",
	"PermissionRequest":  "permission_request",
	"PostToolUse":        "post_tool_use",
	"PostToolUseFailure": "post_tool_failure",
	"PreCompact":         "pre_compact",
	"Stop":               "stop",
	"SubagentStart":      "subagent_start",
	"SubagentStop":       "subagent_stop",
}

// toolHookPoints are the hook points about one tool call, where a matcher
// selects the tools.
var toolHookPoints = []string{"pre_tool_use", "permission_request", "post_tool_use", "post_tool_failure"}

// headerNamePattern is what HTTP header names must match (RFC 9110 tokens).
var headerNamePattern = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

// shellSafe matches a word the shell reads as itself, needing no quotes.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./+,:@%=-]+$`)

// hookName is a hook's name, explicit or defaulted, for the uniqueness
// check.
type hookName struct {
	name     string
	where    string
	explicit bool
	pos      yamlpos.Pos
}

// hooks decodes the hooks section, a list of hooks.
func (d *decoder) hooks(e yamlpos.Field) []*Hook {
	const want = "a list of hooks, each with point and command or url"
	if v := e.Value(); v != nil && v.Kind == yamlpos.Map {
		d.errorAt(e.KeyPos, "hooks must be %s, got a mapping (hooks keyed by event, as Claude Code writes them, are not read: "+
			"write one list item per hook, such as - {point: PreToolUse, matcher: Bash, command: ./hooks/guard.sh})", want)
		return nil
	}
	v, st := d.present(e, "hooks", want, is(yamlpos.Seq))
	if st != valOK {
		return nil
	}
	var out []*Hook
	var names []hookName
	for i, item := range v.Items() {
		where := fmt.Sprintf("hooks[%d]", i)
		switch {
		case item == nil:
			continue
		case item.Kind != yamlpos.Map:
			d.errorAt(item.Pos, "%s must be a mapping with point and command or url, got %s", where, item.Describe())
			continue
		}
		h, name := d.hook(item, where)
		if name.name == "" && h.Point != "" {
			name = hookName{name: fmt.Sprintf("%s-%d", h.Point, i), where: where, pos: item.Pos}
		}
		h.Name = name.name
		if name.name != "" {
			names = append(names, name)
		}
		out = append(out, h)
	}
	d.checkHookNames(names)
	return out
}

// hook decodes one item of the hooks section, and returns its explicit
// name, if any.
func (d *decoder) hook(v *yamlpos.Value, where string) (*Hook, hookName) {
	h := &Hook{}
	var name hookName
	pointSt := valNull
	var matcher, command, urlKey, headers *yamlpos.Field
	for _, f := range v.Fields() {
		label := f.Key + " in " + where
		switch f.Key {
		case "point":
			h.Point, pointSt = d.hookPoint(f, label)
		case "name":
			s, st := d.str(f, label)
			switch {
			case st != valOK:
			case !namePattern.MatchString(s):
				d.errorAt(f.Value().Pos, "invalid hook name %q in %s: use 1 to 64 letters, digits, '_' or '-'", s, where)
			default:
				name = hookName{name: s, where: where, explicit: true, pos: f.Value().Pos}
			}
		case "matcher":
			if s, st := d.str(f, label); st == valOK && s != "" {
				if d.checkMatcher(f.Value().Pos, s, label) {
					h.Matcher, matcher = s, &f
				}
			}
		case "command":
			if s, st := d.str(f, label); st == valOK {
				command = &f
				h.Command, h.Script, _ = d.hookCommand(f.Value(), s, where)
			}
		case "url":
			if s, st := d.str(f, label); st == valOK {
				urlKey = &f
				if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					d.errorAt(f.Value().Pos, "%s must be an http or https URL such as https://hooks.example.com/pre, got %q", label, s)
				} else {
					h.URL = s
				}
			}
		case "headers":
			if fv := f.Value(); fv != nil && fv.Kind != yamlpos.Null {
				headers = &f
			}
			h.Headers = d.hookHeaders(f, where)
		case "env":
			h.Env = d.env(f, where)
		case "timeout":
			dur, st := d.duration(f, label)
			switch {
			case st != valOK:
			case dur > MaxHookTimeout:
				d.errorAt(f.Value().Pos, "%s must be at most 10m, got %s", label, f.Value().Describe())
			default:
				h.Timeout = dur
			}
		case "fail_mode":
			h.FailMode, _ = d.oneOf(f, label, HookFailModes)
		default:
			d.unknownKey(f, where, hookKeys)
		}
	}
	if pointSt == valNull {
		d.errorAt(v.Pos, "point is required in %s (one of %s)", where, strings.Join(HookPoints, ", "))
	}
	switch {
	case command != nil && urlKey != nil:
		later := command
		if urlKey.KeyPos.Line > command.KeyPos.Line || urlKey.KeyPos.Line == command.KeyPos.Line && urlKey.KeyPos.Column > command.KeyPos.Column {
			later = urlKey
		}
		d.errorAt(later.KeyPos, "%s has both command and url; set one", where)
	case command == nil && urlKey == nil:
		d.errorAt(v.Pos, "command or url is required in %s", where)
	case command != nil && headers != nil:
		d.errorAt(headers.KeyPos, "headers in %s apply to url hooks only, and this hook has a command", where)
	}
	if matcher != nil && pointSt == valOK && h.Matcher != "*" && !slices.Contains(toolHookPoints, h.Point) {
		d.errorAt(matcher.Value().Pos, "matcher in %s applies only at the tool points (%s), not at %s",
			where, strings.Join(toolHookPoints, ", "), h.Point)
	}
	return h, name
}

// hookPoint decodes a hook's point: one of HookPoints, or the Claude Code
// event name of one.
func (d *decoder) hookPoint(f yamlpos.Field, label string) (string, status) {
	s, st := d.str(f, label)
	if st != valOK {
		return "", st
	}
	if slices.Contains(HookPoints, s) {
		return s, valOK
	}
	if p, ok := claudeHookEvents[s]; ok {
		return p, valOK
	}
	known := slices.Clone(HookPoints)
	for _, p := range HookPoints {
		for event, q := range claudeHookEvents {
			if q == p {
				known = append(known, event)
			}
		}
	}
	d.errorAt(f.Value().Pos, "%s must be one of %s (or the Claude Code event name, such as PreToolUse), got %q%s",
		label, strings.Join(HookPoints, ", "), s, didYouMean(s, known))
	return "", valBad
}

// checkMatcher reports a matcher that is not a valid regular expression;
// "*" is accepted and matches every tool.
func (d *decoder) checkMatcher(pos yamlpos.Pos, s, label string) bool {
	if s == "*" {
		return true
	}
	_, err := regexp.Compile(s)
	if err == nil {
		// The hook runner anchors it to match whole tool names.
		_, err = regexp.Compile(`^(?:` + s + `)$`)
	}
	if err != nil {
		d.errorAt(pos, "%s is not a valid regular expression: %s", label, regexpProblem(err))
		return false
	}
	return true
}

// hookCommand checks a hook's command line and, when its first word is a
// plain path starting with ./ or ../, resolves that word against the
// config file's folder, checks that it is an executable file and returns
// it as script.
func (d *decoder) hookCommand(v *yamlpos.Value, s, where string) (cmd, script string, st status) {
	switch {
	case strings.TrimSpace(s) == "":
		d.errorAt(v.Pos, "command in %s must not be empty", where)
		return "", "", valBad
	case strings.ContainsRune(s, 0):
		d.errorAt(v.Pos, "command in %s must not contain a NUL character", where)
		return "", "", valBad
	}
	rest := strings.TrimLeft(s, " \t")
	lead := s[:len(s)-len(rest)]
	first := rest
	if i := strings.IndexAny(rest, " \t\n"); i >= 0 {
		first = rest[:i]
	}
	if !strings.HasPrefix(first, "./") && !strings.HasPrefix(first, "../") || !shellSafe.MatchString(first) {
		return s, "", valOK
	}
	p := d.abs(first)
	if !d.checkPath(v.Pos, fmt.Sprintf("command %q in %s", first, where), p, wantExec) {
		return "", "", valBad
	}
	return lead + shellQuote(p) + rest[len(first):], p, valOK
}

// shellQuote quotes s for /bin/sh when it holds characters the shell
// would read specially.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// hookHeaders decodes a hook's headers, checking their names and values.
func (d *decoder) hookHeaders(f yamlpos.Field, where string) map[string]string {
	hs := d.headers(f, where)
	m := f.Value()
	for _, hf := range m.Fields() {
		if _, ok := hs[hf.Key]; !ok {
			continue
		}
		switch {
		case !headerNamePattern.MatchString(hf.Key):
			d.errorAt(hf.KeyPos, "header name %q in %s is not a valid HTTP header name", hf.Key, where)
			delete(hs, hf.Key)
		case strings.ContainsAny(hs[hf.Key], "\r\n\x00"):
			d.errorAt(hf.Value().Pos, "header %s in %s must not contain a line break", hf.Key, where)
			delete(hs, hf.Key)
		}
	}
	return hs
}

// checkHookNames reports hook names used twice.
func (d *decoder) checkHookNames(names []hookName) {
	first := make(map[string]hookName, len(names))
	for _, n := range names {
		prev, dup := first[n.name]
		switch {
		case !dup:
			first[n.name] = n
		case n.explicit:
			d.errorAt(n.pos, "hook name %q in %s is already used by %s", n.name, n.where, prev.where)
		default:
			d.errorAt(n.pos, "%s needs a name: its default name %q is already used by %s", n.where, n.name, prev.where)
		}
	}
}
