package agentrt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// This file holds the worker pool (DESIGN.md §5). Work lives in the store,
// not in memory: a task is due when its DueAt has come (a submission, a
// resolved action, a raised budget, a retry's backoff, a lease that ran
// out). The dispatcher lists due tasks, claims each with a lease (an epoch
// that rises with every claim), and runs it on a worker goroutine, which
// renews the lease while it works and fences every write with the epoch:
// a worker that lost its lease cannot write. When the attempt ends or
// parks, the worker releases the lease, saying when the task is due next
// (never, for a parked or finished one). Parked tasks hold no lease and no
// goroutine.

// claim is one task a worker of this runtime holds.
type claim struct {
	task  *runtype.Task // as read after the claim
	turn  *runtype.Turn
	epoch int64
	// until is when the lease ends unless renewed (unix nanoseconds).
	until atomic.Int64

	ctx    context.Context
	cancel context.CancelCauseFunc
	// pause and yield are asked between steps (loop.Job).
	pause atomic.Bool
	// rewake: a budget was raised while the task ran; should it park on
	// a budget, it is due again at once.
	rewake atomic.Bool
	// progress is when the run last recorded a step (unix nanoseconds).
	progress atomic.Int64
	done     chan struct{}
}

// newWorkerID names this process's workers in leases and run records:
// the runtime id, the process id and a random suffix, so a restarted
// process is a new worker.
func newWorkerID(runtimeID string) string {
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s/%d-%s", runtimeID, os.Getpid(), hex.EncodeToString(b[:]))
}

// kick wakes the dispatcher: something may be due.
func (rt *Runtime) kick() {
	select {
	case rt.wake <- struct{}{}:
	default:
	}
}

// dispatch claims due tasks while there are free workers, until the
// runtime stops claiming.
func (rt *Runtime) dispatch(ctx context.Context) {
	pollLoop(ctx, rt.dispatchDone, rt.wake, rt.cfg.PollInterval, rt.claimDue)
}

// pollLoop calls look at once and then whenever wake fires or every
// passes without one, until ctx ends; it closes done when it returns.
func pollLoop(ctx context.Context, done chan struct{}, wake <-chan struct{}, every time.Duration, look func(context.Context)) {
	defer close(done)
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-poll.C:
		}
		look(ctx)
		poll.Reset(every)
	}
}

// claimDue claims as many due tasks as there are free workers.
func (rt *Runtime) claimDue(ctx context.Context) {
	for ctx.Err() == nil {
		rt.mu.Lock()
		free := rt.cfg.MaxConcurrentRuns - (len(rt.claims) - rt.waiting) - rt.eagerSlots
		rt.mu.Unlock()
		if free <= 0 {
			return
		}
		due, err := rt.store.TaskListDue(ctx, &store.TaskListDueParams{Now: rt.cfg.Now().UTC(), Limit: free + 8})
		if err != nil {
			if ctx.Err() == nil {
				rt.cfg.Logger.Error("listing due tasks", "err", err)
			}
			return
		}
		var todo []*runtype.Task
		for _, t := range due {
			if len(todo) == free {
				break
			}
			if !rt.holds(t.ID) {
				todo = append(todo, t)
			}
		}
		// Each claim is a write of its own: made together, they share
		// the writer's commits.
		var claims sync.WaitGroup
		var claimed atomic.Int32
		for _, t := range todo {
			claims.Add(1)
			go func() {
				defer claims.Done()
				c, err := rt.claim(ctx, t)
				if err != nil {
					if !errors.Is(err, store.ErrLeaseLost) && ctx.Err() == nil {
						rt.cfg.Logger.Error("claiming task", "taskId", t.ID, "err", err)
					}
					return
				}
				if c != nil {
					claimed.Add(1)
					go rt.work(c)
				}
			}()
		}
		claims.Wait()
		if claimed.Load() == 0 || len(due) < free+8 {
			return
		}
	}
}

// holds reports whether one of this runtime's workers holds the task.
func (rt *Runtime) holds(taskID string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	_, ok := rt.claims[taskID]
	return ok
}

// claim takes t's lease for this runtime's workers and registers the
// claim. It returns ErrLeaseLost when another worker was faster, and
// nil without error when the runtime stopped meanwhile (the lease is
// let go at once).
func (rt *Runtime) claim(ctx context.Context, t *runtype.Task) (*claim, error) {
	now := rt.cfg.Now().UTC()
	expires := now.Add(rt.cfg.LeaseTTL)
	err := rt.writer.Lease(ctx, &store.LeaseChange{
		TenantID: t.TenantID, TaskID: t.ID, Epoch: t.LeaseEpoch, Claim: true, At: now, Owner: rt.workerID, ExpiresAt: expires,
	})
	if err != nil {
		return nil, err
	}
	epoch := t.LeaseEpoch + 1
	// Read the task and its turn anew: a cancel or pause may have come in
	// between the listing and the claim.
	task, err := rt.store.TaskGet(ctx, &store.TaskGetParams{TenantID: t.TenantID, ID: t.ID})
	if err == nil && task.LeaseEpoch != epoch {
		err = store.ErrLeaseLost
	}
	var turn *runtype.Turn
	if err == nil {
		turn, err = rt.store.TurnGet(ctx, &store.TurnGetParams{TenantID: t.TenantID, ID: t.TurnID})
	}
	if err != nil {
		rt.release(t.TenantID, t.ID, epoch, now)
		return nil, err
	}
	c := &claim{task: task, turn: turn, epoch: epoch, done: make(chan struct{})}
	c.until.Store(expires.UnixNano())
	c.progress.Store(now.UnixNano())
	c.ctx, c.cancel = context.WithCancelCause(rt.baseCtx)
	rt.mu.Lock()
	if rt.state != stateRunning {
		rt.mu.Unlock()
		c.cancel(nil)
		rt.release(t.TenantID, t.ID, epoch, now)
		return nil, nil
	}
	if task.Control == runtype.ControlPause {
		c.pause.Store(true)
	}
	rt.claims[task.ID] = c
	rt.wg.Add(1) // for work, which the caller runs; Stop waits for it
	rt.mu.Unlock()
	return c, nil
}

// reserveEagerSlot reserves a worker slot for a submission that means to
// start its turn at once, if the runtime runs workers and has one free.
// The dispatcher counts reserved slots as taken, so the submission's
// claim never finds the pool full; Stop waits for a reserved slot as for
// a running attempt, so the writer is still there to release the claim
// should the runtime stop before the turn starts.
func (rt *Runtime) reserveEagerSlot() bool {
	if rt.cfg.NoWorkers {
		return false
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.state != stateRunning || len(rt.claims)+rt.eagerSlots >= rt.cfg.MaxConcurrentRuns {
		return false
	}
	rt.eagerSlots++
	rt.wg.Add(1)
	return true
}

// releaseEagerSlot gives back a slot whose submission claimed nothing.
func (rt *Runtime) releaseEagerSlot() {
	rt.mu.Lock()
	rt.eagerSlots--
	rt.mu.Unlock()
	rt.wg.Done()
}

// startEager runs a turn whose submission also claimed its task (lease,
// at epoch 0, committed): the task is in the store exactly as a claim by
// the dispatcher leaves it, and turn and task are what the submission
// wrote, which is what claim would read back. A cancel or pause that
// came since is the heartbeat's to see, as after any claim. The slot
// reserved for it (and its count in rt.wg) becomes the claim's.
func (rt *Runtime) startEager(turn runtype.Turn, task runtype.Task, lease *store.LeaseChange, now time.Time) {
	task.LeaseOwner, task.LeaseEpoch, task.LeaseExpiresAt, task.DueAt = lease.Owner, lease.Epoch+1, lease.ExpiresAt, lease.ExpiresAt
	// The lease was measured from the start of the submission. When its
	// commit took more than a third of the lease (a store busy with
	// another process's writes), renew it now, as the heartbeat would
	// have: the heartbeat's first tick is a third of a lease away.
	if at := rt.cfg.Now().UTC(); lease.ExpiresAt.Sub(at) < rt.cfg.LeaseTTL*2/3 {
		expires := at.Add(rt.cfg.LeaseTTL)
		err := rt.writer.Lease(context.Background(), &store.LeaseChange{
			TenantID: task.TenantID, TaskID: task.ID, Epoch: task.LeaseEpoch, Owner: lease.Owner, ExpiresAt: expires,
		})
		switch {
		case err == nil:
			task.LeaseExpiresAt, task.DueAt = expires, expires
		case errors.Is(err, store.ErrLeaseLost):
			// Another worker took the task up already: it is theirs.
			rt.releaseEagerSlot()
			return
		default:
			rt.cfg.Logger.Error("renewing task lease", "taskId", task.ID, "err", err)
		}
	}
	c := &claim{task: &task, turn: &turn, epoch: task.LeaseEpoch, done: make(chan struct{})}
	c.until.Store(task.LeaseExpiresAt.UnixNano())
	c.progress.Store(now.UnixNano())
	c.ctx, c.cancel = context.WithCancelCause(rt.baseCtx)
	rt.mu.Lock()
	rt.eagerSlots--
	if rt.state != stateRunning {
		rt.mu.Unlock()
		c.cancel(nil)
		rt.release(task.TenantID, task.ID, c.epoch, now) // due now: the next start runs it
		rt.wg.Done()
		return
	}
	rt.claims[task.ID] = c
	rt.mu.Unlock()
	go rt.work(c) // which calls the slot's wg.Done
}

// release lets go of a task's lease; the task is next due at due (zero:
// not until something changes). A lease already lost is left alone.
func (rt *Runtime) release(tenant, taskID string, epoch int64, due time.Time) {
	err := rt.writer.Lease(context.Background(), &store.LeaseChange{
		TenantID: tenant, TaskID: taskID, Epoch: epoch, DueAt: due,
	})
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		rt.cfg.Logger.Error("releasing task lease", "taskId", taskID, "err", err)
	}
}

// work runs one claimed task's attempt, keeping its lease alive, and
// releases it when the attempt ends, parks or yields.
func (rt *Runtime) work(c *claim) {
	defer rt.wg.Done()
	hbStop := make(chan struct{})
	var hb sync.WaitGroup
	hb.Add(1)
	go func() {
		defer hb.Done()
		rt.heartbeat(c, hbStop)
	}()

	rt.runStarting(c.turn)
	out, err := rt.attempt(c)
	close(hbStop)
	hb.Wait()
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		rt.cfg.Logger.ErrorContext(rt.logContext(c.turn), "running task", "err", err)
	}
	if out != nil {
		rt.runEnded(out.Status, out.Run.ID)
		if out.Status.Terminal() {
			rt.observeRun(out.Run)
			if a := rt.agents[c.turn.Agent]; c.turn.Kind == runtype.TurnJob || c.turn.Kind == runtype.TurnWorkflow || a != nil && a.Delegates {
				rt.cancelHeldChildren(c.task.ID)
			}
			if c.task.ScheduleID != "" {
				rt.kickScheduler() // its end made the schedule due
			}
		}
	}
	switch {
	case out != nil && out.Released:
		// (Checked before a lost lease: a heartbeat that came after the
		// release finds the lease gone, but the release was this worker's.)
		// The run's last write let go of the lease. An answer, a raised
		// budget, a resume or a cancel that came while the task was held
		// was left alone by the store: make the task due now. (An ended
		// task has nothing left to wake; a yielded one is due already.)
		wake := false
		switch {
		case out.Status.Parked(), out.Status == runtype.StatusPaused:
			wake = !rt.nextDue(c, out).IsZero()
		case out.Status == runtype.StatusRetrying:
			wake = rt.controlPending(c)
		}
		if wake {
			if err := rt.wakeTask(context.Background(), c.task.TenantID, c.task.ID); err != nil {
				rt.cfg.Logger.Error("waking task", "taskId", c.task.ID, "err", err)
			}
		}
	case errors.Is(err, store.ErrLeaseLost) || errors.Is(context.Cause(c.ctx), loop.ErrLeaseLost):
	default:
		due := rt.nextDue(c, out)
		rt.release(c.task.TenantID, c.task.ID, c.epoch, due)
		if due.IsZero() && out != nil && out.Reason == runtype.ReasonWaitingChildren && rt.childEnded(c) {
			// A child ended between the look and the release, and its wake
			// found the task still held: look again now it is not.
			if err := rt.wakeTask(context.Background(), c.task.TenantID, c.task.ID); err != nil {
				rt.cfg.Logger.Error("waking task", "taskId", c.task.ID, "err", err)
			}
		}
	}
	c.cancel(nil)
	rt.mu.Lock()
	if rt.claims[c.task.ID] == c {
		delete(rt.claims, c.task.ID)
	}
	rt.mu.Unlock()
	close(c.done)
	// Whoever waits for the turn (WaitTurn) looks again.
	rt.settles.Notify([]*event.Event{{TenantID: c.turn.TenantID, SessionID: c.turn.SessionID, TurnID: c.turn.ID}})
	rt.kick() // the next task of the thread may be due now
}

// nextDue says when the task is due after its attempt came out as out.
func (rt *Runtime) nextDue(c *claim, out *loop.Outcome) time.Time {
	now := rt.cfg.Now().UTC()
	if out == nil {
		// Nothing could be recorded (the store failed): try again after a
		// lease's time rather than at once.
		return now.Add(rt.cfg.LeaseTTL)
	}
	switch out.Status {
	case runtype.StatusRetrying:
		return out.RetryAt
	case runtype.StatusQueued:
		return now // yielded: the next worker goes on from here
	case runtype.StatusWaitingResource:
		if c.rewake.Load() {
			return now
		}
		if out.Reason == runtype.ReasonWaitingChildren && rt.childEnded(c) {
			return now
		}
	case runtype.StatusWaitingPermission:
		// Every action may have been answered while the run was still
		// parking: the answer found it running, so it is due now.
		acts, err := rt.store.ActionList(context.Background(), &store.ActionListParams{
			TenantID: c.task.TenantID, RunID: out.Run.ID, Status: runtype.ActionPending, Limit: 1,
		})
		if err == nil && len(acts) == 0 {
			return now
		}
	case runtype.StatusPaused:
		t, err := rt.store.TaskGet(context.Background(), &store.TaskGetParams{TenantID: c.task.TenantID, ID: c.task.ID})
		if err == nil && t.Control != runtype.ControlPause {
			return now // resumed while it was pausing
		}
	}
	if rt.controlPending(c) {
		return now
	}
	return time.Time{}
}

// controlPending reports whether a cancel, rollback or retry request
// reached the task while this worker held it (the store then kept its due
// time as the lease's): the task must be due again for it to take effect.
func (rt *Runtime) controlPending(c *claim) bool {
	t, err := rt.store.TaskGet(context.Background(), &store.TaskGetParams{TenantID: c.task.TenantID, ID: c.task.ID})
	if err != nil {
		return false
	}
	switch t.Control {
	case runtype.ControlCancel, runtype.ControlRollback:
		if c.turn.Kind == runtype.TurnJob && c.task.Control == runtype.ControlCancel {
			// The job's dispatcher acted on this cancel, which it keeps
			// until the job ends: it waits for the items it cancelled.
			return false
		}
		return !t.Status.Terminal()
	case runtype.ControlRetry:
		return true // asked (again) after this attempt began
	}
	return false
}

// heartbeat renews c's lease every third of the lease's time until stop
// closes (on a timer: steps neither renew nor read the lease, their
// writes are fenced by its epoch), and watches the attempt's limits: it cancels the run when the
// lease is lost (or runs out unrenewed), when an operator cancels or
// pauses the task in another process, and when the turn passes its
// wall-clock or inactivity limit.
func (rt *Runtime) heartbeat(c *claim, stop <-chan struct{}) {
	ticks, stopTicks := rt.heartbeatTicks(rt.cfg.LeaseTTL / 3)
	defer stopTicks()
	var deadline <-chan time.Time
	if d := rt.cfg.TurnTimeout; d > 0 {
		start := c.turn.StartedAt
		if start.IsZero() {
			start = rt.cfg.Now()
		}
		if root := c.task.RootTaskID; root != "" {
			// A delegation tree shares its root's wall clock: a child has
			// what its root request has left.
			if t, err := rt.store.TaskGet(context.Background(), &store.TaskGetParams{TenantID: c.task.TenantID, ID: root}); err == nil &&
				!t.StartedAt.IsZero() && t.StartedAt.Before(start) {
				start = t.StartedAt
			}
		}
		t := time.NewTimer(time.Until(start.Add(d)))
		defer t.Stop()
		deadline = t.C
	}
	for {
		select {
		case <-stop:
			return
		case <-deadline:
			c.cancel(loop.ErrTimedOut)
			deadline = nil
		case <-ticks:
			now := rt.cfg.Now().UTC()
			if d := rt.inactivityTimeout(c.turn); d > 0 && now.Sub(time.Unix(0, c.progress.Load())) > d {
				c.cancel(loop.ErrInactive)
			}
			expires := now.Add(rt.cfg.LeaseTTL)
			err := rt.writer.Lease(context.Background(), &store.LeaseChange{
				TenantID: c.task.TenantID, TaskID: c.task.ID, Epoch: c.epoch, Owner: rt.workerID, ExpiresAt: expires,
			})
			switch {
			case err == nil:
				c.until.Store(expires.UnixNano())
			case errors.Is(err, store.ErrLeaseLost):
				c.cancel(loop.ErrLeaseLost)
				return
			default:
				rt.cfg.Logger.Error("renewing task lease", "taskId", c.task.ID, "err", err)
				if now.UnixNano() > c.until.Load() {
					c.cancel(loop.ErrLeaseLost) // another worker may hold it by now
					return
				}
			}
			if t, err := rt.store.TaskGet(context.Background(), &store.TaskGetParams{TenantID: c.task.TenantID, ID: c.task.ID}); err == nil {
				heedControl(c, t)
			}
		}
	}
}

// tickerTicks is the heartbeat's clock outside tests.
func tickerTicks(every time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(every)
	return t.C, t.Stop
}

// attempt does what the claimed task is due for: the coordinator decides
// by the task's durable state (loop.Coordinator.RunAttempt).
func (rt *Runtime) attempt(c *claim) (*loop.Outcome, error) {
	switch c.turn.Kind {
	case runtype.TurnJob:
		return rt.dispatchJob(c)
	case runtype.TurnWorkflow:
		return rt.dispatchWorkflow(c)
	}
	a, ok := rt.agents[c.turn.Agent]
	if !ok {
		return nil, fmt.Errorf("turn %s belongs to agent %q, which this runtime does not have", c.turn.ID, c.turn.Agent)
	}
	var prelude loop.Prelude
	if o := c.turn.Overrides; o != nil {
		a = withOverrides(a, o)
		if o.PreRunTool != "" {
			prelude = rt.preRun(c, a)
		}
	}
	if ac := rt.cfg.Agents[baseAgent(c.turn.Agent)]; ac != nil && ac.State != nil {
		// A turn of a named instance: its prelude reads the instance
		// again (and migrates its state); a read error tries there.
		_, err := rt.store.InstanceGetBySession(c.ctx, &store.InstanceGetBySessionParams{TenantID: c.turn.TenantID, SessionID: c.turn.SessionID})
		if !errors.Is(err, store.ErrNotFound) {
			prelude = rt.instancePrelude(c, a, prelude)
		}
	}
	return rt.coord.RunAttempt(c.ctx, &loop.Job{
		Agent: a, Turn: c.turn, Task: c.task, Prelude: prelude,
		Fence:    &store.Fence{TenantID: c.task.TenantID, TaskID: c.task.ID, Epoch: c.epoch},
		Worker:   rt.workerID,
		Pause:    c.pause.Load,
		Yield:    rt.yielding,
		Progress: func() { c.progress.Store(rt.cfg.Now().UnixNano()) },
		Start: func() {
			if c.turn.StatusReason == runtype.ReasonEnqueued {
				rt.queueChanged(context.WithoutCancel(c.ctx), c.turn, "dequeued")
			}
		},
		Release: true,
	})
}

// yielding reports whether running attempts should stop at their next
// step: the runtime is shutting down.
func (rt *Runtime) yielding() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.state != stateRunning
}

// observeRun feeds a finished run's duration into the estimate
// Retry-After is computed from.
func (rt *Runtime) observeRun(r runtype.Run) {
	if r.StartedAt.IsZero() || r.EndedAt.IsZero() {
		return
	}
	d := r.EndedAt.Sub(r.StartedAt)
	for {
		old := rt.avgRun.Load()
		next := int64(d)
		if old > 0 {
			next = old + (int64(d)-old)/8
		}
		if rt.avgRun.CompareAndSwap(old, next) {
			return
		}
	}
}

// childEnded reports whether a child of c's task, which just parked
// waiting for its children, may have ended while the task was held (its
// wake found the task held, so the store left it alone): no child is
// open, or one of a job's running items has settled.
func (rt *Runtime) childEnded(c *claim) bool {
	ctx := context.Background()
	switch c.turn.Kind {
	case runtype.TurnJob:
		ended, err := rt.itemSettled(ctx, c.task.TenantID, c.task.JobID)
		return err == nil && ended
	case runtype.TurnWorkflow:
		return rt.workflowMoved(ctx, c.task)
	}
	open, err := rt.store.TaskList(ctx, &store.TaskListParams{TenantID: c.task.TenantID, ParentTaskID: c.task.ID, Open: true})
	return err == nil && len(open) == 0
}

// cancelHeldChildren cancels at once the runs this process holds of the
// children of a task that ended: the ended task's last write asked them
// to cancel, which a worker of another process sees at its next
// heartbeat.
func (rt *Runtime) cancelHeldChildren(taskID string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, c := range rt.claims {
		if c.task.ParentTaskID == taskID {
			c.cancel(ErrInterrupted)
		}
	}
}

// interruptHeld cancels the attempt this runtime's worker runs for the
// task, if one does, at once rather than at its next heartbeat (the
// task's control, already written, says why).
func (rt *Runtime) interruptHeld(taskID string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if c, ok := rt.claims[taskID]; ok {
		c.cancel(ErrInterrupted)
	}
}

// inactivityTimeout is how long the turn's run may go without a step: its
// own override (a schedule's), else the runtime's.
func (rt *Runtime) inactivityTimeout(turn *runtype.Turn) time.Duration {
	if o := turn.Overrides; o != nil && o.InactivityTimeout > 0 {
		return o.InactivityTimeout
	}
	return rt.cfg.InactivityTimeout
}
