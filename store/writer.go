package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/event"
)

// WriterConfig configures a Writer.
type WriterConfig struct {
	// MaxGroup caps how many batches share one transaction. Default 256.
	MaxGroup int
	// LazyDelay bounds how long a batch given to Enqueue may wait for a
	// batch given to Write to share its commit. Default 5ms.
	LazyDelay time.Duration
	// Notify, when set, is called after every commit with the committed
	// events in commit order. It must not block (event.Bus.Notify does not).
	Notify func([]*event.Event)
}

// WithDefaults returns c with zero fields set to their defaults.
func (c WriterConfig) WithDefaults() WriterConfig {
	if c.MaxGroup <= 0 {
		c.MaxGroup = 256
	}
	if c.LazyDelay <= 0 {
		c.LazyDelay = 5 * time.Millisecond
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
// For stores that are not durable (Info().Durable false) the Writer
// applies batches inline in the caller's goroutine: there is no fsync to
// share, and a hand-off would only add latency.
//
// Batches and their events belong to the Writer from the moment they are
// passed in until Write returns or the Pending completes; the Writer sets
// each event's Sequence and the store its Cursor.
type Writer struct {
	store  Store
	cfg    WriterConfig
	inline bool

	reqs chan *writeReq // unbuffered: a successful send means the loop owns the request
	stop chan struct{}  // closed by Stop
	done chan struct{}  // closed when the loop has exited

	writes, enqueued, commits atomic.Int64 // counters for Stats

	mu       sync.Mutex       // serializes inline commits and guards seq
	seq      map[string]int64 // guarded by mu (inline) or owned by the loop: last sequence per session
	stopOnce sync.Once
}

type writeReq struct {
	b    *Batch
	lazy bool
	done chan error // buffered 1
}

// maxSeqCache bounds the per-session sequence cache; beyond it the cache is
// dropped and refilled from the store on demand.
const maxSeqCache = 50_000

// NewWriter returns a Writer for s. Call Start before use and Stop after.
func NewWriter(s Store, cfg WriterConfig) *Writer {
	return &Writer{
		store:  s,
		cfg:    cfg.WithDefaults(),
		inline: !s.Info().Durable,
		reqs:   make(chan *writeReq),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		seq:    make(map[string]int64),
	}
}

// Start starts the commit loop. It returns immediately.
func (w *Writer) Start() {
	if w.inline {
		close(w.done)
		return
	}
	go w.loop()
}

// Stop commits every batch already handed over, refuses new ones with
// ErrClosed and waits for the loop to exit or ctx to end.
func (w *Writer) Stop(ctx context.Context) error {
	w.stopOnce.Do(func() { close(w.stop) })
	if w.inline {
		// Wait for a commit in progress; submit checks stop under mu, so no
		// commit starts after this.
		w.mu.Lock()
		defer w.mu.Unlock()
		return nil
	}
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopping store writer: %w", context.Cause(ctx))
	}
}

// Write commits b and returns once it is durable. It returns ctx's error
// only if ctx ends before the Writer has taken b; once taken, Write waits
// for the outcome, because returning early would leave the caller unsure
// whether the facts exist.
func (w *Writer) Write(ctx context.Context, b *Batch) error {
	w.writes.Add(1)
	r := &writeReq{b: b, done: make(chan error, 1)}
	if err := w.submit(ctx, r); err != nil {
		return err
	}
	return <-r.done
}

// Enqueue hands b to the Writer without waiting. It commits with the next
// Write (from any caller) or after LazyDelay, whichever comes first; the
// Pending reports the outcome. Batches from one goroutine commit in the
// order they were handed over.
func (w *Writer) Enqueue(b *Batch) *Pending {
	w.enqueued.Add(1)
	r := &writeReq{b: b, lazy: true, done: make(chan error, 1)}
	if err := w.submit(context.Background(), r); err != nil {
		r.done <- err
	}
	return &Pending{r: r}
}

// Pending is the outcome of a batch given to Enqueue.
type Pending struct {
	r   *writeReq
	err error
	got bool
}

// Wait returns the batch's commit outcome, waiting for it if needed.
func (p *Pending) Wait(ctx context.Context) error {
	if p.got {
		return p.err
	}
	select {
	case p.err = <-p.r.done:
		p.got = true
		return p.err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (w *Writer) submit(ctx context.Context, r *writeReq) error {
	if w.inline {
		w.mu.Lock()
		defer w.mu.Unlock()
		select {
		case <-w.stop:
			return ErrClosed
		default:
		}
		w.commit([]*writeReq{r})
		return nil
	}
	select {
	case w.reqs <- r:
		return nil
	case <-w.done:
		return ErrClosed
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (w *Writer) loop() {
	defer close(w.done)
	group := make([]*writeReq, 0, w.cfg.MaxGroup)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		group = group[:0]
		select {
		case r := <-w.reqs:
			group = append(group, r)
		case <-w.stop:
			w.drainOnStop(group)
			return
		}
		group = w.collect(group)
		if allLazy(group) {
			// Nobody waits yet: give a synchronous batch a short chance to
			// share this commit.
			timer.Reset(w.cfg.LazyDelay)
		wait:
			for len(group) < w.cfg.MaxGroup {
				select {
				case r := <-w.reqs:
					group = append(group, r)
					if !r.lazy {
						break wait
					}
				case <-timer.C:
					break wait
				case <-w.stop:
					break wait
				}
			}
			timer.Stop()
			group = w.collect(group)
		}
		w.commit(group)
	}
}

// collect adds the requests already waiting to be taken, up to MaxGroup.
func (w *Writer) collect(group []*writeReq) []*writeReq {
	for len(group) < w.cfg.MaxGroup {
		select {
		case r := <-w.reqs:
			group = append(group, r)
		default:
			return group
		}
	}
	return group
}

func (w *Writer) drainOnStop(group []*writeReq) {
	for {
		group = w.collect(group[:0])
		if len(group) == 0 {
			return
		}
		w.commit(group)
	}
}

func allLazy(group []*writeReq) bool {
	for _, r := range group {
		if !r.lazy {
			return false
		}
	}
	return true
}

// commit writes group in one transaction and completes every request.
// Callers hold w.mu (inline) or are the loop.
func (w *Writer) commit(group []*writeReq) {
	ctx := context.Background()
	finish := func(err error) {
		for _, r := range group {
			r.done <- err
		}
	}
	tx, err := w.store.Begin(ctx)
	if err != nil {
		finish(fmt.Errorf("beginning write transaction: %w", err))
		return
	}
	if len(w.seq) > maxSeqCache {
		clear(w.seq)
	}
	errs := make([]error, len(group))
	applied := 0
	for i, r := range group {
		errs[i] = w.apply(ctx, tx, r.b)
		if errs[i] == nil {
			applied++
		}
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
		finish(fmt.Errorf("committing write transaction: %w", err))
		return
	}
	if w.cfg.Notify != nil && applied > 0 {
		var events []*event.Event
		for i, r := range group {
			if errs[i] == nil {
				events = append(events, r.b.Events...)
			}
		}
		if len(events) > 0 {
			w.cfg.Notify(events)
		}
	}
	for i, r := range group {
		r.done <- errs[i]
	}
}

// apply assigns sequences to b's events and applies b. On failure the
// sequences of b's sessions are dropped from the cache rather than restored:
// the next batch of those sessions reads them again through tx, which sees
// exactly what the transaction holds. A restored value could be stale (an
// event sequence conflict means something else wrote to the session), and a
// stale cache entry would make every later batch of the session conflict.
func (w *Writer) apply(ctx context.Context, tx Tx, b *Batch) error {
	forget := func() {
		for _, e := range b.Events {
			delete(w.seq, e.SessionID)
		}
	}
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
		}
		w.seq[e.SessionID] = last + 1
		e.Sequence = last + 1
	}
	if err := tx.Apply(ctx, b); err != nil {
		forget()
		return err
	}
	return nil
}

// WriterStats counts a Writer's work since it was created.
type WriterStats struct {
	// Writes and Enqueued count batches given to Write and Enqueue.
	Writes   int64 `json:"writes"`
	Enqueued int64 `json:"enqueued"`
	// Commits counts transactions; (Writes+Enqueued)/Commits is the
	// group-commit factor.
	Commits int64 `json:"commits"`
}

// Stats returns the writer's counters.
func (w *Writer) Stats() WriterStats {
	return WriterStats{Writes: w.writes.Load(), Enqueued: w.enqueued.Load(), Commits: w.commits.Load()}
}
