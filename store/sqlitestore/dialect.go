package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"

	"github.com/agentrt/agentrt/store"
)

// Dialect is what running this package's SQL core on another database
// (package pgstore: PostgreSQL) changes. The core — statements by
// queryID, the Tx's rules, the row codec — stays the same; the zero
// value of each field keeps SQLite's behaviour.
type Dialect struct {
	// Name is Info's Driver.
	Name string
	// Migrations hold migration/NNN_name.up.sql and .down.sql.
	Migrations fs.FS
	// Rewrite turns a statement written for SQLite into this dialect's.
	// It is applied once to each of the core's statements, and to the
	// few texts run outside them (migrations' bookkeeping, memories).
	Rewrite func(sqlite string) string
	// Translate maps the database's errors onto the store's (such as
	// store.ErrConflict and store.ErrStorage). It is process-wide: it
	// sees every error of the core that is not SQLite's, so it must
	// return those it does not know as they are (a context's end too).
	Translate func(error) error
	// BeginSQL is run first in every write transaction (and in
	// migrations'), such as a lock that serializes writers across
	// processes.
	BeginSQL string
	// AlwaysSavepoint gives every batch a savepoint: a database that
	// aborts the whole transaction on a failed statement cannot undo a
	// batch by rollback and replay.
	AlwaysSavepoint bool
	// Returning reads the cursors of inserted events and the ids of
	// inserted scopes by RETURNING rather than LastInsertId.
	Returning bool
	// HeldSQL reads, at each write transaction's start, the largest
	// committed event cursor. Session sequences and receipt chain ends
	// move only with events, so when it is not what this store's last
	// commit left, another process wrote: the store drops the sequences
	// and chain ends it holds in memory and reads them again (a dialect
	// that cannot retry a failed statement in its transaction must not
	// find out by a conflict). Empty: the store learns of other
	// processes by conflicts (see Tx).
	HeldSQL string
	// ChangedSQL lists the sessions of the events committed with cursors
	// in ($1, $2]. With it, a transaction that finds another process
	// wrote (HeldSQL) drops the held sequences and chain ends of those
	// sessions only, at their first use, rather than all it holds.
	ChangedSQL string
	// FenceLock is appended to a fence's read of its task's row (the
	// epoch), such as FOR SHARE: the row stays locked until the
	// transaction ends, for a dialect whose claims do not wait for the
	// write transactions (ApplyLeaseOn).
	FenceLock string
	// HasSchemaTableSQL counts (0 or 1) the tables named
	// agentrt_schema_migrations.
	HasSchemaTableSQL string
	// VersionSQL reads the database's version, for Info.
	VersionSQL string
	// CommitNote, when set, is a statement a Tx runs last before COMMIT,
	// made of the batches it applied; an empty query: none. A grouped Tx
	// sends it with the group's statements (Tx.ApplyGroup).
	CommitNote func(applied []*store.Batch) (query string, args []any)
	// Pipeline, when set, runs stmts in order in the transaction open
	// on conn, all in one round trip, and sets each one's N and Last. It
	// stops at the first that fails and returns its index with the
	// error (len(stmts) and nil when none fails). With it, a Tx queues
	// the statements of a batch whose results are only checked, and
	// sends them together: at the end of each Apply, and before any
	// other statement (see Tx.flush).
	Pipeline func(ctx context.Context, conn *sql.Conn, stmts []Queued) (int, error)
}

// Queued is a statement of a Dialect.Pipeline.
type Queued struct {
	SQL  string
	Args []any
	// Returning: the statement returns rows of one BIGINT; N counts them
	// and Last is the last one's. Otherwise N is the rows it affected.
	// Texts: it returns rows of one TEXT, which Pipeline puts in Texts.
	Returning, Texts bool
	N, Last          int64
	Text             []string
}

// sqliteDialect is SQLite's: every field as the core was written.
var sqliteDialect = &Dialect{
	Name:              "sqlite",
	Migrations:        migrationFS,
	HasSchemaTableSQL: `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'agentrt_schema_migrations'`,
	VersionSQL:        `SELECT sqlite_version()`,
}

// foreignTranslate is the Translate of the dialect NewDialect was last
// given: translate, called throughout the core, hands it the errors that
// are not SQLite's. (A process runs one foreign dialect.)
var foreignTranslate atomic.Pointer[func(error) error]

// NewDialect returns a Store running the core on handles the caller
// opened and keeps, as New does, in dialect d: write must allow one
// connection. It fails when d's migrations do not load.
func NewDialect(write, read *sql.DB, d *Dialect) (*Store, error) {
	ms, err := loadMigrations(d.Migrations)
	if err != nil {
		return nil, fmt.Errorf("opening %s store: %w", d.Name, err)
	}
	if d.Translate != nil {
		foreignTranslate.Store(&d.Translate)
	}
	texts := new([numQueries]string)
	for q := range numQueries {
		text := queries[q]
		if d.FenceLock != "" {
			switch {
			case q == qTaskFence:
				text += " " + d.FenceLock
			case q >= qFencedEvents && q < qFencedEvents+maxEventRows:
				text = strings.TrimSuffix(text, ")") + " " + d.FenceLock + ")"
			}
		}
		if d.Returning {
			switch {
			case q >= qInsertEvent && q < qInsertEvent+maxEventRows, q >= qFencedEvents && q < qFencedEvents+maxEventRows:
				text += ` RETURNING cursor`
			case q == qInsertScope:
				text += ` RETURNING id`
			}
		}
		texts[q] = d.sql(text)
	}
	s := newStore(write, read, d, ms, texts)
	if d.Pipeline != nil {
		s.pipeTexts = newPipeTexts(d)
	}
	return s, nil
}

// sql returns text in the dialect.
func (d *Dialect) sql(text string) string {
	if d.Rewrite == nil {
		return text
	}
	return d.Rewrite(text)
}

// Ping reads from the database through the read pool: an error wraps
// store.ErrStorage when the database cannot be reached.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	var version string
	if err := s.read.QueryRowContext(ctx, s.d.VersionSQL).Scan(&version); err != nil {
		return fmt.Errorf("reading %s version: %w", s.d.Name, translate(err))
	}
	return nil
}

// HeldMisses counts the reads of an event sequence or a receipt chain's
// end that the store did not hold: its first write to a session, and
// what other processes' writes to the session cost it (see
// Dialect.HeldSQL and ChangedSQL).
func (s *Store) HeldMisses() int64 { return s.heldMisses.Load() }

// RoundTrips counts what the store's write transactions sent to the
// database as pipelines (Dialect.Pipeline) and single statements, but
// for BEGIN, savepoints, the commit's note and COMMIT.
func (s *Store) RoundTrips() int64 { return s.roundTrips.Load() }

// beginWrite begins a transaction on the write connection, running the
// dialect's BeginSQL first.
func (s *Store) beginWrite(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("beginning transaction: %w", translate(err))
	}
	if s.d.BeginSQL != "" {
		if _, err := tx.ExecContext(ctx, s.d.BeginSQL); err != nil {
			_ = tx.Rollback()
			return nil, fmt.Errorf("beginning transaction: %w", translate(err))
		}
	}
	return tx, nil
}

// Refresh reads the database's version and the schema version it is at,
// for Info: a Store from NewDialect reports them once it has.
func (s *Store) Refresh(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.refreshInfo(ctx)
}

// ApplyLeaseOn applies c, a claim without Alone or a renewal, as one
// autocommitted statement on db rather than in a write transaction: a
// dialect's store.LeaseApplier, whose writes (BeginSQL) would wait
// behind other processes'. The dialect's fences must then lock the
// task's row until their transaction ends (FenceLock), so that a claim
// waits for a fenced write under way rather than slip in before its
// commit.
func (s *Store) ApplyLeaseOn(ctx context.Context, db *sql.DB, c *store.LeaseChange) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if !c.Standalone() {
		return fmt.Errorf("changing the lease of task %s: only a claim without Alone or a renewal applies alone", c.TaskID)
	}
	q, args := leaseChange(c)
	res, err := db.ExecContext(ctx, s.w.texts[q], args...)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		return fmt.Errorf("changing the lease of task %s: %w", c.TaskID, translate(err))
	}
	if n == 0 {
		return c.Lost()
	}
	return nil
}
