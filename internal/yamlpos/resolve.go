package yamlpos

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	yaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// maxAliasHops bounds the anchors, tags and aliases one value may be
// reached through, so that an alias naming its own anchor stops.
const maxAliasHops = 64

// Options say how a document's values are read.
type Options struct {
	// CoreTags makes the core schema's tags (!!str, !!int, !!float, !!bool,
	// !!null, !!map, !!seq) convert or check what they mark, and any other
	// tag a problem. Without it, tags are only kept in Value.Tag.
	CoreTags bool
	// EntryPositions places a value where a reader looks for it rather than
	// at its first token: an anchored value at the value, a block mapping at
	// its first key, and a null (often an empty entry) at its key, or at its
	// dash in a block sequence.
	EntryPositions bool
	// Report receives each problem, again each time its value is resolved.
	Report func(Problem)
}

// Doc resolves the values of one YAML document when they are asked for,
// so that problems are reported only in the parts that are read: a file
// may keep anything under a key its reader ignores. A Doc is not safe for
// concurrent use.
type Doc struct {
	opts    Options
	body    ast.Node
	aliases map[*ast.AliasNode]ast.Node // each alias's anchored value; nil for none
	merges  int                         // merged mappings expanded so far
}

// SyntaxError is data that does not parse as YAML.
type SyntaxError struct {
	Pos Pos
	// Message is the parser's, such as "sequence end token ']' not found".
	Message string
}

// Error returns "line:column: message".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Column, e.Message)
}

// Parse parses data as YAML holding one document. It returns the document,
// nil when data holds none, and where a second document starts: the zero
// Pos when there is none; the second document is not read. A syntax error
// is a *SyntaxError; data past one of the limits (MaxFileBytes, MaxDepth,
// MaxTokens, MaxBlockKeys) is a *LimitError, found before parsing.
func Parse(data []byte, opts Options) (*Doc, Pos, error) {
	tokens, next, err := tokenize(string(data))
	if err != nil {
		return nil, Pos{}, err
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		se := &SyntaxError{Pos: Pos{1, 1}, Message: err.Error()}
		var ye yaml.Error
		if errors.As(err, &ye) {
			se.Pos, se.Message = tokenPos(ye.GetToken()), ye.GetMessage()
		}
		return nil, Pos{}, se
	}
	if opts.Report == nil {
		opts.Report = func(Problem) {}
	}
	var d *Doc
	for _, doc := range f.Docs {
		switch {
		case doc.Body == nil:
		case d == nil:
			d = &Doc{opts: opts, body: doc.Body, aliases: make(map[*ast.AliasNode]ast.Node)}
			ast.Walk(anchorWalker{d, make(map[string]ast.Node)}, d.body)
		case doc.Start != nil:
			return d, tokenPos(doc.Start), nil
		default:
			return d, tokenPos(doc.Body.GetToken()), nil
		}
	}
	return d, next, nil
}

// anchorWalker visits a document in source order and resolves each alias
// to the last anchor of its name that starts before it. That may be an
// anchor the alias is inside of: the value then contains itself.
type anchorWalker struct {
	d      *Doc
	latest map[string]ast.Node
}

// Visit implements ast.Visitor.
func (w anchorWalker) Visit(n ast.Node) ast.Visitor {
	switch n := n.(type) {
	case *ast.AnchorNode:
		if n.Name != nil {
			w.latest[n.Name.GetToken().Value] = n.Value
		}
	case *ast.AliasNode:
		w.d.aliases[n] = w.latest[aliasName(n)]
	}
	return w
}

// Root returns the document's top value, or nil after reporting why it
// cannot be resolved.
func (d *Doc) Root() *Value { return d.value(d.body) }

// value resolves n, positioned where n is written.
func (d *Doc) value(n ast.Node) *Value {
	v := d.resolve(n, 0)
	if v != nil {
		v.Pos, v.doc = d.pos(n), d
	}
	return v
}

// entry resolves n, the value of the key at keyPos.
func (d *Doc) entry(n ast.Node, keyPos Pos) *Value {
	v := d.value(n)
	if v != nil && v.Kind == Null && d.opts.EntryPositions {
		v.Pos = keyPos
	}
	return v
}

// resolve follows anchors, tags, explicit-key markers and aliases to the
// node holding n's value and converts it; hops counts those followed.
func (d *Doc) resolve(n ast.Node, hops int) *Value {
	if hops == maxAliasHops {
		d.report(Problem{Kind: AliasLoop, Pos: d.pos(n)}, "aliases nested too deeply")
		return nil
	}
	switch n := n.(type) {
	case nil:
		return &Value{Kind: Null}
	case *ast.AnchorNode:
		return d.resolve(n.Value, hops+1)
	case *ast.MappingKeyNode:
		return d.resolve(n.Value, hops+1)
	case *ast.TagNode:
		v := d.resolve(n.Value, hops+1)
		if v == nil {
			return nil
		}
		return d.tagged(n, v)
	case *ast.AliasNode:
		if target := d.aliases[n]; target != nil {
			return d.resolve(target, hops+1)
		}
		name := aliasName(n)
		d.report(Problem{Kind: UnknownAlias, Pos: tokenPos(n.GetToken()), Name: name}, "unknown alias *%s", name)
		return nil
	case *ast.NullNode:
		return &Value{Kind: Null, Text: n.GetToken().Value}
	case *ast.BoolNode:
		return &Value{Kind: Bool, Text: n.GetToken().Value, Bool: n.Value}
	case *ast.IntegerNode:
		v := &Value{Kind: Int, Text: n.GetToken().Value}
		switch x := n.Value.(type) {
		case int64:
			v.Int, v.IntOK, v.Num = x, true, strconv.FormatInt(x, 10)
		case uint64:
			v.Num = strconv.FormatUint(x, 10)
			if x <= math.MaxInt64 {
				v.Int, v.IntOK = int64(x), true
			}
		default:
			d.report(Problem{Kind: Unsupported, Pos: tokenPos(n.GetToken())}, "unsupported integer %q", v.Text)
			return nil
		}
		return v
	case *ast.FloatNode:
		return floatValue(n.GetToken().Value, n.Value)
	case *ast.InfinityNode:
		return floatValue(n.GetToken().Value, n.Value)
	case *ast.NanNode:
		return floatValue(n.GetToken().Value, math.NaN())
	case *ast.StringNode:
		return &Value{Kind: String, Text: n.Value, plain: n.Token != nil && n.Token.Type == token.StringType}
	case *ast.LiteralNode:
		v := &Value{Kind: String}
		if n.Value != nil {
			v.Text = n.Value.Value
		}
		return v
	case *ast.MappingNode, *ast.MappingValueNode:
		return &Value{Kind: Map, node: n}
	case *ast.SequenceNode:
		return &Value{Kind: Seq, node: n}
	}
	d.report(Problem{Kind: Unsupported, Pos: d.pos(n)}, "unsupported YAML %s", n.Type())
	return nil
}

func aliasName(a *ast.AliasNode) string {
	if a.Value == nil {
		return ""
	}
	return a.Value.GetToken().Value
}

func floatValue(text string, f float64) *Value {
	v := &Value{Kind: Float, Text: text}
	if !math.IsInf(f, 0) && !math.IsNaN(f) {
		b, _ := json.Marshal(f) // cannot fail for a finite float
		v.Num = string(b)
	}
	return v
}

// coreTags are the YAML core schema's tags and the kinds they mark.
var coreTags = map[string]Kind{
	"!!str": String, "!!int": Int, "!!float": Float,
	"!!bool": Bool, "!!null": Null, "!!map": Map, "!!seq": Seq,
}

// tagged applies n's tag to v, its value.
func (d *Doc) tagged(n *ast.TagNode, v *Value) *Value {
	tag := n.Start.Value
	if d.opts.CoreTags {
		k, ok := coreTags[tag]
		switch {
		case !ok:
			d.report(Problem{Kind: UnknownTag, Pos: tokenPos(n.Start), Name: tag},
				"unsupported tag %s (only the standard tags !!str, !!int, !!float, !!bool, !!null, !!map and !!seq are)", tag)
			return nil
		case k == v.Kind:
		case k == String && (v.Scalar() || v.Kind == Null):
			v = &Value{Kind: String, Text: v.Text}
		case k == Float && v.Kind == Int:
			f, _ := strconv.ParseFloat(v.Num, 64) // a decimal integer always parses
			v = floatValue(v.Text, f)
		default:
			d.report(Problem{Kind: TagMismatch, Pos: tokenPos(n.Start), Name: tag, Value: v}, "value tagged %s is %s", tag, v.Kind)
			return nil
		}
	}
	v.Tag = tag
	return v
}

// pos returns where the value written as n is: at its first token, or
// with Options.EntryPositions where a reader looks for it.
func (d *Doc) pos(n ast.Node) Pos {
	if d.opts.EntryPositions {
		switch m := n.(type) {
		case *ast.AnchorNode:
			return d.pos(m.Value)
		case *ast.MappingKeyNode:
			return d.pos(m.Value)
		case *ast.MappingNode:
			if !m.IsFlowStyle && len(m.Values) > 0 {
				return tokenPos(m.Values[0].Key.GetToken())
			}
		case *ast.MappingValueNode:
			return tokenPos(m.Key.GetToken())
		}
	}
	if n == nil {
		return Pos{1, 1}
	}
	return tokenPos(n.GetToken())
}

// fields returns the fields of the mapping n; visiting holds the mappings
// being merged, to catch a mapping that merges itself.
func (d *Doc) fields(n ast.Node, visiting map[ast.Node]bool) []Field {
	var pairs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		pairs = m.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{m}
	}
	visiting[n] = true
	defer delete(visiting, n)

	explicit := make(map[string]Pos, len(pairs))
	keys := make([]*Value, len(pairs))
	for i, mv := range pairs {
		if isMerge(mv) {
			continue
		}
		k := d.value(mv.Key)
		switch {
		case k == nil:
		case !k.Scalar():
			d.report(Problem{Kind: KeyNotScalar, Pos: k.Pos, Value: k}, "mapping keys must be strings, got %s", k.Describe())
		default:
			if first, dup := explicit[k.Text]; dup {
				d.report(Problem{Kind: DuplicateKey, Pos: k.Pos, Name: k.Text, First: first},
					"duplicate key %q (first defined at line %d, column %d)", k.Text, first.Line, first.Column)
				continue
			}
			explicit[k.Text] = k.Pos
			keys[i] = k
		}
	}
	var out []Field
	merged := make(map[string]bool)
	for i, mv := range pairs {
		if k := keys[i]; k != nil {
			out = append(out, Field{Key: k.Text, KeyPos: k.Pos, doc: d, value: mv.Value})
			continue
		}
		if !isMerge(mv) {
			continue
		}
		for _, f := range d.merge(mv, visiting) {
			if _, set := explicit[f.Key]; !set && !merged[f.Key] {
				merged[f.Key] = true
				out = append(out, f)
			}
		}
	}
	return out
}

func isMerge(mv *ast.MappingValueNode) bool {
	_, ok := mv.Key.(*ast.MergeKeyNode)
	return ok
}

// merge returns the fields a merge key brings in: those of one mapping or
// of a sequence of mappings, in order.
func (d *Doc) merge(mv *ast.MappingValueNode, visiting map[ast.Node]bool) []Field {
	src := d.entry(mv.Value, d.pos(mv.Key))
	if src == nil {
		return nil
	}
	items := []*Value{src}
	if src.Kind == Seq {
		items = src.Items()
	}
	var out []Field
	for _, item := range items {
		switch {
		case item == nil:
			continue
		case item.Kind != Map:
			d.report(Problem{Kind: MergeNotMapping, Pos: item.Pos, Value: item, Merge: src},
				"merge key (<<) needs a mapping or a list of mappings, got %s", item.Describe())
			continue
		case visiting[item.node]:
			d.report(Problem{Kind: MergeSelf, Pos: item.Pos, Value: item}, "merge key (<<) merges a mapping into itself")
			continue
		}
		d.merges++
		if d.merges > MaxMerges {
			if d.merges == MaxMerges+1 {
				d.report(Problem{Kind: TooManyMerges, Pos: item.Pos}, "too many merges (more than %d); simplify the merge keys (<<)", MaxMerges)
			}
			continue
		}
		out = append(out, d.fields(item.node, visiting)...)
	}
	return out
}
