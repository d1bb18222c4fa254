package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestParseStore: the store section reaches the File; without one the
// store is the embedded SQLite database (the zero Store).
func TestParseStore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want Store
	}{
		{"all", okAgent + "store:\n  url: postgres://agentrt@db.internal:5432/agentrt?sslmode=require\n  max_conns: 16\n  statement_timeout: 45s\n",
			Store{URL: "postgres://agentrt@db.internal:5432/agentrt?sslmode=require", MaxConns: 16, StatementTimeout: 45 * time.Second}},
		{"postgresql scheme", okAgent + "store: {url: 'postgresql:///agentrt?host=/run/postgresql'}\n",
			Store{URL: "postgresql:///agentrt?host=/run/postgresql"}},
		{"timeout off", okAgent + "store: {url: 'postgres://h/db', statement_timeout: off}\n",
			Store{URL: "postgres://h/db", StatementTimeout: StatementTimeoutOff}},
		{"null", okAgent + "store:\n", Store{}},
		{"none", okAgent, Store{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("agentrt.yaml", []byte(tt.src), fixture(t), Options{})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, f.Store); diff != "" {
				t.Errorf("store (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseStoreErrors: a bad store section is reported at its line and
// column, and never quotes a password the URL holds.
func TestParseStoreErrors(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-pw"
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"scheme", okAgent + "store:\n  url: mysql://u:" + secret + "@h/db\n", []string{
			`agentrt.yaml:5:8: store.url: the scheme "mysql" is not a store: want postgres://USER@HOST:PORT/DATABASE (leave the store out for the embedded SQLite database)`,
		}},
		{"not a URL", okAgent + "store:\n  url: \"postgres://u:" + secret + "@h:port/db\"\n", []string{
			`agentrt.yaml:5:8: store.url: not a URL (invalid port ":port" after host); want postgres://USER@HOST:PORT/DATABASE`,
		}},
		{"no scheme", okAgent + "store:\n  url: " + secret + "\n", []string{
			`agentrt.yaml:5:8: store.url: not a URL; want postgres://USER@HOST:PORT/DATABASE`,
		}},
		{"empty", okAgent + "store:\n  url: ''\n", []string{
			`agentrt.yaml:5:8: store.url: empty; leave the store out for the embedded SQLite database`,
		}},
		{"unknown key", okAgent + "store:\n  url: postgres://h/db\n  statment_timeout: 4s\n", []string{
			`agentrt.yaml:6:3: unknown key "statment_timeout" in store; did you mean statement_timeout?`,
		}},
		{"bad duration", okAgent + "store:\n  statement_timeout: soon\n", []string{
			`agentrt.yaml:5:22: store.statement_timeout must be a duration such as 10s or 1m30s, or off, got string "soon"`,
		}},
		{"max_conns range", okAgent + "store:\n  max_conns: 0\n", []string{
			`agentrt.yaml:5:14: store.max_conns must be between 1 and 1000, got 0`,
		}},
		{"not a mapping", okAgent + "store: postgres://h/db\n", []string{
			`agentrt.yaml:4:8: store must be a mapping, got string "postgres://h/db"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			_, err := Parse("agentrt.yaml", []byte(tt.yaml), dir, Options{})
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if diff := cmp.Diff(tt.want, errorLines(t, err, dir)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes the password: %v", err)
			}
		})
	}
}

// TestStoreLocation: what is shown of a URL has neither its user, its
// password nor its query.
func TestStoreLocation(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"": "",
		"postgres://u:pw@db.internal:5432/agentrt":          "postgres://db.internal:5432/agentrt",
		"postgres://db/agentrt?password=pw&sslmode=require": "postgres://db/agentrt",
		"postgresql:///agentrt?host=/run/postgresql":        "postgresql:///agentrt",
		"mysql://u:pw@h/db":                                 "(an invalid store URL)",
	}
	for in, want := range tests {
		if got := StoreLocation(in); got != want {
			t.Errorf("StoreLocation(%q) = %q, want %q", in, got, want)
		}
	}
	if diff := cmp.Diff([]string{"pw", "qpw"}, StoreSecrets("postgres://u:pw@h/db?password=qpw")); diff != "" {
		t.Errorf("StoreSecrets (-want +got):\n%s", diff)
	}
	if got := StoreSecrets("postgres://u@h/db"); len(got) != 0 {
		t.Errorf("StoreSecrets without a password = %q", got)
	}
}
