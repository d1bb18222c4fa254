// Package pgstore is the store.Store for several nodes: one PostgreSQL
// database (through github.com/jackc/pgx/v5) that any number of agentrt
// processes share.
//
// It runs the SQL core of package sqlitestore on PostgreSQL: the same
// tables, statements and transaction rules, written in PostgreSQL's
// dialect (rewrite.go), with this package's own embedded, numbered
// migrations (migration/NNN_name.up.sql and .down.sql).
//
// # Writes
//
// Each node has one write connection, into which store.Writer
// group-commits its runs' batches, and a read pool. Every write
// transaction first takes one transaction-scoped advisory lock
// (pg_advisory_xact_lock(writeLock)), so writes are serialized across
// nodes: commit order is cursor order, and the core's checks of event
// sequences, receipt chains and admission counts hold as they do on one
// SQLite file. A transaction that finds events another node committed
// since this node's last commit reads the sequences and chain ends of
// the sessions they wrote from the database rather than from what the
// node held in memory (a read of the largest cursor and of those
// sessions, with the lock, tells), and each batch has a
// savepoint: PostgreSQL aborts the whole transaction on a failed
// statement. Migrate takes the same lock, so nodes starting
// together migrate once; its DDL is transactional, so a migration that
// fails leaves nothing and running it again completes it.
//
// A batch's statements whose results are only checked go to the server
// as one pgx pipeline with its savepoint (pipeline.go, and the core's
// Dialect.Pipeline), and the lock rides in the transaction's first one:
// a step alone in its transaction is BEGIN, one pipeline and COMMIT.
// The batches the Writer commits together (store.GroupApplier) are two
// pipelines however many they are: the lock, the largest cursor and the
// sessions other nodes wrote, then every batch and the notification.
//
// # Notifications
//
// Each commit sends one pg_notify saying what it changed (notify.go); a
// Store is a store.Notifier whose listener, on a connection of its own,
// hears the commits of every other handle on the database, so that a
// runtime wakes at once what would wait for its next poll.
//
// # Errors
//
// A unique violation (SQLSTATE 23505) wraps store.ErrConflict; a lost or
// refused connection, a full disk (53100) and a server shutting down
// (57P01–57P03) wrap store.ErrStorage. The URL may hold a password:
// errors name the server by its redacted URL and never show it.
package pgstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"maps"
	"net"
	neturl "net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
)

//go:embed migration/*.sql
var migrationFS embed.FS

// writeLock is the key of the advisory lock every write transaction
// takes ("agentrt" and 1).
const writeLock = 0x6167656e747274_01

// Options configures Open.
type Options struct {
	// MaxConns caps the read pool (the write handle is one connection).
	// Default 8.
	MaxConns int
	// StatementTimeout bounds every statement on the server
	// (statement_timeout). Default 30s; negative: none.
	StatementTimeout time.Duration
	// ConnectTimeout bounds connecting to the server. Default 10s, or
	// the URL's connect_timeout.
	ConnectTimeout time.Duration
}

// WithDefaults returns o with zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.MaxConns <= 0 {
		o.MaxConns = 8
	}
	if o.StatementTimeout == 0 {
		o.StatementTimeout = 30 * time.Second
	}
	return o
}

// Store is a store.Store on one PostgreSQL database: the SQL core of
// package sqlitestore in PostgreSQL's dialect. It is safe for concurrent
// use, and any number of processes may share the database.
type Store struct {
	*sqlitestore.Store
	notes *listener // hears the commits of other handles (see notify.go)
	// claim and renew apply leases outside the write lock (see
	// ApplyLease); renew's commits do not wait for the WAL's flush.
	claim, renew *sql.DB
	closeOnce    sync.Once
}

// leaseConns is how many connections each lease handle has: a node's
// claims and heartbeats are short single statements, a heartbeat for
// each task it runs every third of the lease's time.
const leaseConns = 4

// ApplyLease applies a claim or a renewal as one statement on a handle
// of its own, without the write lock (store.LeaseApplier): a node's
// heartbeats and claims never wait behind the steps of the cluster.
// A fenced write locks its task's row FOR KEY SHARE until it commits,
// and lease_epoch is a key column (tasks_lease_key): a claim, which
// moves the epoch, waits for the write to end and then finds it
// committed; a renewal, which does not, never waits for it.
//
// A renewal commits without waiting for the WAL to reach the disk
// (synchronous_commit off): one the server loses in a crash only ends
// the lease sooner, and the holder's writes are fenced. A claim waits:
// one lost would let a second worker claim the same epoch.
func (s *Store) ApplyLease(ctx context.Context, c *store.LeaseChange) error {
	if c.Claim {
		return s.ApplyLeaseOn(ctx, s.claim, c)
	}
	return s.ApplyLeaseOn(ctx, s.renew, c)
}

// Close closes the store's handles.
func (s *Store) Close() error {
	err := s.Store.Close()
	s.closeOnce.Do(func() { err = errors.Join(err, s.claim.Close(), s.renew.Close()) })
	return err
}

// dialect is PostgreSQL's, for the SQL core.
var dialect = &sqlitestore.Dialect{
	Name:              "postgres",
	Migrations:        migrationFS,
	Rewrite:           rewrite,
	Translate:         translate,
	BeginSQL:          `SELECT pg_advisory_xact_lock(` + strconv.FormatInt(writeLock, 10) + `)`,
	AlwaysSavepoint:   true,
	Returning:         true,
	HeldSQL:           `SELECT COALESCE(max(cursor), 0) FROM events`,
	FenceLock:         `FOR KEY SHARE`,
	ChangedSQL:        `SELECT DISTINCT session_id FROM events WHERE cursor > $1 AND cursor <= $2`,
	HasSchemaTableSQL: `SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = 'agentrt_schema_migrations'`,
	VersionSQL:        `SHOW server_version`,
	CommitNote:        notifyCommit,
	Pipeline:          pipeline,
}

// Open connects to the PostgreSQL database at url (postgres://… or
// postgresql://…) with a write handle of one connection and a read pool.
// It does not migrate; call Migrate. Close closes both handles. The url
// may hold a password: errors name it redacted.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	opts = opts.WithDefaults()
	name, secret := redact(url)
	fail := func(err error) (*Store, error) {
		return nil, scrub(fmt.Errorf("opening postgres store %s: %w", name, err), secret)
	}
	cfg, err := connConfig(url, opts)
	if err != nil {
		return fail(err)
	}
	// The write connection names this handle as the origin of the
	// notifications it sends, so that its own listener skips them.
	origin := newOrigin()
	cfg.RuntimeParams[originSetting] = origin
	write := stdlib.OpenDB(*cfg)
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		return fail(translate(err))
	}
	readCfg := cfg.Copy()
	delete(readCfg.RuntimeParams, originSetting)
	readCfg.RuntimeParams["default_transaction_read_only"] = "on"
	read := stdlib.OpenDB(*readCfg)
	read.SetMaxOpenConns(opts.MaxConns)
	read.SetMaxIdleConns(opts.MaxConns)
	if err := read.PingContext(ctx); err != nil {
		write.Close()
		read.Close()
		return fail(translate(err))
	}
	core, err := sqlitestore.NewDialect(write, read, dialect)
	if err != nil {
		write.Close()
		read.Close()
		return fail(err)
	}
	core.SetOwned()
	leaseDB := func(params map[string]string) *sql.DB {
		c := readCfg.Copy()
		delete(c.RuntimeParams, "default_transaction_read_only")
		maps.Copy(c.RuntimeParams, params)
		db := stdlib.OpenDB(*c)
		db.SetMaxOpenConns(leaseConns)
		db.SetMaxIdleConns(leaseConns)
		return db
	}
	s := &Store{Store: core, notes: newListener(url, origin),
		claim: leaseDB(nil), renew: leaseDB(map[string]string{"synchronous_commit": "off"})}
	if err := core.Refresh(ctx); err != nil {
		s.Close()
		return fail(translate(err))
	}
	return s, nil
}

// connConfig parses url and applies opts (defaulted) to it.
func connConfig(url string, opts Options) (*pgx.ConnConfig, error) {
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		return nil, errors.New("invalid URL: want postgres://user@host:port/database")
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("invalid URL: %w", err)
	}
	if opts.ConnectTimeout > 0 {
		cfg.ConnectTimeout = opts.ConnectTimeout
	} else if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if opts.StatementTimeout > 0 {
		cfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(opts.StatementTimeout.Milliseconds(), 10)
	}
	cfg.RuntimeParams["application_name"] = "agentrt"
	return cfg, nil
}

// translate maps PostgreSQL's errors onto the store's. It leaves every
// other error as it is: the SQL core hands it the errors of any driver
// that are not SQLite's (see sqlitestore.Dialect), and a context's end is
// no storage failure.
func translate(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505": // unique_violation
			return fmt.Errorf("%w: %w", store.ErrConflict, err)
		case pe.Code == "53100", // disk_full
			strings.HasPrefix(pe.Code, "57P"), // admin_shutdown, crash_shutdown, cannot_connect_now
			strings.HasPrefix(pe.Code, "08"):  // connection exceptions
			return fmt.Errorf("%w: %w", store.ErrStorage, err)
		}
		return err
	}
	var (
		ce *pgconn.ConnectError
		ne net.Error
	)
	if errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %w", store.ErrStorage, err)
	}
	return err
}

// redact returns the URL as it may be shown (its password replaced),
// and the password, which must not be.
func redact(url string) (shown, secret string) {
	u, err := neturl.Parse(url)
	if err != nil {
		return "(an unparsable URL)", url
	}
	if p, ok := u.User.Password(); ok {
		secret = p
	}
	// A password given as a query parameter is one too.
	q := u.Query()
	if p := q.Get("password"); p != "" {
		secret = p
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted(), secret
}

// scrub removes secret from err's text, keeping err in the chain for
// errors.Is (the chain's own texts are not shown).
func scrub(err error, secret string) error {
	if secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &scrubbed{err, secret}
}

type scrubbed struct {
	err    error
	secret string
}

func (e *scrubbed) Error() string { return strings.ReplaceAll(e.err.Error(), e.secret, "xxxxx") }
func (e *scrubbed) Unwrap() error { return e.err }

// CheckIntegrity checks that the database answers a read, within ctx
// (store.IntegrityChecker). It does not walk the tables as SQLite's
// quick_check does: PostgreSQL checks its own pages (the WAL, and data
// checksums when the cluster has them), and a full check (amcheck) is
// the server operator's to run.
func (s *Store) CheckIntegrity(ctx context.Context) error {
	if err := s.Ping(ctx); err != nil {
		return fmt.Errorf("checking the postgres store: %w", err)
	}
	return nil
}
