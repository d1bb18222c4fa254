package store_test

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fillBatch returns a batch with one new, zero record in every slice and
// every pointer field set, so that a field Merge, Reset or Empty forgets
// shows up.
func fillBatch(t *testing.T) *store.Batch {
	t.Helper()
	b := &store.Batch{}
	v := reflect.ValueOf(b).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Kind() == reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Pointer:
			f.Set(reflect.Append(f, reflect.New(f.Type().Elem().Elem())))
		default:
			t.Fatalf("Batch.%s is a %s, want a pointer or a slice of pointers", v.Type().Field(i).Name, f.Type())
		}
	}
	return b
}

func TestBatchEmptyAndReset(t *testing.T) {
	t.Parallel()
	if !(&store.Batch{}).Empty() {
		t.Errorf("a zero Batch is not Empty")
	}
	typ := reflect.TypeFor[store.Batch]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			full := fillBatch(t)
			b := &store.Batch{}
			f := reflect.ValueOf(b).Elem().Field(i)
			f.Set(reflect.ValueOf(full).Elem().Field(i))
			if f.Kind() == reflect.Pointer {
				// A condition on the batch (its Fence) writes nothing by
				// itself; Reset drops it.
				b.Reset()
				if !f.IsNil() {
					t.Errorf("after Reset, %s is still set", name)
				}
				return
			}
			if b.Empty() {
				t.Errorf("a Batch holding only %s is Empty", name)
			}
			held := f.Index(0).Interface()
			b.Reset()
			if !b.Empty() {
				t.Errorf("Batch is not Empty after Reset")
			}
			if f.Len() != 0 || f.Cap() == 0 {
				t.Errorf("after Reset, %s has length %d and capacity %d; want 0 and its old capacity", name, f.Len(), f.Cap())
			}
			// Reset drops the references it held, so the records can be
			// collected while the batch is reused.
			if got := f.Slice(0, 1).Index(0); !got.IsNil() {
				t.Errorf("after Reset, %s still references %v", name, held)
			}
		})
	}
}

func TestBatchMerge(t *testing.T) {
	t.Parallel()
	owner := runtype.Owner{TenantID: "ten_1", PrincipalID: "usr_1"}
	l1 := &runtype.Limit{Owner: owner, Scope: runtype.LimitSession, ScopeID: "ses_1", MaxTokens: 1}
	l2 := &runtype.Limit{Owner: owner, Scope: runtype.LimitTenant, ScopeID: "ten_1", MaxTokens: 2}
	l1b := &runtype.Limit{Owner: owner, Scope: runtype.LimitSession, ScopeID: "ses_1", MaxTokens: 3}
	otherTenant := &runtype.Limit{Owner: runtype.Owner{TenantID: "ten_2"}, Scope: runtype.LimitSession, ScopeID: "ses_1", MaxTokens: 4}

	t.Run("EveryField", func(t *testing.T) {
		t.Parallel()
		src := fillBatch(t)
		dst := &store.Batch{}
		dst.Merge(src)
		if d := cmp.Diff(src, dst, cmpopts.IgnoreUnexported(event.Event{})); d != "" {
			t.Errorf("Merge into an empty batch (-src +dst):\n%s", d)
		}
	})

	t.Run("SessionModesReplacedByKey", func(t *testing.T) {
		t.Parallel()
		m1 := &store.SessionMode{TenantID: "ten_1", SessionID: "ses_1", Mode: "auto"}
		m2 := &store.SessionMode{TenantID: "ten_1", SessionID: "ses_2", Mode: "auto"}
		m1b := &store.SessionMode{TenantID: "ten_1", SessionID: "ses_1", Mode: "bypass"}
		otherTenant := &store.SessionMode{TenantID: "ten_2", SessionID: "ses_1", Mode: "read_only"}
		dst := &store.Batch{SessionModes: []*store.SessionMode{m1, m2}}
		dst.Merge(&store.Batch{SessionModes: []*store.SessionMode{m1b, otherTenant}})
		if d := cmp.Diff([]*store.SessionMode{m1b, m2, otherTenant}, dst.SessionModes); d != "" {
			t.Errorf("SessionModes after Merge (-want +got):\n%s", d)
		}
	})

	// Inserts and resolutions are appended: a duplicate in the merged batch
	// still conflicts, as it would have in its own.
	t.Run("ActionsAppended", func(t *testing.T) {
		t.Parallel()
		a := &runtype.Action{ID: "act_1", Owner: owner, Status: runtype.ActionPending}
		r1 := &runtype.Action{ID: "act_1", Owner: owner, Status: runtype.ActionApproved}
		r2 := &runtype.Action{ID: "act_1", Owner: owner, Status: runtype.ActionDenied}
		dst := &store.Batch{Actions: []*runtype.Action{a}, ResolvedActions: []*runtype.Action{r1}}
		dst.Merge(&store.Batch{Actions: []*runtype.Action{a}, ResolvedActions: []*runtype.Action{r2}})
		if d := cmp.Diff(&store.Batch{Actions: []*runtype.Action{a, a}, ResolvedActions: []*runtype.Action{r1, r2}}, dst); d != "" {
			t.Errorf("Batch after Merge (-want +got):\n%s", d)
		}
	})

	// A capability session is upserted whole: the later version of an ID
	// wins; its runs are inserts, appended.
	t.Run("CapabilitySessionsReplacedByID", func(t *testing.T) {
		t.Parallel()
		c1 := &runtype.CapabilitySession{ID: "cap_1", Owner: owner, Status: runtype.CapabilityReady}
		c2 := &runtype.CapabilitySession{ID: "cap_2", Owner: owner, Status: runtype.CapabilityReady}
		c1b := &runtype.CapabilitySession{ID: "cap_1", Owner: owner, Status: runtype.CapabilityExpired}
		r := &runtype.CapabilityRun{Owner: owner, CapabilitySessionID: "cap_1", RunID: "run_1"}
		dst := &store.Batch{CapabilitySessions: []*runtype.CapabilitySession{c1, c2}, CapabilityRuns: []*runtype.CapabilityRun{r}}
		dst.Merge(&store.Batch{CapabilitySessions: []*runtype.CapabilitySession{c1b}, CapabilityRuns: []*runtype.CapabilityRun{r}})
		want := &store.Batch{CapabilitySessions: []*runtype.CapabilitySession{c1b, c2}, CapabilityRuns: []*runtype.CapabilityRun{r, r}}
		if d := cmp.Diff(want, dst); d != "" {
			t.Errorf("Batch after Merge (-want +got):\n%s", d)
		}
	})

	// Delegation records are upserted whole: the later version of an ID
	// wins.
	t.Run("DelegationReplacedByID", func(t *testing.T) {
		t.Parallel()
		s1, s2, s1b := &runtype.Subagent{ID: "sub_1", Owner: owner}, &runtype.Subagent{ID: "sub_2", Owner: owner},
			&runtype.Subagent{ID: "sub_1", Owner: owner, Inputs: 2}
		j1, j1b := &runtype.Job{ID: "job_1", Owner: owner}, &runtype.Job{ID: "job_1", Owner: owner, Status: runtype.JobRunning}
		i1, i2, i1b := &runtype.JobItem{ID: "item_1", JobID: "job_1"}, &runtype.JobItem{ID: "item_2", JobID: "job_1", Index: 1},
			&runtype.JobItem{ID: "item_1", JobID: "job_1", Status: runtype.ItemRunning}
		dst := &store.Batch{Subagents: []*runtype.Subagent{s1, s2}, Jobs: []*runtype.Job{j1}, JobItems: []*runtype.JobItem{i1}}
		dst.Merge(&store.Batch{Subagents: []*runtype.Subagent{s1b}, Jobs: []*runtype.Job{j1b}, JobItems: []*runtype.JobItem{i2, i1b}})
		want := &store.Batch{Subagents: []*runtype.Subagent{s1b, s2}, Jobs: []*runtype.Job{j1b}, JobItems: []*runtype.JobItem{i1b, i2}}
		if d := cmp.Diff(want, dst); d != "" {
			t.Errorf("Batch after Merge (-want +got):\n%s", d)
		}
	})

	t.Run("LimitsReplacedByKey", func(t *testing.T) {
		t.Parallel()
		dst := &store.Batch{Limits: []*runtype.Limit{l1, l2}}
		dst.Merge(&store.Batch{Limits: []*runtype.Limit{l1b, otherTenant}})
		if d := cmp.Diff([]*runtype.Limit{l1b, l2, otherTenant}, dst.Limits); d != "" {
			t.Errorf("Limits after Merge (-want +got):\n%s", d)
		}
	})
}
