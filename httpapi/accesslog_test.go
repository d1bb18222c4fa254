package httpapi_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// lineSink receives log lines, one JSON object each, on a channel, so
// that a test can wait for the line a request leaves.
type lineSink struct {
	lines chan map[string]any
	seen  map[string]map[string]any // access lines read, by request id
}

func newLineSink() *lineSink {
	return &lineSink{lines: make(chan map[string]any, 1024), seen: map[string]map[string]any{}}
}

func (s *lineSink) Write(p []byte) (int, error) {
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(p), &m); err != nil {
		m = map[string]any{"unparsed": string(p)}
	}
	m["raw"] = string(p)
	select {
	case s.lines <- m:
	default: // full: the test that waits for this line fails
	}
	return len(p), nil
}

// access returns the access log line of the request whose id is id.
func (s *lineSink) access(t *testing.T, id string) map[string]any {
	t.Helper()
	timeout := time.After(streamTimeout)
	for s.seen[id] == nil {
		select {
		case m := <-s.lines:
			if id, ok := m["httpRequestId"].(string); ok && m["msg"] == "http request" {
				s.seen[id] = m
			}
		case <-timeout:
			t.Fatalf("no access log line of request %s within %s", id, streamTimeout)
		}
	}
	return s.seen[id]
}

var requestIDPattern = regexp.MustCompile(`^req_[0-9A-Z]{26}$`)

// TestAccessLog: each request leaves one "http request" line in the
// server's slog format with its method, route pattern (not the path with
// its ids), status, duration, principal, tenant and token id once it
// authenticated, and the id of the X-Request-Id header; a probe's is at
// debug level. No line holds a token, a query or a body, even where a
// request carries a token in its query or body.
func TestAccessLog(t *testing.T) {
	t.Parallel()
	sink := newLineSink()
	b := setup(t, setupOpts{logger: slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	viewer := b.as(t, "tenant_other", "vera", runtype.APIRoleViewer)
	adminTokenID, viewerTokenID := tokenID(t, b, apitype.APIPrincipal), tokenID(t, b, "vera")
	secrets := []string{testToken, viewer.bearer(), "body-secret-7f3a", "query-secret-91c2"}

	tests := []struct {
		name string
		who  *testBundle
		call call
		want map[string]any // besides level INFO and msg
	}{
		{"ok", b, call{method: http.MethodGet, path: "/v1/health?token=query-secret-91c2"},
			map[string]any{"method": "GET", "route": "/v1/health", "status": 200.0, "principal": apitype.APIPrincipal, "tenant": apitype.DefaultTenant, "tokenId": adminTokenID}},
		{"not found by id", b, call{method: http.MethodGet, path: "/v1/requests/turn_01NOTAREALTURN0000000000000"},
			map[string]any{"method": "GET", "route": "/v1/requests/{turnId}", "status": 404.0, "principal": apitype.APIPrincipal, "tenant": apitype.DefaultTenant, "tokenId": adminTokenID}},
		{"no route", b, call{method: http.MethodGet, path: "/nowhere"},
			map[string]any{"method": "GET", "route": "/", "status": 404.0}},
		{"forbidden", viewer, call{method: http.MethodPost, path: "/v1/turns", body: `{"agent":"support","input":"body-secret-7f3a"}`},
			map[string]any{"method": "POST", "route": "/v1/turns", "status": 403.0, "principal": "vera", "tenant": "tenant_other", "tokenId": viewerTokenID}},
		{"unauthenticated", b, call{method: http.MethodGet, path: "/v1/health", header: map[string]string{"Authorization": ""}},
			map[string]any{"method": "GET", "route": "/v1/health", "status": 401.0}},
		{"wrong token", b, call{method: http.MethodGet, path: "/metrics", header: map[string]string{"Authorization": "Bearer query-secret-91c2"}},
			map[string]any{"method": "GET", "route": "/metrics", "status": 401.0}},
	}
	ids := map[string]bool{}
	for _, tt := range tests {
		resp, body := tt.who.do(t, tt.call)
		if code := int(tt.want["status"].(float64)); resp.StatusCode != code {
			t.Fatalf("%s: %s %s = %d %s, want %d", tt.name, tt.call.method, tt.call.path, resp.StatusCode, body, code)
		}
		id := resp.Header.Get("X-Request-Id")
		if !requestIDPattern.MatchString(id) || ids[id] {
			t.Fatalf("%s: X-Request-Id %q, want a fresh req_ id", tt.name, id)
		}
		ids[id] = true
		line := sink.access(t, id)
		if d, ok := line["durationMs"].(float64); !ok || d < 0 {
			t.Errorf("%s: durationMs %v", tt.name, line["durationMs"])
		}
		got := map[string]any{}
		for _, k := range []string{"method", "route", "status", "principal", "tenant", "tokenId"} {
			if v, ok := line[k]; ok {
				got[k] = v
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: access line (-want +got):\n%s\n%s", tt.name, diff, line["raw"])
		}
		if line["level"] != "INFO" {
			t.Errorf("%s: level %v, want INFO", tt.name, line["level"])
		}
		for _, s := range secrets {
			if strings.Contains(line["raw"].(string), s) {
				t.Errorf("%s: the access line holds %q: %s", tt.name, s, line["raw"])
			}
		}
		if strings.Contains(line["raw"].(string), "turn_01NOTAREALTURN") {
			t.Errorf("%s: the access line holds the path's id: %s", tt.name, line["raw"])
		}
	}

	// A probe's line is at debug level.
	resp, _ := b.do(t, call{method: http.MethodGet, path: "/healthz"})
	if line := sink.access(t, resp.Header.Get("X-Request-Id")); line["route"] != "/healthz" || line["level"] != "DEBUG" || line["status"] != 200.0 {
		t.Errorf("probe line: %s", line["raw"])
	}
}

// tokenID is the id of principal's token, read from the runtime (not
// over HTTP, which would log).
func tokenID(t *testing.T, b *testBundle, principal string) string {
	t.Helper()
	ks, err := b.rt.ListTokens(t.Context(), &apitype.ListTokensParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		if k.PrincipalID == principal {
			return k.TokenID
		}
	}
	t.Fatalf("no token of %s in %+v", principal, ks)
	return ""
}
