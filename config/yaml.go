package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// Limits that keep alias expansion ("billion laughs") and deep nesting in
// an input_schema from exhausting memory or the stack.
const (
	maxJSONDepth = 64
	maxJSONNodes = 100_000
	maxAliasHops = 64
	maxMerges    = 10_000
)

// entry is one key of a mapping, with merge keys ("<<") expanded.
type entry struct {
	key     string
	keyNode ast.Node
	value   ast.Node // as written: may be an alias, anchor or tag
}

// anchorCollector records the anchors of a document in source order, so
// aliases can be resolved to the latest anchor defined before them.
type anchorCollector struct{ anchors []*ast.AnchorNode }

// Visit implements ast.Visitor.
func (c *anchorCollector) Visit(n ast.Node) ast.Visitor {
	if a, ok := n.(*ast.AnchorNode); ok {
		c.anchors = append(c.anchors, a)
	}
	return c
}

// missing stands for a value the parser left out; it reads as null.
var missing = ast.Null(&token.Token{Type: token.NullType, Value: "null", Position: &token.Position{}})

// resolve strips anchors, tags and explicit-key markers and follows
// aliases, returning the node that holds the value. It reports an alias to
// an unknown anchor and returns nil.
func (d *decoder) resolve(n ast.Node) ast.Node {
	for range maxAliasHops {
		switch v := n.(type) {
		case nil:
			return missing
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.MappingKeyNode:
			n = v.Value
		case *ast.AliasNode:
			target, cached := d.aliases[v]
			if !cached {
				target = d.anchor(v)
				d.aliases[v] = target
			}
			if target == nil {
				d.errorf(v, "unknown alias *%s", aliasName(v))
				return nil
			}
			n = target
		default:
			return n
		}
	}
	d.errorf(n, "aliases nested too deeply")
	return nil
}

func aliasName(a *ast.AliasNode) string {
	if a.Value == nil {
		return ""
	}
	return a.Value.GetToken().Value
}

// anchor returns the value of the last anchor named like a that starts
// before a, or nil.
func (d *decoder) anchor(a *ast.AliasNode) ast.Node {
	name := aliasName(a)
	at := a.GetToken().Position
	var found ast.Node
	for _, an := range d.anchors {
		if an.Name == nil || an.Name.GetToken().Value != name {
			continue
		}
		p := an.GetToken().Position
		if p.Line < at.Line || p.Line == at.Line && p.Column < at.Column {
			found = an.Value
		}
	}
	return found
}

// isMapping reports whether n (resolved) is a mapping.
func isMapping(n ast.Node) bool {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return true
	}
	return false
}

// entries returns the keys of the mapping n (resolved) in source order.
// Keys written in the mapping win over keys merged in with "<<"; an earlier
// merge wins over a later one.
func (d *decoder) entries(n ast.Node) []entry {
	return d.mergedEntries(n, make(map[ast.Node]bool))
}

// mergedEntries returns n's entries; visiting holds the mappings being
// merged, to stop a mapping that merges itself.
func (d *decoder) mergedEntries(n ast.Node, visiting map[ast.Node]bool) []entry {
	var values []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		values = m.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{m}
	default:
		return nil
	}
	visiting[n] = true
	defer delete(visiting, n)
	explicit := make(map[string]bool)
	for _, mv := range values {
		if _, merge := mv.Key.(*ast.MergeKeyNode); merge {
			continue
		}
		if k, ok := keyText(d.resolve(mv.Key)); ok {
			explicit[k] = true
		}
	}
	var out []entry
	seen := make(map[string]bool)
	add := func(e entry) {
		if !seen[e.key] {
			seen[e.key] = true
			out = append(out, e)
		}
	}
	for _, mv := range values {
		if _, merge := mv.Key.(*ast.MergeKeyNode); merge {
			for _, e := range d.mergeSource(mv.Value, visiting) {
				if !explicit[e.key] {
					add(e)
				}
			}
			continue
		}
		kn := d.resolve(mv.Key)
		if kn == nil {
			continue
		}
		k, ok := keyText(kn)
		if !ok {
			d.errorf(mv.Key, "mapping keys must be strings, got %s", describe(kn))
			continue
		}
		add(entry{key: k, keyNode: mv.Key, value: mv.Value})
	}
	return out
}

// mergeSource returns the entries a "<<" key brings in: those of one
// mapping or of a list of mappings.
func (d *decoder) mergeSource(v ast.Node, visiting map[ast.Node]bool) []entry {
	var items []ast.Node
	switch s := d.resolve(v).(type) {
	case nil:
		return nil
	case *ast.SequenceNode:
		items = s.Values
	default:
		items = []ast.Node{v}
	}
	var out []entry
	for _, item := range items {
		m := d.resolve(item)
		switch {
		case m == nil:
			continue
		case !isMapping(m):
			d.errorf(item, "merge key (<<) needs a mapping or a list of mappings, got %s", describe(m))
			continue
		case visiting[m]:
			d.errorf(item, "merge key (<<) merges a mapping into itself")
			continue
		}
		d.merges++
		if d.merges > maxMerges {
			if d.merges == maxMerges+1 {
				d.errorf(item, "too many merges (more than %d); simplify the merge keys (<<)", maxMerges)
			}
			continue
		}
		out = append(out, d.mergedEntries(m, visiting)...)
	}
	return out
}

// keyText returns a scalar key's text.
func keyText(n ast.Node) (string, bool) {
	if _, ok := n.(*ast.NullNode); ok {
		return "", false
	}
	return scalarText(n)
}

// scalarText returns the text of a scalar: the decoded string for strings
// and the source text for numbers and booleans. Null is not a scalar here.
func scalarText(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return v.GetToken().Value, true
	}
	return "", false
}

// describe names what a node holds, for "got …" in messages.
func describe(n ast.Node) string {
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return "null"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode:
		if isPlainNumber(v) {
			return "number " + v.Value
		}
		return fmt.Sprintf("string %q", v.Value)
	case *ast.LiteralNode:
		return fmt.Sprintf("string %q", v.Value.Value)
	case *ast.IntegerNode:
		return "integer " + v.GetToken().Value
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "number " + v.GetToken().Value
	case *ast.BoolNode:
		return "boolean " + v.GetToken().Value
	}
	return n.Type().String()
}

// yamlNumber matches the YAML 1.2 core schema's numbers that the parser
// leaves as plain strings, such as 1e3 and integers beyond 64 bits.
var yamlNumber = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// isPlainNumber reports whether s is an unquoted number the parser kept
// as a string.
func isPlainNumber(s *ast.StringNode) bool {
	return s.Token != nil && s.Token.Type == token.StringType && yamlNumber.MatchString(s.Value)
}

// jsonWriter converts YAML nodes to JSON, keeping the key order.
type jsonWriter struct {
	d     *decoder
	label string   // what is converted, for messages
	root  ast.Node // where size and depth limits are reported
	buf   bytes.Buffer
	nodes int
	ok    bool
}

// toJSON converts n to JSON, reporting what cannot be represented.
func (d *decoder) toJSON(n ast.Node, label string) (json.RawMessage, bool) {
	w := &jsonWriter{d: d, label: label, root: n, ok: true}
	w.write(n, 0)
	if !w.ok {
		return nil, false
	}
	return json.RawMessage(w.buf.Bytes()), true
}

func (w *jsonWriter) fail(n ast.Node, format string, args ...any) {
	w.d.errorf(n, "%s: %s", w.label, fmt.Sprintf(format, args...))
	w.ok = false
}

func (w *jsonWriter) write(n ast.Node, depth int) {
	if !w.ok {
		return
	}
	w.nodes++
	if w.nodes > maxJSONNodes {
		w.fail(w.root, "too large (more than %d nodes after expanding aliases)", maxJSONNodes)
		return
	}
	if depth > maxJSONDepth {
		w.fail(w.root, "nested more than %d levels deep", maxJSONDepth)
		return
	}
	forceString := false
	if t, ok := n.(*ast.TagNode); ok && t.Start != nil && t.Start.Value == "!!str" {
		forceString = true
	}
	v := w.d.resolve(n)
	if v == nil {
		w.ok = false
		return
	}
	if forceString {
		if s, ok := scalarText(v); ok {
			w.str(s)
			return
		}
	}
	switch v := v.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		w.buf.WriteByte('{')
		for i, e := range w.d.entries(v) {
			if i > 0 {
				w.buf.WriteByte(',')
			}
			w.str(e.key)
			w.buf.WriteByte(':')
			w.write(e.value, depth+1)
		}
		w.buf.WriteByte('}')
	case *ast.SequenceNode:
		w.buf.WriteByte('[')
		for i, item := range v.Values {
			if i > 0 {
				w.buf.WriteByte(',')
			}
			w.write(item, depth+1)
		}
		w.buf.WriteByte(']')
	case *ast.NullNode:
		w.buf.WriteString("null")
	case *ast.BoolNode:
		w.buf.WriteString(strconv.FormatBool(v.Value))
	case *ast.IntegerNode:
		fmt.Fprint(&w.buf, v.Value)
	case *ast.FloatNode:
		w.buf.WriteString(strconv.FormatFloat(v.Value, 'g', -1, 64))
	case *ast.StringNode:
		if isPlainNumber(v) {
			w.number(v.Value)
			return
		}
		w.str(v.Value)
	case *ast.LiteralNode:
		w.str(v.Value.Value)
	case *ast.InfinityNode, *ast.NanNode:
		w.fail(n, "%s cannot be represented in JSON", describe(v))
	default:
		w.fail(n, "%s cannot be represented in JSON", describe(v))
	}
}

// number writes a plain YAML number the parser kept as a string.
func (w *jsonWriter) number(s string) {
	if s[0] == '+' {
		s = s[1:]
	}
	if json.Valid([]byte(s)) {
		w.buf.WriteString(s)
		return
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		w.str(s)
		return
	}
	w.buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
}

func (w *jsonWriter) str(s string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	w.buf.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
