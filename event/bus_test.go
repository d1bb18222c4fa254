package event

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// pending reports whether w has a wake-up waiting, consuming it.
func pending(w *Waiter) bool {
	select {
	case <-w.C():
		return true
	default:
		return false
	}
}

// TestBusWakesMatchingWaiters: Notify wakes exactly the waiters whose
// filter matches at least one of the events.
func TestBusWakesMatchingWaiters(t *testing.T) {
	t.Parallel()
	type testBundle struct {
		bus     *Bus
		waiters map[string]*Waiter
	}
	setup := func(t *testing.T) *testBundle {
		t.Helper()
		b := &testBundle{bus: &Bus{}, waiters: map[string]*Waiter{}}
		for name, f := range map[string]Filter{
			"everything":   {},
			"acme":         {TenantID: "acme"},
			"globex":       {TenantID: "globex"},
			"ses_1":        {TenantID: "acme", SessionID: "ses_1"},
			"ses_2":        {TenantID: "acme", SessionID: "ses_2"},
			"turn_1":       {TenantID: "acme", SessionID: "ses_1", TurnID: "turn_1"},
			"turn_2":       {TenantID: "acme", SessionID: "ses_1", TurnID: "turn_2"},
			"globex ses_1": {TenantID: "globex", SessionID: "ses_1"},
		} {
			w := b.bus.Subscribe(f)
			t.Cleanup(w.Close)
			b.waiters[name] = w
		}
		return b
	}
	tests := []struct {
		name   string
		events []*Event
		want   []string
	}{
		{"no events", nil, nil},
		{"session event", []*Event{{TenantID: "acme", SessionID: "ses_1"}},
			[]string{"acme", "everything", "ses_1"}},
		{"turn event", []*Event{{TenantID: "acme", SessionID: "ses_1", TurnID: "turn_1"}},
			[]string{"acme", "everything", "ses_1", "turn_1"}},
		{"a batch wakes a waiter matching any event", []*Event{
			{TenantID: "acme", SessionID: "ses_2", TurnID: "turn_9"},
			{TenantID: "acme", SessionID: "ses_1", TurnID: "turn_2"},
		}, []string{"acme", "everything", "ses_1", "ses_2", "turn_2"}},
		{"other tenant", []*Event{{TenantID: "globex", SessionID: "ses_1"}},
			[]string{"everything", "globex", "globex ses_1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.bus.Notify(tt.events)
			var woken []string
			for name, w := range b.waiters {
				if pending(w) {
					woken = append(woken, name)
				}
			}
			if diff := cmp.Diff(tt.want, woken, cmpopts.SortSlices(strings.Compare), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("woken waiters (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBusNotifyNeverBlocks: with a wake-up already pending, Notify drops
// the new one instead of waiting for the subscriber. Inside the synctest
// bubble a blocked Notify is reported as a deadlock, not a hang.
func TestBusNotifyNeverBlocks(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var bus Bus // the zero Bus is ready to use
		bus.Notify([]*Event{{SessionID: "ses_1"}})
		slow := bus.Subscribe(Filter{SessionID: "ses_1"})
		defer slow.Close()
		for range 100 {
			bus.Notify([]*Event{{SessionID: "ses_1"}})
		}
		if !pending(slow) {
			t.Fatal("no wake-up after 100 notifications")
		}
		if pending(slow) {
			t.Error("notifications did not coalesce into one wake-up")
		}
		bus.Notify([]*Event{{SessionID: "ses_1"}})
		if !pending(slow) {
			t.Error("no wake-up for a notification after the pending one was read")
		}
	})
}

// TestWaiterClose: a closed waiter is unregistered and never woken; Close
// is idempotent and leaves other waiters alone.
func TestWaiterClose(t *testing.T) {
	t.Parallel()
	var bus Bus
	closed := bus.Subscribe(Filter{})
	open := bus.Subscribe(Filter{})
	defer open.Close()
	closed.Close()
	closed.Close()
	bus.mu.RLock()
	_, registered := bus.subs[closed]
	n := len(bus.subs)
	bus.mu.RUnlock()
	if registered || n != 1 {
		t.Errorf("after Close: closed waiter registered = %v, %d waiters; want false, 1", registered, n)
	}
	bus.Notify([]*Event{{SessionID: "ses_1"}})
	if pending(closed) {
		t.Error("a closed waiter was woken")
	}
	if !pending(open) {
		t.Error("closing one waiter kept another from waking")
	}
}

// TestBusConcurrent: waiters subscribing, being woken and closing while
// others notify lose no wake-up (run with -race).
func TestBusConcurrent(t *testing.T) {
	t.Parallel()
	var bus Bus
	const n = 32
	var subscribed, done sync.WaitGroup
	subscribed.Add(n)
	for i := range n {
		done.Go(func() {
			w := bus.Subscribe(Filter{SessionID: fmt.Sprint("ses_", i)})
			defer w.Close()
			subscribed.Done()
			<-w.C()
		})
	}
	// Churn: waiters that come and go while notifications fly.
	for range n {
		done.Go(func() {
			bus.Subscribe(Filter{}).Close()
		})
	}
	subscribed.Wait()
	for i := range n {
		done.Go(func() {
			bus.Notify([]*Event{{SessionID: fmt.Sprint("ses_", i)}})
		})
	}
	done.Wait()
}
