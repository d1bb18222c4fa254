package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Named instances (migration 23), written with optimistic concurrency:
// an insert at version 0, else an update conditional on the stored
// version.

const instanceCols = `id, tenant_id, principal_id, name, agent, session_id, state, state_version, schema_version,
	version, created_at, updated_at, last_woken_at`

func buildInstanceQueries(q *[numQueries]string) {
	q[qInsertInstance] = insertSQL("instances", instanceCols, "", "")
	q[qUpdateInstance] = `UPDATE instances SET principal_id = ?, name = ?, agent = ?, session_id = ?, state = ?,
		state_version = ?, schema_version = ?, version = ?, created_at = ?, updated_at = ?, last_woken_at = ?
		WHERE id = ? AND tenant_id = ? AND version = ?`
	q[qInstanceGet] = `SELECT ` + instanceCols + ` FROM instances WHERE id = ? AND tenant_id = ?`
	q[qInstanceGetByName] = `SELECT ` + instanceCols + ` FROM instances WHERE tenant_id = ? AND name = ?`
	q[qInstanceGetBySession] = `SELECT ` + instanceCols + ` FROM instances INDEXED BY instances_session
		WHERE tenant_id = ? AND session_id = ? ORDER BY id LIMIT 1`
	q[qInstanceList] = `SELECT ` + instanceCols + ` FROM instances WHERE tenant_id = ? AND id > ? ORDER BY id LIMIT ?`
	q[qInstanceList+1] = `SELECT ` + instanceCols + ` FROM instances INDEXED BY instances_agent
		WHERE tenant_id = ? AND agent = ? AND id > ? ORDER BY id LIMIT ?`
}

// writeInstances writes b's instances. A conflict (a stale version, an
// ID of another tenant, a name taken) fails the batch.
func (t *Tx) writeInstances(ctx context.Context, b *store.Batch, wrote bool) (bool, error) {
	for _, in := range b.Instances {
		var (
			res sql.Result
			n   int64
			err error
		)
		if in.Version == 0 {
			res, err = t.exec(ctx, qInsertInstance, in.ID, in.TenantID, in.PrincipalID, in.Name, in.Agent, in.SessionID,
				in.State, in.StateVersion, int64(in.SchemaVersion), int64(1), nanos(in.CreatedAt), nanos(in.UpdatedAt),
				nanos(in.LastWokenAt))
		} else {
			res, err = t.exec(ctx, qUpdateInstance, in.PrincipalID, in.Name, in.Agent, in.SessionID, in.State, in.StateVersion,
				int64(in.SchemaVersion), in.Version+1, nanos(in.CreatedAt), nanos(in.UpdatedAt), nanos(in.LastWokenAt),
				in.ID, in.TenantID, in.Version)
		}
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return wrote, fmt.Errorf("writing instance %s: %w", in.ID, translate(err))
		}
		if n == 0 {
			return wrote, fmt.Errorf("writing instance %s at version %d: %w", in.ID, in.Version, store.ErrConflict)
		}
		wrote = true
	}
	return wrote, nil
}

// InstanceGet returns the tenant's instance by ID.
func (r reader) InstanceGet(ctx context.Context, p *store.InstanceGetParams) (*runtype.Instance, error) {
	in, err := get(ctx, r, scanInstance, qInstanceGet, p.ID, p.TenantID)
	if err != nil {
		return nil, fmt.Errorf("getting instance %s: %w", p.ID, err)
	}
	return in, nil
}

// InstanceGetByName returns the tenant's instance by name.
func (r reader) InstanceGetByName(ctx context.Context, p *store.InstanceGetByNameParams) (*runtype.Instance, error) {
	in, err := get(ctx, r, scanInstance, qInstanceGetByName, p.TenantID, p.Name)
	if err != nil {
		return nil, fmt.Errorf("getting instance %q: %w", p.Name, err)
	}
	return in, nil
}

// InstanceGetBySession returns the tenant's instance of a session.
func (r reader) InstanceGetBySession(ctx context.Context, p *store.InstanceGetBySessionParams) (*runtype.Instance, error) {
	in, err := get(ctx, r, scanInstance, qInstanceGetBySession, p.TenantID, p.SessionID)
	if err != nil {
		return nil, fmt.Errorf("getting the instance of session %s: %w", p.SessionID, err)
	}
	return in, nil
}

// InstanceList lists the tenant's instances that match p by ID.
func (r reader) InstanceList(ctx context.Context, p *store.InstanceListParams) ([]*runtype.Instance, error) {
	var (
		out []*runtype.Instance
		err error
	)
	if p.Agent == "" {
		out, err = list(ctx, r, scanInstance, qInstanceList, p.TenantID, p.AfterID, store.ClampLimit(p.Limit))
	} else {
		out, err = list(ctx, r, scanInstance, qInstanceList+1, p.TenantID, p.Agent, p.AfterID, store.ClampLimit(p.Limit))
	}
	if err != nil {
		return nil, fmt.Errorf("listing instances: %w", err)
	}
	return out, nil
}

func scanInstance(sc scanner) (*runtype.Instance, error) {
	var (
		in                        runtype.Instance
		schema                    int64
		created, updated, wokenAt int64
	)
	if err := sc.Scan(&in.ID, &in.TenantID, &in.PrincipalID, &in.Name, &in.Agent, &in.SessionID, &in.State,
		&in.StateVersion, &schema, &in.Version, &created, &updated, &wokenAt); err != nil {
		return nil, err
	}
	in.SchemaVersion = int(schema)
	in.CreatedAt, in.UpdatedAt, in.LastWokenAt = fromNanos(created), fromNanos(updated), fromNanos(wokenAt)
	return &in, nil
}
