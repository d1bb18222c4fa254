package loop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

// faultyReader is a store whose budget reads can be made to fail.
type faultyReader struct {
	store.Store
	limitGet   func(ctx context.Context) error
	usageTotal func(ctx context.Context) error
}

func (r *faultyReader) LimitGet(ctx context.Context, p *store.LimitGetParams) (*runtype.Limit, error) {
	if r.limitGet != nil {
		if err := r.limitGet(ctx); err != nil {
			return nil, err
		}
	}
	return r.Store.LimitGet(ctx, p)
}

func (r *faultyReader) UsageTotal(ctx context.Context, p *store.UsageTotalParams) (runtype.Usage, error) {
	if r.usageTotal != nil {
		if err := r.usageTotal(ctx); err != nil {
			return runtype.Usage{}, err
		}
	}
	return r.Store.UsageTotal(ctx, p)
}

// TestBudgetReadFailures: a turn interrupted while its budgets load ends
// cancelled, and budgets that cannot be read fail the turn closed, before
// any model call.
func TestBudgetReadFailures(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		interrupt  bool
		wantStatus runtype.TaskStatus
		wantReason runtype.Reason
	}{
		{name: "InterruptedWhileLoading", interrupt: true, wantStatus: runtype.StatusCancelled, wantReason: "interrupted"},
		{name: "UnreadableBudgets", wantStatus: runtype.StatusFailed, wantReason: "store_error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			st := memstore.New()
			r := &faultyReader{Store: st, limitGet: func(context.Context) error {
				if tt.interrupt {
					cancel(loop.ErrInterrupted)
					return context.Cause(ctx)
				}
				return errors.New("disk on fire")
			}}
			reg := tool.NewRegistry()
			if err := builtin.Register(reg); err != nil {
				t.Fatal(err)
			}
			w := store.NewWriter(st, store.WriterConfig{})
			t.Cleanup(func() { w.Stop(context.Background()) })
			coord, err := loop.New(loop.Config{RuntimeID: "rt_test", Writer: w, Registry: reg,
				Ledger: loop.NewLedger(r, loop.Budgets{}, nil)})
			if err != nil {
				t.Fatal(err)
			}
			b := &testBundle{store: st, writer: w, registry: reg, coord: coord}
			p := replyScript("never")
			out, turn := b.run(t, ctx, agentOf(model.Profile{}, cand("only", p)), "hello")
			if out.Status != tt.wantStatus || out.Reason != tt.wantReason {
				t.Fatalf("outcome %s (%s) %+v, want %s (%s)", out.Status, out.Reason, out.Failure, tt.wantStatus, tt.wantReason)
			}
			if !tt.interrupt && !strings.Contains(out.Failure.Message, "reading the budgets") {
				t.Errorf("failure %q does not say the budgets could not be read", out.Failure.Message)
			}
			if n := len(p.requests()); n != 0 {
				t.Errorf("the model was called %d times", n)
			}
			b.events(t, turn.SessionID) // valid and gap-free
		})
	}
}

// TestSetLimitNeedsTheSpend: a limit whose scope's spend cannot be read is
// not applied (it would never be enforced); once the spend reads, it is.
func TestSetLimitNeedsTheSpend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New()
	fail := true
	r := &faultyReader{Store: st, usageTotal: func(context.Context) error {
		if fail {
			return errors.New("busy")
		}
		return nil
	}}
	l := loop.NewLedger(r, loop.Budgets{}, nil)
	lease, err := l.Open(ctx, owner, "ses_1")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	lim := &runtype.Limit{Owner: owner, Scope: runtype.LimitSession, ScopeID: "ses_1", MaxTokens: 1000}
	if _, _, err := l.SetLimit(ctx, lim); err == nil {
		t.Fatal("SetLimit succeeded without the spend")
	}
	if lease.Limited() {
		t.Error("the limit applies although its spend is unknown")
	}
	fail = false
	if _, _, err := l.SetLimit(ctx, lim); err != nil {
		t.Fatal(err)
	}
	lease.Add(runtype.Usage{InputTokens: 800})
	if q := lease.Check(runtype.Usage{}); len(q) != 1 || q[0].Exceeded != "" || q[0].Spent.Tokens() != 800 {
		t.Errorf("check %+v: the new limit counts what is spent from then on", q)
	}
	if q := lease.Check(runtype.Usage{InputTokens: 300}); q[0].Exceeded != "tokens" {
		t.Errorf("check %+v, want the budget exceeded", q)
	}
}
