package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// Func returns a tool that calls fn, a Go function. The input schema is
// inferred from In (usually a struct with json tags; a `jsonschema:"…"` tag
// gives a property its description), the input is decoded into an In and
// the Out value is JSON-encoded into Result.Content, except that a string
// Out is returned as it is. An error from fn becomes an error result.
//
// If no schema can be inferred from In, Registry.Register reports why.
func Func[In, Out any](name, description string, ann Annotations, fn func(ctx context.Context, call *Call, in In) (Out, error)) Tool {
	t := &funcTool[In, Out]{fn: fn}
	t.spec = Spec{Name: name, Description: description, Annotations: ann, Source: "go"}
	schema, err := jsonschema.For[In](nil)
	if err == nil {
		t.spec.InputSchema, err = json.Marshal(schema)
	}
	if err != nil {
		t.err = fmt.Errorf("inferring input schema: %w", err)
	}
	return t
}

type funcTool[In, Out any] struct {
	spec Spec
	err  error // from schema inference; reported by Register
	fn   func(ctx context.Context, call *Call, in In) (Out, error)
}

func (t *funcTool[In, Out]) initErr() error { return t.err }

func (t *funcTool[In, Out]) Spec() Spec { return t.spec }

func (t *funcTool[In, Out]) Call(ctx context.Context, call *Call) (*Result, error) {
	var in In
	if len(call.Input) > 0 {
		if err := json.Unmarshal(call.Input, &in); err != nil {
			return nil, fmt.Errorf("decoding input: %w", err)
		}
	}
	out, err := t.fn(ctx, call, in)
	if err != nil {
		return nil, err
	}
	if s, ok := any(out).(string); ok {
		return &Result{Content: s}, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encoding output: %w", err)
	}
	return &Result{Content: string(b)}, nil
}
