package pgstore

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentrt/agentrt/store"
)

func TestTranslate(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	for _, tt := range []struct {
		err  error
		want error // nil: neither
	}{
		{&pgconn.PgError{Code: "23505"}, store.ErrConflict},
		{&pgconn.PgError{Code: "53100"}, store.ErrStorage},
		{&pgconn.PgError{Code: "57P01"}, store.ErrStorage},
		{&pgconn.PgError{Code: "57P03"}, store.ErrStorage},
		{&pgconn.PgError{Code: "08006"}, store.ErrStorage},
		{fmt.Errorf("writing: %w", refused), store.ErrStorage},
		{driver.ErrBadConn, store.ErrStorage},
		{&pgconn.PgError{Code: "42P01"}, nil}, // undefined table: a bug, not the disk
		{&pgconn.PgError{Code: "57014"}, nil}, // statement timeout
		{errors.New("other"), nil},
	} {
		got := translate(tt.err)
		for _, sentinel := range []error{store.ErrConflict, store.ErrStorage} {
			if errors.Is(got, sentinel) != (sentinel == tt.want) {
				t.Errorf("translate(%v) = %v; wraps %v: %v, want %v", tt.err, got, sentinel, !(sentinel == tt.want), sentinel == tt.want)
			}
		}
		if !errors.Is(got, tt.err) {
			t.Errorf("translate(%v) = %v, which lost the original", tt.err, got)
		}
	}
}

func TestRedact(t *testing.T) {
	for _, tt := range []struct{ url, shown, secret string }{
		{"postgres://u:pw@h:5432/db", "postgres://u:xxxxx@h:5432/db", "pw"},
		{"postgres://u@h/db?password=pw&sslmode=disable", "postgres://u@h/db?password=xxxxx&sslmode=disable", "pw"},
		{"postgres://u@h/db", "postgres://u@h/db", ""},
	} {
		shown, secret := redact(tt.url)
		if shown != tt.shown || secret != tt.secret {
			t.Errorf("redact(%s) = %s, %q; want %s, %q", tt.url, shown, secret, tt.shown, tt.secret)
		}
	}
}
