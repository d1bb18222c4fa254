package yamlpos

import "fmt"

// MaxMerges bounds how many mappings merge keys (<<) may bring into one
// document, counted each time a mapping is expanded: mappings that each
// merge the one before them twice take exponentially many expansions.
const MaxMerges = 10_000

// ProblemKind says what is wrong in a Problem.
type ProblemKind uint8

// The problems found while resolving values. UnknownTag and TagMismatch
// come only with Options.CoreTags.
const (
	UnknownAlias    ProblemKind = iota + 1 // an alias with no anchor of its name before it
	AliasLoop                              // an alias that leads back to itself
	KeyNotScalar                           // a mapping key that is a mapping, a sequence or null
	DuplicateKey                           // a key set twice in one mapping
	MergeNotMapping                        // a value merged with << that is not a mapping
	MergeSelf                              // a mapping merged into itself
	TooManyMerges                          // the merge that goes past MaxMerges
	UnknownTag                             // a tag outside the YAML core schema
	TagMismatch                            // a value its core schema tag cannot apply to
	Unsupported                            // YAML that is not supported
)

// Problem is a mistake in how a document is written as YAML, found while
// resolving its values. Message words it as agentrt.yaml does; a format
// with its own wording builds one from the other fields.
type Problem struct {
	Kind    ProblemKind
	Pos     Pos
	Message string
	Name    string // the alias or tag at fault, or the key set twice
	Value   *Value // the key, merged value or tagged value at fault
	Merge   *Value // for MergeNotMapping: the << key's value, Value or a sequence holding it
	First   Pos    // for DuplicateKey: where the key is set first
}

// report words p and reports it.
func (d *Doc) report(p Problem, format string, args ...any) {
	p.Message = fmt.Sprintf(format, args...)
	d.opts.Report(p)
}

// Describe names what v holds, for "got …" in messages: null, a mapping,
// a list, or a scalar with its text, such as `string "x"` or "integer 7".
func (v *Value) Describe() string {
	switch v.Kind {
	case Null:
		return "null"
	case Map:
		return "a mapping"
	case Seq:
		return "a list"
	case String:
		if v.PlainNumber() {
			return "number " + v.Text
		}
		return fmt.Sprintf("string %q", v.Text)
	case Int:
		return "integer " + v.Text
	case Float:
		return "number " + v.Text
	}
	return "boolean " + v.Text
}
