package bench

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestLoopVerifies runs the workload small on both variants: it must pass
// its own verification (model and tool call counts, every final answer).
func TestLoopVerifies(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"mem", "sqlite"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			res, err := Loop(context.Background(), Options{Variant: v, S: 20, T: 3, C: 4, W: 2, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Steps != 20*7 || res.EventsPerSession < 20 || res.StoreWritesPerSession < 7 {
				t.Errorf("result = %+v", res)
			}
		})
	}
}

func TestLoopRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{Variant: "pg", S: 1, C: 1}, {Variant: "nope", S: 1, C: 1}, {Variant: "mem", S: 0, C: 1}} {
		if _, err := Loop(context.Background(), o); err == nil {
			t.Errorf("Loop(%+v) = nil error", o)
		}
	}
}

func TestToolText(t *testing.T) {
	t.Parallel()
	s := ToolText(7, 1)
	if len(s) != 200 || s[:17] != "session=7 turn=1 " {
		t.Errorf("ToolText(7, 1) = %q (%d bytes)", s, len(s))
	}
}

// BenchmarkLoopMem runs sessions of the workload on the in-memory store;
// ns/op and allocs/op are per step.
func BenchmarkLoopMem(b *testing.B) {
	const t = 5
	res, err := Loop(context.Background(), Options{Variant: "mem", S: max(1, b.N/(2*t+1)), T: t, C: 1, W: 0})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.CPUUsPerStep, "cpu-us/step")
}
