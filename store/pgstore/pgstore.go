// Package pgstore is the store.Store for several nodes: one PostgreSQL
// database (through github.com/jackc/pgx/v5) that any number of agentrt
// processes share.
//
// It runs the SQL core of package sqlitestore on PostgreSQL: the same
// tables, statements and transaction rules, written in PostgreSQL's
// dialect, with this package's own embedded, numbered migrations
// (migration/NNN_name.up.sql and .down.sql).
package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/agentrt/agentrt/store/sqlitestore"
)

// Options configures Open.
type Options struct {
	// MaxConns caps the read pool (the write handle is one connection).
	// Default 8.
	MaxConns int
	// StatementTimeout bounds every statement on the server
	// (statement_timeout). Default 30s; negative: none.
	StatementTimeout time.Duration
}

// Open connects to the PostgreSQL database at url (postgres://…) with a
// write handle of one connection and a read pool. It does not migrate;
// call Migrate. The url may hold a password: errors name it redacted.
func Open(ctx context.Context, url string, opts Options) (*sqlitestore.Store, error) {
	return nil, errors.New("pgstore: not built yet")
}
