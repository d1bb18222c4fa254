// Package store defines how agentrt keeps its durable facts: the Store
// interface that drivers implement, the parameter structs of its methods,
// the sentinel errors drivers translate native errors into, and the Writer
// that group-commits concurrent runs' appends.
//
// # Drivers
//
// store/sqlitestore is the embedded default; store/memstore keeps
// everything in memory (tests, benchmarks, embedding without persistence).
// Both pass store/storetest, the one conformance suite. Callers never
// type-switch on a driver; differences show through Info.
//
// # Writes
//
// All writes go through Batch: the facts of one step (events and the
// records they change) commit together or not at all. Writer batches many
// runs' Batches into one transaction; see Writer for the durability
// contract. A Batch may carry conditions the driver checks in that
// transaction: a Fence (the writer still holds a task's lease) and an
// Admission (the queue has room). Failures of the storage itself wrap
// ErrStorage, and the Writer keeps the last one as its Fault until a
// transaction commits.
//
// # Tenancy
//
// Every record carries a runtype.Owner. Every read takes a TenantID and
// never returns another tenant's records. The exceptions say so: the
// runtime's own sweeps and aggregates (AllTenants), and the API tokens,
// which are looked up to learn the tenant.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// Sentinel errors. Drivers wrap native errors so that callers can branch
// with errors.Is and never see driver error codes.
var (
	// ErrNotFound: no record with that key exists for that tenant. It is
	// runtype.ErrNotFound, which the API contract names too.
	ErrNotFound = runtype.ErrNotFound
	// ErrConflict: a write broke a uniqueness rule (an idempotency key, a
	// message or event sequence already taken). It is
	// runtype.ErrConflict.
	ErrConflict = runtype.ErrConflict
	// ErrSchemaTooNew: the database was migrated by a newer agentrt.
	ErrSchemaTooNew = errors.New("database schema is newer than this agentrt")
	// ErrClosed: the store or writer was closed.
	ErrClosed = errors.New("store closed")
	// ErrLeaseLost: a batch fenced by, or changing, a task's lease found
	// the task at another epoch (or held by another worker): the worker
	// that wrote it no longer owns the task. It is a conflict.
	ErrLeaseLost = fmt.Errorf("%w: the task's lease is held elsewhere", ErrConflict)
	// ErrQueueFull: a batch's Admission found a queue at its limit; a
	// *QueueFullError says which.
	ErrQueueFull = errors.New("queue full")
	// ErrStorage: the database's medium failed the operation: the disk is
	// full, an I/O error, a read-only file, a corrupt page. Nothing is
	// wrong with the request; the same one may succeed once the storage
	// is repaired. The Writer reports it as its Fault.
	ErrStorage = errors.New("storage failed")
	// ErrCorrupt: the database is damaged (a page that does not parse, a
	// file that is not a database). It is a storage failure.
	ErrCorrupt = fmt.Errorf("%w: the database is corrupt", ErrStorage)
)

// IntegrityChecker is a Store that can check its database's structure
// (SQLite's quick_check). CheckIntegrity returns nil for a sound database,
// an error wrapping ErrCorrupt that names the first problems for a damaged
// one, and ctx's error if ctx ends first; its cost grows with the size of
// the database, so callers bound it with ctx.
type IntegrityChecker interface {
	CheckIntegrity(ctx context.Context) error
}

// Prober is a Tx that can write to the database's medium without changing
// any fact, so that committing shows whether the store takes writes now:
// Writer.Probe uses it.
type Prober interface {
	Probe(ctx context.Context) error
}

// GroupApplier is a Tx that can apply a group of batches at once, in
// fewer round trips to its database than an Apply a batch: Writer uses
// it for the groups it commits when Groups reports true. ApplyGroup
// applies every batch of bs, or fails, and then the transaction holds
// nothing worth keeping: the caller rolls it back and applies the
// batches one by one in another, to learn which of them failed.
type GroupApplier interface {
	Groups() bool
	ApplyGroup(ctx context.Context, bs []*Batch) error
}

// QueueFullError is why a batch's Admission refused it: the tenant's
// queue (TenantID set) or the whole store's (TenantID empty) holds
// Queued tasks, at or above Limit. The batch wrote nothing.
type QueueFullError struct {
	TenantID string
	Queued   int
	Limit    int
}

func (e *QueueFullError) Error() string {
	if e.TenantID == "" {
		return fmt.Sprintf("queue full: %d tasks queued in every tenant, the limit is %d", e.Queued, e.Limit)
	}
	return fmt.Sprintf("queue full: tenant %s has %d tasks queued, the limit is %d", e.TenantID, e.Queued, e.Limit)
}

// Is makes errors.Is(err, ErrQueueFull) match.
func (e *QueueFullError) Is(target error) bool { return target == ErrQueueFull }

// Store is a durable home for sessions, threads, turns, tasks, runs,
// messages, tool calls, blobs, budget limits and the event log.
//
// Implementations are safe for concurrent use. Reads never block on an
// in-progress write transaction longer than the driver's documented limits.
type Store interface {
	Reader

	// Begin starts a write transaction. Only one is expected at a time (the
	// Writer is the only writer); drivers may serialize.
	Begin(ctx context.Context) (Tx, error)

	// Migrate brings the schema to this driver's latest version. It
	// returns ErrSchemaTooNew if the database is ahead of the driver.
	Migrate(ctx context.Context) error

	// Info describes the driver.
	Info() Info

	// Close releases the store's resources.
	Close() error
}

// Info describes a driver's capabilities.
type Info struct {
	// Driver is a short name: "sqlite", "memory", "postgres".
	Driver string
	// Durable reports whether a committed Batch survives a process crash.
	Durable bool
	// Version is the underlying database's version, for diagnostics.
	Version string
	// SchemaVersion is the migration the database is at.
	SchemaVersion int
	// SchemaLatest is the migration this driver migrates to; 0 for a
	// driver without a schema.
	SchemaLatest int
}

// Tx is a write transaction. Reads through a Tx see its own writes.
type Tx interface {
	Reader

	// Apply writes b. It is all or nothing: when Apply returns an error,
	// the transaction is as it was before the call and may continue with
	// other batches. Events must already carry their Sequence; Apply sets
	// their Cursor.
	Apply(ctx context.Context, b *Batch) error

	// EventLastSequence returns the highest event sequence of a session,
	// or 0 when it has none.
	EventLastSequence(ctx context.Context, p *EventLastSequenceParams) (int64, error)

	Commit() error
	Rollback() error
}

// Batch is a set of writes that commit together: the events of one step
// and the records they change. Records are written whole: Sessions,
// Threads, Messages and Blobs are inserted (Blobs are ignored when the ref
// exists); Turns, Tasks, Runs and ToolCalls are inserted or replaced by ID
// (a replaced Task keeps its scheduling fields: see runtype.Task);
// Limits are inserted or replaced by (TenantID, Scope, ScopeID).
//
// The store does not keep references to a Batch or its slices once the
// write has returned (the caller may Reset and reuse it), but it may keep
// the records and events they point to: callers must not modify those
// after handing them over.
//
// A Turn with an IdempotencyKey that another turn of the same tenant holds
// is a conflict (ErrConflict). So is a Message whose (ThreadID, Seq) is
// taken, and an Event whose Sequence is not above the last of its session
// (taken, or lower): sequences rise with cursors within a session, which is
// what lets readers follow a session in cursor order.
//
// Writing a Turn moves its session's UpdatedAt forward (never back) to
// the time SessionActivity gives, in the same transaction; a session is
// updated when a turn is submitted to it and when a turn of it ends.
//
// A cost that is not a finite number (a Usage's CostUSD, a Limit's
// MaxCostUSD) cannot be stored: the batch fails and writes nothing.
type Batch struct {
	Sessions  []*runtype.Session
	Threads   []*runtype.Thread
	Turns     []*runtype.Turn
	Tasks     []*runtype.Task
	Runs      []*runtype.Run
	Messages  []*runtype.Message
	ToolCalls []*runtype.ToolCall
	Blobs     []*runtype.Blob
	Limits    []*runtype.Limit
	// Actions are inserted (new, pending); ResolvedActions replace an
	// action only while it is pending in the store: one that is not
	// (resolved meanwhile, or unknown) is a conflict (ErrConflict) and the
	// batch writes nothing. An action's ID is unique across tenants, like
	// a session's. ResolvedActions apply after Actions, so one batch may
	// insert an action and resolve it, and an action resolved twice in one
	// batch is a conflict.
	Actions         []*runtype.Action
	ResolvedActions []*runtype.Action
	// Grants are inserted; a grant ID that exists is a conflict.
	Grants []*runtype.PolicyGrant
	// SessionModes set sessions' PolicyMode, after Sessions are inserted.
	// A session that does not exist for that tenant fails the batch with
	// an error wrapping ErrNotFound.
	SessionModes []*SessionMode
	// Tokens are inserted; a token whose ID or Hash exists is a
	// conflict. TokenUpdates apply after them: one naming no token fails
	// the batch with an error wrapping ErrNotFound.
	Tokens       []*runtype.APIToken
	TokenUpdates []*TokenUpdate
	// CapabilitySessions are upserted by ID (insert, or replace every
	// field of the record with that ID; the ID is unique across tenants,
	// and a record of another tenant with that ID is a conflict,
	// ErrConflict). Their RunIDs are not written: CapabilityRuns are.
	CapabilitySessions []*runtype.CapabilitySession
	// CapabilityRuns record that a run used a capability session:
	// inserted, a repeat (same tenant, capability session and run) is
	// ignored and keeps its first At. They apply after
	// CapabilitySessions.
	CapabilityRuns []*runtype.CapabilityRun
	// Subagents, Jobs and JobItems are upserted by ID (insert, or
	// replace every field of the record with that ID). An ID is unique
	// across tenants: a record of another tenant with that ID is a
	// conflict (ErrConflict). They apply after Tasks.
	Subagents []*runtype.Subagent
	Jobs      []*runtype.Job
	JobItems  []*runtype.JobItem
	// WorkflowRuns are upserted by ID like Jobs (their steps with them),
	// after JobItems: a run of another tenant with that ID is a conflict.
	WorkflowRuns []*runtype.WorkflowRun
	// Schedules are written with optimistic concurrency, after JobItems:
	// one whose Version is 0 is inserted (an ID that exists is a
	// conflict); one with Version n replaces the stored record only while
	// the stored record is at version n. Either way the stored record is
	// at version n+1 after (the batch's record is left as it is). A
	// stale version, a record of another tenant with that ID, or an
	// IdempotencyKey another schedule of the tenant holds, is a
	// conflict (ErrConflict) and the batch writes nothing: two processes
	// that both found a fire due record it once.
	Schedules []*runtype.Schedule
	// Fires are upserted by ID after Schedules (insert, or replace every
	// field). A fire not triggered by hand (Manual false) whose
	// (ScheduleID, FireAt) another fire holds is a conflict, as is one
	// whose IdempotencyKey another fire of its schedule holds, and an ID
	// of another tenant's fire.
	Fires []*runtype.Fire
	// ScheduleWakes make schedules due, after Fires: each sets the
	// schedule's NextCheckAt to At if that is earlier (or NextCheckAt is
	// zero) and bumps its version. A wake naming no schedule of that
	// tenant is ignored (the schedule's record is never removed, so only
	// a bad ID does that).
	ScheduleWakes []*ScheduleWake
	// Instances are written with optimistic concurrency, after
	// ScheduleWakes, as Schedules are: Version 0 inserts (an ID that
	// exists is a conflict), Version n replaces the stored record only
	// while it is at version n, and the stored record is at n+1 after.
	// A stale version, a record of another tenant with that ID, or a
	// Name another instance of the tenant holds is a conflict
	// (ErrConflict) and the batch writes nothing.
	Instances []*runtype.Instance
	// Events are appended. Each event that Sealed reports is also sealed
	// by a receipt appended to its session's chain in the same
	// transaction: the store numbers it and computes its hashes.
	Events []*event.Event

	// Admit, when set, makes the whole batch conditional on room in the
	// queue: see Admission. It is checked after Fence.
	Admit *Admission
	// Fence, when set, makes the whole batch conditional on a task's
	// lease: it applies only while the task is at Fence.Epoch, and fails
	// with ErrLeaseLost (writing nothing) otherwise. A worker fences every
	// write of the attempt it runs, so one that lost its lease cannot
	// write.
	Fence *Fence
	// Leases change tasks' leases, after Tasks are written. Each is
	// conditional on the task's epoch; one that does not hold fails the
	// batch with ErrLeaseLost.
	Leases []*LeaseChange
	// TaskUpdates change tasks' scheduling fields, after Leases. A task
	// that does not exist for that tenant fails the batch with an error
	// wrapping ErrNotFound.
	TaskUpdates []*TaskUpdate
}

// Admission is the condition of a batch that queues work: it applies
// only while the tenant has fewer than MaxTenant tasks in status queued
// and every tenant together fewer than MaxAll (a zero limit does not
// apply), counted as the transaction holds them before the batch, the
// batches committed and applied before it included. Otherwise it fails
// with a *QueueFullError and writes nothing. Checking the count in the
// transaction that inserts makes the limit exact however many batches
// race for the last places; drivers keep the counts so that the check
// costs the same whatever the queue's length.
type Admission struct {
	TenantID  string
	MaxTenant int
	MaxAll    int
}

// Fence names the lease a batch's writer must still hold.
type Fence struct {
	TenantID string
	TaskID   string
	Epoch    int64
}

// LeaseChange takes, renews or releases a task's lease. It applies only
// while the task is at Epoch; a renewal also needs Owner to hold it.
//
//   - Claim (while nobody holds the lease, or it ran out by At): the
//     epoch becomes Epoch+1, the lease Owner's until ExpiresAt,
//     and DueAt becomes ExpiresAt (the task is due again if the lease runs
//     out). With Alone, the claim also needs the task to be the only open
//     task of its thread (no other is neither terminal nor blocked).
//   - Renew (not Claim, Owner set): the lease and DueAt move to ExpiresAt.
//   - Release (not Claim, Owner empty): the lease is dropped (the epoch
//     stays) and the task is next due at DueAt (zero: not due).
type LeaseChange struct {
	TenantID string
	TaskID   string
	Epoch    int64
	Claim    bool
	// Alone conditions a claim on its task being its thread's only open
	// task, counting the batches applied before and this one's Tasks:
	// a submission that claims the task it inserts (an eager start) then
	// never runs beside another turn of the thread, whatever else was
	// submitted to it at the same time.
	Alone bool
	// At is a claim's now: the claim holds only while nobody holds the
	// task's lease or it ran out by At, so that a claim from a listing
	// of due tasks read before the holder renewed takes nothing from a
	// live worker. Zero: the epoch alone decides (a worker giving up
	// its own lease).
	At        time.Time
	Owner     string
	ExpiresAt time.Time
	DueAt     time.Time
}

// Standalone reports whether c may be applied alone (LeaseApplier): a
// claim without Alone, or a renewal.
func (c *LeaseChange) Standalone() bool {
	return c.Claim && !c.Alone || !c.Claim && c.Owner != ""
}

// LeaseApplier is a Store that applies a claim or a lease renewal on its
// own, outside the write transactions Begin starts, which may wait
// behind other processes' (PostgreSQL's nodes take turns). A heartbeat
// that waited behind a busy cluster's steps would let live leases run
// out, and a claim behind them would slow the take-over of a dead
// node's tasks. The store keeps the fence: a write fenced on a task's
// epoch that is under way when a claim comes either commits before the
// claim or fails with ErrLeaseLost. Writer.Lease uses it.
type LeaseApplier interface {
	// ApplyLease applies c, a claim without Alone or a renewal, as one
	// durable change: ErrLeaseLost when it does not hold.
	ApplyLease(ctx context.Context, c *LeaseChange) error
}

// Lost is the error of a lease change that does not hold (ErrLeaseLost):
// the task is missing, at another epoch, or another worker's.
func (c *LeaseChange) Lost() error {
	switch {
	case c.Claim:
		return fmt.Errorf("claiming task %s at epoch %d: %w", c.TaskID, c.Epoch, ErrLeaseLost)
	case c.Owner != "":
		return fmt.Errorf("renewing the lease of %s on task %s at epoch %d: %w", c.Owner, c.TaskID, c.Epoch, ErrLeaseLost)
	}
	return fmt.Errorf("releasing task %s at epoch %d: %w", c.TaskID, c.Epoch, ErrLeaseLost)
}

// TaskUpdate sets a task's scheduling fields; nil fields are left as
// they are. A zero DueAt means not due. DueAt applies only to a task no
// worker holds (LeaseOwner empty): a held task stays due at its lease's
// expiry, so that no other worker claims it while it runs; its worker
// decides when it is due next as it releases it.
type TaskUpdate struct {
	TenantID string
	TaskID   string
	DueAt    *time.Time
	Control  *runtype.TaskControl
	QueuedAt *time.Time
}

// TokenUpdate changes an API token; nil fields are left as they are.
// RevokedAt revokes it, unless it is revoked already (the first
// revocation's time stays); LastUsedAt moves its last use forward, never
// back.
type TokenUpdate struct {
	ID         string
	RevokedAt  *time.Time
	LastUsedAt *time.Time
	// Once, with RevokedAt, revokes the token only if nothing did
	// before: a token revoked already fails the batch with ErrConflict
	// (a stream ticket used by another request at the same moment).
	Once bool
}

// SessionMode sets one session's permission mode ("" clears it).
type SessionMode struct {
	TenantID  string
	SessionID string
	Mode      string
}

// SessionActivity returns the time a write of turn t moves its session's
// UpdatedAt to: the later of its CreatedAt (its submission) and EndedAt
// (its end). ok is false for a turn that started and has not ended: its
// writes (one a step) cannot move the session, whose UpdatedAt is at
// least the turn's CreatedAt since the turn was first written, so the
// store spends nothing on them. A session's UpdatedAt is thus the latest
// submission or end of its turns (its CreatedAt before it has any), a
// projection of the turns that costs a write per turn, not per step.
func SessionActivity(t *runtype.Turn) (at time.Time, ok bool) {
	if !t.StartedAt.IsZero() && t.EndedAt.IsZero() {
		return time.Time{}, false
	}
	if t.EndedAt.After(t.CreatedAt) {
		return t.EndedAt, true
	}
	return t.CreatedAt, true
}

// Sealed reports whether events of type t get an evidence receipt: the
// policy decisions, the resolutions of approvals, switches of a session's
// permission mode and tool executions.
func Sealed(t event.Type) bool {
	switch t {
	case event.PermissionEvaluated, event.PermissionResolved, event.PolicyChanged, event.ToolResult, event.ToolFailed:
		return true
	}
	return false
}

// ReceiptHash is the hash of a receipt: the hex SHA-256 of the previous
// receipt's hash (empty for a session's first), a newline, and the body.
func ReceiptHash(prevHash string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(prevHash))
	h.Write([]byte{'\n'})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// ReceiptError is why VerifyReceipts refused a chain: the first receipt
// that is not what the chain says it should be.
type ReceiptError struct {
	Seq     int64
	EventID string
	Reason  string
}

func (e *ReceiptError) Error() string {
	return fmt.Sprintf("receipt %d (event %s): %s", e.Seq, e.EventID, e.Reason)
}

// VerifyReceipts checks a session's receipts, in order from the first:
// their sequence runs from 1 without gaps, they belong to one session,
// each links to the hash of the one before (the first to none), and each
// hash is ReceiptHash of its link and body. It returns nil for a sound
// chain (or none) and otherwise a *ReceiptError naming the first receipt
// that breaks it.
//
// A sound chain shows that no receipt was altered, removed or inserted
// without rewriting every receipt after it. That the chain was not
// rewritten or cut short takes its last hash compared with one kept
// elsewhere (an export's), and that each sealed event still reads back as
// its receipt's body takes comparing the two: both are the caller's.
func VerifyReceipts(rs []*runtype.Receipt) error {
	var prev *runtype.Receipt
	for i, r := range rs {
		fail := func(format string, args ...any) error {
			return &ReceiptError{Seq: r.Seq, EventID: r.EventID, Reason: fmt.Sprintf(format, args...)}
		}
		want := int64(i) + 1
		switch {
		case r.Seq > want:
			return fail("sequence gap: %d after %d", r.Seq, want-1)
		case r.Seq < want:
			return fail("sequence out of order: %d after %d", r.Seq, want-1)
		case prev != nil && (r.TenantID != prev.TenantID || r.SessionID != prev.SessionID):
			return fail("belongs to session %s of tenant %s, not %s of %s", r.SessionID, r.TenantID, prev.SessionID, prev.TenantID)
		case r.Hash != ReceiptHash(r.PrevHash, r.Body):
			return fail("hash does not match its body")
		case prev == nil && r.PrevHash != "":
			return fail("prev hash of the first receipt is not empty")
		case prev != nil && r.PrevHash != prev.Hash:
			return fail("prev hash does not match receipt %d", prev.Seq)
		}
		prev = r
	}
	return nil
}

// Reader is the read half of a Store. Every method filters by tenant.
type Reader interface {
	SessionGet(ctx context.Context, p *SessionGetParams) (*runtype.Session, error)
	SessionList(ctx context.Context, p *SessionListParams) ([]*runtype.Session, error)

	ThreadGet(ctx context.Context, p *ThreadGetParams) (*runtype.Thread, error)
	ThreadList(ctx context.Context, p *ThreadListParams) ([]*runtype.Thread, error)

	TurnGet(ctx context.Context, p *TurnGetParams) (*runtype.Turn, error)
	TurnGetByIdempotencyKey(ctx context.Context, p *TurnGetByIdempotencyKeyParams) (*runtype.Turn, error)
	TurnList(ctx context.Context, p *TurnListParams) ([]*runtype.Turn, error)

	TaskGet(ctx context.Context, p *TaskGetParams) (*runtype.Task, error)
	TaskList(ctx context.Context, p *TaskListParams) ([]*runtype.Task, error)
	// TaskSearch lists the tenant's tasks across sessions, newest first;
	// see TaskSearchParams.
	TaskSearch(ctx context.Context, p *TaskSearchParams) ([]*runtype.Task, error)
	// TurnTally counts a thread's turns by status and names those not
	// completed; see TurnTally.
	TurnTally(ctx context.Context, p *TurnTallyParams) (*TurnTally, error)
	// TaskListDue returns the tasks of every tenant a worker should claim
	// at p.Now; see TaskListDueParams.
	TaskListDue(ctx context.Context, p *TaskListDueParams) ([]*runtype.Task, error)
	// TaskCount counts tasks in some statuses.
	TaskCount(ctx context.Context, p *TaskCountParams) (int, error)
	// TaskQueueStats counts the tasks of every tenant that wait for a
	// worker at p.Now and returns the one that has waited longest; see
	// TaskQueueStats.
	TaskQueueStats(ctx context.Context, p *TaskQueueStatsParams) (*TaskQueueStats, error)
	// TaskListInFlight lists the tasks of every tenant that are in
	// flight: held by a worker, or in status preparing, running or
	// cancelling; see TaskListInFlightParams.
	TaskListInFlight(ctx context.Context, p *TaskListInFlightParams) ([]*runtype.Task, error)

	RunList(ctx context.Context, p *RunListParams) ([]*runtype.Run, error)

	MessageList(ctx context.Context, p *MessageListParams) ([]*runtype.Message, error)
	// ThreadTotalsGet returns a thread's running totals (see
	// ThreadTotals); ErrNotFound when the tenant has no such thread.
	ThreadTotalsGet(ctx context.Context, p *ThreadTotalsGetParams) (*ThreadTotals, error)
	// MessageCount counts a thread's messages.
	MessageCount(ctx context.Context, p *MessageCountParams) (int64, error)

	ToolCallList(ctx context.Context, p *ToolCallListParams) ([]*runtype.ToolCall, error)
	// ToolCallGetByOutputRef returns the tenant's first tool call (by
	// start) whose OutputRef is p.Ref, or ErrNotFound: it proves a
	// spilled output, which the output store keeps without a tenant,
	// belongs to the tenant.
	ToolCallGetByOutputRef(ctx context.Context, p *ToolCallGetByOutputRefParams) (*runtype.ToolCall, error)

	BlobGet(ctx context.Context, p *BlobGetParams) (*runtype.Blob, error)

	// LimitGet returns the tenant's limit for one scope, or ErrNotFound
	// when none was set.
	LimitGet(ctx context.Context, p *LimitGetParams) (*runtype.Limit, error)

	// UsageTotal returns the sum of the Usage of the tenant's runs that
	// match p (zero when none do).
	UsageTotal(ctx context.Context, p *UsageTotalParams) (runtype.Usage, error)

	// EventListAfter returns up to Limit events with Cursor > AfterCursor
	// that match Filter, in cursor order.
	EventListAfter(ctx context.Context, p *EventListAfterParams) ([]*event.Event, error)

	// ActionGet returns one action, or ErrNotFound.
	ActionGet(ctx context.Context, p *ActionGetParams) (*runtype.Action, error)
	// ActionList returns the tenant's actions matching p, newest first.
	ActionList(ctx context.Context, p *ActionListParams) ([]*runtype.Action, error)
	// ActionStats counts the tenant's (or every tenant's) actions in one
	// status and returns the oldest of them.
	ActionStats(ctx context.Context, p *ActionStatsParams) (*ActionStats, error)
	// GrantList returns the tenant's grants that apply in a session: the
	// session's own and those without a session, oldest first.
	GrantList(ctx context.Context, p *GrantListParams) ([]*runtype.PolicyGrant, error)
	// ReceiptList returns a session's receipts with Seq > AfterSeq, in
	// order, at most Limit.
	ReceiptList(ctx context.Context, p *ReceiptListParams) ([]*runtype.Receipt, error)
	// EventLastCursor returns the highest cursor in the log (0 when empty).
	EventLastCursor(ctx context.Context) (int64, error)
	// EventLast returns the tenant's session's event with the highest
	// sequence, or ErrNotFound when the session has none.
	EventLast(ctx context.Context, p *EventLastParams) (*event.Event, error)

	// TokenGet returns an API token by ID, of any tenant, or ErrNotFound.
	TokenGet(ctx context.Context, p *TokenGetParams) (*runtype.APIToken, error)
	// TokenGetByHash returns the API token whose Hash is p.Hash, of any
	// tenant (authentication learns the tenant from it), revoked or not;
	// ErrNotFound when none has it.
	TokenGetByHash(ctx context.Context, p *TokenGetByHashParams) (*runtype.APIToken, error)
	// TokenList returns API tokens oldest first; see TokenListParams.
	TokenList(ctx context.Context, p *TokenListParams) ([]*runtype.APIToken, error)

	// SubagentGet returns the tenant's subagent, or ErrNotFound.
	SubagentGet(ctx context.Context, p *SubagentGetParams) (*runtype.Subagent, error)
	// SubagentList returns the tenant's subagents that match p, oldest
	// first; see SubagentListParams.
	SubagentList(ctx context.Context, p *SubagentListParams) ([]*runtype.Subagent, error)
	// JobGet returns the tenant's job, or ErrNotFound.
	JobGet(ctx context.Context, p *JobGetParams) (*runtype.Job, error)
	// JobList returns the tenant's jobs that match p, oldest first.
	JobList(ctx context.Context, p *JobListParams) ([]*runtype.Job, error)
	// JobItemList returns a job's items that match p in Index order.
	JobItemList(ctx context.Context, p *JobItemListParams) ([]*runtype.JobItem, error)
	// WorkflowRunGet returns the tenant's workflow run, or ErrNotFound.
	WorkflowRunGet(ctx context.Context, p *WorkflowRunGetParams) (*runtype.WorkflowRun, error)
	// WorkflowRunList returns the tenant's workflow runs that match p,
	// oldest first.
	WorkflowRunList(ctx context.Context, p *WorkflowRunListParams) ([]*runtype.WorkflowRun, error)
	// ScheduleGet returns the tenant's schedule, or ErrNotFound.
	ScheduleGet(ctx context.Context, p *ScheduleGetParams) (*runtype.Schedule, error)
	// ScheduleList returns the tenant's schedules that match p; see
	// ScheduleListParams.
	ScheduleList(ctx context.Context, p *ScheduleListParams) ([]*runtype.Schedule, error)
	// ScheduleListDue returns schedules of every tenant whose NextCheckAt
	// is set and not after p.Now, earliest first, at most p.Limit (clamped
	// like other lists). It costs what it returns, not the number of
	// schedules.
	ScheduleListDue(ctx context.Context, p *ScheduleListDueParams) ([]*runtype.Schedule, error)
	// FireGet returns the tenant's fire, or ErrNotFound.
	FireGet(ctx context.Context, p *FireGetParams) (*runtype.Fire, error)
	// FireList returns a schedule's fires that match p, newest (highest
	// ID) first.
	FireList(ctx context.Context, p *FireListParams) ([]*runtype.Fire, error)
	// InstanceGet returns the tenant's named instance by ID, or
	// ErrNotFound; InstanceGetByName by name, InstanceGetBySession by
	// its session.
	InstanceGet(ctx context.Context, p *InstanceGetParams) (*runtype.Instance, error)
	InstanceGetByName(ctx context.Context, p *InstanceGetByNameParams) (*runtype.Instance, error)
	InstanceGetBySession(ctx context.Context, p *InstanceGetBySessionParams) (*runtype.Instance, error)
	// InstanceList returns the tenant's instances that match p, oldest
	// (lowest ID) first.
	InstanceList(ctx context.Context, p *InstanceListParams) ([]*runtype.Instance, error)

	// CapabilitySessionGet returns the tenant's capability session, its
	// RunIDs filled; ErrNotFound when the tenant has none with that ID.
	CapabilitySessionGet(ctx context.Context, p *CapabilitySessionGetParams) (*runtype.CapabilitySession, error)
	// CapabilitySessionList returns the tenant's capability sessions
	// that match p, their RunIDs filled; see CapabilitySessionListParams.
	CapabilitySessionList(ctx context.Context, p *CapabilitySessionListParams) ([]*runtype.CapabilitySession, error)
}

// DefaultListLimit applies when a list's Limit is zero; MaxListLimit caps it.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// ClampLimit applies DefaultListLimit and MaxListLimit to a caller's limit.
func ClampLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultListLimit
	case n > MaxListLimit:
		return MaxListLimit
	}
	return n
}

type SessionGetParams struct {
	TenantID string
	ID       string
}

// SessionListParams lists sessions newest first: by CreatedAt, latest
// first, and by ID (highest first) among sessions created at the same
// time, whatever the IDs look like (a caller may name a session). BeforeID
// pages: it names a session of the tenant, typically the last of the
// previous page, and only the sessions after it in that order are
// returned (CreatedAt never changes, so pages neither skip nor repeat a
// session); one the tenant does not have is an error wrapping
// ErrNotFound. A page costs its length, not the tenant's sessions. Agent,
// when set, keeps the sessions of that agent; Since and Until, when not
// zero, keep those created at or after Since and before Until. Filters
// apply before Limit.
type SessionListParams struct {
	TenantID string
	// PrincipalID, when set, keeps the sessions that principal created.
	PrincipalID string
	Agent       string
	Since       time.Time
	Until       time.Time
	BeforeID    string
	Limit       int
}

type ThreadGetParams struct {
	TenantID string
	ID       string
}

// ThreadListParams lists a session's threads oldest first. With
// SourceThreadID it lists instead the tenant's threads, of any session,
// whose Lineage continues that thread (forks and resets of it), oldest
// first; SessionID is then ignored.
type ThreadListParams struct {
	TenantID       string
	SessionID      string
	SourceThreadID string
}

type TurnGetParams struct {
	TenantID string
	ID       string
}

type TurnGetByIdempotencyKeyParams struct {
	TenantID       string
	IdempotencyKey string
}

// TurnListParams lists turns newest first, optionally of one session or
// thread and in one status. BeforeID pages as in SessionListParams.
// Statuses, when not empty, keeps turns in any of them (ANDed with
// Status); PrincipalID (who submitted), Agent, Since and Until filter as
// in SessionListParams.
type TurnListParams struct {
	TenantID    string
	PrincipalID string
	SessionID   string
	ThreadID    string
	Status      runtype.TaskStatus
	Statuses    []runtype.TaskStatus
	Agent       string
	Since       time.Time
	Until       time.Time
	BeforeID    string
	Limit       int
	// RolledBack, with ThreadID, lists the thread's rolled-back turns
	// (runtype.Turn.RolledBack) newest first, paged by BeforeID and
	// Limit; the other filters are then ignored. Its cost is the number
	// of such turns, not the thread's length.
	RolledBack bool
}

type TaskGetParams struct {
	TenantID string
	ID       string
}

// TaskListParams lists a session's tasks oldest first, or of one of its
// threads when ThreadID is set.
type TaskListParams struct {
	TenantID  string
	SessionID string
	ThreadID  string
	// ParentTaskID, when set, lists instead the tenant's tasks whose
	// lineage names that parent (its children, of any thread), oldest
	// first; SessionID and ThreadID are then ignored. Limit (0 for all)
	// bounds such a list.
	ParentTaskID string
	Limit        int
	// Open keeps the tasks that hold their thread (Holds): the drivers
	// read only those, however many tasks the thread had.
	Open bool
}

// Holds reports whether t holds its thread: it is neither terminal nor
// blocked, so a turn queued after it waits.
func Holds(t *runtype.Task) bool {
	return !t.Status.Terminal() && t.Status != runtype.StatusBlocked
}

// TaskSearchParams lists a tenant's tasks newest (highest ID) first,
// across sessions or of one (SessionID). Statuses, when not empty, keeps
// tasks in any of them; Agent keeps the tasks of turns of that agent;
// PrincipalID those that principal submitted; Since and Until keep tasks
// created at or after Since and before Until. BeforeID pages. Filters
// apply before Limit (clamped like other lists).
type TaskSearchParams struct {
	TenantID    string
	PrincipalID string
	SessionID   string
	Statuses    []runtype.TaskStatus
	Agent       string
	Since       time.Time
	Until       time.Time
	BeforeID    string
	Limit       int
}

// TurnTallyParams selects the thread whose turns TurnTally counts.
type TurnTallyParams struct {
	TenantID  string
	SessionID string
	ThreadID  string
}

// TurnTally is a thread's turns counted by status, with the IDs of those
// not completed (in ID order): what a read model must show however old.
// Drivers keep the counts as turns are written, so that its cost need not
// follow the thread's length (the SQLite driver reads only the turns not
// completed); it returns no records.
type TurnTally struct {
	Counts map[runtype.TaskStatus]int
	Open   []string
}

// TaskListDueParams selects due tasks: DueAt set and at or before Now,
// at most Limit (clamped like other lists). Tasks that have run before
// (CurrentRunID set: a lost worker's, a resumed or retried one) come
// first, so that work in flight is not starved by a backlog of new
// turns; then by DueAt, QueuedAt and ID.
//
// A task in status queued, or one that never started (no CurrentRunID:
// paused or retried before it ran), is due only at the head of its
// thread: when no other task of the thread that is open (neither
// terminal nor blocked) was queued before it (an earlier QueuedAt, or the
// same and a lower ID). One whose Control is cancel is due regardless, so
// that it can be ended.
type TaskListDueParams struct {
	Now   time.Time
	Limit int
}

// TaskCountParams counts a tenant's tasks (every tenant's with
// AllTenants) whose status is one of Statuses.
type TaskCountParams struct {
	TenantID   string
	AllTenants bool
	Statuses   []runtype.TaskStatus
}

// TaskQueueStatsParams selects the queue at Now: every tenant's, or
// TenantID's when set.
type TaskQueueStatsParams struct {
	Now      time.Time
	TenantID string
}

// TaskQueueStats describes the tasks waiting for a worker: those of every
// tenant (or of the one asked for) whose DueAt is set and at or before Now. That is every queued
// task (a submission is due at once, including one waiting for an
// earlier turn of its thread), every task due again (a resumed, retried
// or woken one) and every task whose worker's lease ran out; a task a
// worker holds is due only at its lease's expiry, so it is not counted
// while the lease lasts.
type TaskQueueStats struct {
	// Depth counts the waiting tasks.
	Depth int
	// Oldest is the task that has been due longest (the lowest DueAt,
	// then QueuedAt, then ID); nil when none waits.
	Oldest *runtype.Task
}

// TaskListInFlightParams lists the tasks in flight, at most Limit
// (clamped like other lists), in the order the store finds them cheapest
// (drivers use their due-time index: a task in flight is always due some
// time, at its lease's expiry while a worker holds it).
type TaskListInFlightParams struct {
	Limit int
}

// RunListParams lists runs oldest first, of one task or of a whole session.
// TaskIDs, when not empty, keeps the runs of any of those tasks (ANDed
// with SessionID and TaskID): the attempts of a page of tasks, in one read.
type RunListParams struct {
	TenantID  string
	SessionID string
	TaskID    string
	TaskIDs   []string
}

// MessageListParams lists a thread's messages with Seq > AfterSeq (and,
// when BeforeSeq is above zero, Seq < BeforeSeq) in Seq order, or newest
// first when Newest is set: Newest with a Limit reads the last Limit
// messages before BeforeSeq. Limit zero means all of them.
type MessageListParams struct {
	TenantID  string
	ThreadID  string
	AfterSeq  int64
	BeforeSeq int64
	Newest    bool
	Limit     int
}

// ThreadTotalsGetParams selects the thread whose totals ThreadTotalsGet
// returns.
type ThreadTotalsGetParams struct {
	TenantID string
	ThreadID string
}

// ThreadTotals are a thread's running totals: a projection of its
// messages, turns and runs that the store changes in the transaction that
// writes them, so that reading them costs the same however long the
// thread is. Rebuilt from the log, they are: LastSeq the highest
// message Seq (0 for none), Messages the number of messages. RollbackGen
// rises (by an amount a driver chooses, never falls) whenever a turn of
// the thread becomes, or stops being, rolled back (runtype.Turn.RolledBack:
// cancelled by a rollback, or marked by rollback_thread): its messages
// leave or rejoin the
// conversation. A reader that kept the conversation up to LastSeq with
// the same RollbackGen needs only the messages after it. Usage is the sum
// of the Usage of the thread's runs (costs may be added in any order).
type ThreadTotals struct {
	LastSeq     int64
	Messages    int64
	RollbackGen int64
	Usage       runtype.Usage
}

// MessageCountParams selects a thread's messages to count.
type MessageCountParams struct {
	TenantID string
	ThreadID string
}

// ToolCallListParams lists tool calls in start order, of one turn or of a
// whole session. TurnIDs, when not empty, keeps the calls of any of those
// turns (ANDed with TurnID); it needs SessionID.
type ToolCallListParams struct {
	TenantID  string
	SessionID string
	TurnID    string
	TurnIDs   []string
}

type ToolCallGetByOutputRefParams struct {
	TenantID string
	Ref      string
}

type BlobGetParams struct {
	TenantID string
	Ref      string
}

type LimitGetParams struct {
	TenantID string
	Scope    runtype.LimitScope
	ScopeID  string
}

// UsageTotalParams selects the runs whose usage UsageTotal sums: the
// tenant's runs, of one session when SessionID is set, whose StartedAt is
// at or after Since (every run when Since is zero, including runs not
// started yet). ThreadID, when set, keeps the runs of that thread.
type UsageTotalParams struct {
	TenantID  string
	SessionID string
	ThreadID  string
	Since     time.Time
}

type EventListAfterParams struct {
	Filter      event.Filter
	AfterCursor int64
	Limit       int
}

type EventLastSequenceParams struct {
	SessionID string
}

// ActionGetParams selects one action.
type ActionGetParams struct {
	TenantID string
	ID       string
}

// ActionListParams filters actions; empty fields match all.
type ActionListParams struct {
	TenantID string
	// AllTenants lists every tenant's actions, ignoring TenantID. It is
	// for the runtime's own sweeps (expiring actions), never for a
	// caller's request.
	AllTenants bool
	SessionID  string
	TurnID     string
	RunID      string
	Status     runtype.ActionStatus
	// Agent keeps the actions of turns of that agent; Since and Until,
	// when not zero, keep actions created at or after Since and before
	// Until.
	Agent string
	Since time.Time
	Until time.Time
	// Limit is clamped like other lists; BeforeID pages (ids sort by
	// creation).
	Limit    int
	BeforeID string
	// Oldest lists the oldest first (ascending IDs) instead of the
	// newest: the first Limit of those that match, BeforeID included.
	Oldest bool
}

// ActionStatsParams selects the actions ActionStats counts: the
// tenant's (every tenant's with AllTenants) in Status.
type ActionStatsParams struct {
	TenantID   string
	AllTenants bool
	Status     runtype.ActionStatus
}

// ActionStats counts actions and names the oldest (the lowest ID: ids
// sort by creation).
type ActionStats struct {
	Count int
	// Oldest is nil when Count is 0.
	Oldest *runtype.Action
}

// EventLastParams selects a session's last event.
type EventLastParams struct {
	TenantID  string
	SessionID string
}

// GrantListParams selects the grants that apply in a session.
type GrantListParams struct {
	TenantID  string
	SessionID string
}

// ReceiptListParams selects a session's receipts. Limit is clamped like
// other lists (zero means DefaultListLimit): page with AfterSeq to read a
// whole chain.
type ReceiptListParams struct {
	TenantID  string
	SessionID string
	AfterSeq  int64
	Limit     int
}

// TokenGetParams selects an API token by ID.
type TokenGetParams struct {
	ID string
}

// TokenGetByHashParams selects an API token by the hex SHA-256 of the
// token.
type TokenGetByHashParams struct {
	Hash string
}

// TokenListParams lists API tokens oldest first: a tenant's, or every
// tenant's with AllTenants. Revoked ones are listed too.
type TokenListParams struct {
	TenantID   string
	AllTenants bool
}

// CapabilitySessionGetParams selects one capability session.
type CapabilitySessionGetParams struct {
	TenantID string
	ID       string
}

// CapabilitySessionListParams lists a tenant's capability sessions
// ordered by CreatedAt, then ID. SessionID, Server and Status, when set,
// keep those of that agentrt session, MCP server and status. Limit is
// clamped like other lists. Listing one session's capability sessions
// costs what it returns, not the store's size. Each record's RunIDs are
// its last runtype.MaxCapabilityRuns runs (by At, then run ID), oldest
// first.
type CapabilitySessionListParams struct {
	TenantID  string
	SessionID string
	Server    string
	Status    runtype.CapabilitySessionStatus
	Limit     int
}

type SubagentGetParams struct {
	TenantID string
	ID       string
}

// SubagentListParams lists a tenant's subagents oldest (lowest ID) first.
// Each filter that is set applies: SessionID, ParentTaskID (the children
// a task spawned), ParentToolCallID (with ParentTaskID: the child one call
// spawned) and RootTaskID (a whole tree). AfterID pages; Limit is clamped
// like other lists.
type SubagentListParams struct {
	TenantID         string
	SessionID        string
	ParentTaskID     string
	ParentToolCallID string
	RootTaskID       string
	AfterID          string
	Limit            int
}

type JobGetParams struct {
	TenantID string
	ID       string
}

// JobListParams lists a tenant's jobs oldest first; SessionID and
// ParentTaskID filter when set. AfterID pages; Limit is clamped.
type JobListParams struct {
	TenantID     string
	SessionID    string
	ParentTaskID string
	AfterID      string
	Limit        int
}

// JobItemListParams lists a job's items in Index order from FromIndex
// (inclusive). Statuses, when not empty, keeps items in any of them;
// Retry keeps those with Retry set. Limit is clamped like other lists.
type JobItemListParams struct {
	TenantID  string
	JobID     string
	Statuses  []runtype.JobItemStatus
	Retry     bool
	FromIndex int
	Limit     int
}

type WorkflowRunGetParams struct {
	TenantID string
	ID       string
}

type InstanceGetParams struct {
	TenantID string
	ID       string
}

type InstanceGetByNameParams struct {
	TenantID string
	Name     string
}

type InstanceGetBySessionParams struct {
	TenantID  string
	SessionID string
}

// InstanceListParams lists a tenant's instances by ID; Agent filters
// when set. AfterID pages; Limit is clamped like other lists.
type InstanceListParams struct {
	TenantID string
	Agent    string
	AfterID  string
	Limit    int
}

// WorkflowRunListParams lists a tenant's workflow runs oldest first (by
// ID); SessionID, Workflow and Status filter when set. AfterID pages;
// Limit is clamped.
type WorkflowRunListParams struct {
	TenantID  string
	SessionID string
	Workflow  string
	Status    runtype.WorkflowStatus
	AfterID   string
	Limit     int
}

// ScheduleWake makes a schedule due at At (see Batch.ScheduleWakes).
type ScheduleWake struct {
	TenantID   string
	ScheduleID string
	At         time.Time
}

type ScheduleGetParams struct {
	TenantID string
	ID       string
}

// ScheduleListParams lists a tenant's schedules oldest (lowest ID)
// first. Each filter that is set applies: SessionID, Instance, Agent,
// IdempotencyKey, Statuses (any of them) and Failing
// (ConsecutiveFailures above zero).
// Soonest orders active schedules with a next fire by NextFireAt (then
// ID) instead, keeping only those. AfterID pages the ID order; Limit is
// clamped like other lists.
type ScheduleListParams struct {
	TenantID  string
	SessionID string
	Instance  string
	Agent     string
	// IdempotencyKey keeps the schedule created with that key.
	IdempotencyKey string
	Statuses       []runtype.ScheduleStatus
	Failing        bool
	Soonest        bool
	AfterID        string
	Limit          int
}

type ScheduleListDueParams struct {
	Now   time.Time
	Limit int
}

type FireGetParams struct {
	TenantID string
	ID       string
}

// FireListParams lists a schedule's fires newest first. Statuses (any of
// them), Delivery (fires whose delivery is in that state) and
// IdempotencyKey (the manual fire triggered with that key) filter when
// set; BeforeID pages; Limit is clamped like other lists.
type FireListParams struct {
	TenantID   string
	ScheduleID string
	Statuses   []runtype.FireStatus
	Delivery   runtype.DeliveryStatus
	// IdempotencyKey keeps the fire triggered with that key.
	IdempotencyKey string
	BeforeID       string
	Limit          int
}
