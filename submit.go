package agentrt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// SubmitTurnParams is the input of submit_turn.
type SubmitTurnParams struct {
	// Owner defaults to DefaultTenant / DefaultPrincipal.
	runtype.Owner
	// Agent names the agent to run. Required for a new session; for an
	// existing session it must match the session's agent or be empty.
	Agent string
	// Input is the user's message. Required, valid UTF-8, at most
	// MaxInputBytes.
	Input string
	// SessionID continues a session, or creates one with this id when none
	// exists. Empty creates a session with a generated id.
	SessionID string
	// ThreadID picks a thread of the session; empty uses the session's
	// latest thread (creating the first one).
	ThreadID string
	// IdempotencyKey makes the submission idempotent: submitting the same
	// key again returns the first turn instead of creating another.
	IdempotencyKey string
	// Source says where the turn came from: api, cli, embed.
	Source string
}

// SubmitTurnResult identifies an accepted turn.
type SubmitTurnResult struct {
	SessionID string             `json:"sessionId"`
	ThreadID  string             `json:"threadId"`
	TurnID    string             `json:"turnId"`
	TaskID    string             `json:"taskId"`
	Status    runtype.TaskStatus `json:"status"`
	// Created is false when the idempotency key matched an earlier turn.
	Created bool `json:"created"`
}

// activeTurn is a turn accepted by this process and not yet ended.
type activeTurn struct {
	turn   *runtype.Turn
	task   *runtype.Task
	done   chan struct{} // closed when the run has ended and recorded its end
	cancel context.CancelCauseFunc
	// cancelCause is set by InterruptTurn before the run starts.
	cancelCause error
	// newThread: the submission created the thread, so it has no history.
	newThread bool
}

// threadLine runs one thread's turns one after another.
type threadLine struct {
	queue []*activeTurn
}

// SubmitTurn accepts a turn and returns once its acceptance is durable; the
// turn runs asynchronously. It is idempotent on IdempotencyKey.
func (rt *Runtime) SubmitTurn(ctx context.Context, p *SubmitTurnParams) (*SubmitTurnResult, error) {
	if !rt.running() {
		return nil, ErrStopped
	}
	owner := p.Owner
	if owner.TenantID == "" {
		owner.TenantID = DefaultTenant
	}
	if owner.PrincipalID == "" {
		owner.PrincipalID = DefaultPrincipal
	}
	if err := rt.validateSubmit(p); err != nil {
		return nil, err
	}
	if p.IdempotencyKey != "" {
		if res, err := rt.existingTurn(ctx, owner, p); !errors.Is(err, store.ErrNotFound) {
			return res, err
		}
	}

	now := rt.cfg.Now().UTC()
	b := &store.Batch{}
	sess, thr, err := rt.sessionAndThread(ctx, owner, p, b)
	if err != nil {
		return nil, err
	}
	newThread := len(b.Threads) > 0
	turn := &runtype.Turn{
		ID: rt.ids.New(runtype.PrefixTurn), SessionID: sess.ID, ThreadID: thr.ID, Owner: owner,
		Agent: sess.Agent, IdempotencyKey: p.IdempotencyKey, Input: p.Input, Status: runtype.StatusQueued,
		TaskID: rt.ids.New(runtype.PrefixTask), TraceID: rt.ids.TraceID(), CreatedAt: now,
	}
	objective, _ := event.Preview(p.Input, 200)
	task := &runtype.Task{
		ID: turn.TaskID, SessionID: sess.ID, ThreadID: thr.ID, TurnID: turn.ID, Owner: owner,
		Objective: objective, Status: runtype.StatusQueued, CreatedAt: now, UpdatedAt: now,
	}
	t, k := *turn, *task
	b.Turns = append(b.Turns, &t)
	b.Tasks = append(b.Tasks, &k)
	inputPreview, _ := event.Preview(p.Input, event.PreviewBytes)
	b.Events = append(b.Events,
		rt.turnEvent(event.TurnSubmitted, turn, &event.TurnPayload{
			Status: runtype.StatusAccepted, Agent: turn.Agent, Source: p.Source, InputPreview: inputPreview,
			IdempotencyKey: p.IdempotencyKey,
		}),
		rt.turnEvent(event.TaskCreated, turn, &event.TaskPayload{Status: runtype.StatusAccepted, Objective: objective}),
		rt.turnEvent(event.TaskQueued, turn, &event.TaskPayload{Status: runtype.StatusQueued}),
	)
	if err := rt.writer.Write(ctx, b); err != nil {
		if errors.Is(err, store.ErrConflict) && p.IdempotencyKey != "" {
			// A concurrent submission with the same key won.
			return rt.existingTurn(ctx, owner, p)
		}
		return nil, fmt.Errorf("recording turn: %w", err)
	}
	if err := rt.dispatch(&activeTurn{turn: turn, task: task, newThread: newThread, done: make(chan struct{})}); err != nil {
		return nil, err
	}
	return &SubmitTurnResult{
		SessionID: sess.ID, ThreadID: thr.ID, TurnID: turn.ID, TaskID: task.ID,
		Status: runtype.StatusQueued, Created: true,
	}, nil
}

func (rt *Runtime) validateSubmit(p *SubmitTurnParams) error {
	switch {
	case strings.TrimSpace(p.Input) == "":
		return invalid("input", "must not be empty")
	case len(p.Input) > MaxInputBytes:
		return invalid("input", "is %d bytes, more than the limit of %d", len(p.Input), MaxInputBytes)
	case !utf8.ValidString(p.Input):
		return invalid("input", "is not valid UTF-8")
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
				return &InvalidError{Field: f.name, Reason: strings.TrimPrefix(err.Error(), "invalid "+f.name+" ")}
			}
		}
	}
	return nil
}

// existingTurn returns the turn an idempotency key already names, or
// store.ErrNotFound.
func (rt *Runtime) existingTurn(ctx context.Context, owner runtype.Owner, p *SubmitTurnParams) (*SubmitTurnResult, error) {
	t, err := rt.store.TurnGetByIdempotencyKey(ctx, &store.TurnGetByIdempotencyKeyParams{TenantID: owner.TenantID, IdempotencyKey: p.IdempotencyKey})
	if err != nil {
		return nil, err
	}
	if t.Input != p.Input || (p.Agent != "" && t.Agent != p.Agent) || (p.SessionID != "" && t.SessionID != p.SessionID) {
		return nil, fmt.Errorf("%w: idempotency key %q was used for a different request (turn %s)", store.ErrConflict, p.IdempotencyKey, t.ID)
	}
	return &SubmitTurnResult{SessionID: t.SessionID, ThreadID: t.ThreadID, TurnID: t.ID, TaskID: t.TaskID, Status: t.Status}, nil
}

// sessionAndThread finds or creates the turn's session and thread, adding
// what it creates to b.
func (rt *Runtime) sessionAndThread(ctx context.Context, owner runtype.Owner, p *SubmitTurnParams, b *store.Batch) (*runtype.Session, *runtype.Thread, error) {
	now := rt.cfg.Now().UTC()
	var sess *runtype.Session
	if p.SessionID != "" {
		s, err := rt.store.SessionGet(ctx, &store.SessionGetParams{TenantID: owner.TenantID, ID: p.SessionID})
		switch {
		case err == nil:
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
		ids := &runtype.Turn{SessionID: id, ThreadID: thr.ID, Owner: owner}
		b.Events = append(b.Events,
			rt.turnEvent(event.SessionCreated, ids, &event.SessionPayload{Agent: p.Agent}),
			rt.turnEvent(event.ThreadStarted, ids, &event.ThreadPayload{Agent: p.Agent}),
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
	if len(threads) == 0 {
		return nil, nil, fmt.Errorf("session %s has no thread", sess.ID)
	}
	return sess, threads[len(threads)-1], nil
}

// turnEvent builds a turn-level event outside a run.
func (rt *Runtime) turnEvent(t event.Type, turn *runtype.Turn, p event.Payload) *event.Event {
	return &event.Event{
		Type: t, EventID: rt.ids.New(runtype.PrefixEvent), Timestamp: rt.cfg.Now().UTC(),
		SchemaVersion: event.SchemaVersion, RuntimeID: rt.runtimeID,
		SessionID: turn.SessionID, ThreadID: turn.ThreadID, TurnID: turn.ID, TaskID: turn.TaskID,
		TraceID: turn.TraceID, Payload: p, TenantID: turn.TenantID,
	}
}

func (rt *Runtime) running() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.state == stateRunning
}

// dispatch queues the turn on its thread's line, starting the line if idle.
func (rt *Runtime) dispatch(at *activeTurn) error {
	turn := at.turn
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.state != stateRunning {
		// Accepted durably but not run: it stays queued in the store.
		return ErrStopped
	}
	rt.active[turn.ID] = at
	line, busy := rt.threads[turn.ThreadID]
	if !busy {
		line = &threadLine{}
		rt.threads[turn.ThreadID] = line
	}
	line.queue = append(line.queue, at)
	if !busy {
		rt.wg.Add(1)
		go rt.runLine(turn.ThreadID, line)
	}
	return nil
}

// runLine runs a thread's queued turns in order until none are left.
func (rt *Runtime) runLine(threadID string, line *threadLine) {
	defer rt.wg.Done()
	for {
		rt.mu.Lock()
		if len(line.queue) == 0 {
			delete(rt.threads, threadID)
			rt.mu.Unlock()
			return
		}
		at := line.queue[0]
		line.queue = line.queue[1:]
		ctx, cancel := context.WithCancelCause(rt.baseCtx)
		at.cancel = cancel
		if at.cancelCause != nil {
			cancel(at.cancelCause)
		}
		rt.mu.Unlock()

		rt.sem <- struct{}{}
		rt.runTurn(ctx, at)
		<-rt.sem
		cancel(nil)

		rt.mu.Lock()
		delete(rt.active, at.turn.ID)
		rt.mu.Unlock()
		close(at.done)
	}
}

func (rt *Runtime) runTurn(ctx context.Context, at *activeTurn) {
	a := rt.agents[at.turn.Agent]
	var msgs []runtype.Message
	if !at.newThread {
		// Read the history even when the turn was interrupted before it
		// started: ending it cancelled appends after the thread's messages.
		history, err := rt.store.MessageList(context.WithoutCancel(ctx), &store.MessageListParams{TenantID: at.turn.TenantID, ThreadID: at.turn.ThreadID})
		if err != nil {
			rt.cfg.Logger.Error("loading thread history", "turnId", at.turn.ID, "err", err)
			f := &runtype.Failure{Kind: runtype.FailureStore, Message: fmt.Sprintf("reading the thread's history: %v", err), Retryable: true}
			if _, err := rt.coord.Fail(context.WithoutCancel(ctx), &loop.Job{Agent: a, Turn: at.turn, Task: at.task}, f); err != nil {
				rt.cfg.Logger.Error("recording a turn that could not start", "turnId", at.turn.ID, "err", err)
			}
			return
		}
		msgs = make([]runtype.Message, len(history))
		for i, m := range history {
			msgs[i] = *m
		}
	}
	if _, err := rt.coord.Run(ctx, &loop.Job{Agent: a, Turn: at.turn, Task: at.task, History: msgs}); err != nil {
		rt.cfg.Logger.Error("running turn", "turnId", at.turn.ID, "err", err)
	}
}

// InterruptTurn cancels a queued or running turn and returns cancelling;
// the turn then ends cancelled with reason interrupted (WaitTurn observes
// it). A parked turn (waiting for a permission decision) is ended cancelled
// at once and cancelled is returned. Interrupting a turn that has already
// ended is a no-op that reports the turn's status.
func (rt *Runtime) InterruptTurn(ctx context.Context, owner runtype.Owner, turnID string) (runtype.TaskStatus, error) {
	if owner.TenantID == "" {
		owner.TenantID = DefaultTenant
	}
	rt.mu.Lock()
	at, ok := rt.active[turnID]
	if ok && at.turn.TenantID == owner.TenantID {
		if at.cancel != nil {
			at.cancel(ErrInterrupted)
		} else {
			at.cancelCause = ErrInterrupted
		}
		rt.mu.Unlock()
		return runtype.StatusCancelling, nil
	}
	rt.mu.Unlock()
	t, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: turnID})
	if err != nil {
		return "", err
	}
	if t.Status.Parked() {
		return rt.cancelParked(ctx, t)
	}
	return t.Status, nil
}

// cancelParked ends a parked turn cancelled. While it works the turn is
// registered as active, so a second interrupt or a WaitTurn sees it.
func (rt *Runtime) cancelParked(ctx context.Context, t *runtype.Turn) (runtype.TaskStatus, error) {
	at := &activeTurn{turn: t, done: make(chan struct{})}
	rt.mu.Lock()
	if _, busy := rt.active[t.ID]; busy || rt.state != stateRunning {
		rt.mu.Unlock()
		return runtype.StatusCancelling, nil
	}
	rt.active[t.ID] = at
	rt.mu.Unlock()
	defer func() {
		rt.mu.Lock()
		delete(rt.active, t.ID)
		rt.mu.Unlock()
		close(at.done)
	}()

	tenant := t.TenantID
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: tenant, ID: t.TaskID})
	if err != nil {
		return "", fmt.Errorf("reading the parked turn's task: %w", err)
	}
	runs, err := rt.store.RunList(ctx, &store.RunListParams{TenantID: tenant, TaskID: t.TaskID})
	if err != nil || len(runs) == 0 {
		return "", fmt.Errorf("reading the parked turn's run: %w", errors.Join(err, store.ErrNotFound))
	}
	history, err := rt.store.MessageList(ctx, &store.MessageListParams{TenantID: tenant, ThreadID: t.ThreadID})
	if err != nil {
		return "", fmt.Errorf("reading the thread's history: %w", err)
	}
	msgs := make([]runtype.Message, len(history))
	for i, m := range history {
		msgs[i] = *m
	}
	a, ok := rt.agents[t.Agent]
	if !ok {
		return "", fmt.Errorf("%w: turn %s belongs to agent %q, which this runtime does not have", ErrConflict, t.ID, t.Agent)
	}
	out, err := rt.coord.CancelParked(context.WithoutCancel(ctx), &loop.Job{Agent: a, Turn: t, Task: task, History: msgs, Run: runs[len(runs)-1]})
	if err != nil {
		return "", fmt.Errorf("cancelling parked turn %s: %w", t.ID, err)
	}
	return out.Status, nil
}

// WaitTurn waits until the turn has ended or parked (or ctx ends) and
// returns its record.
func (rt *Runtime) WaitTurn(ctx context.Context, owner runtype.Owner, turnID string) (*runtype.Turn, error) {
	if owner.TenantID == "" {
		owner.TenantID = DefaultTenant
	}
	rt.mu.Lock()
	at, ok := rt.active[turnID]
	rt.mu.Unlock()
	if ok {
		select {
		case <-at.done:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	return rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: owner.TenantID, ID: turnID})
}
