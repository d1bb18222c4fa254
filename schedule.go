package agentrt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/schedule"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/webhook"
)

// This file holds the scheduler (docs/schedules.md). A schedule is a
// record with the time it must next be looked at (NextCheckAt); the
// scheduler lists the schedules that are due and, for each, works out in
// one batch what happened since: fires that ended (their outcome, the
// failure count, a pause after too many), fires now due (started,
// skipped, buffered or missed, by the overlap policy and the catch-up
// window), buffered fires that may start, deliveries to attempt. The
// batch is conditional on the schedule's version, so two processes that
// found the same schedule due record its fires once: the slower one's
// batch is refused and it reads the schedule again. A fire that starts is
// an ordinary turn and task in the schedule's session, on a thread of its
// own; its end makes the schedule due again in the same commit
// (loop: ScheduleWakes).

// Scheduler bounds.
const (
	// scheduleLookBatch is how many due schedules one look reads.
	scheduleLookBatch = 256
	// scheduleLookRounds bounds the looks of one pass (a pass that keeps
	// finding schedules due stops and goes on at the next poll).
	scheduleLookRounds = 64
	// scheduleTicksAtOnce bounds the schedules worked on at once: their
	// batches share the writer's commits.
	scheduleTicksAtOnce = 32
	// maxFiresPerLook bounds the fire times one look enumerates (the
	// rest of a long outage's misses are counted, not listed).
	maxFiresPerLook = 100
	// maxBuffered bounds a schedule's buffered fires; more are skipped.
	maxBuffered = 100
	// defaultCatchupWindow is how late a fire may still run.
	defaultCatchupWindow = time.Minute
	// Deliveries: attempts before a delivery fails, the backoff between
	// them, and how long one attempt holds its claim.
	defaultDeliveryAttempts = 8
	deliveryBackoffBase     = 10 * time.Second
	deliveryBackoffMax      = 10 * time.Minute
	deliveryClaim           = 2 * time.Minute
)

// runScheduler looks for due schedules at every poll and whenever woken,
// until ctx ends.
func (rt *Runtime) runScheduler(ctx context.Context) {
	pollLoop(ctx, rt.schedulerDone, rt.schedWake, rt.cfg.PollInterval, rt.fireDue)
}

// kickScheduler wakes the scheduler: a schedule may be due.
func (rt *Runtime) kickScheduler() {
	select {
	case rt.schedWake <- struct{}{}:
	default:
	}
}

// fireDue works on every schedule due now.
func (rt *Runtime) fireDue(ctx context.Context) {
	now := rt.cfg.Now().UTC()
	for range scheduleLookRounds {
		if ctx.Err() != nil {
			return
		}
		due, err := rt.store.ScheduleListDue(ctx, &store.ScheduleListDueParams{Now: now, Limit: scheduleLookBatch})
		if err != nil {
			if ctx.Err() == nil {
				rt.cfg.Logger.Error("listing due schedules", "err", err)
			}
			return
		}
		var g errgroup.Group
		g.SetLimit(scheduleTicksAtOnce)
		for _, s := range due {
			g.Go(func() error {
				if err := rt.tickSchedule(ctx, s, now); err != nil && ctx.Err() == nil {
					rt.cfg.Logger.Error("running schedule", "scheduleId", s.ID, "err", err)
				}
				return nil
			})
		}
		g.Wait()
		if len(due) < scheduleLookBatch {
			return
		}
	}
}

// tickSchedule works on one due schedule: see the file's comment. A
// conflict (another process, or a fire's end, changed the schedule since
// it was read) reads it again and starts over.
func (rt *Runtime) tickSchedule(ctx context.Context, s *runtype.Schedule, now time.Time) error {
	for range 5 {
		t, err := rt.planTick(ctx, s, now)
		if err != nil {
			return err
		}
		err = rt.writer.Write(ctx, t.b)
		if errors.Is(err, store.ErrConflict) {
			if s, err = rt.store.ScheduleGet(ctx, &store.ScheduleGetParams{TenantID: s.TenantID, ID: s.ID}); err != nil {
				return err
			}
			if s.NextCheckAt.IsZero() || s.NextCheckAt.After(now) {
				return nil // another process did it
			}
			continue
		}
		if err != nil {
			var full *store.QueueFullError
			if errors.As(err, &full) {
				// The queue is full: the fires stay due and are tried again
				// at the next poll (until the catch-up window passes them).
				rt.cfg.Logger.Warn("a schedule's fires wait for room in the queue", "scheduleId", s.ID, "err", err)
				return nil
			}
			return fmt.Errorf("recording schedule %s: %w", s.ID, err)
		}
		rt.afterTick(ctx, t)
		return nil
	}
	return fmt.Errorf("schedule %s kept changing while it was worked on", s.ID)
}

// afterTick does what a committed look left to do: wake the workers for
// the fires it started, interrupt the fires it cancelled, make the
// deliveries it claimed.
func (rt *Runtime) afterTick(ctx context.Context, t *tick) {
	if t.started {
		rt.kick()
	}
	for _, id := range t.interrupt {
		rt.interruptHeld(id)
	}
	for _, f := range t.deliver {
		rt.goDeliver(t.sched, f)
	}
}

// goDeliver makes a claimed delivery in the background (a slow receiver
// holds up neither the scheduler nor a trigger). Stop waits for it; a
// runtime that is stopping leaves it to its claim running out.
func (rt *Runtime) goDeliver(s *runtype.Schedule, f *runtype.Fire) {
	rt.mu.Lock()
	if rt.state != stateRunning {
		rt.mu.Unlock()
		return
	}
	rt.wg.Add(1)
	rt.mu.Unlock()
	go func() {
		defer rt.wg.Done()
		rt.deliver(rt.baseCtx, s, f)
	}()
}

// tick is one look at a schedule: the batch that records it and what to
// do once it is committed.
type tick struct {
	rt    *Runtime
	ctx   context.Context
	now   time.Time
	sched *runtype.Schedule // as written: the version read
	spec  *schedule.Schedule
	b     *store.Batch
	// open are the schedule's running and buffered fires, oldest first.
	running, buffered []*runtype.Fire
	started           bool
	interrupt         []string        // tasks asked to cancel
	deliver           []*runtype.Fire // deliveries claimed, to attempt
	// deliveryAt is when the next pending delivery is due.
	deliveryAt time.Time
}

// planTick builds the batch of one look at s.
func (rt *Runtime) planTick(ctx context.Context, s *runtype.Schedule, now time.Time) (*tick, error) {
	next := *s
	t := &tick{rt: rt, ctx: ctx, now: now, sched: &next, b: &store.Batch{Schedules: []*runtype.Schedule{&next}}}
	if err := t.readOpen(); err != nil {
		return nil, err
	}
	if err := t.collect(); err != nil {
		return nil, err
	}
	if next.Status == runtype.ScheduleActive {
		sp, err := schedule.Parse(specOf(s))
		if err != nil {
			// Validated when written: a spec that no longer parses (a time
			// zone the system lost) pauses the schedule rather than spin.
			next.Status, next.PausedReason = runtype.SchedulePaused, "invalid_spec"
			t.b.Events = append(t.b.Events, t.scheduleEvent(event.JobProgress, "invalid_spec: "+err.Error()))
		} else {
			t.spec = sp
			if err := t.fireDue(); err != nil {
				return nil, err
			}
		}
	}
	if err := t.startBuffered(); err != nil {
		return nil, err
	}
	if err := t.claimDeliveries(); err != nil {
		return nil, err
	}
	next.UpdatedAt = now
	next.NextCheckAt = t.nextCheck()
	return t, nil
}

// readOpen reads the schedule's running and buffered fires.
func (t *tick) readOpen() error {
	s := t.sched
	if s.Running == 0 && s.Buffered == 0 {
		return nil
	}
	fires, err := t.rt.allFires(t.ctx, &store.FireListParams{TenantID: s.TenantID, ScheduleID: s.ID,
		Statuses: []runtype.FireStatus{runtype.FireRunning, runtype.FireBuffered}})
	if err != nil {
		return fmt.Errorf("listing the open fires of schedule %s: %w", s.ID, err)
	}
	slices.Reverse(fires) // oldest first
	for _, f := range fires {
		if f.Status == runtype.FireRunning {
			t.running = append(t.running, f)
		} else {
			t.buffered = append(t.buffered, f)
		}
	}
	return nil
}

// allFires lists every fire p selects, newest first, page by page.
func (rt *Runtime) allFires(ctx context.Context, p *store.FireListParams) ([]*runtype.Fire, error) {
	q := *p
	q.Limit = store.MaxListLimit
	var out []*runtype.Fire
	for {
		page, err := rt.store.FireList(ctx, &q)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < q.Limit {
			return out, nil
		}
		q.BeforeID = page[len(page)-1].ID
	}
}

// collect records the running fires whose task ended: the outcome, the
// run of failures (and the pause it may bring), the delivery to make.
func (t *tick) collect() error {
	s := t.sched
	still := t.running[:0:0]
	for _, f := range t.running {
		task, err := t.rt.store.TaskGet(t.ctx, &store.TaskGetParams{TenantID: s.TenantID, ID: f.TaskID})
		if err != nil {
			return fmt.Errorf("reading the task of fire %s: %w", f.ID, err)
		}
		if !task.Status.Terminal() {
			still = append(still, f)
			continue
		}
		next := *f
		next.UpdatedAt, next.EndedAt, next.Failure = t.now, cmp.Or(task.EndedAt, t.now), task.Failure
		typ := event.JobItemFailed
		switch {
		case task.Status == runtype.StatusCompleted:
			next.Status, typ = runtype.FireCompleted, event.JobItemCompleted
			s.ConsecutiveFailures = 0
		case task.Status == runtype.StatusCancelled && task.StatusReason == runtype.ReasonPreRunSkip:
			next.Status, next.Reason, next.Failure = runtype.FireSkipped, runtype.FireReasonPreRun, nil
		case task.Status == runtype.StatusCancelled:
			next.Status = runtype.FireCancelled
			next.Reason = cmp.Or(f.Reason, string(task.StatusReason))
		default:
			next.Status = runtype.FireFailed
			s.ConsecutiveFailures++
		}
		if s.Webhook != "" && (next.Status == runtype.FireCompleted || next.Status == runtype.FireFailed) {
			next.Delivery, next.DeliveryNextAt = runtype.DeliveryPending, t.now
		}
		s.Running--
		t.b.Fires = append(t.b.Fires, &next)
		preview, _ := event.Preview(task.Result, event.PreviewBytes)
		t.b.Events = append(t.b.Events, t.fireEvent(typ, &next, preview))
	}
	t.running = still
	if s.Status == runtype.ScheduleActive && schedule.ShouldPause(s.ConsecutiveFailures, s.PauseAfterFailures) {
		s.Status, s.PausedReason = runtype.SchedulePaused, PausedFailures
		t.b.Events = append(t.b.Events, t.scheduleEvent(event.JobProgress, PausedFailures))
	}
	return nil
}

// Why a schedule is paused.
const (
	PausedOperator = "operator"
	PausedFailures = "consecutive_failures"
)

// fireDue records the fires due by now: missed ones (older than the
// catch-up window), and the others by the overlap policy.
func (t *tick) fireDue() error {
	s := t.sched
	if s.NextFireAt.IsZero() || s.NextFireAt.After(t.now) {
		return nil
	}
	plan := t.spec.Due(s.NextFireAt, t.now, cmp.Or(s.CatchupWindow, defaultCatchupWindow), maxFiresPerLook)
	for i, at := range plan.Missed {
		f := t.newFire(at, false, runtype.FireMissed)
		f.Reason, f.MissedCount, f.EndedAt = runtype.FireReasonMissed, 1, t.now
		if i == 0 {
			f.MissedCount += plan.MissedMore
		}
		t.b.Fires = append(t.b.Fires, f)
		t.b.Events = append(t.b.Events, t.fireProgress(f))
	}
	if len(plan.Missed) == 0 && plan.MissedMore > 0 {
		f := t.newFire(s.NextFireAt, false, runtype.FireMissed)
		f.Reason, f.MissedCount, f.EndedAt = runtype.FireReasonMissed, plan.MissedMore, t.now
		t.b.Fires = append(t.b.Fires, f)
		t.b.Events = append(t.b.Events, t.fireProgress(f))
	}
	for _, at := range plan.Run {
		if err := t.arrive(t.newFire(at, false, "")); err != nil {
			return err
		}
	}
	s.NextFireAt = plan.Next
	return nil
}

// newFire makes a fire record of the schedule at at.
func (t *tick) newFire(at time.Time, manual bool, status runtype.FireStatus) *runtype.Fire {
	s := t.sched
	return &runtype.Fire{
		ID: t.rt.ids.New(runtype.PrefixFire), ScheduleID: s.ID, TenantID: s.TenantID, FireAt: at.UTC(), Manual: manual,
		Status: status, CreatedAt: t.now, UpdatedAt: t.now,
	}
}

// arrive handles a fire that came due (or was triggered) by the overlap
// policy: it starts, is skipped, or is buffered (cancelling the running
// fires under cancel_other).
func (t *tick) arrive(f *runtype.Fire) error {
	s := t.sched
	action := schedule.Decide(schedule.Overlap(s.Overlap), len(t.running), len(t.buffered))
	if action == schedule.ActionBuffer && len(t.buffered) >= maxBuffered {
		action = schedule.ActionSkip
	}
	switch action {
	case schedule.ActionStart:
		return t.start(f)
	case schedule.ActionSkip:
		f.Status, f.Reason, f.EndedAt = runtype.FireSkipped, runtype.FireReasonOverlap, t.now
		t.b.Fires = append(t.b.Fires, f)
		t.b.Events = append(t.b.Events, t.fireProgress(f))
	case schedule.ActionCancelAndBuffer:
		t.cancelRunning()
		fallthrough
	case schedule.ActionBuffer:
		f.Status = runtype.FireBuffered
		s.Buffered++
		t.buffered = append(t.buffered, f)
		t.b.Fires = append(t.b.Fires, f)
		t.b.Events = append(t.b.Events, t.fireProgress(f))
	default:
		return fmt.Errorf("schedule %s: unknown overlap action %q", s.ID, action)
	}
	return nil
}

// cancelRunning asks the schedule's running fires to cancel
// (cancel_other): each ends cancelled, and its end makes the schedule due
// to start the buffered fire.
func (t *tick) cancelRunning() {
	cancel := runtype.ControlCancel
	for _, f := range t.running {
		if f.Reason == runtype.FireReasonReplaced {
			continue // asked already
		}
		next := *f
		next.Reason, next.UpdatedAt = runtype.FireReasonReplaced, t.now
		t.b.Fires = append(t.b.Fires, &next)
		t.b.TaskUpdates = append(t.b.TaskUpdates, &store.TaskUpdate{TenantID: f.TenantID, TaskID: f.TaskID, Control: &cancel, DueAt: &t.now})
		t.interrupt = append(t.interrupt, f.TaskID)
	}
}

// startBuffered starts the oldest buffered fires while the overlap
// policy lets them (and the schedule is active).
func (t *tick) startBuffered() error {
	s := t.sched
	for len(t.buffered) > 0 && s.Status == runtype.ScheduleActive &&
		schedule.StartBuffered(schedule.Overlap(s.Overlap), len(t.running), len(t.buffered)) {
		f := *t.buffered[0]
		t.buffered = t.buffered[1:]
		s.Buffered--
		if err := t.start(&f); err != nil {
			return err
		}
	}
	return nil
}

// start records a fire's turn and task: a thread of its own in the
// schedule's session (an instance's schedule: the main thread of the
// instance's session, queued behind a turn that runs there), the input rendered from the template, the
// schedule's overrides, job.item.started.
func (t *tick) start(f *runtype.Fire) error {
	s, rt := t.sched, t.rt
	input, err := renderInput(s, f)
	if err != nil {
		// The template was checked when written; a fire it cannot render
		// fails as a recorded fact rather than stop the schedule.
		f.Status, f.EndedAt = runtype.FireFailed, t.now
		f.Failure = &runtype.Failure{Kind: runtype.FailureInvalidArguments, Message: err.Error()}
		t.b.Fires = append(t.b.Fires, f)
		t.b.Events = append(t.b.Events, t.fireEvent(event.JobItemFailed, f, ""))
		s.ConsecutiveFailures++
		return nil
	}
	spec := &childTurnSpec{
		owner: s.Owner, sessionID: s.SessionID, agent: s.Agent, input: input,
		trace: rt.ids.TraceID(), source: "schedule", now: t.now,
		lineage: runtype.TaskLineage{ScheduleID: s.ID, FireID: f.ID},
	}
	fresh := s.Instance == ""
	if fresh {
		thread := &runtype.Thread{ID: rt.ids.New(runtype.PrefixThread), SessionID: s.SessionID, Owner: s.Owner, CreatedAt: t.now,
			Lineage: &runtype.Lineage{Kind: runtype.LineageSchedule, SessionID: s.SessionID}}
		t.b.Threads = append(t.b.Threads, thread)
		spec.threadID = thread.ID
	} else if spec.threadID, spec.queuedBehind, err = rt.instanceThread(t.ctx, s); err != nil {
		return err // the look fails and runs again
	}
	turn, task := rt.childTurn(t.b, spec, fresh)
	turn.Overrides = overridesOf(s)
	// A fire is not held back by the tenant's queue limit: the schedule's
	// overlap policy bounds its fires, and one refused for room would
	// wait for the next poll and could be missed (the catch-up window
	// runs meanwhile).
	t.b.Admit = nil
	f.Status, f.ThreadID, f.TurnID, f.TaskID, f.UpdatedAt = runtype.FireRunning, spec.threadID, turn.ID, task.ID, t.now
	t.b.Fires = append(t.b.Fires, f)
	t.b.Events = append(t.b.Events, t.fireEvent(event.JobItemStarted, f, ""))
	s.Running++
	s.Fires++
	s.LastFireAt = f.FireAt
	t.running = append(t.running, f)
	t.started = true
	return nil
}

// claimDeliveries claims the deliveries due now, so that no other
// process makes them meanwhile (the claim runs out after deliveryClaim:
// a process that died mid-delivery leaves it to be tried again), and
// notes when the next pending one is due.
func (t *tick) claimDeliveries() error {
	s := t.sched
	if s.Webhook == "" {
		return nil
	}
	pending, err := t.rt.allFires(t.ctx, &store.FireListParams{TenantID: s.TenantID, ScheduleID: s.ID, Delivery: runtype.DeliveryPending})
	if err != nil {
		return fmt.Errorf("listing the pending deliveries of schedule %s: %w", s.ID, err)
	}
	// Fires this look ended are in the batch, not yet in the store.
	for _, f := range t.b.Fires {
		if f.Delivery == runtype.DeliveryPending && !slices.ContainsFunc(pending, func(p *runtype.Fire) bool { return p.ID == f.ID }) {
			pending = append(pending, f)
		}
	}
	for _, f := range pending {
		if !f.DeliveryNextAt.After(t.now) {
			next := *f
			next.DeliveryAttempts++
			next.DeliveryNextAt, next.UpdatedAt = t.now.Add(deliveryClaim), t.now
			t.replaceFire(&next)
			t.deliver = append(t.deliver, &next)
			f = &next
		}
		if t.deliveryAt.IsZero() || f.DeliveryNextAt.Before(t.deliveryAt) {
			t.deliveryAt = f.DeliveryNextAt
		}
	}
	return nil
}

// replaceFire puts f in the batch in place of an earlier write of it.
func (t *tick) replaceFire(f *runtype.Fire) {
	if i := slices.IndexFunc(t.b.Fires, func(g *runtype.Fire) bool { return g.ID == f.ID }); i >= 0 {
		t.b.Fires[i] = f
		return
	}
	t.b.Fires = append(t.b.Fires, f)
}

// nextCheck is when the schedule must be looked at next: its next fire
// (while active) or its next pending delivery, whichever comes first.
func (t *tick) nextCheck() time.Time {
	at := t.deliveryAt
	if s := t.sched; s.Status == runtype.ScheduleActive && !s.NextFireAt.IsZero() && (at.IsZero() || s.NextFireAt.Before(at)) {
		at = s.NextFireAt
	}
	return at
}

// specOf is s's timing as package schedule reads it.
func specOf(s *runtype.Schedule) schedule.Spec {
	return schedule.Spec{Kind: schedule.Kind(s.Kind), Cron: s.Cron, TimeZone: s.TimeZone, Every: s.Every, At: s.At, Start: s.Start}
}

// overridesOf is what a fire's turn runs with from its schedule.
func overridesOf(s *runtype.Schedule) *runtype.TurnOverrides {
	o := &runtype.TurnOverrides{Model: s.Model, Tools: slices.Clone(s.Tools), InactivityTimeout: s.InactivityTimeout,
		PreRunTool: s.PreRunTool, PreRunInput: s.PreRunInput}
	if o.Model == "" && len(o.Tools) == 0 && o.InactivityTimeout == 0 && o.PreRunTool == "" {
		return nil
	}
	return o
}

// fireData is what a schedule's input template sees.
type fireData struct {
	FireTime   string
	ScheduleID string
	Name       string
	Manual     bool
	Params     map[string]any
}

// parseInput parses a schedule's input template.
func parseInput(text string) (*template.Template, error) {
	return template.New("input").Option("missingkey=error").Parse(text)
}

// renderInput renders a fire's input from its schedule's template.
func renderInput(s *runtype.Schedule, f *runtype.Fire) (string, error) {
	tmpl, err := parseInput(s.Input)
	if err != nil {
		return "", fmt.Errorf("the schedule's input template: %w", err)
	}
	d := fireData{FireTime: f.FireAt.UTC().Format(time.RFC3339), ScheduleID: s.ID, Name: s.Name, Manual: f.Manual, Params: map[string]any{}}
	if s.Params != "" {
		if err := json.Unmarshal([]byte(s.Params), &d.Params); err != nil {
			return "", fmt.Errorf("the schedule's params: %w", err)
		}
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&limitedWriter{w: &out, n: maxRenderedInput}, d); err != nil {
		return "", fmt.Errorf("rendering the schedule's input: %w", err)
	}
	return out.String(), nil
}

// maxRenderedInput bounds a fire's rendered input.
const maxRenderedInput = 1 << 20

// limitedWriter fails writes past n bytes.
type limitedWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.w.Len()+len(p) > l.n {
		return 0, fmt.Errorf("the rendered input is more than %d bytes", l.n)
	}
	return l.w.Write(p)
}

// scheduleEvent builds a job.* event of the schedule itself.
func (t *tick) scheduleEvent(typ event.Type, reason string) *event.Event {
	return t.rt.scheduleEvent(typ, t.sched, reason, nil)
}

// scheduleEvent builds a job.* event of s (with f, a fire that did not
// run, when set).
func (rt *Runtime) scheduleEvent(typ event.Type, s *runtype.Schedule, reason string, f *runtype.Fire) *event.Event {
	p := &event.JobPayload{JobID: s.ID, Agent: s.Agent, Status: runtype.JobStatus(s.Status), Running: s.Running,
		Schedule: schedulePayload(s, reason)}
	if f != nil {
		p.Fire = firePayload(f, "")
	}
	e := rt.turnEvent(typ, &runtype.Turn{SessionID: s.SessionID, Owner: s.Owner, TraceID: s.TraceID}, "", p)
	e.JobID, e.Status = s.ID, string(s.Status)
	if f != nil {
		e.JobItemID = f.ID
	}
	return e
}

// fireProgress is job.progress of a fire that did not run (yet).
func (t *tick) fireProgress(f *runtype.Fire) *event.Event {
	return t.rt.scheduleEvent(event.JobProgress, t.sched, f.Reason, f)
}

// fireEvent is a job.item.* event of a fire that runs or ran; its task is
// the fire's.
func (t *tick) fireEvent(typ event.Type, f *runtype.Fire, preview string) *event.Event {
	s := t.sched
	p := &event.JobItemPayload{JobID: s.ID, ItemID: f.ID, Status: jobItemStatus(f.Status), Attempt: 1, TaskID: f.TaskID,
		ThreadID: f.ThreadID, ResultPreview: preview, Failure: f.Failure, Fire: firePayload(f, preview)}
	e := t.rt.turnEvent(typ, &runtype.Turn{ID: f.TurnID, SessionID: s.SessionID, ThreadID: f.ThreadID, Owner: s.Owner,
		TaskID: f.TaskID, TraceID: s.TraceID}, spanOf(f.TurnID), p)
	e.JobID, e.JobItemID, e.Status = s.ID, f.ID, string(f.Status)
	return e
}

func spanOf(turnID string) string {
	if turnID == "" {
		return ""
	}
	return telemetry.TurnSpanID(turnID)
}

// jobItemStatus is the job item status the standard's job.item.* events
// carry for a fire's.
func jobItemStatus(s runtype.FireStatus) runtype.JobItemStatus {
	switch s {
	case runtype.FireRunning:
		return runtype.ItemRunning
	case runtype.FireCompleted:
		return runtype.ItemCompleted
	case runtype.FireCancelled, runtype.FireSkipped:
		return runtype.ItemCancelled
	case runtype.FireBuffered:
		return runtype.ItemPending
	}
	return runtype.ItemFailed
}

func schedulePayload(s *runtype.Schedule, reason string) *event.SchedulePayload {
	p := &event.SchedulePayload{Name: s.Name, Instance: s.Instance, Kind: s.Kind, Cron: s.Cron, TimeZone: s.TimeZone,
		At: ts(s.At), Overlap: s.Overlap, Reason: reason, NextFireAt: ts(s.NextFireAt), ConsecutiveFailures: s.ConsecutiveFailures}
	if s.Every > 0 {
		p.Every = s.Every.String()
	}
	return p
}

func firePayload(f *runtype.Fire, preview string) *event.FirePayload {
	return &event.FirePayload{FireID: f.ID, FireAt: f.FireAt, Manual: f.Manual, Status: f.Status, Reason: f.Reason,
		TaskID: f.TaskID, TurnID: f.TurnID, Failure: f.Failure, MissedCount: f.MissedCount, ResultPreview: preview}
}

// deliver makes one delivery attempt of f's result to its schedule's
// webhook and records how it went: delivered, failed for good (a
// permanent refusal, or the last attempt), or pending with a backoff
// (and the schedule due then).
func (rt *Runtime) deliver(ctx context.Context, s *runtype.Schedule, f *runtype.Fire) {
	hook, ok := rt.cfg.Webhooks[s.Webhook]
	next := *f
	now := rt.cfg.Now().UTC()
	var res webhook.Result
	if !ok {
		res = webhook.Result{Err: fmt.Sprintf("webhook %q is not configured", s.Webhook)}
	} else {
		body, err := rt.deliveryBody(ctx, s, f)
		if err != nil {
			rt.cfg.Logger.Error("building a delivery", "fireId", f.ID, "err", err)
			return // the claim runs out and it is tried again
		}
		secret, err := webhook.ParseSecret(hook.Secret)
		if err != nil { // validated by New
			rt.cfg.Logger.Error("a webhook's secret", "webhook", s.Webhook, "err", err)
			return
		}
		res = rt.webhookSender(hook).Send(ctx, &webhook.Request{URL: hook.URL, MsgID: f.ID, Body: body, Secret: secret})
		if ctx.Err() != nil {
			return // stopping: the claim runs out and the delivery is made again
		}
		now = rt.cfg.Now().UTC()
	}
	next.UpdatedAt, next.DeliveryError = now, rt.redactor.Text(res.Err)
	limit := cmp.Or(hook.MaxAttempts, defaultDeliveryAttempts)
	var wake *store.ScheduleWake
	switch {
	case res.Err == "":
		next.Delivery, next.DeliveredAt, next.DeliveryNextAt = runtype.DeliveryDelivered, now, time.Time{}
	case res.Retryable && next.DeliveryAttempts < limit:
		// The backoff, or longer when the receiver asked (Retry-After).
		wait := max(schedule.Backoff(next.DeliveryAttempts, deliveryBackoffBase, deliveryBackoffMax), min(res.RetryAfter, deliveryBackoffMax))
		next.DeliveryNextAt = now.Add(wait)
		wake = &store.ScheduleWake{TenantID: s.TenantID, ScheduleID: s.ID, At: next.DeliveryNextAt}
	default:
		next.Delivery, next.DeliveryNextAt = runtype.DeliveryFailed, time.Time{}
	}
	b := &store.Batch{Fires: []*runtype.Fire{&next}, Events: []*event.Event{rt.deliveryEvent(s, &next, res.Status)}}
	if wake != nil {
		b.ScheduleWakes = []*store.ScheduleWake{wake}
	}
	if err := rt.writer.Write(context.WithoutCancel(ctx), b); err != nil {
		rt.cfg.Logger.Error("recording a delivery", "fireId", f.ID, "err", err)
	}
}

// deliveryEvent is task.updated of a fire's task with its delivery state.
func (rt *Runtime) deliveryEvent(s *runtype.Schedule, f *runtype.Fire, httpStatus int) *event.Event {
	e := rt.turnEvent(event.TaskUpdated, &runtype.Turn{ID: f.TurnID, SessionID: s.SessionID, ThreadID: f.ThreadID, Owner: s.Owner,
		TaskID: f.TaskID, TraceID: s.TraceID}, spanOf(f.TurnID), &event.TaskPayload{Status: taskStatusOf(f.Status), Reason: runtype.ReasonDelivery})
	e.JobID, e.JobItemID = s.ID, f.ID
	e.DeliveryState = deliveryState(s.Webhook, f, httpStatus)
	return e
}

func deliveryState(target string, f *runtype.Fire, httpStatus int) *event.DeliveryState {
	d := &event.DeliveryState{Status: f.Delivery, Target: target, Attempts: f.DeliveryAttempts, LastError: f.DeliveryError,
		HTTPStatus: httpStatus, DeliveredAt: ts(f.DeliveredAt)}
	if f.Delivery == runtype.DeliveryPending {
		d.NextAttempt = ts(f.DeliveryNextAt)
	}
	return d
}

// taskStatusOf is the status of the task of an ended fire.
func taskStatusOf(s runtype.FireStatus) runtype.TaskStatus {
	switch s {
	case runtype.FireCompleted:
		return runtype.StatusCompleted
	case runtype.FireCancelled, runtype.FireSkipped:
		return runtype.StatusCancelled
	}
	return runtype.StatusFailed
}

// deliveryBody is the JSON a webhook receives for a fire: Standard
// Webhooks' {type, timestamp, data}.
func (rt *Runtime) deliveryBody(ctx context.Context, s *runtype.Schedule, f *runtype.Fire) ([]byte, error) {
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: s.TenantID, ID: f.TaskID})
	if err != nil {
		return nil, fmt.Errorf("reading the fire's task: %w", err)
	}
	typ := "schedule.fire.completed"
	if f.Status != runtype.FireCompleted {
		typ = "schedule.fire.failed"
	}
	return json.Marshal(map[string]any{
		"type": typ, "timestamp": rt.cfg.Now().UTC(),
		"data": map[string]any{
			"scheduleId": s.ID, "scheduleName": s.Name, "agent": s.Agent, "fireId": f.ID, "fireAt": f.FireAt,
			"sessionId": s.SessionID, "threadId": f.ThreadID, "turnId": f.TurnID, "taskId": f.TaskID,
			"status": task.Status, "result": task.Result, "failure": task.Failure,
		},
	})
}

// Webhook is an endpoint schedules deliver their fires' results to
// (Config.Webhooks). Deliveries are signed Standard Webhooks style with
// Secret; see package webhook.
type Webhook struct {
	URL string
	// Secret signs deliveries: "whsec_" and the base64 of a 24 to 64 byte
	// key (webhook.NewSecret makes one). It never reaches events or logs.
	Secret string
	// AllowPrivate lets the URL reach loopback, private and link-local
	// addresses, refused by default (checked when each delivery
	// connects), so that a delivery cannot reach the runtime's own
	// network by mistake.
	AllowPrivate bool
	// MaxAttempts bounds the attempts of one delivery (default 8); a
	// retryable failure waits 10s, 20s, 40s … up to 10m before the next.
	MaxAttempts int
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration
}

// validateWebhooks checks the configured webhooks.
func validateWebhooks(hooks map[string]Webhook) error {
	for name, w := range hooks {
		if !tool.ValidName(name) {
			return fmt.Errorf("config: invalid webhook name %q: use 1 to 64 letters, digits, '_' or '-'", name)
		}
		if err := webhook.ValidateURL(w.URL, w.AllowPrivate); err != nil {
			return fmt.Errorf("config: webhook %s: %w", name, err)
		}
		if _, err := webhook.ParseSecret(w.Secret); err != nil {
			return fmt.Errorf("config: webhook %s: secret: %w", name, err)
		}
		if w.MaxAttempts < 0 || w.MaxAttempts > 50 {
			return fmt.Errorf("config: webhook %s: max attempts %d is out of range: use 1 to 50 (0 for the default, %d)", name, w.MaxAttempts, defaultDeliveryAttempts)
		}
		if w.Timeout < 0 {
			return fmt.Errorf("config: webhook %s: timeout must not be negative", name)
		}
	}
	return nil
}

// webhookSecrets are the values the redactor removes for the webhooks:
// each secret, and its key's base64.
func webhookSecrets(hooks map[string]Webhook) []string {
	var out []string
	for _, w := range hooks {
		if w.Secret != "" {
			out = append(out, w.Secret, strings.TrimPrefix(w.Secret, "whsec_"))
		}
	}
	return out
}

// webhookSender makes w's deliveries.
func (rt *Runtime) webhookSender(w Webhook) *webhook.Sender {
	return &webhook.Sender{Client: rt.cfg.WebhookClient, Now: rt.cfg.Now, Timeout: cmp.Or(w.Timeout, 10*time.Second), AllowPrivate: w.AllowPrivate}
}
