package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

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
		{fmt.Errorf("reading: %w", context.DeadlineExceeded), nil}, // a net.Error, but the caller's
		{context.Canceled, nil},
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

func TestConnConfig(t *testing.T) {
	for _, tt := range []struct {
		url              string
		opts             Options
		timeout, connect string
	}{
		{"postgres://u@h/db", Options{}.WithDefaults(), "30000", "10s"},
		{"postgres://u@h/db?connect_timeout=3", Options{StatementTimeout: 250 * time.Millisecond}.WithDefaults(), "250", "3s"},
		{"postgresql://u@h/db", Options{StatementTimeout: -1, ConnectTimeout: time.Second}.WithDefaults(), "", "1s"},
	} {
		cfg, err := connConfig(tt.url, tt.opts)
		if err != nil {
			t.Fatalf("connConfig(%s): %v", tt.url, err)
		}
		if got := cfg.RuntimeParams["statement_timeout"]; got != tt.timeout {
			t.Errorf("connConfig(%s, %+v): statement_timeout %q, want %q", tt.url, tt.opts, got, tt.timeout)
		}
		if got := cfg.ConnectTimeout.String(); got != tt.connect {
			t.Errorf("connConfig(%s, %+v): connect timeout %s, want %s", tt.url, tt.opts, got, tt.connect)
		}
	}
}
