package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"

	"net/url"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// PostgresEnv names the environment variable that holds an admin URL of
// the PostgreSQL server the tests may use (scripts/test-postgres starts
// one; .ci/run does so before the tests).
const PostgresEnv = "AGENTRT_TEST_POSTGRES"

// Postgres returns the URL of a new, empty database on the test server,
// dropped (with whatever connections remain) when the test ends. Without
// a server the test is Missing one.
func Postgres(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(PostgresEnv)
	if admin == "" {
		Missing(t, "no PostgreSQL: %s is not set (eval \"$(scripts/test-postgres start)\")", PostgresEnv)
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", PostgresEnv, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatalf("opening %s: %v", PostgresEnv, err)
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		Missing(t, "PostgreSQL at %s does not answer: %v", u.Redacted(), err)
	}
	var b [6]byte
	rand.Read(b[:])
	name := "agentrt_test_" + hex.EncodeToString(b[:])
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db, err := sql.Open("pgx", admin)
		if err != nil {
			t.Errorf("dropping database %s: %v", name, err)
			return
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// PostgresAdmin returns the admin URL of the test server, for tests that
// stop or break connections; without a server the test is Missing one.
func PostgresAdmin(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(PostgresEnv)
	if admin == "" {
		Missing(t, "no PostgreSQL: %s is not set", PostgresEnv)
	}
	return admin
}
