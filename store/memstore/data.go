package memstore

import (
	"cmp"
	"slices"
	"sort"
	"sync"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// data is the store's contents. Every method expects the caller to hold
// the Store's lock: the read lock for reads, the write lock for apply.
//
// Lists that the store contract orders "oldest first" follow the order in
// which records were first inserted (a replaced record keeps its place),
// which is what the SQL drivers' row ids give them.
type data struct {
	ord uint64 // insertion counter for rows

	sessions         map[string]*runtype.Session
	sessionsByTenant map[string][]sessionKey // ascending: list order, reversed

	threads          map[string]*runtype.Thread
	threadsBySession map[string][]*runtype.Thread // insertion order

	turns         map[string]*runtype.Turn
	turnsByTenant map[string][]string // IDs, ascending
	turnsByThread map[string][]string // IDs, ascending
	// rollbackGen is each thread's store.ThreadTotals.RollbackGen: it
	// rises whenever putTurn or dropTurn changes whether one of the
	// thread's turns is rolled back (an undo changes it back, and rises
	// again).
	rollbackGen map[string]int64
	// threadUsage is each thread's store.ThreadTotals.Usage: the sum of
	// its runs' usage, changed as runs are written and undone.
	threadUsage map[string]runtype.Usage
	turnKeys    map[string]string // tenantKey(tenant, idempotency key) → turn ID

	tasks *table[runtype.Task] // indexes: session, thread, tenant
	// due holds the tasks with a DueAt, for TaskListDue; see noteDue.
	due map[string]*row[runtype.Task]
	// queued holds the tasks in status queued, and queuedBy counts them
	// by tenant, for admission; see noteDue.
	queued   map[string]*row[runtype.Task]
	queuedBy map[string]int
	runs     *table[runtype.Run] // indexes: session, task, tenant (for usage totals)
	calls    callTable

	messages map[string][]*runtype.Message // by thread, ascending Seq

	blobs map[blobKey]*runtype.Blob

	limits map[limitKey]*runtype.Limit

	actions         map[string]*runtype.Action
	actionsByTenant map[string][]string // IDs, ascending
	// actionCounts counts the actions by tenant and status, changed with
	// them (and back by revert), so that ActionStats does not scan them.
	actionCounts   map[actionCountKey]int
	grants         map[string]*runtype.PolicyGrant
	grantsByTenant map[string][]*runtype.PolicyGrant // insertion order
	receipts       map[receiptKey]*chain
	tokens         tokens
	caps           capabilities
	dg             delegation
	sr             scheduleRecords
	ins            instances
	sealMu         sync.Mutex // guards chains' receipts, which readers compute

	// Lists by turn (events, tool calls) use the turn's session when the
	// turn is recorded, and scan otherwise: an index by turn would cost
	// every write for a rare read.
	events          []*event.Event // cursor order
	eventsBySession map[string]*sessionEvents
	nextCursor      int64
}

type sessionEvents struct {
	list []*event.Event // cursor order
	last int64          // highest sequence
}

type blobKey struct{ tenant, ref string }

type limitKey struct {
	tenant  string
	scope   runtype.LimitScope
	scopeID string
}

func keyOfLimit(l *runtype.Limit) limitKey { return limitKey{l.TenantID, l.Scope, l.ScopeID} }

func tenantKey(tenant, key string) string { return tenant + "\x00" + key }

func newData() *data {
	return &data{
		sessions:         make(map[string]*runtype.Session),
		sessionsByTenant: make(map[string][]sessionKey),
		threads:          make(map[string]*runtype.Thread),
		threadsBySession: make(map[string][]*runtype.Thread),
		turns:            make(map[string]*runtype.Turn),
		turnsByTenant:    make(map[string][]string),
		turnsByThread:    make(map[string][]string),
		rollbackGen:      make(map[string]int64),
		threadUsage:      make(map[string]runtype.Usage),
		turnKeys:         make(map[string]string),
		tasks: newTable(
			func(t *runtype.Task) string { return t.SessionID },
			func(t *runtype.Task) string { return t.ThreadID },
			func(t *runtype.Task) string { return t.TenantID },
		),
		due:      make(map[string]*row[runtype.Task]),
		queued:   make(map[string]*row[runtype.Task]),
		queuedBy: make(map[string]int),
		runs: newTable(
			func(r *runtype.Run) string { return r.SessionID },
			func(r *runtype.Run) string { return r.TaskID },
			func(r *runtype.Run) string { return r.TenantID },
		),
		calls:           callTable{sessions: make(map[string]*sessionCalls)},
		messages:        make(map[string][]*runtype.Message),
		blobs:           make(map[blobKey]*runtype.Blob),
		limits:          make(map[limitKey]*runtype.Limit),
		actions:         make(map[string]*runtype.Action),
		actionsByTenant: make(map[string][]string),
		actionCounts:    make(map[actionCountKey]int),
		grants:          make(map[string]*runtype.PolicyGrant),
		grantsByTenant:  make(map[string][]*runtype.PolicyGrant),
		receipts:        make(map[receiptKey]*chain),
		tokens:          newTokens(),
		caps:            newCapabilities(),
		dg:              newDelegation(),
		sr:              newScheduleRecords(),
		ins:             newInstances(),
		eventsBySession: make(map[string]*sessionEvents),
		nextCursor:      1,
	}
}

// row is a stored record with its insertion position.
type row[T any] struct {
	ord uint64
	v   T
}

// table holds records replaced by key, with secondary indexes that keep
// each key's rows in insertion order.
type table[T any] struct {
	rows map[string]*row[T]
	keys []func(*T) string      // one per index
	idx  []map[string][]*row[T] // one per index
}

func newTable[T any](keys ...func(*T) string) *table[T] {
	t := &table[T]{rows: make(map[string]*row[T]), keys: keys}
	for range keys {
		t.idx = append(t.idx, make(map[string][]*row[T]))
	}
	return t
}

// put inserts or replaces the record under k. It returns the previous
// value, or nil when k was new.
func (t *table[T]) put(k string, v T, ord *uint64) *T {
	if r, ok := t.rows[k]; ok {
		old := r.v
		for i, key := range t.keys {
			if ko, kn := key(&old), key(&v); ko != kn {
				removeRow(t.idx[i], ko, r)
				insertRow(t.idx[i], kn, r)
			}
		}
		r.v = v
		return &old
	}
	*ord++
	r := &row[T]{ord: *ord, v: v}
	t.rows[k] = r
	for i, key := range t.keys {
		insertRow(t.idx[i], key(&r.v), r)
	}
	return nil
}

// restore undoes a put that returned prev.
func (t *table[T]) restore(k string, prev *T) {
	r := t.rows[k]
	if prev != nil {
		var ord uint64 // unused: k exists, so put replaces
		t.put(k, *prev, &ord)
		return
	}
	for i, key := range t.keys {
		removeRow(t.idx[i], key(&r.v), r)
	}
	delete(t.rows, k)
}

// list returns index i's rows under key, or, when key is empty, all rows;
// both in insertion order.
func (t *table[T]) list(i int, key string) []*row[T] {
	if key != "" {
		return t.idx[i][key]
	}
	all := make([]*row[T], 0, len(t.rows))
	for _, r := range t.rows {
		all = append(all, r)
	}
	slices.SortFunc(all, func(a, b *row[T]) int { return cmp.Compare(a.ord, b.ord) })
	return all
}

func insertRow[T any](m map[string][]*row[T], k string, r *row[T]) {
	s := m[k]
	if n := len(s); n == 0 || s[n-1].ord < r.ord {
		m[k] = append(s, r)
		return
	}
	i := sort.Search(len(s), func(i int) bool { return s[i].ord >= r.ord })
	m[k] = slices.Insert(s, i, r)
}

func removeRow[T any](m map[string][]*row[T], k string, r *row[T]) {
	s := m[k]
	i := sort.Search(len(s), func(i int) bool { return s[i].ord >= r.ord })
	if i == len(s) || s[i] != r {
		return
	}
	if s = slices.Delete(s, i, i+1); len(s) == 0 {
		delete(m, k)
	} else {
		m[k] = s
	}
}

// callTable holds tool calls by session, then by ID: provider-given IDs
// are unique only within a session, and a session's calls are few, so the
// maps a write touches stay small.
type callTable struct {
	sessions map[string]*sessionCalls
}

type sessionCalls struct {
	byID map[string]*row[runtype.ToolCall]
	list []*row[runtype.ToolCall] // insertion order
}

// put inserts or replaces a call and returns the call it replaced.
func (c *callTable) put(v runtype.ToolCall, ord *uint64) *runtype.ToolCall {
	sc := c.sessions[v.SessionID]
	if sc == nil {
		sc = &sessionCalls{byID: make(map[string]*row[runtype.ToolCall])}
		c.sessions[v.SessionID] = sc
	}
	if r, ok := sc.byID[v.ID]; ok {
		old := r.v
		r.v = v
		return &old
	}
	*ord++
	r := &row[runtype.ToolCall]{ord: *ord, v: v}
	sc.byID[v.ID] = r
	sc.list = append(sc.list, r)
	return nil
}

// restore undoes the last put of a call, which returned prev.
func (c *callTable) restore(session, id string, prev *runtype.ToolCall) {
	sc := c.sessions[session]
	if prev != nil {
		sc.byID[id].v = *prev
		return
	}
	delete(sc.byID, id)
	sc.list[len(sc.list)-1] = nil // undo runs newest first: the call is the last
	if sc.list = sc.list[:len(sc.list)-1]; len(sc.list) == 0 {
		delete(c.sessions, session)
	}
}

// list returns a session's calls, or when session is empty every call,
// in insertion order.
func (c *callTable) list(session string) []*row[runtype.ToolCall] {
	if session != "" {
		if sc := c.sessions[session]; sc != nil {
			return sc.list
		}
		return nil
	}
	var all []*row[runtype.ToolCall]
	for _, sc := range c.sessions {
		all = append(all, sc.list...)
	}
	slices.SortFunc(all, func(a, b *row[runtype.ToolCall]) int { return cmp.Compare(a.ord, b.ord) })
	return all
}

// insertSorted adds id to the ascending ids of m[k].
func insertSorted(m map[string][]string, k, id string) {
	s := m[k]
	if n := len(s); n == 0 || s[n-1] < id {
		m[k] = append(s, id)
		return
	}
	i, found := slices.BinarySearch(s, id)
	if !found {
		m[k] = slices.Insert(s, i, id)
	}
}

// sessionKey orders sessions as SessionList does, oldest first: by
// creation time, then by ID.
type sessionKey struct {
	at int64 // CreatedAt in Unix nanoseconds, 0 for the zero time (as the SQL drivers store it)
	id string
}

func keyOfSession(s *runtype.Session) sessionKey {
	k := sessionKey{id: s.ID}
	if !s.CreatedAt.IsZero() {
		k.at = s.CreatedAt.UnixNano()
	}
	return k
}

func compareSessionKeys(a, b sessionKey) int {
	return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.id, b.id))
}

// insertSession adds s to its tenant's ordered sessions.
func (d *data) insertSession(s *runtype.Session) {
	keys, k := d.sessionsByTenant[s.TenantID], keyOfSession(s)
	if n := len(keys); n == 0 || compareSessionKeys(keys[n-1], k) < 0 {
		d.sessionsByTenant[s.TenantID] = append(keys, k) // the usual case: the newest
		return
	}
	if i, found := slices.BinarySearchFunc(keys, k, compareSessionKeys); !found {
		d.sessionsByTenant[s.TenantID] = slices.Insert(keys, i, k)
	}
}

// removeSession drops s from its tenant's ordered sessions.
func (d *data) removeSession(s *runtype.Session) {
	keys := d.sessionsByTenant[s.TenantID]
	i, found := slices.BinarySearchFunc(keys, keyOfSession(s), compareSessionKeys)
	if !found {
		return
	}
	if keys = slices.Delete(keys, i, i+1); len(keys) == 0 {
		delete(d.sessionsByTenant, s.TenantID)
	} else {
		d.sessionsByTenant[s.TenantID] = keys
	}
}

// removeSorted drops id from the ascending ids of m[k].
func removeSorted(m map[string][]string, k, id string) {
	s := m[k]
	i, found := slices.BinarySearch(s, id)
	if !found {
		return
	}
	if s = slices.Delete(s, i, i+1); len(s) == 0 {
		delete(m, k)
	} else {
		m[k] = s
	}
}

// seqIndex returns where seq is or would be in msgs (ascending Seq).
func seqIndex(msgs []*runtype.Message, seq int64) (int, bool) {
	return slices.BinarySearchFunc(msgs, seq, func(m *runtype.Message, seq int64) int {
		return cmp.Compare(m.Seq, seq)
	})
}

// Copies. Records are copied in and out so that neither the caller's later
// changes nor the store's reach the other side.

func copyFailure(f *runtype.Failure) *runtype.Failure {
	if f == nil {
		return nil
	}
	c := *f
	return &c
}

func copySession(s *runtype.Session) *runtype.Session { c := *s; return &c }

func copyThread(t *runtype.Thread) *runtype.Thread {
	c := *t
	if t.Lineage != nil {
		l := *t.Lineage
		c.Lineage = &l
	}
	return &c
}

func copyTurn(t *runtype.Turn) *runtype.Turn {
	c := *t
	c.Failure = copyFailure(t.Failure)
	if t.Overrides != nil {
		o := *t.Overrides
		o.Tools = slices.Clone(t.Overrides.Tools)
		c.Overrides = &o
	}
	return &c
}

func copyTask(t *runtype.Task) *runtype.Task {
	c := *t
	c.Failure = copyFailure(t.Failure)
	return &c
}

func copyRouting(r *runtype.Routing) *runtype.Routing {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

func copyRun(r *runtype.Run) *runtype.Run {
	c := *r
	c.Failure = copyFailure(r.Failure)
	c.Routing = copyRouting(r.Routing)
	return &c
}

func copyMessage(m *runtype.Message) *runtype.Message {
	c := *m
	c.ToolCalls = slices.Clone(m.ToolCalls)
	c.Reasoning = slices.Clone(m.Reasoning) // Reasoning holds only strings
	return &c
}

func copyToolCall(t *runtype.ToolCall) *runtype.ToolCall {
	c := *t
	c.Failure = copyFailure(t.Failure)
	if t.Progress != nil {
		p := *t.Progress
		c.Progress = &p
	}
	return &c
}

func copyLimit(l *runtype.Limit) *runtype.Limit { c := *l; return &c }

func copyBlob(b *runtype.Blob) *runtype.Blob {
	c := *b
	c.Data = slices.Clone(b.Data)
	return &c
}
