package agentrt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// maxElicitationContent bounds an elicitation's answer.
const maxElicitationContent = 64 << 10

// elicitationDecisions are the answers to an elicitation, whatever else
// its record lists.
var elicitationDecisions = []string{runtype.DecisionAccept, runtype.DecisionDecline, runtype.DecisionCancel}

// elicitationStatus is the status an elicitation's decision leaves it in.
func elicitationStatus(decision string) runtype.ActionStatus {
	switch decision {
	case runtype.DecisionAccept:
		return runtype.ActionApproved
	case runtype.DecisionDecline:
		return runtype.ActionDenied
	}
	return runtype.ActionCancelled
}

// elicitationContent checks an answer's content for decision against the
// action's schema, and returns it canonical (nil unless accept).
func elicitationContent(a *runtype.Action, decision string, content []byte) ([]byte, error) {
	if decision != runtype.DecisionAccept {
		if len(content) > 0 {
			return nil, invalid("content", "only allowed with decision accept, got it with %s", decision)
		}
		return nil, nil
	}
	switch {
	case len(bytes.TrimSpace(content)) == 0:
		return nil, invalid("content", "required with decision accept: a JSON object that matches the action's requestedSchema")
	case len(content) > maxElicitationContent:
		return nil, invalid("content", "is %d bytes, more than the limit of %d", len(content), maxElicitationContent)
	}
	if b := bytes.TrimSpace(content); len(b) == 0 || b[0] != '{' {
		return nil, invalid("content", "must be a JSON object")
	}
	raw := a.RequestedSchema
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte(`{"type":"object"}`)
	}
	schema, err := tool.CompileSchema("agentrt:///action/"+a.ID+"/requested.schema.json", raw)
	if err != nil {
		// The server's schema, not the answer, is at fault: nothing can
		// answer it but decline or cancel.
		return nil, invalid("content", "the action's requestedSchema cannot be used (%v); decline or cancel instead", err)
	}
	if err := schema.Check(content); err != nil {
		return nil, invalid("content", "does not match the requested schema: %v", err)
	}
	canon, err := tool.CanonicalJSON(content)
	if err != nil {
		return nil, invalid("content", "%v", err)
	}
	return canon, nil
}

// answerElicitation resolves a pending elicitation with a checked answer.
// The run that asked is live and waits for the record to change, so
// nothing is resumed or made due: the answer is the action's resolution.
func (rt *Runtime) answerElicitation(ctx context.Context, a *runtype.Action, decision, message string, content []byte, by string) (*apitype.RespondActionResult, error) {
	now := rt.cfg.Now().UTC()
	if !a.ExpiresAt.IsZero() && !now.Before(a.ExpiresAt) {
		if err := rt.expire(ctx, a); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: action %s expired at %s; the elicitation was cancelled", apitype.ErrConflict, a.ID, a.ExpiresAt.Format(time.RFC3339))
	}
	ctx = context.WithoutCancel(ctx)
	c := *a
	c.Status = elicitationStatus(decision)
	c.Resolution = &runtype.ActionResolution{Decision: decision, Message: message, UpdatedInput: content, By: by, At: now}
	if err := rt.writeElicitation(ctx, &c); err != nil {
		if errors.Is(err, store.ErrConflict) {
			if cur, gerr := rt.store.ActionGet(ctx, &store.ActionGetParams{TenantID: a.TenantID, ID: a.ID}); gerr == nil && cur.Status != runtype.ActionPending {
				return nil, alreadyResolved(cur)
			}
		}
		return nil, fmt.Errorf("recording the answer to action %s: %w", a.ID, err)
	}
	return &apitype.RespondActionResult{Action: actionRead(&c)}, nil
}

// writeElicitation records a resolved elicitation: the action (committed
// only while the stored one is pending) and action.resolved. It is not a
// permission decision, so permission.resolved is not recorded.
func (rt *Runtime) writeElicitation(ctx context.Context, resolved *runtype.Action) error {
	turn, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: resolved.TenantID, ID: resolved.TurnID})
	if err != nil {
		return fmt.Errorf("reading the action's turn: %w", err)
	}
	return rt.writer.Write(ctx, rt.coord.ResolutionFacts(resolved, turn.TraceID))
}

// expireElicitation cancels an elicitation nobody answered in time; the
// run that asked reads the answer, so nothing resumes.
func (rt *Runtime) expireElicitation(ctx context.Context, a *runtype.Action) error {
	c := *a
	c.Status = runtype.ActionExpired
	c.Resolution = &runtype.ActionResolution{Decision: runtype.DecisionCancel, Message: "nobody answered in time", By: "runtime", At: rt.cfg.Now().UTC()}
	switch err := rt.writeElicitation(context.WithoutCancel(ctx), &c); {
	case errors.Is(err, store.ErrConflict):
		return nil // resolved meanwhile
	case err != nil:
		return fmt.Errorf("expiring action %s: %w", a.ID, err)
	}
	return nil
}
