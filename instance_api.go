package agentrt

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// The control plane of named instances (docs/instances.md).

// GetInstance returns the tenant's instance by name, or ErrNotFound.
func (rt *Runtime) GetInstance(ctx context.Context, p *apitype.GetInstanceParams) (*apitype.InstanceRead, error) {
	in, err := rt.instanceByName(ctx, ownerOrDefault(p.Owner), p.Name)
	if err != nil {
		return nil, err
	}
	return instanceRead(in), nil
}

// ListInstances lists the tenant's instances by ID.
func (rt *Runtime) ListInstances(ctx context.Context, p *apitype.ListInstancesParams) (*apitype.InstanceList, error) {
	q := &store.InstanceListParams{TenantID: ownerOrDefault(p.Owner).TenantID, Agent: p.Agent, AfterID: p.AfterID, Limit: p.Limit}
	got, err := rt.store.InstanceList(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("listing instances: %w", err)
	}
	out := &apitype.InstanceList{Instances: make([]apitype.InstanceRead, 0, len(got))}
	for _, in := range got {
		out.Instances = append(out.Instances, *instanceRead(in))
	}
	if len(got) == store.ClampLimit(p.Limit) {
		out.NextAfterID = got[len(got)-1].ID
	}
	return out, nil
}

// GetInstanceState returns an instance's state and its versions.
func (rt *Runtime) GetInstanceState(ctx context.Context, p *apitype.GetInstanceParams) (*apitype.InstanceState, error) {
	in, err := rt.instanceByName(ctx, ownerOrDefault(p.Owner), p.Name)
	if err != nil {
		return nil, err
	}
	return &apitype.InstanceState{State: json.RawMessage(in.State), StateVersion: in.StateVersion, SchemaVersion: in.SchemaVersion}, nil
}

// SetInstanceState replaces an instance's state with one valid against
// the agent's state schema (at its current version), recorded as a
// change by the API. ExpectedStateVersion makes it conditional: another
// version is ErrConflict.
func (rt *Runtime) SetInstanceState(ctx context.Context, p *apitype.SetInstanceStateParams) (*apitype.InstanceState, error) {
	owner := ownerOrDefault(p.Owner)
	find := func() (*runtype.Instance, error) { return rt.instanceByName(ctx, owner, p.Name) }
	w, err := rt.changeState(ctx, find, stateChange{by: "api", expected: p.ExpectedStateVersion},
		func(cur *runtype.Instance) (json.RawMessage, int, error) {
			st, schema, err := rt.stateSchema(cur.Agent)
			switch {
			case err != nil:
				return nil, 0, err
			case st == nil:
				return nil, 0, invalid("state", "agent %s has no state schema", cur.Agent)
			}
			if err := validState(schema, p.State); err != nil {
				return nil, 0, invalid("state", "%v", err)
			}
			return p.State, st.Version, nil
		})
	if err != nil {
		return nil, err
	}
	return &apitype.InstanceState{State: json.RawMessage(w.State), StateVersion: w.StateVersion, SchemaVersion: w.SchemaVersion}, nil
}

// SendInstanceEvent posts an event to an instance: it creates the
// instance on first use (p.Agent required then) and submits a turn on
// its session's main thread that says which event arrived, queued
// behind a turn that runs.
func (rt *Runtime) SendInstanceEvent(ctx context.Context, p *apitype.SendInstanceEventParams) (*apitype.SendInstanceEventResult, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	owner := ownerOrDefault(p.Owner)
	if err := validInstanceName("name", p.Name); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Type) == "" || len(p.Type) > 200 {
		return nil, invalid("type", "must be 1 to 200 characters")
	}
	data := json.RawMessage(cmp.Or(strings.TrimSpace(string(p.Data)), "null"))
	if !json.Valid(data) {
		return nil, invalid("data", "is not JSON")
	}
	in, err := rt.instanceByName(ctx, owner, p.Name)
	switch {
	case errors.Is(err, apitype.ErrNotFound) && p.Agent == "":
		return nil, fmt.Errorf("%w (send with an agent to create it)", err)
	case errors.Is(err, apitype.ErrNotFound):
		if in, err = rt.createInstance(ctx, owner, p.Name, p.Agent); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	case p.Agent != "" && p.Agent != in.Agent:
		return nil, invalid("agent", "instance %s belongs to agent %q", in.Name, in.Agent)
	}
	input := fmt.Sprintf("Event %q arrived for instance %s.\n\n<event type=%q>\n%s\n</event>", p.Type, in.Name, p.Type, data)
	res, err := rt.submit(ctx, &apitype.SubmitTurnParams{
		Owner: owner, SessionID: in.SessionID, Input: input, IdempotencyKey: p.IdempotencyKey,
		Source: "instance", Multitask: apitype.MultitaskEnqueue,
	}, runtype.TurnAnswer)
	if err != nil {
		return nil, err
	}
	if res.Created {
		in = rt.noteWoken(ctx, in)
	}
	return &apitype.SendInstanceEventResult{Instance: *instanceRead(in), TurnID: res.TurnID, TaskID: res.TaskID}, nil
}

// noteWoken records when the instance was last woken; losing a race
// with a state change is harmless (the next wake-up notes it).
func (rt *Runtime) noteWoken(ctx context.Context, in *runtype.Instance) *runtype.Instance {
	w := *in
	w.LastWokenAt = rt.cfg.Now().UTC()
	if err := rt.writer.Write(context.WithoutCancel(ctx), &store.Batch{Instances: []*runtype.Instance{&w}}); err != nil {
		rt.cfg.Logger.Debug("noting an instance's wake-up", "instance", in.Name, "err", err)
		return in
	}
	w.Version++
	return &w
}

// createInstance records a new instance with its session and main
// thread, its state the agent's initial state. Another call that created
// it first wins: its instance is returned.
func (rt *Runtime) createInstance(ctx context.Context, owner runtype.Owner, name, agent string) (*runtype.Instance, error) {
	if _, ok := rt.agents[agent]; !ok {
		return nil, invalid("agent", "unknown agent %q", agent)
	}
	st := rt.cfg.Agents[agent].State
	if st == nil {
		return nil, invalid("agent", "agent %s has no state schema, so it has no named instances", agent)
	}
	now := rt.cfg.Now().UTC()
	in := &runtype.Instance{
		ID: rt.ids.New(runtype.PrefixInstance), Owner: owner, Name: name, Agent: agent, SessionID: rt.ids.New(runtype.PrefixSession),
		State: string(initialState(st)), SchemaVersion: st.Version, CreatedAt: now, UpdatedAt: now,
	}
	sess := &runtype.Session{ID: in.SessionID, Owner: owner, Agent: agent, Title: "instance " + name, CreatedAt: now, UpdatedAt: now}
	thr := &runtype.Thread{ID: rt.ids.New(runtype.PrefixThread), SessionID: in.SessionID, Owner: owner, CreatedAt: now}
	ids := &runtype.Turn{SessionID: in.SessionID, ThreadID: thr.ID, Owner: owner}
	b := &store.Batch{
		Sessions: []*runtype.Session{sess}, Threads: []*runtype.Thread{thr}, Instances: []*runtype.Instance{in},
		Events: []*event.Event{
			rt.turnEvent(event.SessionCreated, ids, "", &event.SessionPayload{Agent: agent, Title: sess.Title}),
			rt.turnEvent(event.ThreadStarted, ids, "", &event.ThreadPayload{Agent: agent}),
		},
	}
	if err := rt.writer.Write(ctx, b); err != nil {
		if errors.Is(err, store.ErrConflict) {
			if got, gerr := rt.instanceByName(ctx, owner, name); gerr == nil {
				if got.Agent != agent {
					return nil, invalid("agent", "instance %s belongs to agent %q", name, got.Agent)
				}
				return got, nil
			}
		}
		return nil, fmt.Errorf("recording instance %s: %w", name, err)
	}
	in.Version = 1
	return in, nil
}

// instanceByName reads the tenant's instance; ErrNotFound names it.
func (rt *Runtime) instanceByName(ctx context.Context, owner runtype.Owner, name string) (*runtype.Instance, error) {
	if err := validInstanceName("name", name); err != nil {
		return nil, err
	}
	in, err := rt.store.InstanceGetByName(ctx, &store.InstanceGetByNameParams{TenantID: owner.TenantID, Name: name})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("instance %q: %w", name, apitype.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading instance %q: %w", name, err)
	}
	return in, nil
}

func instanceRead(in *runtype.Instance) *apitype.InstanceRead {
	r := &apitype.InstanceRead{
		InstanceID: in.ID, Name: in.Name, Agent: in.Agent, SessionID: in.SessionID, State: json.RawMessage(in.State),
		StateVersion: in.StateVersion, SchemaVersion: in.SchemaVersion, CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt,
	}
	if !in.LastWokenAt.IsZero() {
		t := in.LastWokenAt
		r.LastWokenAt = &t
	}
	return r
}
