package httpapi_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/internal/testenv"
)

// fill writes a file in dir until the file system is full and returns
// its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	for { // the last pages
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	return path
}

// TestHealthReportsFailingWrites: on a real file system that fills up,
// once a write fails the health check fails naming the error and /readyz
// answers 503, while reads still work; once space is freed, a write that
// commits makes both healthy again: a turn's, or after a quiet while the
// health check's own probe, which needs no traffic.
func TestHealthReportsFailingWrites(t *testing.T) {
	t.Parallel()
	dir := testenv.Tmpfs(t, 4<<20)
	// A clock that moves only a microsecond a reading, and when the test
	// says: no health check probes the store before the test wants it to.
	base := time.Now()
	var ticks, skipped atomic.Int64
	now := func() time.Time {
		return base.Add(time.Duration(ticks.Add(1))*time.Microsecond + time.Duration(skipped.Load()))
	}
	b := serveWorkless(t, agentrt.Config{DataDir: dir, Now: now})
	noToken := map[string]string{"Authorization": ""}
	first := b.submit(t, apitype.SubmitTurnRequest{Input: "before the disk filled up"})
	b.getJSON(t, call{path: "/readyz", header: noToken}, http.StatusOK, nil)

	for _, recovery := range []string{"a turn", "the probe"} {
		filler := fill(t, dir)
		// The write-ahead log grows with each turn until a commit finds
		// no room: the runtime answers 500 and logs why.
		input := strings.Repeat("a full disk ", 400)
		failed := false
		for i := 0; i < 2000 && !failed; i++ {
			resp, body := b.do(t, call{method: http.MethodPost, path: "/v1/turns", body: fmt.Sprintf(`{"agent": "support", "input": %q}`, input)})
			switch resp.StatusCode {
			case http.StatusAccepted:
			case http.StatusInternalServerError:
				failed = true
			default:
				t.Fatalf("POST /v1/turns on a full disk = %d %s, want 202 or 500", resp.StatusCode, body)
			}
		}
		if !failed {
			t.Fatal("2000 turns committed on a full 4 MiB file system")
		}
		var ready map[string]string
		b.getJSON(t, call{path: "/readyz", header: noToken}, http.StatusServiceUnavailable, &ready)
		if ready["status"] != apitype.ReadyWritesFail {
			t.Errorf("/readyz = %v, want status %s", ready, apitype.ReadyWritesFail)
		}
		var h apitype.Health
		b.getJSON(t, call{path: "/v1/health"}, http.StatusServiceUnavailable, &h)
		if h.Status != apitype.HealthUnhealthy || !strings.Contains(h.Store.WriteError, "disk is full") || h.Store.WriteFailingSince == nil || !h.Store.Reachable {
			t.Errorf("/v1/health on a full disk = status %s, store %+v; want unhealthy, reachable, naming the full disk", h.Status, h.Store)
		}
		if len(h.Problems) == 0 || !strings.HasPrefix(h.Problems[0], "store: writes have failed") || !strings.Contains(h.Problems[0], "disk is full") {
			t.Errorf("/v1/health problems = %q, want the store's failing writes first", h.Problems)
		}
		// Reads still work.
		b.getJSON(t, call{path: "/v1/requests/" + first.TurnID}, http.StatusOK, nil)

		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		switch recovery {
		case "a turn":
			b.submit(t, apitype.SubmitTurnRequest{Input: "after space was freed"})
		case "the probe":
			// Nothing writes; a while later the health check probes.
			skipped.Add(int64(10 * time.Second))
		}
		h = apitype.Health{}
		b.getJSON(t, call{path: "/v1/health"}, http.StatusOK, &h)
		if h.Status != apitype.HealthOK || h.Store.WriteError != "" || h.Store.WriteFailingSince != nil {
			t.Errorf("/v1/health after %s committed = status %s, store %+v, problems %q; want ok", recovery, h.Status, h.Store, h.Problems)
		}
		b.getJSON(t, call{path: "/readyz", header: noToken}, http.StatusOK, nil)
	}
}
