package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// WriterConfig configures a Writer.
type WriterConfig struct {
	// MaxGroup caps how many batches share one transaction. Default 256.
	MaxGroup int
	// Notify, when set, is called after every commit with the committed
	// events in commit order. It must not block or keep the slice
	// (event.Bus.Notify does neither).
	Notify func([]*event.Event)
	// Now is the clock of Fault's times; default time.Now.
	Now func() time.Time
	// Redactor, when set, removes secrets from every batch before it is
	// written (Batch.Redact): nothing reaches the store, the event bus or
	// a reader unredacted.
	Redactor Redactor
}

// WithDefaults returns c with zero fields set to their defaults.
func (c WriterConfig) WithDefaults() WriterConfig {
	if c.MaxGroup <= 0 {
		c.MaxGroup = 256
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Writer is the single writer of a Store. It assigns each event its
// per-session sequence at commit time, so sequences have no gaps and
// follow commit order, and it group-commits: batches that arrive while a
// transaction is committing share the next one. Each batch is still
// all-or-nothing (a failing batch does not fail its neighbours), and Write
// returns only after the transaction holding the batch has committed, so
// group commit never weakens per-step durability.
//
// There is no writer goroutine. The first caller to find the Writer idle
// becomes the leader and commits in its own goroutine; callers arriving
// meanwhile queue, and when the leader is done it hands leadership to the
// first of them, who commits the whole queue in one transaction. A lone
// caller therefore pays no hand-off at all, and under load one fsync
// carries many batches.
//
// Batches and their events belong to the Writer from the moment they are
// passed in until Write returns; the Writer sets each event's Sequence and
// the store its Cursor.
type Writer struct {
	store  Store
	cfg    WriterConfig
	encode bool // the store keeps events' encodings: prepare them before queueing

	writes, commits atomic.Int64 // counters for Stats
	// fault is set by the leader after each transaction; see Fault.
	fault atomic.Pointer[Fault]

	mu      sync.Mutex
	cond    *sync.Cond     // signalled when leading becomes false
	queue   []*writeReq    // guarded by mu: batches waiting for a leader
	leading bool           // guarded by mu: a caller is committing
	closed  bool           // guarded by mu
	group   []*writeReq    // the leader's scratch slice
	events  []*event.Event // the leader's scratch slice for Notify
	batches []*Batch       // the leader's scratch slices for applyGroup
	cursors []int64

	// seq caches the last sequence of sessions. Only the leader uses it;
	// leadership passes under mu, which orders the accesses.
	seq map[string]int64
}

type writeReq struct {
	b    *Batch     // nil for a probe
	err  error      // the outcome, set by the leader that commits the batch
	done chan error // buffered 1: the outcome, or errLead; nil for a request that leads itself
}

// errLead tells a queued caller that it is the leader now.
var errLead = errors.New("store writer: lead")

// maxSeqCache bounds the per-session sequence cache; beyond it the cache is
// dropped and refilled from the store on demand.
const maxSeqCache = 50_000

// NewWriter returns a Writer for s. Call Stop when done.
func NewWriter(s Store, cfg WriterConfig) *Writer {
	w := &Writer{store: s, cfg: cfg.WithDefaults(), encode: s.Info().Durable, seq: make(map[string]int64)}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// Write commits b and returns once it is durable. It returns ctx's error
// only if ctx has ended before the Writer takes b; once taken, Write waits
// for the outcome, because returning early would leave the caller unsure
// whether the facts exist.
func (w *Writer) Write(ctx context.Context, b *Batch) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	// Redact and encode here, in the caller's goroutine, not in the
	// leader's serial section; the leader only patches in the sequence.
	if err := w.prepare(b); err != nil {
		return err
	}
	return w.write(&writeReq{b: b})
}

// Lease applies c, a claim or a renewal, and returns once it is
// durable: through the store's LeaseApplier when it is one (and c is
// a claim without Alone or a renewal), else as a batch of its own.
func (w *Writer) Lease(ctx context.Context, c *LeaseChange) error {
	if la, ok := w.store.(LeaseApplier); ok && c.Standalone() {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		return la.ApplyLease(ctx, c)
	}
	return w.Write(ctx, &Batch{Leases: []*LeaseChange{c}})
}

// Probe commits a transaction that writes to the store's medium and
// changes no fact (see Prober), in turn with the batches, and returns its
// outcome; like theirs, it sets or clears the Fault. With a store whose
// transactions are not Probers it commits an empty transaction. Health
// checks probe a store whose writes failed, so that it is seen to recover
// even when nothing else writes.
func (w *Writer) Probe(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	return w.write(&writeReq{})
}

// write hands r to the leader, or leads.
func (w *Writer) write(r *writeReq) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	if r.b != nil {
		w.writes.Add(1)
	}
	if w.leading {
		r.done = make(chan error, 1)
		w.queue = append(w.queue, r)
		w.mu.Unlock()
		if err := <-r.done; err != errLead {
			return err
		}
		w.mu.Lock() // handed leadership: leading is still true, r is first in the queue
	} else {
		w.leading = true
		w.queue = append(w.queue, r)
	}
	w.lead(r)
	return r.err
}

// lead commits the queue's first group, then hands leadership to the next
// queued caller or gives it up. The caller holds mu and is the leader; lead
// returns with mu released. self, the leader's own request, gets its
// outcome in self.err and no message.
func (w *Writer) lead(self *writeReq) {
	n := min(len(w.queue), w.cfg.MaxGroup)
	group := append(w.group[:0], w.queue[:n]...)
	rest := copy(w.queue, w.queue[n:])
	clear(w.queue[rest:])
	w.queue = w.queue[:rest]
	w.mu.Unlock()

	w.commit(group, self)
	clear(group)
	w.group = group[:0]
	w.release()
}

// release ends the caller's leadership: it hands it to the first queued
// caller, or gives it up when nobody waits.
func (w *Writer) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) > 0 {
		w.queue[0].done <- errLead
		return
	}
	w.leading = false
	w.cond.Broadcast()
}

// prepare redacts b and encodes its events when the store keeps
// encodings; see Write.
func (w *Writer) prepare(b *Batch) error {
	if w.cfg.Redactor != nil {
		b.Redact(w.cfg.Redactor)
	}
	if !w.encode {
		return nil
	}
	for _, e := range b.Events {
		if err := e.Prepare(); err != nil {
			return err
		}
	}
	return nil
}

// Stop refuses new batches with ErrClosed and waits until every batch
// already handed over has committed, or ctx ends.
func (w *Writer) Stop(ctx context.Context) error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	idle := make(chan struct{})
	go func() {
		w.mu.Lock()
		for w.leading {
			w.cond.Wait()
		}
		w.mu.Unlock()
		close(idle)
	}()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopping store writer: %w", context.Cause(ctx))
	}
}

// commit writes group in one transaction and completes every request:
// it sets each one's err and sends it to each waiting caller but self. The
// caller is the leader.
func (w *Writer) commit(group []*writeReq, self *writeReq) {
	ctx := context.Background()
	finish := func() {
		for _, r := range group {
			if r != self && r.done != nil {
				r.done <- r.err
			}
		}
	}
	failAll := func(err error) {
		w.noteFault(err)
		for _, r := range group {
			r.err = err
		}
		finish()
	}
	tx, err := w.store.Begin(ctx)
	if err != nil {
		failAll(fmt.Errorf("beginning write transaction: %w", err))
		return
	}
	if len(w.seq) > maxSeqCache {
		clear(w.seq)
	}
	var applied int
	var storageErr error // the first batch that failed for the storage's sake
	switch grouped, err := w.applyGroup(ctx, tx, group); {
	case !grouped:
		applied, storageErr = w.applyEach(ctx, tx, group)
	case err == nil:
		applied = len(group)
	default:
		// A batch of the group failed: the batches are applied again one
		// by one, in another transaction, so that only that one fails.
		_ = tx.Rollback()
		if tx, err = w.store.Begin(ctx); err != nil {
			failAll(fmt.Errorf("beginning write transaction: %w", err))
			return
		}
		applied, storageErr = w.applyEach(ctx, tx, group)
	}
	if applied > 0 {
		w.commits.Add(1)
		err = tx.Commit()
	} else {
		err = tx.Rollback()
	}
	if err != nil {
		// Nothing of this transaction is durable; sequences handed out in it
		// may be reused, so forget what the cache learned.
		clear(w.seq)
		failAll(fmt.Errorf("committing write transaction: %w", err))
		return
	}
	if applied > 0 || storageErr != nil {
		w.noteFault(storageErr)
	}
	if w.cfg.Notify != nil && applied > 0 {
		events := w.events[:0]
		for _, r := range group {
			if r.err == nil && r.b != nil {
				events = append(events, r.b.Events...)
			}
		}
		if len(events) > 0 {
			w.cfg.Notify(events)
		}
		clear(events)
		w.events = events[:0]
	}
	finish()
}

// applyEach applies the batches of group one by one (and probes the
// store for a request without one), setting each one's err. It returns
// how many were applied and the first error that was the storage's.
func (w *Writer) applyEach(ctx context.Context, tx Tx, group []*writeReq) (applied int, storageErr error) {
	for _, r := range group {
		if r.b == nil {
			r.err = probe(ctx, tx)
		} else {
			r.err = w.apply(ctx, tx, r.b)
		}
		switch {
		case r.err == nil:
			applied++
		case storageErr == nil && errors.Is(r.err, ErrStorage):
			storageErr = r.err
		}
	}
	return applied, storageErr
}

// applyGroup applies the batches of group at once when tx is a
// GroupApplier that groups and group has two or more batches and no
// probe; it reports whether it tried. After a failure the sequences of
// the group's sessions are forgotten: applyEach reads them again.
func (w *Writer) applyGroup(ctx context.Context, tx Tx, group []*writeReq) (grouped bool, err error) {
	ga, ok := tx.(GroupApplier)
	if !ok || len(group) < 2 || !ga.Groups() {
		return false, nil
	}
	bs := w.batches[:0]
	defer func() {
		clear(bs)
		w.batches = bs[:0]
	}()
	for _, r := range group {
		if r.b == nil {
			return false, nil
		}
		for _, e := range r.b.Events {
			if e.SessionID == "" {
				return false, nil // apply refuses it
			}
		}
		bs = append(bs, r.b)
	}
	// What a failed group set of the events is undone: their cursors as
	// they came, and the sequences of their sessions, which applyEach
	// reads again.
	cursors := w.cursors[:0]
	defer func() {
		clear(cursors)
		w.cursors = cursors[:0]
	}()
	forget := func() {
		i := 0
		for _, b := range bs {
			for _, e := range b.Events {
				delete(w.seq, e.SessionID)
				e.Cursor = cursors[i]
				i++
			}
		}
	}
	for _, b := range bs {
		for _, e := range b.Events {
			cursors = append(cursors, e.Cursor)
		}
	}
	for _, b := range bs {
		for _, e := range b.Events {
			last, cached := w.seq[e.SessionID]
			if !cached {
				if last, err = tx.EventLastSequence(ctx, &EventLastSequenceParams{SessionID: e.SessionID}); err != nil {
					forget()
					return true, fmt.Errorf("reading last event sequence: %w", err)
				}
			}
			w.seq[e.SessionID] = last + 1
			e.SetSequence(last + 1)
		}
	}
	if err := ga.ApplyGroup(ctx, bs); err != nil {
		forget()
		return true, err
	}
	return true, nil
}

// probe has tx write to its medium when it can; see Writer.Probe.
func probe(ctx context.Context, tx Tx) error {
	if p, ok := tx.(Prober); ok {
		return p.Probe(ctx)
	}
	return nil
}

// Fault is why the store does not take writes: the error of the last
// write transaction when it failed for the storage's sake — it could not
// begin or commit, or a batch failed with ErrStorage — and none has
// committed since. Batches refused for their own reasons (a conflict, a
// lost lease, a full queue) are not faults.
type Fault struct {
	Err error
	// Since is when the first of the failures since writes last
	// succeeded happened, Last when the latest did.
	Since, Last time.Time
}

// Fault returns what keeps the store from taking writes, or nil while the
// last transaction committed (or before any). A transaction that commits
// clears it. It is this Writer's view: another process writing to the
// same store learns of a failure from its own writes.
func (w *Writer) Fault() *Fault {
	return w.fault.Load()
}

// noteFault records a transaction's outcome: err, when it failed for the
// storage's sake, or nil when it committed. The caller is the leader.
func (w *Writer) noteFault(err error) {
	if err == nil {
		if w.fault.Load() != nil { // a load costs less than a store
			w.fault.Store(nil)
		}
		return
	}
	now := w.cfg.Now()
	f := &Fault{Err: err, Since: now, Last: now}
	if old := w.fault.Load(); old != nil {
		f.Since = old.Since
	}
	w.fault.Store(f)
}

// apply assigns sequences to b's events and applies b. On failure the
// sequences of b's sessions are dropped from the cache rather than restored:
// the next batch of those sessions reads them again through tx, which sees
// exactly what the transaction holds. A restored value could be stale (an
// event sequence conflict means something else wrote to the session), and a
// stale cache entry would make every later batch of the session conflict.
//
// Another process writing to the same store makes cached sequences stale:
// a conflict on a batch that used any is retried once with sequences read
// through tx.
func (w *Writer) apply(ctx context.Context, tx Tx, b *Batch) error {
	forget := func() {
		for _, e := range b.Events {
			delete(w.seq, e.SessionID)
		}
	}
	usedCache := false
	for try := 0; ; try++ {
		for _, e := range b.Events {
			if e.SessionID == "" {
				forget()
				return fmt.Errorf("applying batch: %s event without session id", e.Type)
			}
			last, cached := w.seq[e.SessionID]
			if !cached {
				var err error
				last, err = tx.EventLastSequence(ctx, &EventLastSequenceParams{SessionID: e.SessionID})
				if err != nil {
					forget()
					return fmt.Errorf("reading last event sequence: %w", err)
				}
			} else {
				usedCache = true
			}
			w.seq[e.SessionID] = last + 1
			e.SetSequence(last + 1)
		}
		err := tx.Apply(ctx, b)
		if err == nil {
			return nil
		}
		forget()
		if try > 0 || !usedCache || !errors.Is(err, ErrConflict) {
			return err
		}
	}
}

// Queued returns how many batches wait for the current leader to finish.
func (w *Writer) Queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

// WriterStats counts a Writer's work since it was created.
type WriterStats struct {
	// Writes counts batches handed to the Writer.
	Writes int64 `json:"writes"`
	// Commits counts transactions; Writes/Commits is the group-commit
	// factor.
	Commits int64 `json:"commits"`
}

// Stats returns the writer's counters.
func (w *Writer) Stats() WriterStats {
	return WriterStats{Writes: w.writes.Load(), Commits: w.commits.Load()}
}

// Merge adds src's records and events to dst, after dst's own. A turn,
// task, run, tool call, limit, capability session, subagent, job, job
// item or fire already in dst with the same key is
// replaced in place, since records are written whole and the later version wins;
// so is a session mode for the same session. Inserts and action
// resolutions are appended, so a duplicate still conflicts. Merge lets a
// caller hold facts that need not be durable yet and commit them with its
// next batch.
func (dst *Batch) Merge(src *Batch) {
	if dst.Fence == nil {
		dst.Fence = src.Fence
	}
	if dst.Admit == nil {
		dst.Admit = src.Admit
	}
	dst.Leases = append(dst.Leases, src.Leases...)
	dst.TaskUpdates = append(dst.TaskUpdates, src.TaskUpdates...)
	dst.Sessions = append(dst.Sessions, src.Sessions...)
	dst.Threads = append(dst.Threads, src.Threads...)
	dst.Turns = mergeByKey(dst.Turns, src.Turns, func(t *runtype.Turn) string { return t.ID })
	dst.Tasks = mergeByKey(dst.Tasks, src.Tasks, func(t *runtype.Task) string { return t.ID })
	dst.Runs = mergeByKey(dst.Runs, src.Runs, func(r *runtype.Run) string { return r.ID })
	dst.Messages = append(dst.Messages, src.Messages...)
	dst.ToolCalls = mergeByKey(dst.ToolCalls, src.ToolCalls, func(c *runtype.ToolCall) string { return c.SessionID + "\x00" + c.ID })
	dst.Blobs = append(dst.Blobs, src.Blobs...)
	dst.Limits = mergeByKey(dst.Limits, src.Limits, func(l *runtype.Limit) string {
		return l.TenantID + "\x00" + string(l.Scope) + "\x00" + l.ScopeID
	})
	dst.Actions = append(dst.Actions, src.Actions...)
	dst.ResolvedActions = append(dst.ResolvedActions, src.ResolvedActions...)
	dst.Grants = append(dst.Grants, src.Grants...)
	dst.SessionModes = mergeByKey(dst.SessionModes, src.SessionModes, func(m *SessionMode) string {
		return m.TenantID + "\x00" + m.SessionID
	})
	dst.Tokens = append(dst.Tokens, src.Tokens...)
	dst.TokenUpdates = append(dst.TokenUpdates, src.TokenUpdates...)
	dst.CapabilitySessions = mergeByKey(dst.CapabilitySessions, src.CapabilitySessions, func(c *runtype.CapabilitySession) string { return c.ID })
	dst.CapabilityRuns = append(dst.CapabilityRuns, src.CapabilityRuns...)
	dst.Subagents = mergeByKey(dst.Subagents, src.Subagents, func(s *runtype.Subagent) string { return s.ID })
	dst.Jobs = mergeByKey(dst.Jobs, src.Jobs, func(j *runtype.Job) string { return j.ID })
	dst.JobItems = mergeByKey(dst.JobItems, src.JobItems, func(it *runtype.JobItem) string { return it.ID })
	// A schedule's writes name the version they follow: each is kept, in
	// order, so that an update after an insert still applies.
	dst.Schedules = append(dst.Schedules, src.Schedules...)
	dst.Fires = mergeByKey(dst.Fires, src.Fires, func(f *runtype.Fire) string { return f.ID })
	dst.ScheduleWakes = append(dst.ScheduleWakes, src.ScheduleWakes...)
	dst.Instances = append(dst.Instances, src.Instances...) // each write at the version the one before left
	dst.WorkflowRuns = mergeByKey(dst.WorkflowRuns, src.WorkflowRuns, func(r *runtype.WorkflowRun) string { return r.ID })
	dst.Events = append(dst.Events, src.Events...)
}

func mergeByKey[T any](dst, src []*T, key func(*T) string) []*T {
next:
	for _, s := range src {
		k := key(s)
		for i, d := range dst {
			if key(d) == k {
				dst[i] = s
				continue next
			}
		}
		dst = append(dst, s)
	}
	return dst
}

// Reset empties b, keeping its slices' capacity for reuse. A batch may be
// reset once Write has returned: the store keeps no reference to it.
func (b *Batch) Reset() {
	clear(b.Sessions)
	clear(b.Threads)
	clear(b.Turns)
	clear(b.Tasks)
	clear(b.Runs)
	clear(b.Messages)
	clear(b.ToolCalls)
	clear(b.Blobs)
	clear(b.Limits)
	clear(b.Actions)
	clear(b.ResolvedActions)
	clear(b.Grants)
	clear(b.SessionModes)
	clear(b.Events)
	clear(b.Leases)
	clear(b.TaskUpdates)
	clear(b.Tokens)
	clear(b.TokenUpdates)
	clear(b.CapabilitySessions)
	clear(b.CapabilityRuns)
	clear(b.Subagents)
	clear(b.Jobs)
	clear(b.JobItems)
	clear(b.Schedules)
	clear(b.Fires)
	clear(b.ScheduleWakes)
	clear(b.Instances)
	clear(b.WorkflowRuns)
	*b = Batch{
		Sessions: b.Sessions[:0], Threads: b.Threads[:0], Turns: b.Turns[:0], Tasks: b.Tasks[:0], Runs: b.Runs[:0],
		Messages: b.Messages[:0], ToolCalls: b.ToolCalls[:0], Blobs: b.Blobs[:0], Limits: b.Limits[:0],
		Actions: b.Actions[:0], ResolvedActions: b.ResolvedActions[:0], Grants: b.Grants[:0],
		SessionModes: b.SessionModes[:0], Events: b.Events[:0], Leases: b.Leases[:0], TaskUpdates: b.TaskUpdates[:0],
		Tokens: b.Tokens[:0], TokenUpdates: b.TokenUpdates[:0],
		CapabilitySessions: b.CapabilitySessions[:0], CapabilityRuns: b.CapabilityRuns[:0],
		Subagents: b.Subagents[:0], Jobs: b.Jobs[:0], JobItems: b.JobItems[:0],
		Schedules: b.Schedules[:0], Fires: b.Fires[:0], ScheduleWakes: b.ScheduleWakes[:0],
		Instances: b.Instances[:0], WorkflowRuns: b.WorkflowRuns[:0],
	}
}

// Empty reports whether b holds nothing.
func (b *Batch) Empty() bool {
	return len(b.Sessions)+len(b.Threads)+len(b.Turns)+len(b.Tasks)+len(b.Runs)+
		len(b.Messages)+len(b.ToolCalls)+len(b.Blobs)+len(b.Limits)+
		len(b.Actions)+len(b.ResolvedActions)+len(b.Grants)+len(b.SessionModes)+len(b.Events)+
		len(b.Leases)+len(b.TaskUpdates)+len(b.Tokens)+len(b.TokenUpdates)+
		len(b.CapabilitySessions)+len(b.CapabilityRuns)+len(b.Subagents)+len(b.Jobs)+len(b.JobItems)+
		len(b.Schedules)+len(b.Fires)+len(b.ScheduleWakes)+
		len(b.Instances)+len(b.WorkflowRuns) == 0
}
