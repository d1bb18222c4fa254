package agentrt

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	done   chan struct{}   // closed when the run has ended and recorded its end
	ctx    context.Context // the run's context, for a resumed turn; runLine makes its own
	cancel context.CancelCauseFunc
	// cancelCause is set by InterruptTurn before the run starts.
	cancelCause error
	// newThread: the submission created the thread, so it has no history.
	newThread bool
}

// threadLine runs one thread's turns one after another. Its fields are
// guarded by Runtime.mu.
type threadLine struct {
	queue       []*activeTurn
	busy        bool          // a goroutine works the line (runLine, resumeLine or cancelParked)
	parked      *runtype.Turn // a turn of the thread waits for a decision: the line holds until it ends
	checkParked bool          // look in the store for a parked turn before running anything
	// wake: a budget was raised while the line was busy: before the line
	// goes idle, a turn parked on it resumes (it checks its budgets again).
	wake bool
}

// SubmitTurn accepts a turn and returns once its acceptance is durable; the
// turn runs asynchronously. It is idempotent on IdempotencyKey. Once the
// acceptance is durable SubmitTurn reports success, even if the runtime
// began to stop meanwhile (the turn then stays queued in the store).
func (rt *Runtime) SubmitTurn(ctx context.Context, p *SubmitTurnParams) (*SubmitTurnResult, error) {
	if !rt.running() {
		return nil, ErrStopped
	}
	owner := ownerOrDefault(p.Owner)
	if err := rt.validateSubmit(p); err != nil {
		return nil, err
	}
	if p.IdempotencyKey != "" {
		if res, err := rt.existingTurn(ctx, owner, p); !errors.Is(err, store.ErrNotFound) {
			return res, err
		}
	}
	res, err := rt.accept(ctx, owner, p)
	if errors.Is(err, errSessionRace) {
		// Another submission created the session first: now it exists.
		res, err = rt.accept(ctx, owner, p)
	}
	return res, err
}

// errSessionRace: the session a submission meant to create exists now —
// another submission created it meanwhile (retry once), or the id is
// taken by another tenant (then it is the caller's conflict).
var errSessionRace = fmt.Errorf("%w: the session id is not available", store.ErrConflict)

// accept records the turn (with its session and thread when they are new)
// and queues it on its thread.
func (rt *Runtime) accept(ctx context.Context, owner runtype.Owner, p *SubmitTurnParams) (*SubmitTurnResult, error) {
	now := rt.cfg.Now().UTC()
	turn := &runtype.Turn{
		ID: rt.ids.New(runtype.PrefixTurn), Owner: owner, IdempotencyKey: p.IdempotencyKey, Input: p.Input,
		Status: runtype.StatusQueued, TaskID: rt.ids.New(runtype.PrefixTask), TraceID: rt.ids.TraceID(), CreatedAt: now,
	}
	span := rt.ids.SpanID()
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
	t, k := *turn, *task
	b.Turns = append(b.Turns, &t)
	b.Tasks = append(b.Tasks, &k)
	inputPreview, _ := event.Preview(p.Input, event.PreviewBytes)
	b.Events = append(b.Events,
		rt.turnEvent(event.TurnSubmitted, turn, span, &event.TurnPayload{
			Status: runtype.StatusAccepted, Agent: turn.Agent, Source: p.Source, InputPreview: inputPreview,
			IdempotencyKey: p.IdempotencyKey,
		}),
		rt.turnEvent(event.TaskCreated, turn, span, &event.TaskPayload{Status: runtype.StatusAccepted, Objective: objective}),
		rt.turnEvent(event.TaskQueued, turn, span, &event.TaskPayload{Status: runtype.StatusQueued}),
	)

	// Register the turn before it is durable, so that no reader ever sees
	// it recorded as queued but unknown to this runtime (which read models
	// report as stale).
	at := &activeTurn{turn: turn, task: task, newThread: len(b.Threads) > 0, done: make(chan struct{})}
	rt.mu.Lock()
	if rt.state != stateRunning {
		rt.mu.Unlock()
		return nil, ErrStopped
	}
	rt.active[turn.ID] = at
	rt.mu.Unlock()

	if err := rt.writer.Write(ctx, b); err != nil {
		rt.forget(at)
		switch {
		case errors.Is(err, store.ErrConflict) && p.IdempotencyKey != "":
			// A concurrent submission with the same key won.
			return rt.existingTurn(ctx, owner, p)
		case errors.Is(err, store.ErrConflict) && len(b.Sessions) > 0:
			return nil, errSessionRace
		}
		return nil, fmt.Errorf("recording turn: %w", err)
	}
	rt.refreshParked(ctx, at.turn.ThreadID)
	rt.dispatch(at)
	return &SubmitTurnResult{
		SessionID: sess.ID, ThreadID: thr.ID, TurnID: turn.ID, TaskID: task.ID,
		Status: runtype.StatusQueued, Created: true,
	}, nil
}

// forget removes a turn this runtime will not run from the active set.
func (rt *Runtime) forget(at *activeTurn) {
	rt.mu.Lock()
	delete(rt.active, at.turn.ID)
	rt.mu.Unlock()
	close(at.done)
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
func (rt *Runtime) sessionAndThread(ctx context.Context, owner runtype.Owner, p *SubmitTurnParams, turn *runtype.Turn, span string, b *store.Batch) (*runtype.Session, *runtype.Thread, error) {
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
	if len(threads) == 0 {
		return nil, nil, fmt.Errorf("session %s has no thread", sess.ID)
	}
	return sess, threads[len(threads)-1], nil
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

// dispatch queues the turn on its thread's line, starting the line's
// goroutine if the line is idle. If the runtime is stopping, the turn stays
// queued in the store and is forgotten here.
func (rt *Runtime) dispatch(at *activeTurn) {
	rt.mu.Lock()
	if rt.state != stateRunning {
		rt.mu.Unlock()
		rt.forget(at)
		return
	}
	line := rt.threads[at.turn.ThreadID]
	if line == nil {
		// A thread this runtime has no line for may hold a turn parked
		// before (another process, an earlier start): the line checks.
		line = &threadLine{checkParked: !at.newThread}
		rt.threads[at.turn.ThreadID] = line
	}
	line.queue = append(line.queue, at)
	rt.startLine(at.turn.ThreadID, line)
	rt.mu.Unlock()
}

// refreshParked lets go of a thread's parked turn that is parked no more
// in the store: another process resumed (and ended) it meanwhile.
func (rt *Runtime) refreshParked(ctx context.Context, threadID string) {
	rt.mu.Lock()
	line := rt.threads[threadID]
	var parked *runtype.Turn
	if line != nil && !line.busy {
		parked = line.parked
	}
	rt.mu.Unlock()
	if parked == nil {
		return
	}
	t, err := rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: parked.TenantID, ID: parked.ID})
	if err != nil || t.Status.Parked() || t.Status == runtype.StatusBlocked {
		return
	}
	rt.mu.Lock()
	if line.parked == parked && !line.busy {
		line.parked = nil
	}
	rt.mu.Unlock()
}

// startLine starts the line's goroutine unless it runs, is held by a
// parked turn, or has nothing to do. rt.mu is held.
func (rt *Runtime) startLine(threadID string, line *threadLine) {
	if line.busy || line.parked != nil || len(line.queue) == 0 {
		return
	}
	line.busy = true
	rt.wg.Add(1)
	go rt.runLine(threadID, line)
}

// runLine runs a thread's queued turns in order. It stops when the queue
// is empty or a turn parks: a parked turn holds its thread, because the
// next turn's model call would see tool calls without results.
func (rt *Runtime) runLine(threadID string, line *threadLine) {
	defer rt.wg.Done()
	rt.mu.Lock()
	check, first := line.checkParked, line.queue[0].turn
	line.checkParked = false
	rt.mu.Unlock()
	if check {
		turns, err := rt.store.TurnList(rt.baseCtx, &store.TurnListParams{
			TenantID: first.TenantID, SessionID: first.SessionID, ThreadID: threadID, Limit: 20,
		})
		for _, t := range turns {
			if err == nil && t.Status.Parked() {
				rt.mu.Lock()
				line.parked = t
				rt.mu.Unlock()
				break
			}
		}
	}
	rt.drainLine(threadID, line)
}

// drainLine runs the line's queued turns until it is empty or a turn
// parks, then marks the line idle. A turn parked waiting_resource resumes
// first if a budget was raised meanwhile (wake). The caller holds the line
// (busy).
func (rt *Runtime) drainLine(threadID string, line *threadLine) {
	for {
		rt.mu.Lock()
		if p := line.parked; p != nil && line.wake && rt.state == stateRunning {
			line.parked, line.wake = nil, false
			at := rt.activate(p)
			rt.mu.Unlock()
			if !rt.resumeOnLine(threadID, line, at) {
				return
			}
			continue
		}
		if !rt.lineHasWork(threadID, line) {
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
		status := rt.runTurn(ctx, at)
		<-rt.sem
		cancel(nil)

		rt.mu.Lock()
		again, held := rt.settle(threadID, line, at, status)
		if again {
			at.ctx, at.cancel = context.WithCancelCause(rt.baseCtx)
			rt.mu.Unlock()
			if !rt.resumeOnLine(threadID, line, at) {
				return
			}
			continue
		}
		rt.mu.Unlock()
		close(at.done)
		if !held {
			return
		}
	}
}

// settle records how the line's current turn came out. It reports again
// when the turn parked while a budget was raised or an action resolved
// (wake): it resumes at once as the same active turn (and parks again if
// it still waits). Otherwise the turn leaves
// the active set (a parked one holds the line), and held reports whether
// the line has more to do; when not, the line is idle — in the same
// critical section, so that whoever WaitTurn wakes finds it idle. rt.mu
// is held.
func (rt *Runtime) settle(threadID string, line *threadLine, at *activeTurn, status runtype.TaskStatus) (again, held bool) {
	if status.Parked() && line.wake && rt.state == stateRunning {
		line.wake = false
		return true, true
	}
	if status.Parked() {
		line.parked = at.turn
	}
	delete(rt.active, at.turn.ID)
	return false, rt.lineHasWork(threadID, line)
}

// lineHasWork reports whether the line has a turn to run; when not, it
// marks the line idle (and forgets it when nothing holds it). rt.mu is
// held.
func (rt *Runtime) lineHasWork(threadID string, line *threadLine) bool {
	if len(line.queue) > 0 && line.parked == nil {
		return true
	}
	line.busy, line.wake = false, false
	if len(line.queue) == 0 && line.parked == nil {
		delete(rt.threads, threadID)
	}
	return false
}

// runTurn runs one turn and returns how it ended ("" when it could not be
// recorded).
func (rt *Runtime) runTurn(ctx context.Context, at *activeTurn) runtype.TaskStatus {
	a := rt.agents[at.turn.Agent]
	var msgs []runtype.Message
	if !at.newThread {
		// Read the history even when the turn was interrupted before it
		// started: ending it cancelled appends after the thread's messages.
		history, err := rt.store.MessageList(context.WithoutCancel(ctx), &store.MessageListParams{TenantID: at.turn.TenantID, ThreadID: at.turn.ThreadID})
		if err != nil {
			rt.cfg.Logger.Error("loading thread history", "turnId", at.turn.ID, "err", err)
			f := &runtype.Failure{Kind: runtype.FailureStore, Message: fmt.Sprintf("reading the thread's history: %v", err), Retryable: true}
			out, err := rt.coord.Fail(context.WithoutCancel(ctx), &loop.Job{Agent: a, Turn: at.turn, Task: at.task}, f)
			if err != nil {
				rt.cfg.Logger.Error("recording a turn that could not start", "turnId", at.turn.ID, "err", err)
				return ""
			}
			return out.Status
		}
		msgs = make([]runtype.Message, len(history))
		for i, m := range history {
			msgs[i] = *m
		}
	}
	rt.runStarting(at.turn)
	out, err := rt.coord.Run(ctx, &loop.Job{Agent: a, Turn: at.turn, Task: at.task, History: msgs})
	if err != nil {
		rt.cfg.Logger.Error("running turn", "turnId", at.turn.ID, "err", err)
	}
	if out == nil {
		return ""
	}
	rt.runEnded(out.Status, out.Run.ID)
	return out.Status
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
		switch line := rt.threads[at.turn.ThreadID]; {
		case at.cancel != nil:
			at.cancel(ErrInterrupted)
		case line != nil && line.parked != nil && slices.Contains(line.queue, at):
			// Queued behind a parked turn: it would wait for that turn's
			// decision, so end it now. It never reached the model and writes
			// no message, so the parked turn's thread stays as it is.
			line.queue = slices.DeleteFunc(line.queue, func(q *activeTurn) bool { return q == at })
			rt.mu.Unlock()
			return rt.cancelQueued(ctx, at)
		default:
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
	switch {
	case t.Status.Parked():
		return rt.cancelParked(ctx, t)
	case t.Status == runtype.StatusBlocked:
		// A blocked turn holds no thread: end it without claiming its
		// thread's line, as this runtime's one active handler of the turn.
		rt.mu.Lock()
		if _, busy := rt.active[t.ID]; busy || rt.state != stateRunning {
			rt.mu.Unlock()
			return t.Status, fmt.Errorf("%w: turn %s is being handled; try again", ErrConflict, t.ID)
		}
		at := &activeTurn{turn: t, done: make(chan struct{})}
		rt.active[t.ID] = at
		rt.mu.Unlock()
		defer rt.forget(at)
		return rt.endParked(ctx, t)
	}
	return t.Status, nil
}

// cancelQueued ends a turn that never started cancelled.
func (rt *Runtime) cancelQueued(ctx context.Context, at *activeTurn) (runtype.TaskStatus, error) {
	defer rt.forget(at)
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	cancel(ErrInterrupted)
	out, err := rt.coord.Run(cctx, &loop.Job{Agent: rt.agents[at.turn.Agent], Turn: at.turn, Task: at.task})
	if err != nil {
		return "", fmt.Errorf("cancelling queued turn %s: %w", at.turn.ID, err)
	}
	return out.Status, nil
}

// cancelParked ends a parked turn cancelled. It claims the thread's line
// while it works, so nothing else writes to the thread meanwhile, then lets
// the line run what queued up behind the parked turn.
func (rt *Runtime) cancelParked(ctx context.Context, t *runtype.Turn) (runtype.TaskStatus, error) {
	rt.mu.Lock()
	if rt.state != stateRunning {
		rt.mu.Unlock()
		return "", ErrStopped
	}
	line := rt.threads[t.ThreadID]
	if line == nil {
		line = &threadLine{}
		rt.threads[t.ThreadID] = line
	}
	if line.busy {
		rt.mu.Unlock()
		return t.Status, fmt.Errorf("%w: turn %s's thread is busy; try again", ErrConflict, t.ID)
	}
	line.busy, line.checkParked = true, false
	rt.wg.Add(1)
	rt.mu.Unlock()

	status, err := rt.endParked(ctx, t)

	rt.mu.Lock()
	woken := line.wake
	line.busy, line.wake = false, false
	if err == nil && line.parked != nil && line.parked.ID == t.ID {
		line.parked = nil
	}
	if len(line.queue) == 0 && line.parked == nil {
		delete(rt.threads, t.ThreadID)
	} else {
		rt.startLine(t.ThreadID, line)
	}
	rt.mu.Unlock()
	rt.wg.Done()
	if err != nil && woken {
		// The turn could not be ended (an answer to its action won the
		// race) and was meant to resume meanwhile: resume it now.
		rt.resumeParked(t)
	}
	return status, err
}

func (rt *Runtime) endParked(ctx context.Context, t *runtype.Turn) (runtype.TaskStatus, error) {
	ctx = context.WithoutCancel(ctx)
	job, err := rt.parkedJob(ctx, t)
	if err != nil {
		return "", err
	}
	if s := job.Turn.Status; !s.Parked() && s != runtype.StatusBlocked {
		return s, nil // it ended, or resumed, meanwhile
	}
	out, err := rt.coord.CancelParked(ctx, job)
	if err != nil {
		return "", fmt.Errorf("cancelling parked turn %s: %w", t.ID, err)
	}
	rt.runEnded(out.Status, out.Run.ID)
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
