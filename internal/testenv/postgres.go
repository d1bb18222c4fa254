package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"

	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// PostgresCluster is a PostgreSQL server of a test's own, for tests that
// stop and start it: scripts/test-postgres made it in a temp dir, and
// removes it when the test ends.
type PostgresCluster struct {
	// URL is the admin URL of its postgres database.
	URL    string
	dir    string
	script string
}

// NewPostgresCluster starts a cluster of the test's own; without
// PostgreSQL's programs the test is Missing them. It takes a few seconds.
func NewPostgresCluster(t testing.TB) *PostgresCluster {
	t.Helper()
	if bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(bins) == 0 {
		Missing(t, "no PostgreSQL programs under /usr/lib/postgresql (apt-get install postgresql)")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	c := &PostgresCluster{script: filepath.Join(root, "scripts", "test-postgres")}
	out, err := exec.Command(c.script, "start").Output()
	if err != nil {
		t.Fatalf("starting a PostgreSQL cluster: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		k, v, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "export "), "=")
		v = strings.Trim(v, "'")
		switch k {
		case "AGENTRT_TEST_POSTGRES":
			c.URL = v
		case "AGENTRT_TEST_POSTGRES_DIR":
			c.dir = v
		}
	}
	if c.URL == "" || c.dir == "" {
		t.Fatalf("scripts/test-postgres start printed no URL and directory: %q", out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(c.script, "stop", c.dir).CombinedOutput(); err != nil {
			t.Errorf("removing the PostgreSQL cluster %s: %v: %s", c.dir, err, out)
		}
	})
	return c
}

// Stop stops the server (its data stays); Start starts it again on the
// same port.
func (c *PostgresCluster) Stop(t testing.TB) { c.run(t, "stop-server") }

// Start starts a server Stop stopped.
func (c *PostgresCluster) Start(t testing.TB) { c.run(t, "start-server") }

func (c *PostgresCluster) run(t testing.TB, verb string) {
	t.Helper()
	if out, err := exec.Command(c.script, verb, c.dir).CombinedOutput(); err != nil {
		t.Fatalf("scripts/test-postgres %s: %v: %s", verb, err, out)
	}
}
