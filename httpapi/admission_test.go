package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/model/replay"
)

// TestSubmitTurnAdmissionIsExact: 2,000 submissions at once over HTTP to
// a tenant whose queue takes 50 (or 500), with no worker draining it: the
// limit is answered 202, every other one 429 overloaded with a Retry-After
// of whole seconds, and the store holds exactly the accepted turns.
func TestSubmitTurnAdmissionIsExact(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{50, 500} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			t.Parallel()
			b := serveWorkless(t, agentrt.Config{DataDir: t.TempDir(), MaxQueuedPerTenant: limit})
			rt, srv := b.rt, b.server
			client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 256, MaxIdleConnsPerHost: 256}}
			t.Cleanup(client.CloseIdleConnections)

			const n = 2000
			type answer struct {
				code       int
				retryAfter string
				errCode    string
				turnID     string
			}
			answers := make([]answer, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/turns",
						strings.NewReader(fmt.Sprintf(`{"agent": "support", "input": "turn %d"}`, i)))
					if err != nil {
						t.Error(err)
						return
					}
					req.Header.Set("Authorization", "Bearer "+testToken)
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					if err != nil {
						t.Errorf("POST /v1/turns: %v", err)
						return
					}
					defer resp.Body.Close()
					body, err := io.ReadAll(resp.Body)
					if err != nil {
						t.Errorf("reading the answer: %v", err)
						return
					}
					a := answer{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
					var v struct {
						TurnID string `json:"turnId"`
						Code   string `json:"code"`
					}
					if err := json.Unmarshal(body, &v); err != nil {
						t.Errorf("decoding %s: %v", body, err)
					}
					a.turnID, a.errCode = v.TurnID, v.Code
					answers[i] = a
				})
			}
			wg.Wait()

			accepted := map[string]bool{}
			for _, a := range answers {
				switch a.code {
				case http.StatusAccepted:
					accepted[a.turnID] = true
				case http.StatusTooManyRequests:
					if s, err := strconv.Atoi(a.retryAfter); err != nil || s < 1 || a.errCode != "overloaded" {
						t.Errorf("429 with Retry-After %q and code %q, want whole seconds ≥ 1 and overloaded", a.retryAfter, a.errCode)
					}
				default:
					t.Fatalf("POST /v1/turns = %d (%+v), want 202 or 429", a.code, a)
				}
			}
			if len(accepted) != limit {
				t.Errorf("%d of %d submissions accepted, want the limit, %d", len(accepted), n, limit)
			}
			reqs, err := rt.ListRequests(context.Background(), &apitype.ListRequestsParams{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reqs {
				if !accepted[r.TurnID] {
					t.Errorf("turn %s is stored but was not accepted", r.TurnID)
				}
			}
			if len(reqs) != len(accepted) {
				t.Errorf("the store holds %d turns, %d were accepted", len(reqs), len(accepted))
			}
		})
	}
}

// serveWorkless starts a runtime from cfg without workers, so that what
// is submitted stays queued, and serves it (serveConfig).
func serveWorkless(t *testing.T, cfg agentrt.Config) *testBundle {
	t.Helper()
	cfg.NoWorkers = true
	return serveConfig(t, cfg)
}

// serveConfig starts a runtime from cfg, with agent "support" answering
// each turn with one reply, and serves it with httptest, the test token
// registered as the default tenant's admin. Cleanup stops both.
func serveConfig(t *testing.T, cfg agentrt.Config) *testBundle {
	t.Helper()
	s, err := replay.Parse("test.replay.yaml", []byte("responses: [{text: hi}]"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Agents = map[string]*agentrt.Agent{"support": {Provider: replay.New(s)}}
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	if err := httpapi.RegisterFileToken(context.Background(), rt, testToken); err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(rt, httpapi.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return &testBundle{rt: rt, api: api, server: srv}
}
