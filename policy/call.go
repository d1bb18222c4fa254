package policy

import (
	"cel.dev/cel-go/common/cost"

	"context"
	"fmt"
	"sync"

	"cel.dev/cel-go/common/types/ref"
)

// call is the state of one evaluation.
type call struct {
	ctx   context.Context
	k     *Kernel
	req   *Request
	roles []string
	mode  Mode

	// The input as CEL sees it, decoded on first use.
	inputDone bool
	input     ref.Val
	inputErr  error

	// The command line, parsed on first use.
	shell *shellCommand
	// opaque: the Opaque setting decided the call.
	opaque bool

	// checks memoizes checker runs, so each checker runs once per call.
	checks []checkRun
	// failed is the first checker run that returned an error.
	failed *checkRun

	// tr collects the explanation; nil for Evaluate.
	tr *Explanation

	// act binds the call's variables for CEL; kept here so that
	// evaluating does not allocate one.
	act activation
	// tracker is the cost tracker of the when expression being
	// evaluated.
	tracker cost.Tracker
}

// calls recycles evaluation state: Evaluate allocates little.
var calls = sync.Pool{New: func() any { return new(call) }}

func newCall(ctx context.Context, k *Kernel, req *Request, tr *Explanation) *call {
	c := calls.Get().(*call)
	*c = call{ctx: ctx, k: k, req: req, roles: req.Roles, tr: tr, checks: c.checks[:0]}
	c.act.c = c
	return c
}

// release returns c to the pool; the decision holds none of its memory.
func (c *call) release() {
	clear(c.checks)
	*c = call{checks: c.checks[:0]}
	calls.Put(c)
}

type checkRun struct {
	name string
	res  CheckResult
	err  error
}

// shellCmd returns the call's parsed command line.
func (c *call) shellCmd() *shellCommand {
	if c.shell == nil {
		c.shell = parseShellInput(c.req.Command, c.req.CommandInput)
	}
	return c.shell
}

// check runs the named checker on the call's input, once per call.
func (c *call) check(name string) *checkRun {
	for i := range c.checks {
		if c.checks[i].name == name {
			return &c.checks[i]
		}
	}
	run := checkRun{name: name}
	ch := c.k.cfg.Checkers[name]
	if ch == nil {
		run.err = fmt.Errorf("no checker named %q", name)
	} else {
		run.res, run.err = safeCheck(c.ctx, ch, &CheckInput{
			Phase:     PhaseInput,
			ToolName:  c.req.ToolName,
			Agent:     c.req.Agent,
			SessionID: c.req.SessionID,
			Principal: c.req.PrincipalID,
			Input:     c.req.Input,
		})
	}
	if run.err == nil && run.res.Flagged && run.res.ReasonCode == "" {
		run.res.ReasonCode = "checker_flagged"
	}
	c.checks = append(c.checks, run)
	r := &c.checks[len(c.checks)-1]
	if r.err != nil && c.failed == nil {
		c.failed = &checkRun{name: r.name, err: r.err}
	}
	return r
}

// safeCheck runs a checker, turning a panic into an error.
func safeCheck(ctx context.Context, ch Checker, in *CheckInput) (res CheckResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("checker panicked: %v", p)
		}
	}()
	return ch.Check(ctx, in)
}
