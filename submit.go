package agentrt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// SubmitTurn accepts a turn and returns once its acceptance is durable; a
// worker runs it asynchronously (follow it with WaitTurn or Subscribe). It
// is idempotent on IdempotencyKey. Once the acceptance is durable
// SubmitTurn reports success, even if the runtime began to stop meanwhile
// (the turn then stays queued in the store for the next start).
//
// It refuses the turn with an *OverloadedError when the tenant's or the
// runtime's queue is full, and with ErrBusy when the thread is busy and
// the multitask policy is reject.
func (rt *Runtime) SubmitTurn(ctx context.Context, p *apitype.SubmitTurnParams) (*apitype.SubmitTurnResult, error) {
	return rt.submit(ctx, p, runtype.TurnAnswer)
}

// submit accepts a turn of the kind: one that answers its input, or a
// maintenance turn (compact_thread, reset_thread).
func (rt *Runtime) submit(ctx context.Context, p *apitype.SubmitTurnParams, kind runtype.TurnKind) (*apitype.SubmitTurnResult, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	owner := ownerOrDefault(p.Owner)
	if err := rt.validateSubmit(p); err != nil {
		return nil, err
	}
	if p.IdempotencyKey != "" {
		if res, err := rt.existingTurn(ctx, owner, p, kind); !errors.Is(err, store.ErrNotFound) {
			return res, err
		}
	}
	res, err := rt.accept(ctx, owner, p, kind, rt.cfg.EagerStart)
	if errors.Is(err, errSessionRace) {
		// Another submission created the session first: now it exists.
		res, err = rt.accept(ctx, owner, p, kind, true)
	}
	if errors.Is(err, errThreadTaken) {
		// Another turn of the thread was accepted meanwhile: this one
		// waits for it, as any submission to a busy thread does.
		res, err = rt.accept(ctx, owner, p, kind, false)
	}
	return res, err
}

// errThreadTaken: an eager start found another open task in its thread
// when its submission committed (store.LeaseChange.Alone), so nothing was
// written.
var errThreadTaken = fmt.Errorf("%w: the thread is busy", store.ErrLeaseLost)

// errSessionRace: the session a submission meant to create exists now —
// another submission created it meanwhile (retry once), or the id is
// taken by another tenant (then it is the caller's conflict).
var errSessionRace = fmt.Errorf("%w: the session id is not available", store.ErrConflict)

// accept records the turn (with its session and thread when they are new)
// and queues it on its thread. When eager is set and the thread is idle,
// the turn may start at once on a worker of this runtime (see eager).
func (rt *Runtime) accept(ctx context.Context, owner runtype.Owner, p *apitype.SubmitTurnParams, kind runtype.TurnKind, eager bool) (*apitype.SubmitTurnResult, error) {
	now := rt.cfg.Now().UTC()
	turn := &runtype.Turn{
		ID: rt.ids.New(runtype.PrefixTurn), Owner: owner, Kind: kind, IdempotencyKey: p.IdempotencyKey, Input: p.Input,
		Status: runtype.StatusQueued, TaskID: rt.ids.New(runtype.PrefixTask), TraceID: rt.ids.TraceID(), CreatedAt: now,
	}
	span := telemetry.TurnSpanID(turn.ID) // events outside a run belong to the turn's span
	b := &store.Batch{}
	sess, thr, err := rt.sessionAndThread(ctx, owner, p, turn, span, b)
	if err != nil {
		return nil, err
	}
	turn.SessionID, turn.ThreadID, turn.Agent = sess.ID, thr.ID, sess.Agent
	objective, _ := event.Preview(p.Input, 200)
	task := &runtype.Task{
		ID: turn.TaskID, SessionID: sess.ID, ThreadID: thr.ID, TurnID: turn.ID, Owner: owner,
		Objective: objective, Status: runtype.StatusQueued, CreatedAt: now, UpdatedAt: now,
	}
	task.QueuedAt, task.DueAt = now, now
	var open []*runtype.Task
	if len(b.Threads) == 0 {
		if open, err = rt.openTasks(ctx, owner.TenantID, sess.ID, thr.ID); err != nil {
			return nil, err
		}
	}
	policy := p.Multitask
	if policy == "" {
		policy = rt.cfg.Multitask
	}
	if len(open) > 0 {
		switch policy {
		case apitype.MultitaskReject:
			return nil, fmt.Errorf("%w: turn %s is %s, and the multitask policy is reject", apitype.ErrBusy, open[0].TurnID, open[0].Status)
		case apitype.MultitaskEnqueue:
			turn.StatusReason = runtype.ReasonEnqueued
		}
	}
	t, k := *turn, *task
	b.Admit = rt.admission(owner)
	b.Turns = append(b.Turns, &t)
	b.Tasks = append(b.Tasks, &k)
	inputPreview, _ := event.Preview(p.Input, event.PreviewBytes)
	b.Events = append(b.Events,
		rt.turnEvent(event.TurnSubmitted, turn, span, &event.TurnPayload{
			Status: runtype.StatusAccepted, Agent: turn.Agent, Source: p.Source, InputPreview: inputPreview,
			IdempotencyKey: p.IdempotencyKey,
		}),
		rt.turnEvent(event.TaskCreated, turn, span, &event.TaskPayload{Status: runtype.StatusAccepted, Objective: objective}),
		rt.turnEvent(event.TaskQueued, turn, span, &event.TaskPayload{Status: runtype.StatusQueued, Reason: turn.StatusReason}),
	)
	if turn.StatusReason == runtype.ReasonEnqueued {
		q := append(queue(open), event.QueuedTurn{TurnID: turn.ID, TaskID: task.ID, QueuedAt: now})
		e := rt.turnEvent(event.QueueChanged, turn, span, &event.QueuePayload{Change: "enqueued", TurnID: turn.ID, Queued: q})
		e.QueueID = thr.ID
		b.Events = append(b.Events, e)
	}
	// Eager start: a thread with no open task and a free worker here. The
	// claim rides on the submission's commit, and the turn starts without
	// the dispatcher's look for due work and claim of its own.
	var lease *store.LeaseChange
	if eager && len(open) == 0 && rt.reserveEagerSlot() {
		lease = &store.LeaseChange{
			TenantID: owner.TenantID, TaskID: task.ID, Claim: true, Alone: true, Owner: rt.workerID,
			ExpiresAt: now.Add(rt.cfg.LeaseTTL),
		}
		b.Leases = append(b.Leases, lease)
	}
	if err := rt.writer.Write(ctx, b); err != nil {
		if lease != nil {
			rt.releaseEagerSlot()
			if errors.Is(err, store.ErrLeaseLost) {
				return nil, errThreadTaken
			}
		}
		var full *store.QueueFullError
		switch {
		case errors.As(err, &full) && p.IdempotencyKey != "":
			// A submission with the same key may have taken the last
			// place: resubmitting an accepted turn is never refused.
			if res, err := rt.existingTurn(ctx, owner, p, kind); !errors.Is(err, store.ErrNotFound) {
				return res, err
			}
			return nil, rt.overloaded(full)
		case errors.As(err, &full):
			return nil, rt.overloaded(full)
		case errors.Is(err, store.ErrConflict) && p.IdempotencyKey != "":
			// A concurrent submission with the same key won.
			return rt.existingTurn(ctx, owner, p, kind)
		case errors.Is(err, store.ErrConflict) && len(b.Sessions) > 0:
			return nil, errSessionRace
		}
		return nil, fmt.Errorf("recording turn: %w", err)
	}
	if len(open) > 0 && (policy == apitype.MultitaskInterrupt || policy == apitype.MultitaskRollback) {
		// The new turn waits for the open ones, which end now.
		control, cause := runtype.ControlCancel, ErrInterrupted
		if policy == apitype.MultitaskRollback {
			control, cause = runtype.ControlRollback, loop.ErrRolledBack
		}
		for _, o := range open {
			ot, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: o.TurnID})
			if err == nil {
				_, err = rt.cancel(ctx, owner, ot, o, control, cause)
			}
			if err != nil {
				rt.cfg.Logger.Error("ending a turn for a newer one", "turnId", o.TurnID, "policy", policy, "err", err)
			}
		}
	}
	if lease != nil {
		// The store keeps what it was handed (store.Batch): the worker
		// gets copies, as a claim's reads would give it.
		rt.startEager(*turn, *task, lease, now)
	} else {
		rt.kick()
	}
	return &apitype.SubmitTurnResult{
		SessionID: sess.ID, ThreadID: thr.ID, TurnID: turn.ID, TaskID: task.ID,
		Status: runtype.StatusQueued, Created: true,
	}, nil
}

// validInput checks a turn's input, named field in errors.
func validInput(field, input string) error {
	switch {
	case strings.TrimSpace(input) == "":
		return invalid(field, "must not be empty")
	case len(input) > apitype.MaxInputBytes:
		return invalid(field, "is %d bytes, more than the limit of %d", len(input), apitype.MaxInputBytes)
	case !utf8.ValidString(input):
		return invalid(field, "is not valid UTF-8")
	}
	return nil
}

func (rt *Runtime) validateSubmit(p *apitype.SubmitTurnParams) error {
	if err := validInput("input", p.Input); err != nil {
		return err
	}
	if !p.Multitask.Valid() {
		return invalid("multitask", "must be enqueue, reject, interrupt or rollback, got %q", p.Multitask)
	}
	if p.Agent != "" {
		if _, ok := rt.agents[p.Agent]; !ok {
			return invalid("agent", "unknown agent %q", p.Agent)
		}
	} else if p.SessionID == "" {
		return invalid("agent", "required for a new session")
	}
	for _, f := range []struct{ name, v string }{
		{"sessionId", p.SessionID}, {"threadId", p.ThreadID}, {"idempotencyKey", p.IdempotencyKey},
	} {
		if f.v != "" {
			if err := runtype.ValidateCallerID(f.name, f.v); err != nil {
				return &apitype.InvalidError{Field: f.name, Reason: strings.TrimPrefix(err.Error(), "invalid "+f.name+" ")}
			}
		}
	}
	return nil
}

// existingTurn returns the turn of that kind an idempotency key already
// names, or store.ErrNotFound; a conflict when the key names another
// request.
func (rt *Runtime) existingTurn(ctx context.Context, owner runtype.Owner, p *apitype.SubmitTurnParams, kind runtype.TurnKind) (*apitype.SubmitTurnResult, error) {
	t, err := rt.store.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: owner.TenantID, IdempotencyKey: p.IdempotencyKey})
	if err != nil {
		return nil, err
	}
	if p.OnlyOwn && t.PrincipalID != owner.PrincipalID {
		return nil, fmt.Errorf("%w: idempotency key %q was used by another principal", store.ErrConflict, p.IdempotencyKey)
	}
	if t.Input != p.Input || t.Kind != kind || (p.Agent != "" && t.Agent != p.Agent) || (p.SessionID != "" && t.SessionID != p.SessionID) ||
		(p.ThreadID != "" && t.ThreadID != p.ThreadID) {
		return nil, fmt.Errorf("%w: idempotency key %q was used for a different request (turn %s)", store.ErrConflict, p.IdempotencyKey, t.ID)
	}
	return &apitype.SubmitTurnResult{SessionID: t.SessionID, ThreadID: t.ThreadID, TurnID: t.ID, TaskID: t.TaskID, Status: t.Status}, nil
}

// sessionAndThread finds or creates the turn's session and thread, adding
// what it creates to b.
func (rt *Runtime) sessionAndThread(ctx context.Context, owner runtype.Owner, p *apitype.SubmitTurnParams, turn *runtype.Turn, span string, b *store.Batch) (*runtype.Session, *runtype.Thread, error) {
	now := rt.cfg.Now().UTC()
	var sess *runtype.Session
	if p.SessionID != "" {
		s, err := rt.store.SessionGet(ctx, &store.SessionGetParams{TenantID: owner.TenantID, ID: p.SessionID})
		switch {
		case err == nil:
			if p.OnlyOwn && s.PrincipalID != owner.PrincipalID {
				return nil, nil, fmt.Errorf("%w: session %s is another principal's; %s may continue only its own sessions", apitype.ErrForbidden, s.ID, owner.PrincipalID)
			}
			if p.Agent != "" && s.Agent != p.Agent {
				return nil, nil, invalid("agent", "session %s belongs to agent %q", s.ID, s.Agent)
			}
			if _, ok := rt.agents[s.Agent]; !ok {
				return nil, nil, invalid("sessionId", "session %s belongs to agent %q, which this runtime does not have", s.ID, s.Agent)
			}
			sess = s
		case errors.Is(err, store.ErrNotFound):
			if p.Agent == "" {
				return nil, nil, invalid("agent", "required for a new session")
			}
		default:
			return nil, nil, fmt.Errorf("reading session: %w", err)
		}
	}
	if sess == nil {
		id := p.SessionID
		if id == "" {
			id = rt.ids.New(runtype.PrefixSession)
		}
		if p.ThreadID != "" {
			return nil, nil, invalid("threadId", "session %s does not exist yet, so it has no thread %s", id, p.ThreadID)
		}
		sess = &runtype.Session{ID: id, Owner: owner, Agent: p.Agent, CreatedAt: now, UpdatedAt: now}
		thr := &runtype.Thread{ID: rt.ids.New(runtype.PrefixThread), SessionID: id, Owner: owner, CreatedAt: now}
		b.Sessions = append(b.Sessions, sess)
		b.Threads = append(b.Threads, thr)
		ids := &runtype.Turn{SessionID: id, ThreadID: thr.ID, Owner: owner, TraceID: turn.TraceID}
		b.Events = append(b.Events,
			rt.turnEvent(event.SessionCreated, ids, span, &event.SessionPayload{Agent: p.Agent}),
			rt.turnEvent(event.ThreadStarted, ids, span, &event.ThreadPayload{Agent: p.Agent}),
		)
		return sess, thr, nil
	}
	if p.ThreadID != "" {
		thr, err := rt.store.ThreadGet(ctx, &store.ThreadGetParams{TenantID: owner.TenantID, ID: p.ThreadID})
		if errors.Is(err, store.ErrNotFound) || (err == nil && thr.SessionID != sess.ID) {
			return nil, nil, invalid("threadId", "session %s has no thread %s", sess.ID, p.ThreadID)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading thread: %w", err)
		}
		return sess, thr, nil
	}
	threads, err := rt.store.ThreadList(ctx, &store.ThreadListParams{TenantID: owner.TenantID, SessionID: sess.ID})
	if err != nil {
		return nil, nil, fmt.Errorf("listing threads: %w", err)
	}
	// The newest thread that is not a subagent's or a job's: those are
	// the session's too, but a submission continues the conversation.
	for i := len(threads) - 1; i >= 0; i-- {
		if !threads[i].Lineage.Delegated() {
			return sess, threads[i], nil
		}
	}
	return nil, nil, fmt.Errorf("session %s has no thread of its own", sess.ID)
}

// turnEvent builds an event of a submission, outside a run.
func (rt *Runtime) turnEvent(t event.Type, turn *runtype.Turn, span string, p event.Payload) *event.Event {
	return &event.Event{
		Type: t, EventID: rt.ids.New(runtype.PrefixEvent), Timestamp: rt.cfg.Now().UTC(),
		SchemaVersion: event.SchemaVersion, RuntimeID: rt.runtimeID,
		SessionID: turn.SessionID, ThreadID: turn.ThreadID, TurnID: turn.ID, TaskID: turn.TaskID,
		TraceID: turn.TraceID, SpanID: span, Payload: p, TenantID: turn.TenantID,
	}
}

func (rt *Runtime) running() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.state == stateRunning
}

// WaitTurn waits until the turn has ended, parked or paused (or ctx ends)
// and returns its record. It looks again whenever a worker of this runtime
// lets go of the turn's task, and every PollInterval for a turn another
// process runs.
func (rt *Runtime) WaitTurn(ctx context.Context, owner runtype.Owner, turnID string) (*runtype.Turn, error) {
	if owner.TenantID == "" {
		owner.TenantID = apitype.DefaultTenant
	}
	t, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: turnID})
	if err != nil {
		return nil, err
	}
	if s, ok := rt.settled(ctx, t); ok {
		return s, nil
	}
	w := rt.settleWaiter(turnID)
	defer w.Close()
	poll := time.NewTicker(rt.cfg.PollInterval)
	defer poll.Stop()
	for {
		// Read after subscribing: no commit falls between.
		t, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: turnID})
		if err != nil {
			return nil, err
		}
		if s, ok := rt.settled(ctx, t); ok {
			return s, nil
		}
		select {
		case <-w.C():
		case <-poll.C: // another process may run it
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// settleWaiter subscribes to the settling of a turn: a worker of this
// runtime letting go of it, or another node's commit naming it at rest.
// By the turn's id alone: another node's notification names no more
// (see heard).
func (rt *Runtime) settleWaiter(turnID string) *event.Waiter {
	return rt.settles.Subscribe(event.Filter{TurnID: turnID})
}

// settled reports whether a turn rests (ended, parked, paused) with
// nothing due: no worker holds its task and none is about to (an answer,
// a raised budget, a cancel or a retry makes it due). It returns the turn
// as read after its task: a worker may have resumed and ended it between
// the two reads.
func (rt *Runtime) settled(ctx context.Context, t *runtype.Turn) (*runtype.Turn, bool) {
	if !t.Status.Resting() || rt.holds(t.TaskID) {
		// A worker of this runtime still finishes the attempt: it may
		// wake the task as it lets go (a child that ended while the
		// task parked), and WaitTurn hears when it is done.
		return nil, false
	}
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: t.TenantID, ID: t.TaskID})
	if err != nil {
		return t, true
	}
	if !task.DueAt.IsZero() || task.LeaseOwner != "" {
		return nil, false
	}
	again, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: t.TenantID, ID: t.ID})
	if err != nil || again.Status != t.Status {
		return nil, false // it moved on meanwhile: look again
	}
	return again, true
}
