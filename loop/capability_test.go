package loop_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// TestToolProgress: a tool's progress becomes tool.progress events, at
// most one per 250 ms of the loop's clock and the last always; the call's
// record shows the last recorded progress while it runs and the last
// reported when it ends. (Progress reported after the call ends is
// dropped: calling the hook then is harmless.)
func TestToolProgress(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	clock := &fakeClock{t: t0}
	committed := make(chan struct{}, 1)
	var b *testBundle
	var late func(progress, total float64, message string)
	var running *runtype.ToolCall // the record as the store showed it during the call
	report := func(c *tool.Call, after time.Duration, n float64, msg string) {
		clock.set(t0.Add(after))
		c.Progress(n, 6, msg)
	}
	var slow tool.Tool = interactive{tool.Func("slow", "Reports progress.", tool.Annotations{ReadOnly: true}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		report(c, 0, 1, "one")                      // recorded: the first
		report(c, 100*time.Millisecond, 2, "two")   // held back, then superseded
		report(c, 300*time.Millisecond, 3, "three") // recorded
		// The store shows the call running with its progress.
		deadline := time.After(10 * time.Second)
		for {
			calls, err := b.store.ToolCallList(ctx, &store.ToolCallListParams{TenantID: owner.TenantID, SessionID: c.SessionID})
			if err != nil {
				return "", err
			}
			if len(calls) == 1 && calls[0].Progress != nil && calls[0].Progress.Progress == 3 {
				running = calls[0]
				break
			}
			select {
			case <-committed:
			case <-deadline:
				t.Error("the store never showed the call's progress while it ran")
				return "", ctx.Err()
			}
		}
		report(c, 600*time.Millisecond, 4, "four") // recorded
		report(c, 900*time.Millisecond, 5, "five") // recorded, held with four
		report(c, 950*time.Millisecond, 6, "six")  // held back, recorded at the end
		late = c.Progress
		return "done", nil
	})}
	b = setup(t, setupOpts{tools: []tool.Tool{slow}, now: clock.now, notify: func() {
		select {
		case committed <- struct{}{}:
		default:
		}
	}})
	p := &script{steps: []step{calls(call("slow", `{}`)), calls(call("complete_task", `{"result":"r"}`))}}
	out, turn := b.run(t, context.Background(), agentWith(p, slow), "go")
	if out.Status != runtype.StatusCompleted {
		t.Fatalf("status = %s", out.Status)
	}
	late(7, 6, "too late")

	if running == nil {
		t.Fatal("the tool did not see its progress in the store")
	}
	wantRunning := &runtype.ToolProgress{Progress: 3, Total: 6, Message: "three", At: t0.Add(300 * time.Millisecond)}
	if running.Status != runtype.ToolCallStarted || !cmp.Equal(wantRunning, running.Progress) {
		t.Errorf("record during the call: status %s, progress %+v; want started, %+v", running.Status, running.Progress, wantRunning)
	}

	var got []string
	for _, e := range find(b.events(t, turn.SessionID), event.ToolProgress) {
		got = append(got, e.Payload.(*event.ToolProgressPayload).Message)
	}
	if d := cmp.Diff([]string{"one", "three", "four", "five", "six"}, got); d != "" {
		t.Errorf("tool.progress messages (-want +got):\n%s", d)
	}

	calls, err := b.store.ToolCallList(context.Background(), &store.ToolCallListParams{TenantID: owner.TenantID, SessionID: turn.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		Status   runtype.ToolCallStatus
		Progress *runtype.ToolProgress
	}
	var gotRecs []rec
	for _, c := range calls {
		if c.Name == "slow" {
			gotRecs = append(gotRecs, rec{c.Status, c.Progress})
		}
	}
	wantRecs := []rec{{runtype.ToolCallCompleted, &runtype.ToolProgress{Progress: 6, Total: 6, Message: "six", At: t0.Add(950 * time.Millisecond)}}}
	if d := cmp.Diff(wantRecs, gotRecs); d != "" {
		t.Errorf("slow's records after the turn (-want +got):\n%s", d)
	}
}

// interactive makes a tool Interactive: its calls get Progress, Ask and
// Sample.
type interactive struct{ tool.Tool }

func (t interactive) Spec() tool.Spec {
	s := t.Tool.Spec()
	s.Interactive = true
	return s
}
