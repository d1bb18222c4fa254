package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/client"
)

// TestRemoteLastCursor: a daemon's last cursor comes from its health;
// when the health does not know it (the runtime stopped, the store did
// not answer) LastCursor fails rather than answer 0, which would make
// requests tail and approvals watch replay the whole log.
func TestRemoteLastCursor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		code    int
		health  apitype.Health
		want    int64
		wantErr string
	}{
		{"ok", http.StatusOK, apitype.Health{Status: apitype.HealthOK, Store: apitype.StoreInfo{Reachable: true, LastCursor: 42}}, 42, ""},
		{"empty log", http.StatusOK, apitype.Health{Status: apitype.HealthOK, Store: apitype.StoreInfo{Reachable: true}}, 0, ""},
		{"stopped", http.StatusServiceUnavailable, apitype.Health{Status: apitype.HealthStopped}, 0, "is stopped"},
		{"store unreachable", http.StatusServiceUnavailable,
			apitype.Health{Status: apitype.HealthUnhealthy, Store: apitype.StoreInfo{Error: "database is locked"}}, 0, "did not answer: database is locked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/health" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.code)
				json.NewEncoder(w).Encode(tc.health)
			}))
			defer srv.Close()
			c, err := client.New(srv.URL, "token-0123456789abcdef")
			if err != nil {
				t.Fatal(err)
			}
			got, err := (&remoteBackend{c: c}).LastCursor(t.Context())
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("LastCursor: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("LastCursor = %d, %v; want an error containing %q", got, err, tc.wantErr)
			case got != tc.want:
				t.Errorf("LastCursor = %d, want %d", got, tc.want)
			}
		})
	}
}
