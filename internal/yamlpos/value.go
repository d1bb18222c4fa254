package yamlpos

import (
	"regexp"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// Pos is a 1-based line and column in a YAML file. The zero Pos is no
// position.
type Pos struct {
	Line, Column int
}

func tokenPos(tk *token.Token) Pos {
	if tk == nil || tk.Position == nil {
		return Pos{1, 1}
	}
	return Pos{tk.Position.Line, tk.Position.Column}
}

// Kind is the type of a YAML value.
type Kind uint8

// The kinds of values; a block scalar is a String, infinity and NaN are
// Floats.
const (
	Null Kind = iota
	Bool
	Int
	Float
	String
	Map
	Seq
)

var kindNames = [...]string{
	Null: "null", Bool: "a boolean", Int: "an integer", Float: "a number",
	String: "a string", Map: "a mapping", Seq: "a sequence",
}

// String names the kind with an article, for messages such as "must be a
// string, not an integer".
func (k Kind) String() string { return kindNames[k] }

// Value is one resolved YAML value. Each is made when asked for, so it may
// be changed freely; a mapping's fields and a sequence's items are resolved
// anew on each call.
type Value struct {
	Kind Kind
	// Pos is where the value is written: at the first token of its anchor,
	// tag, alias or self, or as Options.EntryPositions says.
	Pos Pos
	// Tag is the tag written on the value, such as "!!str", or "".
	Tag string
	// Text is a string's content, or the source text of another scalar.
	Text string
	Bool bool
	// Int is an integer's value when IntOK, that is when it fits an int64.
	Int   int64
	IntOK bool
	// Num is the JSON text of an integer or of a finite float.
	Num string

	plain bool // a string written without quotes
	doc   *Doc
	node  ast.Node // a mapping's or a sequence's
}

// Field is one key of a mapping.
type Field struct {
	Key    string
	KeyPos Pos
	doc    *Doc
	value  ast.Node // as written
}

// Value resolves the field's value, anew on each call, or returns nil after
// reporting why it cannot be resolved.
func (f Field) Value() *Value { return f.doc.entry(f.value, f.KeyPos) }

// Scalar reports whether v is a scalar other than null.
func (v *Value) Scalar() bool {
	return v.Kind != Null && v.Kind != Map && v.Kind != Seq
}

// yamlNumber matches the YAML 1.2 core schema's numbers that the parser
// leaves as plain strings, such as 1e3 and integers beyond 64 bits.
var yamlNumber = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// PlainNumber reports whether v is a string written without quotes that
// YAML 1.2 reads as a number but the parser kept as a string, such as 1e3
// or an integer beyond 64 bits.
func (v *Value) PlainNumber() bool {
	return v.Kind == String && v.plain && yamlNumber.MatchString(v.Text)
}

// Items returns a sequence's items, nil for one that cannot be resolved,
// or nil for a value of another kind.
func (v *Value) Items() []*Value {
	if v == nil || v.Kind != Seq {
		return nil
	}
	seq := v.node.(*ast.SequenceNode)
	dashes := v.doc.opts.EntryPositions && !seq.IsFlowStyle && len(seq.Entries) == len(seq.Values)
	items := make([]*Value, len(seq.Values))
	for i, n := range seq.Values {
		items[i] = v.doc.value(n)
		if dashes && items[i] != nil && items[i].Kind == Null {
			items[i].Pos = tokenPos(seq.Entries[i].Start)
		}
	}
	return items
}

// Fields returns a mapping's keys in the order written, or nil for a value
// of another kind. Merge keys (<<) are expanded where they are written:
// keys written in the mapping win over merged ones, and an earlier merged
// mapping wins over a later one.
func (v *Value) Fields() []Field {
	if v == nil || v.Kind != Map {
		return nil
	}
	return v.doc.fields(v.node, make(map[ast.Node]bool))
}
