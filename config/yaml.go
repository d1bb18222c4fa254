package config

import (
	"encoding/json"
	"errors"
	"regexp"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// Limits that keep alias expansion ("billion laughs") and deep nesting in
// an input_schema from exhausting memory or the stack.
const (
	maxJSONDepth = 64
	maxJSONNodes = 100_000
)

// duplicateKey matches the parser's message for a key defined twice.
var duplicateKey = regexp.MustCompile(`^mapping key (".*") already defined at \[(\d+):(\d+)\]$`)

// syntaxError records a parser error at its position.
func (d *decoder) syntaxError(err error) {
	var se *yamlpos.SyntaxError
	if le := (*yamlpos.LimitError)(nil); errors.As(err, &le) {
		d.errs = append(d.errs, le.FileError(d.name))
		return
	}
	if !errors.As(err, &se) {
		d.errorAt(yamlpos.Pos{Line: 1, Column: 1}, "syntax error: %v", err)
		return
	}
	if m := duplicateKey.FindStringSubmatch(se.Message); m != nil {
		d.errorAt(se.Pos, "duplicate key %s (first defined at line %s, column %s)", m[1], m[2], m[3])
		return
	}
	d.errorAt(se.Pos, "syntax error: %s", se.Message)
}

// toJSON converts v to JSON, keeping the key order, and reports what cannot
// be represented; label names v in messages.
func (d *decoder) toJSON(v *yamlpos.Value, label string) (json.RawMessage, bool) {
	raw, err := v.JSON(yamlpos.JSONOptions{MaxNodes: maxJSONNodes, MaxDepth: maxJSONDepth, PlainNumbers: true})
	var je *yamlpos.JSONError
	if !errors.As(err, &je) {
		return raw, true
	}
	switch je.Reason {
	case yamlpos.NotFinite:
		d.errorAt(je.Value.Pos, "%s: %s cannot be represented in JSON", label, je.Value.Describe())
	case yamlpos.TooManyNodes:
		d.errorAt(v.Pos, "%s: too large (more than %d nodes after expanding aliases)", label, maxJSONNodes)
	case yamlpos.TooDeep:
		d.errorAt(v.Pos, "%s: nested more than %d levels deep", label, maxJSONDepth)
	}
	return nil, false
}
