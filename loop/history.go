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

// maxCachedMessages bounds the messages the cache holds, across threads.
const maxCachedMessages = 200_000

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
}

// history reads the conversation of a turn's thread, without the
// messages of turns a rollback took back, and the thread's last message
// sequence. The returned slice may be shared: callers must not modify
// its elements.
func (c *Coordinator) history(ctx context.Context, t *runtype.Turn) ([]runtype.Message, int64, error) {
	totals, err := c.cfg.Reader.ThreadTotalsGet(ctx, &store.ThreadTotalsGetParams{TenantID: t.TenantID, ThreadID: t.ThreadID})
	if errors.Is(err, store.ErrNotFound) {
		return c.readHistory(ctx, t) // a thread not recorded (yet): nothing to keep
	}
	if err != nil {
		return nil, 0, fmt.Errorf("reading the thread's history: %w", err)
	}
	h := &c.convs
	h.mu.Lock()
	e := h.threads[t.ThreadID]
	h.mu.Unlock()
	if e == nil || e.tenant != t.TenantID || e.gen != totals.RollbackGen || e.lastSeq > totals.LastSeq {
		return c.loadHistory(ctx, t, totals.RollbackGen)
	}
	msgs := e.msgs
	if e.lastSeq < totals.LastSeq {
		ms, err := c.cfg.Reader.MessageList(ctx, &store.MessageListParams{TenantID: t.TenantID, ThreadID: t.ThreadID, AfterSeq: e.lastSeq})
		if err != nil {
			return nil, 0, fmt.Errorf("reading the thread's history: %w", err)
		}
		msgs = h.extend(t.ThreadID, e, ms)
	}
	return filterRolledBack(msgs, e.rolledBack, t.ID), lastSeqOf(msgs), nil
}

// loadHistory reads a thread's whole conversation, keeps it as of gen
// (the rollback generation read before it) and returns it filtered.
func (c *Coordinator) loadHistory(ctx context.Context, t *runtype.Turn, gen int64) ([]runtype.Message, int64, error) {
	ms, err := c.cfg.Reader.MessageList(ctx, &store.MessageListParams{TenantID: t.TenantID, ThreadID: t.ThreadID})
	if err != nil {
		return nil, 0, fmt.Errorf("reading the thread's history: %w", err)
	}
	rolledBack, err := c.rolledBack(ctx, t)
	if err != nil {
		return nil, 0, err
	}
	msgs := make([]runtype.Message, len(ms))
	for i, m := range ms {
		msgs[i] = *m
	}
	c.convs.put(t.ThreadID, &cachedThread{tenant: t.TenantID, lastSeq: lastSeqOf(msgs), gen: gen, msgs: msgs, rolledBack: rolledBack})
	return filterRolledBack(msgs, rolledBack, t.ID), lastSeqOf(msgs), nil
}

// readHistory reads a thread's conversation without the cache.
func (c *Coordinator) readHistory(ctx context.Context, t *runtype.Turn) ([]runtype.Message, int64, error) {
	ms, err := c.cfg.Reader.MessageList(ctx, &store.MessageListParams{TenantID: t.TenantID, ThreadID: t.ThreadID})
	if err != nil {
		return nil, 0, fmt.Errorf("reading the thread's history: %w", err)
	}
	rolledBack, err := c.rolledBack(ctx, t)
	if err != nil {
		return nil, 0, err
	}
	msgs := make([]runtype.Message, len(ms))
	for i, m := range ms {
		msgs[i] = *m
	}
	return filterRolledBack(msgs, rolledBack, t.ID), lastSeqOf(msgs), nil
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
	}
	for id, old := range h.threads { // evict arbitrary threads until it fits
		if h.total+len(e.msgs) <= maxCachedMessages {
			break
		}
		h.total -= len(old.msgs)
		delete(h.threads, id)
	}
	h.threads[thread] = e
	h.total += len(e.msgs)
}

// extend returns e's messages followed by ms, and keeps them as the
// thread's entry when e is still its entry. Only the current entry is
// appended to in place, under mu: the append writes past the length of
// every slice handed out of that array, which no holder reads. An entry
// another load replaced is appended to as a copy.
func (h *historyCache) extend(thread string, e *cachedThread, ms []*runtype.Message) []runtype.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := e.msgs
	cur := h.threads[thread] == e
	if !cur {
		out = out[:len(out):len(out)]
	}
	for _, m := range ms {
		out = append(out, *m)
	}
	if cur {
		h.threads[thread] = &cachedThread{tenant: e.tenant, lastSeq: lastSeqOf(out), gen: e.gen, msgs: out, rolledBack: e.rolledBack}
		h.total += len(out) - len(e.msgs)
	}
	return out
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
