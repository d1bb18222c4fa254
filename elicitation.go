package agentrt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

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
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(content))
	if err != nil {
		return nil, invalid("content", "not valid JSON: %v", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, invalid("content", "must be a JSON object")
	}
	schema, err := compileRequestedSchema(a)
	if err != nil {
		// The server's schema, not the answer, is at fault: nothing can
		// answer it but decline or cancel.
		return nil, invalid("content", "the action's requestedSchema cannot be used (%v); decline or cancel instead", err)
	}
	if err := schema.Validate(doc); err != nil {
		return nil, invalid("content", "does not match the requested schema: %s", schemaViolations(err))
	}
	canon, err := tool.CanonicalJSON(content)
	if err != nil {
		return nil, invalid("content", "%v", err)
	}
	return canon, nil
}

// compileRequestedSchema compiles an elicitation's schema. References to
// other documents are refused: nothing is fetched.
func compileRequestedSchema(a *runtype.Action) (*jsonschema.Schema, error) {
	raw := a.RequestedSchema
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte(`{"type":"object"}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noRemoteSchemas{})
	loc := "agentrt:///action/" + a.ID + "/requested.schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("adding: %w", err)
	}
	return c.Compile(loc)
}

// noRemoteSchemas refuses every reference to another document.
type noRemoteSchemas struct{}

func (noRemoteSchemas) Load(url string) (any, error) {
	return nil, fmt.Errorf("loading %s: external schema references are not supported", url)
}

// maxViolations bounds how many schema violations a refusal lists.
const maxViolations = 5

// schemaViolations flattens a validation error into its leaf violations,
// each prefixed with where in the content it is: "missing property
// 'name'; at '/age': got string, want integer".
func schemaViolations(err error) string {
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return err.Error()
	}
	var leaves []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			msg, _ := strings.CutPrefix(e.Error(), "at '': ")
			leaves = append(leaves, msg)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(verr)
	// The validator visits properties in map order: sort for stable
	// text, violations of the whole object (missing properties) first.
	slices.SortFunc(leaves, func(a, b string) int {
		if aAt, bAt := strings.HasPrefix(a, "at '"), strings.HasPrefix(b, "at '"); aAt != bAt {
			if aAt {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	leaves = slices.Compact(leaves)
	if n := len(leaves); n > maxViolations {
		leaves = append(leaves[:maxViolations], fmt.Sprintf("and %d more", n-maxViolations))
	}
	return strings.Join(leaves, "; ")
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
