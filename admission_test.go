package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/runtype"
)

// admissionConfig is a runtime on a SQLite store in dir whose agent "a"
// answers each turn with one reply.
func admissionConfig(t *testing.T, dir string) agentrt.Config {
	t.Helper()
	s, err := replay.Parse("admission.replay.yaml", []byte("responses: [{text: hi}]"))
	if err != nil {
		t.Fatal(err)
	}
	return agentrt.Config{DataDir: dir, Agents: map[string]*agentrt.Agent{"a": {Provider: replay.New(s)}}}
}

// submitOutcome is how one submission of a burst ended.
type submitOutcome struct {
	key string // its idempotency key; empty for none
	res *apitype.SubmitTurnResult
	err error
}

// TestAdmissionIsExactAcrossNodes: two runtimes sharing one store (one
// SQLite file, or two nodes on one PostgreSQL database) take 400
// submissions at once, half each, for a tenant whose queue takes 30:
// together they admit exactly 30, whichever node each went to.
func TestAdmissionIsExactAcrossNodes(t *testing.T) {
	t.Parallel()
	for _, kind := range sharedStores {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			const limit, n = 30, 400
			var rts []*agentrt.Runtime
			for _, shared := range shareStore(t, kind, 2) {
				cfg := admissionConfig(t, shared.DataDir)
				cfg.Store, cfg.NoWorkers, cfg.MaxQueuedPerTenant = shared.Store, true, limit
				rts = append(rts, startDurable(t, cfg))
			}
			var admitted atomic.Int32
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					_, err := rts[i%2].SubmitTurn(context.Background(), &apitype.SubmitTurnParams{Agent: "a", Input: fmt.Sprint("turn ", i)})
					var over *apitype.OverloadedError
					switch {
					case err == nil:
						admitted.Add(1)
					case !errors.As(err, &over):
						t.Errorf("SubmitTurn: %v, want success or an *OverloadedError", err)
					}
				})
			}
			wg.Wait()
			if got := admitted.Load(); got != limit {
				t.Errorf("the two nodes admitted %d turns of %d submissions, want the limit, %d", got, n, limit)
			}
			reqs, err := rts[1].ListRequests(context.Background(), &apitype.ListRequestsParams{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) != limit {
				t.Errorf("the store holds %d turns, want %d", len(reqs), limit)
			}
		})
	}
}

// TestAdmissionIsExactUnderConcurrency: 2,000 submissions at once to a
// tenant whose queue takes 50 (or 500), with no worker draining it: at
// most the limit is admitted (exactly, here), every other submission is
// refused with an *OverloadedError and a Retry-After, the two submissions
// of each idempotency key get the same answer (a resubmission of an
// admitted turn is never refused), and every admitted turn is stored and
// runs to its end once workers start.
func TestAdmissionIsExactUnderConcurrency(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{50, 500} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := admissionConfig(t, dir)
			cfg.NoWorkers, cfg.MaxQueuedPerTenant = true, limit
			rt := startDurable(t, cfg)

			// Half the submissions come in pairs with one idempotency key.
			const n = 2000
			out := make([]submitOutcome, n)
			var wg sync.WaitGroup
			for i := range n {
				if i < n/2 {
					out[i].key = fmt.Sprintf("key-%d", i/2)
				}
				wg.Go(func() {
					out[i].res, out[i].err = rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{
						Agent: "a", Input: fmt.Sprintf("turn %s", out[i].key), IdempotencyKey: out[i].key,
					})
				})
			}
			wg.Wait()

			admitted := map[string]bool{} // turn ids
			byKey := map[string][]submitOutcome{}
			refused := 0
			for _, o := range out {
				var over *apitype.OverloadedError
				switch {
				case o.err == nil:
					admitted[o.res.TurnID] = true
				case errors.As(o.err, &over):
					refused++
					if over.RetryAfter < time.Second {
						t.Errorf("RetryAfter = %s, want at least 1s", over.RetryAfter)
					}
				default:
					t.Fatalf("SubmitTurn: %v, want success or an *OverloadedError", o.err)
				}
				if o.key != "" {
					byKey[o.key] = append(byKey[o.key], o)
				}
			}
			if len(admitted) != limit {
				t.Errorf("admitted %d turns of %d submissions, want the limit, %d", len(admitted), n, limit)
			}
			for key, pair := range byKey {
				a, b := pair[0], pair[1]
				switch {
				case (a.err == nil) != (b.err == nil):
					t.Errorf("key %s: one submission admitted, the other refused (%v, %v)", key, a.err, b.err)
				case a.err == nil && a.res.TurnID != b.res.TurnID:
					t.Errorf("key %s: two turns, %s and %s", key, a.res.TurnID, b.res.TurnID)
				}
			}

			// The store holds exactly the admitted turns; none is lost.
			reqs, err := rt.ListRequests(context.Background(), &apitype.ListRequestsParams{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			stored := map[string]bool{}
			for _, r := range reqs {
				stored[r.TurnID] = true
			}
			if len(stored) != len(admitted) {
				t.Errorf("the store holds %d turns, %d were admitted", len(stored), len(admitted))
			}
			for id := range admitted {
				if !stored[id] {
					t.Errorf("admitted turn %s is not stored", id)
				}
			}
			if err := rt.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}

			// A runtime with workers on the same store runs them all.
			withWorkers := startDurable(t, admissionConfig(t, dir))
			for id := range admitted {
				turn, err := withWorkers.WaitTurn(t.Context(), runtype.Owner{}, id)
				if err != nil {
					t.Fatalf("WaitTurn(%s): %v", id, err)
				}
				if turn.Status != runtype.StatusCompleted {
					t.Errorf("turn %s ended %s (%s), want completed", id, turn.Status, turn.StatusReason)
				}
			}
		})
	}
}
