package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/config"
)

// TestSelectStore: --store wins over $AGENTRT_STORE_URL, which wins over
// the config's store.url; the config's pool size and statement timeout
// apply whichever URL wins; without any, the store is SQLite's (no URL).
// A bad URL of the flag or the variable is a usage error naming where it
// came from, never quoting the URL.
func TestSelectStore(t *testing.T) {
	file := config.Store{URL: "postgres://file-host/db", MaxConns: 4, StatementTimeout: 5 * time.Second}
	tests := []struct {
		name      string
		flag, env string
		file      config.Store
		want      config.Store
		wantErr   string
	}{
		{"default", "", "", config.Store{}, config.Store{}, ""},
		{"file", "", "", file, file, ""},
		{"env over file", "", "postgres://env-host/db", file,
			config.Store{URL: "postgres://env-host/db", MaxConns: 4, StatementTimeout: 5 * time.Second}, ""},
		{"flag over env", "postgres://flag-host/db", "postgres://env-host/db", file,
			config.Store{URL: "postgres://flag-host/db", MaxConns: 4, StatementTimeout: 5 * time.Second}, ""},
		{"flag over a bad env", "postgres://flag-host/db", "sqlite://x", config.Store{},
			config.Store{URL: "postgres://flag-host/db"}, ""},
		{"bad flag", "mysql://u:hunter2@h/db", "", file, config.Store{},
			`--store: the scheme "mysql" is not a store`},
		{"bad env", "", "mysql://u:hunter2@h/db", file, config.Store{},
			`$AGENTRT_STORE_URL: the scheme "mysql" is not a store`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(config.StoreURLEnv, tt.env)
			got, err := selectStore(tt.flag, tt.file)
			if tt.wantErr != "" {
				var ee *exitError
				if !errors.As(err, &ee) || ee.code != ExitUsage || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("error = %v, want a usage error with %q and no password", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("store (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScrubStoreErr: a driver error that quoted the URL or its password
// is rewritten without them; one that did not is kept as it is.
func TestScrubStoreErr(t *testing.T) {
	t.Parallel()
	const raw = "postgres://agentrt:hunter2@db:5432/agentrt?password=qpw"
	err := scrubStoreErr(errors.New("dial "+raw+": refused (password hunter2, qpw)"), raw)
	if want := "dial postgres://db:5432/agentrt: refused (password xxxxx, xxxxx)"; err.Error() != want {
		t.Errorf("scrubbed = %q, want %q", err, want)
	}
	plain := errors.New("connection refused")
	if got := scrubStoreErr(plain, raw); got != plain {
		t.Errorf("an error without the URL was rewritten: %v", got)
	}
}
