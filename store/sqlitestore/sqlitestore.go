// Package sqlitestore is the embedded store.Store: one SQLite database file
// through modernc.org/sqlite (pure Go, no cgo).
//
// It also holds the SQL core both SQL drivers share: the statements (by
// queryID), the write transaction's rules (Tx), the row codec and the
// migration runner. Package pgstore runs the same core on PostgreSQL
// through NewDialect, with a Dialect that rewrites the statements and
// brings its own migrations; everything below describes SQLite.
//
// # Limits
//
// SQLite allows one writer at a time. The store keeps exactly one write
// connection, and every transaction takes the write lock when it begins
// (BEGIN IMMEDIATE), so transactions run one after another; store.Writer
// group-commits many runs' batches into each of them, which is what makes
// durable throughput independent of the fsync rate. The database runs in
// WAL mode: reads go through a separate pool of read-only connections and
// see the last committed state; readers never block the writer and the
// writer never blocks readers. The WAL is checkpointed into the database
// file by the committing connection once it holds about 40 MB.
//
// One process writes a file at a time: a second one waits up to the busy
// timeout for the lock, and the store caches each session's last event
// sequence, so writes from two processes to one session can conflict
// (each conflict refreshes the cache). The end of each session's evidence
// receipt chain is held in memory too, and the chain's key (tenant,
// session, seq) is the safety net: a receipt numbered after a held end
// that another process has moved conflicts, and the batch reads the end
// and seals again, once, so two processes extend a chain, never fork it.
//
// Errors of the file rather than of the request — SQLITE_FULL, IOERR,
// READONLY, CANTOPEN, PERM — wrap store.ErrStorage, and those of a damaged
// database — CORRUPT, NOTADB — store.ErrCorrupt. CheckIntegrity runs
// quick_check; a Tx's Probe rewrites one row as it is, so that a commit
// shows whether the disk takes writes again.
//
// Durability follows the synchronous pragma: FULL (the default) syncs the
// WAL on every commit, so a committed batch survives power loss; NORMAL
// survives a crash of the process but may lose the last commits on power
// loss, for cheaper commits.
//
// # Cost
//
// A step's batch costs one INSERT per row (events four to a statement),
// no savepoint (see Tx), and the WAL pages its rows touch: each index keyed
// by session or thread adds a page per session per commit, so the schema
// has no index a Reader method does not need. An event stores its JSON
// without the ids its run shares (compact.go): those are one event_scopes
// row per run, inserted by the run's first batch in this process. Sealed
// events (store.Sealed) add a receipt each, four to a statement: the
// event's cursor and a 32-byte hash, no copy of the event, and no read of
// the chain's end but the first for a session (see Tx.seal). Reading
// events joins each to its scope by key. UsageTotal reads the usage
// JSON of every run it sums, through the tenant's (or the session's) runs
// index, so its cost grows with the number of runs since Since.
//
// A batch's Fence costs one read of its task by key; a lease change or
// task update, one UPDATE. TaskListDue walks the due tasks in order and,
// for each queued one, the tasks queued before it in its thread (so a long
// thread of finished tasks makes its queued tasks dearer to check).
// TaskCount scans every task (no index is kept by status, which would cost
// a page each time a task's status changes), except for the queued ones:
// triggers keep their count by tenant and in all, in the transaction that
// changes a task's status into or out of queued (a page or two per
// commit), so a batch's Admission costs two keyed reads however long the
// queue is.
//
// # Schema
//
// The driver owns its schema as embedded, numbered migrations
// (migration/NNN_name.up.sql and .down.sql) recorded in the
// agentrt_schema_migrations table. Migrate applies what is missing and
// refuses a database migrated by a newer agentrt (store.ErrSchemaTooNew).
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/agentrt/agentrt/store"
)

// Options configures Open.
type Options struct {
	// Synchronous is the write connection's synchronous pragma: "FULL"
	// (default) or "NORMAL". See the package doc.
	Synchronous string
	// BusyTimeout bounds how long a connection waits for a lock another
	// process holds. Default 5s.
	BusyTimeout time.Duration
	// ReadConns caps the read pool. Default GOMAXPROCS, at least 4.
	ReadConns int
}

// WithDefaults returns o with zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.Synchronous == "" {
		o.Synchronous = "FULL"
	}
	o.Synchronous = strings.ToUpper(o.Synchronous)
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.ReadConns <= 0 {
		o.ReadConns = max(4, runtime.GOMAXPROCS(0))
	}
	return o
}

func (o Options) validate() error {
	switch o.Synchronous {
	case "FULL", "NORMAL":
	default:
		return fmt.Errorf("invalid synchronous %q: want FULL or NORMAL", o.Synchronous)
	}
	return nil
}

// Store is a store.Store on one SQLite database. It is safe for concurrent
// use.
type Store struct {
	reader

	d      *Dialect
	migs   []migration // d's, by version
	write  *sql.DB     // one connection
	read   *sql.DB
	owns   bool    // Close closes write and read
	w, r   stmtSet // statements prepared on write and read
	closed atomic.Bool
	// shared: another process was seen writing to the file; batches get
	// savepoints instead of replays (see Tx).
	shared atomic.Bool

	infoMu sync.Mutex
	info   store.Info // guarded by infoMu

	// lastSeq caches the highest committed event sequence of sessions, so
	// that Apply checks that sequences rise, and EventLastSequence answers,
	// without a query. Only the transaction holding the write connection
	// uses it, so transactions take turns like they do for the connection.
	lastSeq map[string]int64
	// heads holds the end of sessions' receipt chains and scopes the ids
	// of event_scopes rows, so that a batch neither reads a chain's end
	// nor looks its scope up; see Tx.seal and Tx.scopeID for why each is
	// safe with other processes on the file. Like lastSeq, only the
	// transaction holding the write connection uses them.
	heads  map[chainKey]chainHead
	scopes map[eventScope]int64
	// heldAt is the largest event cursor committed when the last
	// transaction of this store committed, with Dialect.HeldSQL.
	heldAt int64
	// receiptReads counts reads of a chain's end, for tests; heldMisses
	// reads of a sequence or a chain's end the store did not hold;
	// roundTrips what write transactions sent (see RoundTrips).
	receiptReads, heldMisses, roundTrips atomic.Int64
	// pipeTexts are the statements only a Tx with a Dialect.Pipeline
	// runs; nil without one.
	pipeTexts *pipeTexts
}

// maxSeqCache bounds lastSeq; beyond it the cache is dropped and refilled
// from the database on demand.
const maxSeqCache = 50_000

// maxHeldCache bounds heads and scopes, whose entries are larger and
// matter only for the runs in flight; beyond it they are dropped. A chain
// head dropped costs one read when its session seals again, a scope
// dropped one more event_scopes row.
const maxHeldCache = 8192

var (
	_ store.Store            = (*Store)(nil)
	_ store.IntegrityChecker = (*Store)(nil)
)

// Open opens (creating if needed) the database file at path with a write
// handle of one connection and a read pool, both in WAL mode. The file,
// its WAL and shared-memory file are private to their owner (0600). It does not
// migrate; call Migrate. Close closes both handles.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	opts = opts.WithDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("opening sqlite store: %w", err)
	}
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("opening sqlite store: invalid path %q", path)
	}
	if err := private(path); err != nil {
		return nil, fmt.Errorf("opening sqlite store %s: %w", path, err)
	}
	busy := strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)
	// temp_store(memory): statement journals stay off the disk.
	// wal_autocheckpoint(10000): checkpoint every ~40 MB of WAL rather than
	// every 4 MB; pages a step rewrites (index leaves, table tails) are then
	// copied to the database once per many commits instead of once per few.
	write, err := sql.Open("sqlite", path+"?_busy_timeout="+busy+
		"&_journal_mode=WAL&_synchronous="+opts.Synchronous+"&_txlock=immediate"+
		"&_pragma=temp_store(memory)&_pragma=wal_autocheckpoint(10000)")
	if err != nil {
		return nil, fmt.Errorf("opening sqlite store %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)
	// Open the write connection first: it switches the file to WAL, which
	// the read-only connections cannot do.
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("opening sqlite store %s: %w", path, translate(err))
	}
	read, err := sql.Open("sqlite", path+"?_busy_timeout="+busy+"&_query_only=1")
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("opening sqlite store %s: %w", path, err)
	}
	read.SetMaxOpenConns(opts.ReadConns)
	read.SetMaxIdleConns(opts.ReadConns)
	if err := read.PingContext(ctx); err != nil {
		write.Close()
		read.Close()
		return nil, fmt.Errorf("opening sqlite store %s: %w", path, translate(err))
	}
	s := New(write, read)
	s.owns = true
	if err := s.refreshInfo(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("opening sqlite store %s: %w", path, translate(err))
	}
	return s, nil
}

// private creates the database file readable and writable by its owner
// only (0600), and takes away what other users may do with an existing
// one and its -wal and -shm: the database holds every conversation.
// SQLite gives the files it makes beside the database the database's
// mode. A file this process may not change the mode of is left as it
// is.
func private(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if mode := fi.Mode().Perm(); mode&0o077 != 0 {
			if err := os.Chmod(p, mode&0o700); err != nil && !errors.Is(err, fs.ErrPermission) {
				return err
			}
		}
	}
	return nil
}

// New returns a Store on handles the caller opened and keeps: write must
// allow one connection (SetMaxOpenConns(1)) and begin transactions with
// BEGIN IMMEDIATE (the "_txlock=immediate" DSN parameter); read may be a
// pool on the same file, or write itself. Close does not close them.
// Info reports versions once Migrate has run.
func New(write, read *sql.DB) *Store {
	return newStore(write, read, sqliteDialect, migrations, &queries)
}

func newStore(write, read *sql.DB, d *Dialect, migs []migration, texts *[numQueries]string) *Store {
	s := &Store{d: d, migs: migs, write: write, read: read}
	s.w.db, s.r.db = write, read
	s.w.texts, s.r.texts = texts, texts
	s.reader = reader{q: storeQuerier{s}}
	s.info = store.Info{Driver: d.Name, Durable: true, SchemaLatest: len(migs)}
	return s
}

// SetOwned makes Close close the handles the Store was made with.
func (s *Store) SetOwned() { s.owns = true }

// Info describes the driver: durable, with the SQLite library version and
// the schema version last seen.
func (s *Store) Info() store.Info {
	s.infoMu.Lock()
	defer s.infoMu.Unlock()
	return s.info
}

func (s *Store) refreshInfo(ctx context.Context) error {
	var version string
	if err := s.read.QueryRowContext(ctx, s.d.VersionSQL).Scan(&version); err != nil {
		return fmt.Errorf("reading %s version: %w", s.d.Name, translate(err))
	}
	schema, err := s.schemaVersion(ctx, s.read)
	if err != nil {
		return err
	}
	s.infoMu.Lock()
	s.info.Version, s.info.SchemaVersion = version, schema
	s.infoMu.Unlock()
	return nil
}

// CheckIntegrity runs SQLite's quick_check: every page of every table
// and index parses and every b-tree is well formed. (integrity_check also
// matches each index against its table, at about five times the cost.)
// It reads the whole file, about 3 s per GB from the page cache and much
// more from a cold disk, so bound it with ctx; it reads through the read
// pool and holds no lock writers wait for. A damaged database yields an
// error wrapping store.ErrCorrupt with quick_check's first findings.
func (s *Store) CheckIntegrity(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	var findings []string
	err := func() error {
		rows, err := s.read.QueryContext(ctx, `PRAGMA quick_check(5)`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			findings = append(findings, line)
		}
		return rows.Err()
	}()
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("running quick_check: %w", context.Cause(ctx))
	case err != nil:
		return fmt.Errorf("running quick_check: %w", translate(err))
	case len(findings) == 1 && findings[0] == "ok":
		return nil
	}
	return fmt.Errorf("%w: quick_check found: %s", store.ErrCorrupt, strings.Join(findings, "; "))
}

// Close closes the prepared statements and, for a Store from Open, the
// database handles. Later calls return store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	err := errors.Join(s.w.close(), s.r.close())
	if s.owns {
		err = errors.Join(err, s.write.Close(), s.read.Close())
	}
	if err != nil {
		return fmt.Errorf("closing %s store: %w", s.d.Name, err)
	}
	return nil
}

// Begin starts a write transaction, waiting for the previous one to end.
func (s *Store) Begin(ctx context.Context) (store.Tx, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if err := s.w.prepareAll(ctx); err != nil {
		return nil, fmt.Errorf("beginning transaction: %w", err)
	}
	if s.d.Pipeline != nil {
		conn, sqlTx, err := s.beginPipelined(ctx)
		if err != nil {
			return nil, err
		}
		tx := s.newTx(ctx, sqlTx, s.heldAt) // as held until the first flush says
		tx.conn = conn
		tx.queueBegin()
		return tx, nil
	}
	sqlTx, err := s.beginWrite(ctx)
	if err != nil {
		return nil, err
	}
	var heldAt int64
	if s.d.HeldSQL != "" {
		if err := sqlTx.QueryRowContext(ctx, s.d.HeldSQL).Scan(&heldAt); err != nil {
			_ = sqlTx.Rollback()
			return nil, fmt.Errorf("beginning transaction: %w", translate(err))
		}
	}
	return s.newTx(ctx, sqlTx, heldAt), nil
}

// newTx returns a Tx on sqlTx, begun when the largest committed event
// cursor was heldAt (with Dialect.HeldSQL).
func (s *Store) newTx(ctx context.Context, sqlTx *sql.Tx, heldAt int64) *Tx {
	if s.d.HeldSQL != "" && heldAt != s.heldAt {
		s.lastSeq, s.heads = nil, nil
	}
	if s.lastSeq == nil || len(s.lastSeq) > maxSeqCache {
		s.lastSeq = make(map[string]int64)
	}
	if s.heads == nil || len(s.heads) > maxHeldCache {
		s.heads = make(map[chainKey]chainHead)
	}
	if s.scopes == nil || len(s.scopes) > maxHeldCache {
		s.scopes = make(map[eventScope]int64)
	}
	tx := &Tx{s: s, beginCtx: ctx, tx: sqlTx, heldAt: heldAt}
	tx.reader = reader{q: tx}
	return tx
}

// storeQuerier runs reads on the read pool.
type storeQuerier struct{ s *Store }

func (q storeQuerier) query(ctx context.Context, id queryID, args ...any) (*sql.Rows, error) {
	if q.s.closed.Load() {
		return nil, store.ErrClosed
	}
	st, err := q.s.r.get(ctx, id)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}
