package agentrt

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// CheckOwn returns nil when owner.PrincipalID created the record of kind
// and id in owner's tenant. Otherwise it returns an error wrapping
// ErrNotFound, the same whether the record is missing, another tenant's
// or another principal's: a caller that may see only its own learns
// nothing of the others.
func (rt *Runtime) CheckOwn(ctx context.Context, owner runtype.Owner, kind apitype.OwnKind, id string) error {
	owner = ownerOrDefault(owner)
	var (
		principal string
		err       error
	)
	switch kind {
	case apitype.OwnSession:
		var s *runtype.Session
		if s, err = rt.store.SessionGet(ctx, &store.SessionGetParams{TenantID: owner.TenantID, ID: id}); err == nil {
			principal = s.PrincipalID
		}
	case apitype.OwnTurn:
		var t *runtype.Turn
		if t, err = rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: id}); err == nil {
			principal = t.PrincipalID
		}
	case apitype.OwnTask:
		var t *runtype.Task
		if t, err = rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: owner.TenantID, ID: id}); err == nil {
			principal = t.PrincipalID
		}
	case apitype.OwnSubagent:
		var s *runtype.Subagent
		if s, err = rt.store.SubagentGet(ctx, &store.SubagentGetParams{TenantID: owner.TenantID, ID: id}); err == nil {
			principal = s.PrincipalID
		}
	case apitype.OwnJob:
		var j *runtype.Job
		if j, err = rt.store.JobGet(ctx, &store.JobGetParams{TenantID: owner.TenantID, ID: id}); err == nil {
			principal = j.PrincipalID
		}
	default:
		return fmt.Errorf("checking ownership: unknown kind %q", kind)
	}
	switch {
	case errors.Is(err, apitype.ErrNotFound) || (err == nil && principal != owner.PrincipalID):
		// One message for the three cases, naming only what was asked.
		return fmt.Errorf("%s %s: %w", kind, id, apitype.ErrNotFound)
	case err != nil:
		return fmt.Errorf("reading %s %s: %w", kind, id, err)
	}
	return nil
}
