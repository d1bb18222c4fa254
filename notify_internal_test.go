package agentrt

import (
	"context"
	"slices"
	"testing"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
)

// modeSeer is a policy that asks about everything and notes the mode it
// was asked under.
type modeSeer struct{ mode policy.Mode }

func (s *modeSeer) Evaluate(_ context.Context, r *policy.Request) (policy.Decision, error) {
	s.mode = r.Mode
	return policy.Decision{Outcome: policy.Ask}, nil
}

// TestGovernorInvalidate: a session mode and a standing grant another
// process stored hold in this one once the governor is told that policy
// changed (a notification), though it cached what it read before.
func TestGovernorInvalidate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New()
	owner := runtype.Owner{TenantID: "t1", PrincipalID: "p1"}
	write := func(b *store.Batch) {
		t.Helper()
		tx, err := st.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	write(&store.Batch{Sessions: []*runtype.Session{{ID: "ses_1", Owner: owner}}})
	seer := &modeSeer{}
	g := &governor{next: seer, store: st, modes: map[string]policy.Mode{}, grants: map[string][]*runtype.PolicyGrant{}}
	req := &policy.Request{Owner: owner, SessionID: "ses_1", Agent: "a", ToolName: "shell"}
	evaluate := func() policy.Decision {
		t.Helper()
		dec, err := g.Evaluate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return dec
	}
	if dec := evaluate(); seer.mode != "" || dec.Outcome != policy.Ask {
		t.Fatalf("first: mode %q, %s; want the agent's mode, ask", seer.mode, dec.Outcome)
	}
	// Another process switches the mode and grants the tool.
	write(&store.Batch{
		SessionModes: []*store.SessionMode{{TenantID: "t1", SessionID: "ses_1", Mode: string(policy.ModeAuto)}},
		Grants:       []*runtype.PolicyGrant{{ID: "grant_1", Owner: owner, SessionID: "ses_1", Agent: "a", ToolName: "shell", ActionID: "act_1"}},
	})
	if dec := evaluate(); seer.mode != "" || dec.Outcome != policy.Ask {
		t.Fatalf("cached: mode %q, %s; want what was read before (the test shows the cache)", seer.mode, dec.Outcome)
	}
	(&Runtime{gov: g}).heard(ctx, &store.Notification{Policy: true})
	if dec := evaluate(); seer.mode != policy.ModeAuto || dec.Outcome != policy.Allow || dec.Source != policy.SourceHuman {
		t.Errorf("after invalidating: mode %q, %s by %s; want auto, allowed by the grant", seer.mode, dec.Outcome, dec.Source)
	}
}

// TestHeardWakesOnlyItsWaiters: another node's commit wakes the WaitTurn
// waiters of the turns it names at rest, not every waiter at every
// commit; a release whose turn it does not name, or a notification that
// may have missed some, wakes them all.
func TestHeardWakesOnlyItsWaiters(t *testing.T) {
	t.Parallel()
	rt := startIdle(t)
	ctx := t.Context()
	w1, w2 := rt.settleWaiter("turn_1"), rt.settleWaiter("turn_2")
	defer w1.Close()
	defer w2.Close()
	woken := func() (got []string) {
		for _, w := range []struct {
			name string
			w    *event.Waiter
		}{{"turn_1", w1}, {"turn_2", w2}} {
			select {
			case <-w.w.C():
				got = append(got, w.name)
			default:
			}
		}
		return got
	}
	for _, tt := range []struct {
		name string
		n    store.Notification
		want []string
	}{
		{"events and a queued task", store.Notification{Events: true, Tasks: true}, nil},
		{"turn 1 at rest", store.Notification{Tasks: true, Rested: []string{"turn_1", "turn_3"}}, []string{"turn_1"}},
		{"a release of an unnamed turn", store.Notification{Tasks: true, AnyRested: true}, []string{"turn_1", "turn_2"}},
		{"anything", store.Notification{All: true}, []string{"turn_1", "turn_2"}},
	} {
		rt.heard(ctx, &tt.n)
		if got := woken(); !slices.Equal(got, tt.want) {
			t.Errorf("%s woke %q, want %q", tt.name, got, tt.want)
		}
	}
}
