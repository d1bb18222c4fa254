package replay

import (
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// maxArgumentsBytes bounds one tool call's encoded input. Aliases can make
// a small file expand into a huge document; this keeps Parse bounded.
const maxArgumentsBytes = 1 << 20

// maxDepth bounds an input's nesting, so that one containing itself stops.
const maxDepth = 200

// yamlProblem records a problem with how the script is written as YAML,
// worded as scripts always have been.
func (ps *problems) yamlProblem(p yamlpos.Problem) {
	switch p.Kind {
	case yamlpos.UnknownAlias:
		p.Message = fmt.Sprintf("alias *%s refers to no anchor defined before it", p.Name)
	case yamlpos.KeyNotScalar:
		p.Message = fmt.Sprintf("mapping keys must be scalars, not %s", p.Value.Kind)
	case yamlpos.DuplicateKey:
		p.Message = fmt.Sprintf("key %q is already set at line %d", p.Name, p.First.Line)
	case yamlpos.MergeNotMapping:
		p.Pos = p.Merge.Pos
		p.Message = fmt.Sprintf("merge key << needs a mapping or a sequence of mappings, not %s", p.Merge.Kind)
	}
	ps.add(p.Pos, p.Message)
}

// input encodes a tool call's input as JSON, keeping the key order; ctx
// names the tool call in messages.
func (b *builder) input(ctx string, v *yamlpos.Value) ([]byte, bool) {
	args, err := v.JSON(yamlpos.JSONOptions{MaxDepth: maxDepth, MaxBytes: maxArgumentsBytes})
	var je *yamlpos.JSONError
	if !errors.As(err, &je) {
		return args, true
	}
	switch je.Reason {
	case yamlpos.NotFinite:
		b.add(v.Pos, ctx, "input cannot hold %s: JSON has no infinity or NaN", je.Value.Text)
	case yamlpos.TooLarge:
		b.add(v.Pos, ctx, "input is larger than %d bytes once encoded as JSON", maxArgumentsBytes)
	case yamlpos.TooDeep:
		at := v.Pos
		if je.Value != nil {
			at = je.Value.Pos
		}
		b.add(at, "", "values are nested more than %d levels deep", maxDepth)
	}
	return nil, false
}
