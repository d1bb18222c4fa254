// Package memstore is an in-memory store.Store: maps and slices behind one
// read-write lock, nothing on disk. It is for tests, benchmarks and
// embedding without persistence; nothing survives the process.
//
// # Limits
//
// A Tx holds the write lock from Begin until Commit or Rollback, so there
// is one transaction at a time and reads through the Store wait while one
// is open. Reading through the Store from the goroutine that holds an open
// Tx therefore deadlocks; read through the Tx instead.
//
// The store keeps the records and events it is given (the store contract
// forbids callers to modify them afterwards) and returns copies of records,
// so callers may modify what they read. Events are returned as the stored
// pointers: they are immutable once committed (see event.Event.JSON), and
// not encoding them is what keeps the store's share of a step small. For
// the same reason the evidence receipts of sealed events (store.Sealed)
// are numbered in Apply but computed when first read: a receipt's body is
// its event's encoding (json.Marshal of the event, cached on it), and its
// hashes follow from the bodies before it, so a later computation gives
// the receipt Apply would have.
package memstore

import (
	"context"
	"sync"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Store is an in-memory store.Store. It is safe for concurrent use.
type Store struct {
	reader

	mu     sync.RWMutex
	closed bool   // guarded by mu
	d      *data  // guarded by mu
	logBuf []undo // guarded by mu: the undo log's memory, reused by each Tx

	mem memories // agents' memories (memory.go), under a lock of their own
}

var _ store.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	s := &Store{d: newData()}
	s.reader = reader{s: s}
	return s
}

// Info reports the memory driver: not durable, no schema.
func (s *Store) Info() store.Info {
	return store.Info{Driver: "memory", Durable: false}
}

// Migrate does nothing: an in-memory store has no schema.
func (s *Store) Migrate(context.Context) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	return nil
}

// Close drops the store's contents. Later calls return store.ErrClosed. It
// waits for an open Tx to end.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.d = newData()
	s.mem.mu.Lock()
	s.mem.byScope = nil
	s.mem.mu.Unlock()
	return nil
}

// Begin takes the write lock and returns a Tx holding it until Commit or
// Rollback. It waits while another Tx is open.
func (s *Store) Begin(context.Context) (store.Tx, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, store.ErrClosed
	}
	tx := &Tx{s: s, log: s.logBuf}
	tx.reader = reader{s: s, tx: tx}
	return tx, nil
}

// reader implements store.Reader for both Store (taking the read lock) and
// Tx (which holds the write lock already).
type reader struct {
	s  *Store
	tx *Tx // nil for the Store
}

func (r reader) enter() error {
	if r.tx != nil {
		return r.tx.check()
	}
	r.s.mu.RLock()
	if r.s.closed {
		r.s.mu.RUnlock()
		return store.ErrClosed
	}
	return nil
}

func (r reader) exit() {
	if r.tx == nil {
		r.s.mu.RUnlock()
	}
}

// SessionGet returns the tenant's session with the given ID.
func (r reader) SessionGet(_ context.Context, p *store.SessionGetParams) (*runtype.Session, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.sessionGet(p)
}

// SessionList lists the tenant's sessions newest first.
func (r reader) SessionList(_ context.Context, p *store.SessionListParams) ([]*runtype.Session, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.sessionList(p)
}

// ThreadGet returns the tenant's thread with the given ID.
func (r reader) ThreadGet(_ context.Context, p *store.ThreadGetParams) (*runtype.Thread, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.threadGet(p)
}

// ThreadList lists a session's threads in insertion order.
func (r reader) ThreadList(_ context.Context, p *store.ThreadListParams) ([]*runtype.Thread, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.threadList(p), nil
}

// TurnGet returns the tenant's turn with the given ID.
func (r reader) TurnGet(_ context.Context, p *store.TurnGetParams) (*runtype.Turn, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.turnGet(p)
}

// TurnGetByIdempotencyKey returns the tenant's turn holding the key.
func (r reader) TurnGetByIdempotencyKey(_ context.Context, p *store.TurnGetByIdempotencyKeyParams) (*runtype.Turn, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.turnGetByKey(p)
}

// TurnList lists the tenant's turns newest (highest ID) first.
func (r reader) TurnList(_ context.Context, p *store.TurnListParams) ([]*runtype.Turn, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.turnList(p), nil
}

// TaskGet returns the tenant's task with the given ID.
func (r reader) TaskGet(_ context.Context, p *store.TaskGetParams) (*runtype.Task, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.taskGet(p)
}

// TaskList lists a session's (or one of its threads') tasks in
// first-insertion order, or a task's children.
func (r reader) TaskList(_ context.Context, p *store.TaskListParams) ([]*runtype.Task, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.taskList(p), nil
}

// TaskListDue lists the tasks of every tenant due at p.Now, in due order.
// It reads only the tasks that have a DueAt, and sorts the due ones.
func (r reader) TaskListDue(_ context.Context, p *store.TaskListDueParams) ([]*runtype.Task, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.taskListDue(p), nil
}

// TaskCount counts the tenant's (or every tenant's) tasks in some
// statuses.
func (r reader) TaskCount(_ context.Context, p *store.TaskCountParams) (int, error) {
	if err := r.enter(); err != nil {
		return 0, err
	}
	defer r.exit()
	return r.s.d.taskCount(p), nil
}

// TaskSearch lists the tenant's tasks newest (highest ID) first.
func (r reader) TaskSearch(_ context.Context, p *store.TaskSearchParams) ([]*runtype.Task, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.taskSearch(p), nil
}

// TurnTally counts a thread's turns by status.
func (r reader) TurnTally(_ context.Context, p *store.TurnTallyParams) (*store.TurnTally, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.turnTally(p), nil
}

// RunList lists runs in first-insertion order.
func (r reader) RunList(_ context.Context, p *store.RunListParams) ([]*runtype.Run, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.runList(p), nil
}

// MessageList lists a thread's messages in Seq order.
func (r reader) MessageList(_ context.Context, p *store.MessageListParams) ([]*runtype.Message, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.messageList(p), nil
}

// ThreadTotalsGet returns a thread's running totals.
func (r reader) ThreadTotalsGet(_ context.Context, p *store.ThreadTotalsGetParams) (*store.ThreadTotals, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.threadTotals(p)
}

// MessageCount counts a thread's messages.
func (r reader) MessageCount(_ context.Context, p *store.MessageCountParams) (int64, error) {
	if err := r.enter(); err != nil {
		return 0, err
	}
	defer r.exit()
	return r.s.d.messageCount(p), nil
}

// ToolCallList lists tool calls in first-insertion (start) order.
func (r reader) ToolCallList(_ context.Context, p *store.ToolCallListParams) ([]*runtype.ToolCall, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.toolCallList(p), nil
}

// ToolCallGetByOutputRef returns the tenant's first tool call whose
// output ref is p.Ref.
func (r reader) ToolCallGetByOutputRef(_ context.Context, p *store.ToolCallGetByOutputRefParams) (*runtype.ToolCall, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.toolCallByOutputRef(p)
}

// BlobGet returns the tenant's blob with the given ref.
func (r reader) BlobGet(_ context.Context, p *store.BlobGetParams) (*runtype.Blob, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.blobGet(p)
}

// LimitGet returns the tenant's limit for one scope.
func (r reader) LimitGet(_ context.Context, p *store.LimitGetParams) (*runtype.Limit, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.limitGet(p)
}

// UsageTotal sums the usage of the tenant's runs (of one session when
// SessionID is set) started at or after Since.
func (r reader) UsageTotal(_ context.Context, p *store.UsageTotalParams) (runtype.Usage, error) {
	if err := r.enter(); err != nil {
		return runtype.Usage{}, err
	}
	defer r.exit()
	return r.s.d.usageTotal(p), nil
}

// EventListAfter returns matching events after a cursor, in cursor order.
// The events are the committed pointers, not copies.
func (r reader) EventListAfter(_ context.Context, p *store.EventListAfterParams) ([]*event.Event, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.exit()
	return r.s.d.eventListAfter(p), nil
}

// EventLastCursor returns the highest cursor in the log.
func (r reader) EventLastCursor(context.Context) (int64, error) {
	if err := r.enter(); err != nil {
		return 0, err
	}
	defer r.exit()
	return r.s.d.eventLastCursor(), nil
}
