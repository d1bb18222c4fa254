package policy

import (
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// Limits on when expressions. The cost limit bounds one evaluation (a
// unit is roughly one operation; comprehensions over big inputs hit it);
// the size limits keep a hostile rule file from exhausting the parser.
const (
	whenCostLimit      = 100_000
	whenSizeLimit      = 4096 // code points
	whenRecursionLimit = 64
)

// celEnv is the environment every when expression compiles in: the
// standard library and its macros, and the call's variables.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("input", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("tool", cel.StringType),
		cel.Variable("agent", cel.StringType),
		cel.Variable("principal", cel.StringType),
		cel.Variable("roles", cel.ListType(cel.StringType)),
		cel.Variable("mode", cel.StringType),
		cel.Variable("intent", cel.StringType),
		cel.ParserExpressionSizeLimit(whenSizeLimit),
		cel.ParserRecursionLimit(whenRecursionLimit),
	)
})

// whenProgram is a compiled when expression. A cel.Program is safe for
// concurrent use.
type whenProgram struct {
	expr string
	prg  cel.Program
	// tracker is the program's cost tracker before any cost, copied
	// into the call for each evaluation (what cel-go's own Clone of it
	// does, without allocating one); nil evaluates the plain way.
	tracker *cost.Tracker
}

// celIssue is one compile error of a when expression, at a 1-based line
// and column within the expression (0 when CEL gives none).
type celIssue struct {
	line, column int
	message      string
}

// whenError is a when expression that does not compile, or does not
// type-check to a bool.
type whenError struct {
	issues []celIssue
}

func (e *whenError) Error() string {
	msgs := make([]string, len(e.issues))
	for i, is := range e.issues {
		msgs[i] = is.message
		if is.line > 0 {
			msgs[i] = fmt.Sprintf("%s (expression line %d, column %d)", is.message, is.line, is.column)
		}
	}
	return strings.Join(msgs, "; ")
}

// compileWhen compiles expr; the error is a *whenError.
func compileWhen(expr string) (*whenProgram, error) {
	env, err := celEnv()
	if err != nil {
		return nil, &whenError{[]celIssue{{message: "creating the CEL environment: " + err.Error()}}}
	}
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		we := &whenError{}
		for _, e := range iss.Errors() {
			is := celIssue{message: e.Message}
			if loc := e.Location; loc != nil && loc.Line() > 0 {
				is.line, is.column = loc.Line(), loc.Column()+1
			}
			we.issues = append(we.issues, is)
		}
		if len(we.issues) == 0 {
			we.issues = []celIssue{{message: iss.Err().Error()}}
		}
		return nil, we
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) {
		return nil, &whenError{[]celIssue{{message: fmt.Sprintf("must be a bool expression, got %s", t)}}}
	}
	// OptOptimize folds constants and compiles constant regular
	// expressions (matches("…")) once here instead of on every
	// evaluation. A constant that does not compile fails that; the
	// program is then built as before, and its evaluation fails closed.
	prg, err := env.Program(ast, cel.CostLimit(whenCostLimit), cel.EvalOptions(cel.OptOptimize),
		cel.OptimizeRegex(matchesOptimizations...))
	if err != nil {
		prg, err = env.Program(ast, cel.CostLimit(whenCostLimit))
	}
	if err != nil {
		return nil, &whenError{[]celIssue{{message: err.Error()}}}
	}
	return &whenProgram{expr: expr, prg: prg, tracker: costTracker(prg)}, nil
}

// costTracker returns a fresh copy of the cost tracker prg evaluates
// under, taken from a first evaluation without input, or nil.
func costTracker(prg cel.Program) *cost.Tracker {
	frame, err := interpreter.NewExecutionFrame(interpreter.EmptyActivation())
	if err != nil {
		return nil
	}
	defer frame.Close()
	_, _, _ = prg.Eval(frame) // a missing variable is an error; the tracker is set first
	t := frame.CostTracker()
	if t == nil {
		return nil
	}
	fresh, err := t.Clone()
	if err != nil {
		return nil
	}
	return fresh
}

// eval evaluates the expression for the call. An error (a missing key, a
// wrong type, the cost limit) means the rule does not match.
func (w *whenProgram) eval(c *call) (bool, error) {
	var in any = &c.act
	if w.tracker != nil {
		frame, err := interpreter.NewExecutionFrame(&c.act)
		if err != nil {
			return false, err
		}
		defer frame.Close()
		c.tracker = *w.tracker
		frame.SetCostTracker(&c.tracker)
		in = frame
	}
	out, _, err := w.prg.Eval(in)
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("result is %s, not a bool", out.Type())
	}
	return b, nil
}

// activation binds the call's variables, decoding the input only when
// the expression reads it.
type activation struct {
	c *call
}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	c := a.c
	switch name {
	case "input":
		in, err := c.celInput()
		if err != nil {
			return types.NewErr("%s", err.Error()), true
		}
		return in, true
	case "tool":
		return c.req.ToolName, true
	case "agent":
		return c.req.Agent, true
	case "principal":
		return c.req.PrincipalID, true
	case "roles":
		return types.NewStringList(types.DefaultTypeAdapter, c.roles), true
	case "mode":
		return string(c.mode), true
	case "intent":
		return c.req.Intent, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

var _ interpreter.Activation = (*activation)(nil)

// celInput decodes the call's input once, as CEL sees it: a map with
// integers as int and other numbers as double.
func (c *call) celInput() (ref.Val, error) {
	if c.inputDone {
		return c.input, c.inputErr
	}
	c.inputDone = true
	m, err := decodeInput(c.req.Input)
	if err != nil {
		c.inputErr = err
		return nil, err
	}
	c.input = types.DefaultTypeAdapter.NativeToValue(m)
	return c.input, nil
}
