// Package storecopy moves a data directory's SQLite store into
// PostgreSQL (agentrt migrate-store): it opens both ends and runs
// pgstore.CopyFromSQLite between them, so that the command line, which
// reaches no store itself, has one call to make.
package storecopy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/agentrt/agentrt/store/pgstore"
	_ "github.com/agentrt/agentrt/store/sqlitestore" // the "sqlite" database/sql driver
)

// storeFile is the SQLite database in a data directory (the root
// package's storeFile).
const storeFile = "agentrt.db"

// FromSQLite copies the SQLite store of data directory dir into the
// PostgreSQL database at dbURL (postgres://…), which must be empty: it
// migrates the database to pgstore's schema first, then copies every
// table in one transaction (see pgstore.CopyFromSQLite). The source is
// read in one read transaction and left as it is. Errors never hold
// dbURL's password.
func FromSQLite(ctx context.Context, dir, dbURL string) (pgstore.Counts, error) {
	counts, err := fromSQLite(ctx, dir, dbURL)
	if err != nil {
		return nil, errors.New(Redact(err.Error(), dbURL))
	}
	return counts, nil
}

func fromSQLite(ctx context.Context, dir, dbURL string) (pgstore.Counts, error) {
	path := filepath.Join(dir, storeFile)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == nil && !fi.Mode().IsRegular():
		return nil, fmt.Errorf("no agentrt store at %s (no %s)", dir, storeFile)
	case err != nil:
		return nil, fmt.Errorf("looking for the store: %w", err)
	}
	src, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_busy_timeout=10000")
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer src.Close()
	if err := src.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}

	target, err := pgstore.Open(ctx, dbURL, pgstore.Options{})
	if err != nil {
		return nil, err
	}
	err = target.Migrate(ctx)
	target.Close()
	if err != nil {
		return nil, err
	}
	dst, err := sql.Open("pgx", dbURL)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", Redacted(dbURL), err)
	}
	defer dst.Close()
	return pgstore.CopyFromSQLite(ctx, src, dst)
}

// Redacted is dbURL with its password (in the user part or a password
// parameter), if any, replaced by "xxxxx".
func Redacted(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "the database URL (not a URL)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// Redact replaces dbURL, and its password, wherever they appear in s.
func Redact(s, dbURL string) string {
	s = strings.ReplaceAll(s, dbURL, Redacted(dbURL))
	u, err := url.Parse(dbURL)
	if err != nil {
		return s
	}
	var secrets []string
	if p, ok := u.User.Password(); ok {
		secrets = append(secrets, p)
	}
	secrets = append(secrets, u.Query()["password"]...)
	for _, p := range secrets {
		if p != "" {
			s = strings.ReplaceAll(s, p, "xxxxx")
		}
	}
	return s
}
