package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// This file turns goccy's YAML syntax tree into a small tree of values that
// remember their positions, with anchors, aliases, merge keys and standard
// tags resolved, so that validation in script.go deals with plain data.

// maxArgumentsBytes bounds one tool call's encoded input. Aliases can make
// a small file expand into a huge document; this keeps Parse bounded.
const maxArgumentsBytes = 1 << 20

// maxDepth bounds nesting, so that a hostile file cannot exhaust the stack.
const maxDepth = 200

// kind is the type of a YAML value.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindInt
	kindFloat
	kindString
	kindMap
	kindSeq
)

// String names the kind with an article, for messages such as
// "must be a string, not an integer".
func (k kind) String() string {
	switch k {
	case kindNull:
		return "null"
	case kindBool:
		return "a boolean"
	case kindInt:
		return "an integer"
	case kindFloat:
		return "a number"
	case kindString:
		return "a string"
	case kindMap:
		return "a mapping"
	case kindSeq:
		return "a sequence"
	}
	return "an unknown value"
}

// pos is a 1-based line and column in the script.
type pos struct {
	line, col int
}

func tokenPos(tk *token.Token) pos {
	if tk == nil || tk.Position == nil {
		return pos{1, 1}
	}
	return pos{tk.Position.Line, tk.Position.Column}
}

// value is one resolved YAML value. Values may be shared (an alias refers
// to its anchor's value), so they are never modified after conversion.
type value struct {
	kind kind
	pos  pos
	// text is a string's content, or the source text of another scalar.
	text string
	b    bool
	// i is an integer's value when fits is true (it fits an int64).
	i    int64
	fits bool
	f    float64
	// num is the JSON text of an integer or a finite float.
	num    string
	fields []field  // kindMap, in order, merge keys expanded
	items  []*value // kindSeq
}

// field is one key of a mapping.
type field struct {
	key string
	pos pos // of the key
	val *value
}

// converter turns a syntax tree into values, reporting problems.
type converter struct {
	probs   *problems
	anchors map[string]*value
}

func newConverter(probs *problems) *converter {
	return &converter{probs: probs, anchors: make(map[string]*value)}
}

// convert returns n as a value, or nil after reporting why it cannot.
func (c *converter) convert(n ast.Node, depth int) *value {
	if n == nil {
		return &value{kind: kindNull, pos: pos{1, 1}}
	}
	if depth > maxDepth {
		c.probs.add(tokenPos(n.GetToken()), fmt.Sprintf("values are nested more than %d levels deep", maxDepth))
		return nil
	}
	p := tokenPos(n.GetToken())
	switch n := n.(type) {
	case *ast.NullNode:
		return &value{kind: kindNull, pos: p, text: n.GetToken().Value}
	case *ast.BoolNode:
		return &value{kind: kindBool, pos: p, text: n.GetToken().Value, b: n.Value, num: strconv.FormatBool(n.Value)}
	case *ast.IntegerNode:
		v := &value{kind: kindInt, pos: p, text: n.GetToken().Value}
		switch x := n.Value.(type) {
		case int64:
			v.i, v.fits, v.num = x, true, strconv.FormatInt(x, 10)
		case uint64:
			v.fits, v.num = x <= math.MaxInt64, strconv.FormatUint(x, 10)
			v.i = int64(min(x, math.MaxInt64))
		default:
			c.probs.add(p, fmt.Sprintf("unsupported integer %q", v.text))
			return nil
		}
		return v
	case *ast.FloatNode:
		return floatValue(p, n.GetToken().Value, n.Value)
	case *ast.InfinityNode:
		return floatValue(p, n.GetToken().Value, n.Value)
	case *ast.NanNode:
		return floatValue(p, n.GetToken().Value, math.NaN())
	case *ast.StringNode:
		return &value{kind: kindString, pos: p, text: n.Value}
	case *ast.LiteralNode:
		s := ""
		if n.Value != nil {
			s = n.Value.Value
		}
		return &value{kind: kindString, pos: p, text: s}
	case *ast.MappingNode:
		if !n.IsFlowStyle && len(n.Values) > 0 {
			p = tokenPos(n.Values[0].Key.GetToken())
		}
		return c.mapping(n.Values, p, depth)
	case *ast.MappingValueNode:
		return c.mapping([]*ast.MappingValueNode{n}, tokenPos(n.Key.GetToken()), depth)
	case *ast.SequenceNode:
		v := &value{kind: kindSeq, pos: p, items: make([]*value, 0, len(n.Values))}
		for i, item := range n.Values {
			iv := c.convert(item, depth+1)
			if iv != nil && iv.kind == kindNull && len(n.Entries) == len(n.Values) {
				// An empty entry's null has no place of its own; use its dash.
				iv = withPos(iv, tokenPos(n.Entries[i].Start))
			}
			v.items = append(v.items, iv)
		}
		return v
	case *ast.AnchorNode:
		v := c.convert(n.Value, depth+1)
		if n.Name != nil {
			c.anchors[n.Name.GetToken().Value] = v
		}
		return v
	case *ast.AliasNode:
		name := ""
		if n.Value != nil {
			name = n.Value.GetToken().Value
		}
		target, ok := c.anchors[name]
		if !ok {
			c.probs.add(p, fmt.Sprintf("alias *%s refers to no anchor defined before it", name))
			return nil
		}
		if target == nil {
			return nil // the anchored value was already reported
		}
		// Report problems with the aliased value at the alias.
		return withPos(target, p)
	case *ast.TagNode:
		return c.tagged(n, depth)
	}
	c.probs.add(p, fmt.Sprintf("unsupported YAML %s", n.Type()))
	return nil
}

// withPos returns a copy of v at p.
func withPos(v *value, p pos) *value {
	cp := *v
	cp.pos = p
	return &cp
}

func floatValue(p pos, text string, f float64) *value {
	v := &value{kind: kindFloat, pos: p, text: text, f: f}
	if !math.IsInf(f, 0) && !math.IsNaN(f) {
		b, _ := json.Marshal(f) // cannot fail for a finite float
		v.num = string(b)
	}
	return v
}

// coreTags are the YAML core schema's tags and the kinds they mark.
var coreTags = map[string]kind{
	"!!str": kindString, "!!int": kindInt, "!!float": kindFloat,
	"!!bool": kindBool, "!!null": kindNull, "!!map": kindMap, "!!seq": kindSeq,
}

// tagged resolves the YAML core schema's tags; other tags are an error.
func (c *converter) tagged(n *ast.TagNode, depth int) *value {
	tag := n.Start.Value
	v := c.convert(n.Value, depth+1)
	if v == nil {
		return nil
	}
	k, ok := coreTags[tag]
	p := tokenPos(n.Start)
	switch {
	case !ok:
		c.probs.add(p, fmt.Sprintf("unsupported tag %s (only the standard tags !!str, !!int, !!float, !!bool, !!null, !!map and !!seq are)", tag))
		return nil
	case k == v.kind:
		return withPos(v, p)
	case k == kindString && v.kind != kindMap && v.kind != kindSeq:
		return &value{kind: kindString, pos: p, text: v.text}
	case k == kindFloat && v.kind == kindInt:
		f, err := strconv.ParseFloat(v.num, 64)
		if err != nil {
			c.probs.add(p, fmt.Sprintf("converting %s to a float: %v", v.text, err))
			return nil
		}
		return floatValue(p, v.text, f)
	}
	c.probs.add(p, fmt.Sprintf("value tagged %s is %s", tag, v.kind))
	return nil
}

// mapping converts key-value pairs. Keys must be scalars and unique; merge
// keys (<<) add the keys of the merged mappings that the mapping does not
// set itself, earlier merged mappings first.
func (c *converter) mapping(pairs []*ast.MappingValueNode, p pos, depth int) *value {
	v := &value{kind: kindMap, pos: p, fields: make([]field, 0, len(pairs))}
	type pair struct {
		merge bool
		key   string
		pos   pos
		ok    bool
		node  ast.Node
	}
	ps := make([]pair, 0, len(pairs))
	explicit := make(map[string]pos, len(pairs))
	for _, mv := range pairs {
		if _, ok := mv.Key.(*ast.MergeKeyNode); ok {
			ps = append(ps, pair{merge: true, pos: tokenPos(mv.Key.GetToken()), node: mv.Value})
			continue
		}
		key, kp, ok := c.key(mv.Key, depth)
		if ok {
			if first, dup := explicit[key]; dup {
				c.probs.add(kp, fmt.Sprintf("key %q is already set at line %d", key, first.line))
				ok = false
			} else {
				explicit[key] = kp
			}
		}
		ps = append(ps, pair{key: key, pos: kp, ok: ok, node: mv.Value})
	}
	merged := make(map[string]bool)
	for _, pr := range ps {
		if !pr.merge {
			val := c.convert(pr.node, depth+1)
			if val != nil && val.kind == kindNull {
				// An empty value has no place of its own; use its key.
				val = withPos(val, pr.pos)
			}
			if pr.ok {
				v.fields = append(v.fields, field{key: pr.key, pos: pr.pos, val: val})
			}
			continue
		}
		src := c.convert(pr.node, depth+1)
		if src == nil {
			continue
		}
		if src.kind == kindNull {
			src = withPos(src, pr.pos)
		}
		var sources []*value
		switch src.kind {
		case kindMap:
			sources = []*value{src}
		case kindSeq:
			sources = src.items
		}
		for _, s := range sources {
			if s == nil || s.kind != kindMap {
				sources = nil
				break
			}
		}
		if sources == nil {
			c.probs.add(src.pos, fmt.Sprintf("merge key << needs a mapping or a sequence of mappings, not %s", src.kind))
			continue
		}
		for _, s := range sources {
			for _, f := range s.fields {
				if _, set := explicit[f.key]; set || merged[f.key] {
					continue
				}
				merged[f.key] = true
				v.fields = append(v.fields, f)
			}
		}
	}
	return v
}

// key returns a mapping key's text.
func (c *converter) key(n ast.MapKeyNode, depth int) (string, pos, bool) {
	var node ast.Node = n
	if mk, ok := n.(*ast.MappingKeyNode); ok {
		node = mk.Value
	}
	k := c.convert(node, depth+1)
	if k == nil {
		return "", pos{}, false
	}
	if k.kind == kindMap || k.kind == kindSeq {
		c.probs.add(k.pos, fmt.Sprintf("mapping keys must be scalars, not %s", k.kind))
		return "", pos{}, false
	}
	return k.text, k.pos, true
}

// jsonEncoder encodes values as compact JSON, keeping mapping keys in
// script order. Shared values are encoded once.
type jsonEncoder struct {
	memo map[*value][]byte
}

// errTooLarge is reported as a problem by the caller.
var errTooLarge = fmt.Errorf("input is larger than %d bytes once encoded as JSON", maxArgumentsBytes)

// The encoder's errors name the input, the only value it encodes.

func (e *jsonEncoder) encode(v *value) ([]byte, error) {
	if v == nil {
		return []byte("null"), nil // its problem is already reported
	}
	if b, ok := e.memo[v]; ok {
		return b, nil
	}
	var b []byte
	switch v.kind {
	case kindNull:
		b = []byte("null")
	case kindBool, kindInt:
		b = []byte(v.num)
	case kindFloat:
		if v.num == "" {
			return nil, fmt.Errorf("input cannot hold %s: JSON has no infinity or NaN", v.text)
		}
		b = []byte(v.num)
	case kindString:
		b = appendJSONString(nil, v.text)
	case kindSeq:
		b = append(b, '[')
		for i, item := range v.items {
			if i > 0 {
				b = append(b, ',')
			}
			ib, err := e.encode(item)
			if err != nil {
				return nil, err
			}
			if len(b)+len(ib) > maxArgumentsBytes {
				return nil, errTooLarge
			}
			b = append(b, ib...)
		}
		b = append(b, ']')
	case kindMap:
		b = append(b, '{')
		for i, f := range v.fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f.key)
			b = append(b, ':')
			fb, err := e.encode(f.val)
			if err != nil {
				return nil, err
			}
			if len(b)+len(fb) > maxArgumentsBytes {
				return nil, errTooLarge
			}
			b = append(b, fb...)
		}
		b = append(b, '}')
	}
	if len(b) > maxArgumentsBytes {
		return nil, errTooLarge
	}
	if e.memo == nil {
		e.memo = make(map[*value][]byte)
	}
	e.memo[v] = b
	return b, nil
}

// appendJSONString appends s as a JSON string without HTML escaping, as a
// model would write it.
func appendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
