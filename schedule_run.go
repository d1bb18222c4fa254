package agentrt

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// This file holds how a schedule's fire runs differently from a turn a
// person submitted: the schedule's overrides (a model, a subset of the
// tools) and its pre-run script (docs/schedules.md, "Pre-run scripts").

// withOverrides is agent a as the turn's overrides change it: only the
// named model among its candidates, only the named tools (and the
// completion tool when it requires completion).
func withOverrides(a *loop.Agent, o *runtype.TurnOverrides) *loop.Agent {
	if o.Model == "" && len(o.Tools) == 0 {
		return a
	}
	v := *a
	if o.Model != "" {
		v.Candidates = slices.DeleteFunc(slices.Clone(a.Candidates), func(c *model.Candidate) bool { return c.Name != o.Model })
	}
	if len(o.Tools) > 0 {
		v.Tools = slices.DeleteFunc(slices.Clone(a.Tools), func(t tool.Tool) bool {
			name := t.Spec().Name
			return !slices.Contains(o.Tools, name) && name != tool.CompleteTaskName
		})
		v.Delegates = v.Delegates && slices.ContainsFunc(v.Tools, func(t tool.Tool) bool { _, ok := t.(*delegateTool); return ok })
	}
	return &v
}

// preRunOutputBytes bounds what a pre-run script's output adds to the
// turn's first message.
const preRunOutputBytes = 32 << 10

// preRun is the prelude of a fire whose schedule has a pre-run script: it
// runs the agent's command tool the schedule names, sandboxed under the
// agent's profile as any call of it, with the schedule's input. Its
// output, a JSON object, becomes context of the run; {"skip": true,
// "reason": …} skips the fire. The output passes the runtime's output
// checks first: one that blocks it (a prompt injection, say) fails the
// fire, and the model never sees it.
func (rt *Runtime) preRun(c *claim, a *loop.Agent) loop.Prelude {
	turn, o := c.turn, c.turn.Overrides
	return func(ctx context.Context) (*loop.PreludeResult, error) {
		res := &loop.PreludeResult{Name: o.PreRunTool}
		fail := func(kind runtype.FailureKind, format string, args ...any) (*loop.PreludeResult, error) {
			res.Failure = &runtype.Failure{Kind: kind, Message: "the pre-run script " + o.PreRunTool + " " + fmt.Sprintf(format, args...)}
			return res, nil
		}
		base := rt.agents[baseAgent(turn.Agent)]
		if base == nil {
			base = a
		}
		i := slices.IndexFunc(base.Tools, func(t tool.Tool) bool { return t.Spec().Name == o.PreRunTool })
		if i < 0 {
			return fail(runtype.FailureUnknownTool, "is not a tool of agent %s", turn.Agent)
		}
		t := base.Tools[i]
		input := json.RawMessage(cmp.Or(o.PreRunInput, "{}"))
		if err := rt.registry.Validate(t.Spec().Name, input); err != nil {
			return fail(runtype.FailureInvalidArguments, "got input it does not take: %v", err)
		}
		start := time.Now()
		out, err := t.Call(ctx, &tool.Call{
			ID: "prerun_" + c.task.ID, TenantID: turn.TenantID, PrincipalID: turn.PrincipalID, Agent: turn.Agent,
			SessionID: turn.SessionID, TurnID: turn.ID, TaskID: c.task.ID, IdempotencyKey: "prerun/" + c.task.ID, Input: input,
			Workspace: base.Workspace, WorkspaceDir: base.WorkspaceDir,
			Sandbox: rt.sandbox, Profile: base.Sandbox, Outputs: rt.outputs, Redactor: rt.redactor, OutputLimits: rt.cfg.Output,
		})
		res.Duration = time.Since(start)
		if ctx.Err() != nil {
			return nil, context.Cause(ctx) // stopping or lost: the next attempt runs it again
		}
		switch {
		case err != nil:
			return fail(runtype.FailureToolError, "failed: %v", rt.redactor.Text(err.Error()))
		case out.IsError:
			return fail(runtype.FailureToolError, "failed: %s", preview(rt.redactor.Text(out.Content), 500))
		}
		text := strings.TrimSpace(rt.redactor.Text(out.Content))
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(text), &obj); err != nil {
			return fail(runtype.FailureInvalidArguments, "printed output that is not a JSON object: %v", err)
		}
		if skip, ok := obj["skip"]; ok && string(skip) == "true" {
			var reason string
			if r, ok := obj["reason"]; ok {
				_ = json.Unmarshal(r, &reason)
			}
			res.Skip = "skipped by the pre-run script: " + cmp.Or(preview(reason, 500), "no reason given")
			return res, nil
		}
		if len(text) > preRunOutputBytes {
			return fail(runtype.FailureToolError, "printed %d bytes, more than the limit of %d", len(text), preRunOutputBytes)
		}
		if rt.outputCheck != nil {
			req := loop.PolicyRequest(t.Spec(), input)
			req.Agent, req.SessionID, req.PrincipalID, req.TenantID = turn.Agent, turn.SessionID, turn.PrincipalID, turn.TenantID
			v, err := rt.outputCheck.CheckOutput(ctx, req, text)
			if err != nil {
				return nil, fmt.Errorf("checking the pre-run output: %w", err)
			}
			if v.Blocked {
				flag := v.Flags[len(v.Flags)-1]
				return fail(runtype.FailureOutputBlocked, "printed output the %s check refused (%s): the model never saw it", flag.Checker, flag.ReasonCode)
			}
			text = v.Content
		}
		res.Context = text
		return res, nil
	}
}

// preview is s cut to at most n bytes, marked when cut.
func preview(s string, n int) string {
	p, cut := event.Preview(s, n)
	if cut {
		p += " …"
	}
	return p
}
