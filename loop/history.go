package loop

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// This file holds how a turn gets its thread's conversation. The model
// needs all of it, but decoding all of it on every turn makes a long
// session slow down with its length; the coordinator keeps the decoded
// conversations of the threads it ran last and reads only what is new.
//
// The cache is safe with other processes on the same store because it
// is read through: every load first reads the thread's totals
// (store.ThreadTotals, kept in the transactions that write messages and
// turns) and uses its copy only when the thread's rollback generation is
// the one the copy was made at and the copy's last message is not past
// the store's; it then reads the messages after the copy's last one. A
// thread's messages are appended in Seq order by the one run that holds
// its head turn (unique (thread, seq) keys make a second writer fail),
// so a message never appears below a Seq the copy already holds.
// Anything else — a rollback, a thread unknown to the cache, a copy ahead
// of the store — reads the whole thread as before.

// The cache holds at most maxCachedThreads threads and maxCachedMessages
// messages across them (about 25 MB of message headers at most; parked
// sessions cost disk, not memory, so the cache is for threads that run,
// not for every thread a process has seen).
const (
	maxCachedThreads  = 256
	maxCachedMessages = 100_000
)

type historyCache struct {
	mu      sync.Mutex
	threads map[string]*cachedThread // guarded by mu; by thread ID
	total   int                      // guarded by mu: messages held
}

// cachedThread is a thread's conversation as of lastSeq and gen. msgs
// holds every message up to lastSeq, those of rolled-back turns too;
// rolledBack names those turns. Its slices are never modified below
// their length: appends under mu only write past it, so a caller may
// keep a slice it was handed without holding mu.
type cachedThread struct {
	tenant     string
	lastSeq    int64
	gen        int64
	msgs       []runtype.Message
	rolledBack map[string]bool // read-only once stored
	// ids indexes the tool call ids of msgs (and, once extended, of the
	// entries that replaced this one: a lookup checks the Seq). Guarded
	// by mu.
	ids map[string]idAt
	// bounded: some message of msgs is a compaction boundary, so the
	// context a run sends is a window of them (runtype.ContextWindow).
	bounded bool
	// lent says msgs' capacity past its length was handed to a run,
	// which appends its messages there: nothing else writes past
	// len(msgs) until the run gives it back. Guarded by mu.
	lent bool
}

// idAt is where a tool call id appears: the Seq and turn of its message.
type idAt struct {
	seq  int64
	turn string
}

// convView is the conversation a load handed to a run: the history, and
// the cache entry it came from (nil when it was read without the cache).
type convView struct {
	entry   *cachedThread
	lastSeq int64
	self    string // the turn being run
	// unfiltered: the history is the entry's messages up to lastSeq, none
	// left out. lent: a run borrowed them with the capacity past their
	// length to append to (see cachedThread.lent); it gives them back
	// when it ends.
	unfiltered, lent bool
}

// history reads the conversation of a turn's thread, without the
// messages of turns a rollback took back, and the thread's last message
// sequence, into job. The history may be shared with the cache: runs
// never modify its elements.
func (c *Coordinator) history(ctx context.Context, job *Job) error {
	t := job.Turn
	totals, err := c.cfg.Reader.ThreadTotalsGet(ctx, &store.ThreadTotalsGetParams{TenantID: t.TenantID, ThreadID: t.ThreadID})
	if errors.Is(err, store.ErrNotFound) {
		// A thread not recorded (yet): nothing to keep.
		job.History, job.LastSeq, job.conv, err = c.readHistory(ctx, t)
		job.History, job.window = runtype.ContextWindow(job.History)
		return err
	}
	if err != nil {
		return fmt.Errorf("reading the thread's history: %w", err)
	}
	h := &c.convs
	h.mu.Lock()
	e := h.threads[t.ThreadID]
	h.mu.Unlock()
	if e == nil || e.tenant != t.TenantID || e.gen != totals.RollbackGen || e.lastSeq > totals.LastSeq {
		if e, err = c.loadHistory(ctx, t, totals); err != nil {
			return err
		}
	} else if e.lastSeq < totals.LastSeq {
		ms, err := c.cfg.Reader.MessageList(ctx, &store.MessageListParams{TenantID: t.TenantID, ThreadID: t.ThreadID, AfterSeq: e.lastSeq})
		if err != nil {
			return fmt.Errorf("reading the thread's history: %w", err)
		}
		e = h.extend(t.ThreadID, e, ms)
	}
	job.History, job.LastSeq = filterRolledBack(e.msgs, e.rolledBack, t.ID), e.lastSeq
	job.conv = &convView{entry: e, lastSeq: e.lastSeq, self: t.ID, unfiltered: len(job.History) == len(e.msgs)}
	if e.bounded {
		job.History, job.window = runtype.ContextWindow(job.History)
		job.conv.unfiltered = job.conv.unfiltered && job.window == nil
	}
	return nil
}

// loadHistory reads a thread's whole conversation and keeps it as of
// totals' rollback generation (read before it). A thread without
// messages (a session's first turn) needs no read: its rolled-back
// turns, if any, have no messages to leave out, and one that is retried
// changes the generation.
func (c *Coordinator) loadHistory(ctx context.Context, t *runtype.Turn, totals *store.ThreadTotals) (*cachedThread, error) {
	gen := totals.RollbackGen
	if totals.Messages == 0 {
		e := &cachedThread{tenant: t.TenantID, gen: gen, msgs: make([]runtype.Message, 0, 16), ids: make(map[string]idAt)}
		c.convs.put(t.ThreadID, e)
		return e, nil
	}
	ms, err := c.cfg.Reader.MessageList(ctx, &store.MessageListParams{TenantID: t.TenantID, ThreadID: t.ThreadID})
	if err != nil {
		return nil, fmt.Errorf("reading the thread's history: %w", err)
	}
	rolledBack, err := c.rolledBack(ctx, t)
	if err != nil {
		return nil, err
	}
	e := &cachedThread{tenant: t.TenantID, gen: gen, msgs: make([]runtype.Message, 0, len(ms)+len(ms)/4+16), rolledBack: rolledBack, ids: make(map[string]idAt)}
	e.append(ms)
	c.convs.put(t.ThreadID, e)
	return e, nil
}

// readHistory reads a thread's conversation without the cache.
func (c *Coordinator) readHistory(ctx context.Context, t *runtype.Turn) ([]runtype.Message, int64, *convView, error) {
	ms, err := c.cfg.Reader.MessageList(ctx, &store.MessageListParams{TenantID: t.TenantID, ThreadID: t.ThreadID})
	if err != nil {
		return nil, 0, nil, fmt.Errorf("reading the thread's history: %w", err)
	}
	rolledBack, err := c.rolledBack(ctx, t)
	if err != nil {
		return nil, 0, nil, err
	}
	msgs := make([]runtype.Message, len(ms))
	for i, m := range ms {
		msgs[i] = *m
	}
	return filterRolledBack(msgs, rolledBack, t.ID), lastSeqOf(msgs), nil, nil
}

// append adds ms to e's messages and ids. e must be new, or the current
// entry, not lent, with mu held.
func (e *cachedThread) append(ms []*runtype.Message) {
	for _, m := range ms {
		e.msgs = append(e.msgs, *m)
		e.bounded = e.bounded || m.Boundary != nil
		for _, tc := range m.ToolCalls {
			if _, ok := e.ids[tc.ID]; !ok {
				e.ids[tc.ID] = idAt{seq: m.Seq, turn: m.TurnID}
			}
		}
	}
	e.lastSeq = lastSeqOf(e.msgs)
}

// put stores e for thread, making room when the cache is full.
func (h *historyCache) put(thread string, e *cachedThread) {
	if len(e.msgs) > maxCachedMessages/2 {
		return // one thread may not crowd out the rest
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.threads == nil {
		h.threads = make(map[string]*cachedThread)
	}
	if old := h.threads[thread]; old != nil {
		h.total -= len(old.msgs)
		delete(h.threads, thread)
	}
	for id, old := range h.threads { // evict arbitrary threads until it fits
		if h.total+len(e.msgs) <= maxCachedMessages && len(h.threads) < maxCachedThreads {
			break
		}
		h.total -= len(old.msgs)
		delete(h.threads, id)
	}
	h.threads[thread] = e
	h.total += len(e.msgs)
}

// extend returns the entry of e's messages followed by ms, and keeps
// it as the thread's entry when e is still its entry. Only the current
// entry, not lent, is appended to in place (and its id index with it),
// under mu: the append writes past the length of every slice handed out
// of that array, which no holder reads. Otherwise the messages are
// copied, with a fresh index.
func (h *historyCache) extend(thread string, e *cachedThread, ms []*runtype.Message) *cachedThread {
	h.mu.Lock()
	defer h.mu.Unlock()
	next := *e
	next.lent = false
	if h.threads[thread] != e || e.lent {
		next.msgs = make([]runtype.Message, 0, len(e.msgs)+len(ms)+len(e.msgs)/4+16)
		next.ids = make(map[string]idAt, len(e.ids))
		for _, m := range e.msgs {
			for _, tc := range m.ToolCalls {
				if _, ok := next.ids[tc.ID]; !ok {
					next.ids[tc.ID] = idAt{seq: m.Seq, turn: m.TurnID}
				}
			}
		}
		next.msgs = append(next.msgs, e.msgs...)
		next.append(ms)
		return &next // not kept: another load replaced e, or a run holds it
	}
	next.append(ms)
	h.threads[thread] = &next
	h.total += len(next.msgs) - len(e.msgs)
	return &next
}

// lend returns v's messages with the capacity past their length, for a
// run to append to, when v's entry is the thread's current one and not
// lent: the entry is then lent until giveBack(v).
func (h *historyCache) lend(thread string, v *convView) ([]runtype.Message, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := v.entry
	if v.lent || h.threads[thread] != e || e.lent {
		return nil, false
	}
	e.lent, v.lent = true, true
	return e.msgs, true
}

// giveBack ends the loan lend made of v's entry: the run that held it
// has ended and no longer reads or writes its messages.
func (h *historyCache) giveBack(v *convView) {
	if !v.lent {
		return
	}
	h.mu.Lock()
	v.entry.lent = false
	h.mu.Unlock()
	v.lent = false
}

// usedID reports whether a message of v's conversation (up to its last
// Seq, without rolled-back turns but its own) has a tool call with id.
func (h *historyCache) usedID(v *convView, id string) bool {
	h.mu.Lock()
	at, ok := v.entry.ids[id]
	h.mu.Unlock()
	return ok && at.seq <= v.lastSeq && (at.turn == v.self || !v.entry.rolledBack[at.turn])
}

func lastSeqOf(msgs []runtype.Message) int64 {
	if n := len(msgs); n > 0 {
		return msgs[n-1].Seq
	}
	return 0
}

// filterRolledBack returns msgs without those of the rolled-back turns
// (except self's: a turn retried after its rollback sees its own
// messages). With none to leave out it returns msgs itself, clipped so
// that an append copies.
func filterRolledBack(msgs []runtype.Message, rolledBack map[string]bool, self string) []runtype.Message {
	if len(rolledBack) == 0 || len(rolledBack) == 1 && rolledBack[self] {
		return msgs[:len(msgs):len(msgs)]
	}
	out := make([]runtype.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.TurnID == self || !rolledBack[m.TurnID] {
			out = append(out, m)
		}
	}
	return out
}
