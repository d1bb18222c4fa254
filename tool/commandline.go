package tool

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// CommandLine returns the command line a call of a shell-like or
// exec-like tool runs, as policy command rules see it: the CommandField's
// text, or the ArgvField's words quoted; with variables in the EnvField,
// the line runs under env (env 'K=V' sh -c '…'). It returns "" for other
// tools, or when the input does not hold what the spec names.
func (s *Spec) CommandLine(input json.RawMessage) string {
	if s.CommandField == "" && s.ArgvField == "" {
		return ""
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(input, &fields) != nil {
		return ""
	}
	var line string
	switch {
	case s.CommandField != "":
		if json.Unmarshal(fields[s.CommandField], &line) != nil || line == "" {
			return ""
		}
	default:
		var argv []string
		if json.Unmarshal(fields[s.ArgvField], &argv) != nil || len(argv) == 0 {
			return ""
		}
		line = QuoteArgv(argv)
	}
	var env map[string]string
	if s.EnvField == "" || json.Unmarshal(fields[s.EnvField], &env) != nil || len(env) == 0 {
		return line
	}
	words := []string{"env"}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		words = append(words, k+"="+env[k])
	}
	if s.CommandField != "" {
		words = append(words, "sh", "-c", line)
		return QuoteArgv(words)
	}
	return QuoteArgv(words) + " " + line
}

// CommandInput returns what the command line's standard input holds, for
// a tool with a StdinField (policy.Request.CommandInput): the field's
// text, "" when it has none. It returns nil for other tools.
func (s *Spec) CommandInput(input json.RawMessage) *string {
	if s.StdinField == "" {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(input, &fields) != nil {
		return nil
	}
	var text string
	if raw, ok := fields[s.StdinField]; ok && json.Unmarshal(raw, &text) != nil {
		return nil
	}
	return &text
}

// QuoteArgv renders argv as a shell reads it back into the same words:
// each word as it is when it holds only safe characters, else in single
// quotes.
func QuoteArgv(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
			b.WriteString(a)
			continue
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}
