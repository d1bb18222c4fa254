package agentrt

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/policy/checker"
)

// OutputCheck runs a checker on tool output with an action: warn (record
// it), redact (replace what it found) or block (the model gets an error
// result instead of the output).
type OutputCheck struct {
	Name    string
	Checker policy.Checker
	Action  string
}

// Output check actions.
const (
	OutputWarn   = "warn"
	OutputRedact = "redact"
	OutputBlock  = "block"
)

// outputChecks runs each check in order on the output as the checks
// before it left it; a block ends the checking.
type outputChecks []OutputCheck

func (cs outputChecks) CheckOutput(ctx context.Context, req *policy.Request, content string) (loop.OutputVerdict, error) {
	v := loop.OutputVerdict{Content: content}
	for _, c := range cs {
		res, err := c.Checker.Check(ctx, &policy.CheckInput{
			Phase: policy.PhaseOutput, ToolName: req.ToolName, Agent: req.Agent, SessionID: req.SessionID,
			Principal: req.PrincipalID, Output: v.Content,
		})
		if err != nil {
			return loop.OutputVerdict{}, fmt.Errorf("checker %s: %w", c.Name, err)
		}
		if !res.Flagged {
			continue
		}
		v.Flags = append(v.Flags, loop.OutputFlag{Checker: c.Name, Action: c.Action, ReasonCode: res.ReasonCode, Message: res.Message})
		switch c.Action {
		case OutputBlock:
			v.Blocked = true
			return v, nil
		case OutputRedact:
			v.Content = checker.Redact(v.Content, res.Findings)
		}
	}
	return v, nil
}
