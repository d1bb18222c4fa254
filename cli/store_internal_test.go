package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
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

// TestOverviewStoreAndNodes: for a shared store the overview names it
// and lists the nodes holding leases, with their heartbeats; for the
// SQLite file it says neither (the default goes without saying), nor
// does health's text.
func TestOverviewStoreAndNodes(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	beat := now.Add(-3 * time.Second)
	h := &apitype.Health{Status: apitype.HealthOK, Version: "devel", CheckedAt: now,
		Store: apitype.StoreInfo{Driver: "postgres", Location: "postgres://db:5432/agentrt"},
		Nodes: []apitype.NodeInfo{{Worker: "rt_A/12-beef", Leases: 3, LastHeartbeatAt: &beat}, {Worker: "rt_B/7-cafe", ExpiredLeases: 1}}}
	show := func(h *apitype.Health) (ovText, healthText string) {
		raw, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		var ov, hl bytes.Buffer
		printOverview(&ov, &overview{GeneratedAt: now, Health: raw}, style{})
		printHealth(&hl, h)
		return ov.String(), hl.String()
	}
	ov, hl := show(h)
	for _, want := range []string{
		"store      postgres · postgres://db:5432/agentrt\n",
		"nodes      2 nodes holding leases\n",
		"rt_A/12-beef  3       0        3s ago",
		"rt_B/7-cafe   0       1        -",
	} {
		if !strings.Contains(ov, want) {
			t.Errorf("overview:\n%s\nwant %q", ov, want)
		}
	}
	for _, want := range []string{"  store: postgres postgres://db:5432/agentrt\n", "  node rt_A/12-beef: 3 leases, 0 run out, heartbeat 3s ago\n", "  node rt_B/7-cafe: 0 leases, 1 run out\n"} {
		if !strings.Contains(hl, want) {
			t.Errorf("health:\n%s\nwant %q", hl, want)
		}
	}
	h.Store, h.Nodes = apitype.StoreInfo{Driver: "sqlite", Location: "/data/agentrt.db"}, nil
	ov, hl = show(h)
	if strings.Contains(ov, "store") || strings.Contains(hl, "store:") || strings.Contains(ov, "nodes") {
		t.Errorf("the SQLite file is named:\noverview:\n%s\nhealth:\n%s", ov, hl)
	}
}
