package execution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/tool"
)

// recorder records when calls enter and leave on a logical clock, so that
// overlap is a fact of the order of events, not of timing.
type recorder struct {
	clock  atomic.Int64
	mu     sync.Mutex
	spans  map[int][2]int64
	active atomic.Int64
	peak   atomic.Int64
}

func newRecorder() *recorder { return &recorder{spans: make(map[int][2]int64)} }

func (r *recorder) call(i int, class string, body func()) Call {
	return Call{Class: class, Run: func(context.Context) {
		start := r.clock.Add(1)
		n := r.active.Add(1)
		for {
			p := r.peak.Load()
			if n <= p || r.peak.CompareAndSwap(p, n) {
				break
			}
		}
		if body != nil {
			body()
		}
		r.active.Add(-1)
		end := r.clock.Add(1)
		r.mu.Lock()
		r.spans[i] = [2]int64{start, end}
		r.mu.Unlock()
	}}
}

func overlap(a, b [2]int64) bool { return a[0] < b[1] && b[0] < a[1] }

// barrier returns a body that waits until n calls are inside it: the
// calls provably overlap, or the test fails on its deadline.
func barrier(t *testing.T, n int) func() {
	var wg sync.WaitGroup
	wg.Add(n)
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	return func() {
		wg.Done()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			t.Error("the parallel calls did not all run at once")
		}
	}
}

func TestParallelCallsOverlap(t *testing.T) {
	t.Parallel()
	s, rec := New(8), newRecorder()
	body := barrier(t, 8)
	calls := make([]Call, 8)
	for i := range calls {
		calls[i] = rec.call(i, tool.Parallel, body)
	}
	errs := s.Run(t.Context(), "ses_1", calls)
	if d := cmp.Diff(make([]error, 8), errs, cmp.Comparer(func(a, b error) bool { return a == b })); d != "" {
		t.Errorf("errors (-want +got):\n%s", d)
	}
	if got := rec.peak.Load(); got != 8 {
		t.Errorf("peak concurrency %d, want 8", got)
	}
	if sessions, keys := s.held(); sessions+keys != 0 {
		t.Errorf("locks still held: %d sessions, %d keys", sessions, keys)
	}
}

func TestParallelismIsBounded(t *testing.T) {
	t.Parallel()
	s, rec := New(3), newRecorder()
	body := barrier(t, 3) // the first three fill the slots together
	var calls []Call
	for i := range 9 {
		b := body
		if i >= 3 {
			b = nil
		}
		calls = append(calls, rec.call(i, tool.Parallel, b))
	}
	s.Run(t.Context(), "ses_1", calls)
	if got := rec.peak.Load(); got != 3 {
		t.Errorf("peak concurrency %d, want 3", got)
	}
	if len(rec.spans) != 9 {
		t.Errorf("%d calls ran, want 9", len(rec.spans))
	}
}

func TestExclusiveCallsRunAlone(t *testing.T) {
	t.Parallel()
	s, rec := New(8), newRecorder()
	classes := []string{tool.Parallel, tool.Parallel, tool.Exclusive, tool.Parallel, tool.Exclusive, tool.Exclusive, tool.Parallel}
	calls := make([]Call, len(classes))
	for i, c := range classes {
		calls[i] = rec.call(i, c, nil)
	}
	s.Run(t.Context(), "ses_1", calls)
	for i, c := range classes {
		if c != tool.Exclusive {
			continue
		}
		for j := range classes {
			if j == i {
				continue
			}
			if overlap(rec.spans[i], rec.spans[j]) {
				t.Errorf("exclusive call %d overlapped call %d: %v %v", i, j, rec.spans[i], rec.spans[j])
			}
			// Call order holds across an exclusive call.
			if j < i && rec.spans[j][1] > rec.spans[i][0] || j > i && rec.spans[j][0] < rec.spans[i][1] {
				t.Errorf("call %d ran out of order with exclusive call %d", j, i)
			}
		}
	}
}

func TestExclusiveHoldsOffOtherRunsOfTheSession(t *testing.T) {
	t.Parallel()
	s, rec := New(8), newRecorder()
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(t.Context(), "ses_1", []Call{rec.call(0, tool.Exclusive, func() { close(entered); <-release })})
	}()
	<-entered
	// Another thread of the same session: its parallel call waits for the
	// exclusive one; a call of another session does not.
	other := make(chan struct{})
	go func() {
		defer close(other)
		s.Run(t.Context(), "ses_2", []Call{rec.call(2, tool.Parallel, nil)})
	}()
	<-other
	same := make(chan struct{})
	go func() {
		defer close(same)
		s.Run(t.Context(), "ses_1", []Call{rec.call(1, tool.Parallel, nil)})
	}()
	close(release)
	<-done
	<-same
	if overlap(rec.spans[0], rec.spans[1]) {
		t.Errorf("a call of the same session overlapped the exclusive call: %v %v", rec.spans[0], rec.spans[1])
	}
	if !overlap(rec.spans[0], rec.spans[2]) {
		t.Errorf("a call of another session waited for the exclusive call: %v %v", rec.spans[0], rec.spans[2])
	}
}

func TestSameKeyNeverOverlapsAcrossRuns(t *testing.T) {
	t.Parallel()
	s, rec := New(8), newRecorder()
	spec := tool.Spec{Concurrency: "file:{path}"}
	key := func(path string) string { return Class(spec, json.RawMessage(`{"path":"`+path+`"}`)) }
	// Calls on a.txt come from two sessions at once; b.txt and c.txt run
	// beside them, together.
	bBody := barrier(t, 2)
	var wg sync.WaitGroup
	for run := range 2 {
		wg.Go(func() {
			calls := []Call{rec.call(run*10, key("a.txt"), nil), rec.call(run*10+1, key("a.txt"), nil), rec.call(run*10+2, key([]string{"b.txt", "c.txt"}[run]), bBody)}
			s.Run(t.Context(), []string{"ses_1", "ses_2"}[run], calls)
		})
	}
	wg.Wait()
	a := []int{0, 1, 10, 11}
	for _, i := range a {
		for _, j := range a {
			if i < j && overlap(rec.spans[i], rec.spans[j]) {
				t.Errorf("calls %d and %d on the same key overlapped: %v %v", i, j, rec.spans[i], rec.spans[j])
			}
		}
	}
	if sessions, keys := s.held(); sessions+keys != 0 {
		t.Errorf("locks still held: %d sessions, %d keys", sessions, keys)
	}
}

func TestCancelledCallsDoNotRun(t *testing.T) {
	t.Parallel()
	s, rec := New(1), newRecorder()
	ctx, cancel := context.WithCancel(t.Context())
	calls := []Call{
		rec.call(0, tool.Parallel, cancel), // cancels while the others wait for the slot
		rec.call(1, tool.Parallel, nil),
		rec.call(2, tool.Exclusive, nil),
	}
	errs := s.Run(ctx, "ses_1", calls)
	if errs[0] != nil {
		t.Errorf("call 0: %v, want it to have run", errs[0])
	}
	for i := 1; i < 3; i++ {
		if !errors.Is(errs[i], context.Canceled) {
			t.Errorf("call %d: %v, want context.Canceled", i, errs[i])
		}
		if _, ran := rec.spans[i]; ran {
			t.Errorf("call %d ran after cancellation", i)
		}
	}
}

func TestClass(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec  tool.Spec
		input string
		want  string
	}{
		{tool.Spec{Annotations: tool.Annotations{ReadOnly: true}}, `{}`, tool.Parallel},
		{tool.Spec{}, `{}`, tool.Exclusive},
		{tool.Spec{Concurrency: tool.Parallel}, `{}`, tool.Parallel},
		{tool.Spec{Concurrency: "db"}, `{}`, "key:db"},
		{tool.Spec{Concurrency: "file:{path}"}, `{"path":"a/b.txt"}`, "key:file:a/b.txt"},
		{tool.Spec{Concurrency: "row:{table}/{id}"}, `{"table":"orders","id":1042}`, "key:row:orders/1042"},
		{tool.Spec{Concurrency: "file:{path}"}, `{}`, "key:file:"},
		{tool.Spec{Concurrency: "odd:{path"}, `{"path":"x"}`, "key:odd:{path"},
	} {
		if got := Class(tc.spec, json.RawMessage(tc.input)); got != tc.want {
			t.Errorf("Class(%q, %s) = %q, want %q", tc.spec.Concurrency, tc.input, got, tc.want)
		}
	}
}

// BenchmarkRun measures a hop's batch of n parallel no-op calls through
// the scheduler: 8 should cost at most twice 1.
func BenchmarkRun(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			s := New(8)
			calls := make([]Call, n)
			for i := range calls {
				calls[i] = Call{Class: tool.Parallel, Run: func(context.Context) {}}
			}
			ctx := context.Background()
			for b.Loop() {
				s.Run(ctx, "ses_1", calls)
			}
		})
	}
}
