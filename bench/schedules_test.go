package bench

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSchedulesFireOnce runs the schedules benchmark small on SQLite: 50
// once schedules due at the same moment each fire exactly once (a second
// job.item.started fails the run), every fired run completes, and the
// report's figures hang together. The lead leaves room to create them
// under the race detector on a busy machine (creating 16 once took
// more than 3 s, and a once schedule due in the past is refused).
func TestSchedulesFireOnce(t *testing.T) {
	t.Parallel()
	const n = 50
	res, err := Schedules(context.Background(), SchedulesOptions{Variant: "sqlite", N: n, Lead: 15 * time.Second, Timeout: time.Minute, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Fired != n || res.NotRun != 0 || res.Completed != n {
		t.Errorf("fired %d, not run %d, completed %d; want all %d fired and completed", res.Fired, res.NotRun, res.Completed, n)
	}
	if !res.FiredOK {
		t.Errorf("fired_ok = false: the last of %d fires was seen after %.1f s, want within %s", n, res.AllFiredS, SchedulesTargetFired)
	}
	// A fire is made after its due moment and seen after it was made; its
	// run starts after it was made and ends after it was seen.
	if !(0 <= res.FireP50Ms && res.FireP50Ms <= res.FireP99Ms && res.FireP99Ms <= res.FireMaxMs && res.FireMaxMs <= res.AllFiredS*1000+1e-6) {
		t.Errorf("fire latency p50 %.1f, p99 %.1f, max %.1f ms, all seen at %.3f s: want 0 ≤ p50 ≤ p99 ≤ max ≤ all", res.FireP50Ms, res.FireP99Ms, res.FireMaxMs, res.AllFiredS)
	}
	if res.RunStartP50Ms < res.FireP50Ms || res.RunStartMaxMs < res.FireMaxMs || res.AllCompletedS < res.AllFiredS {
		t.Errorf("run start p50 %.1f, max %.1f ms, all completed at %.3f s: want each after its fire's (%.1f, %.1f ms, %.3f s)",
			res.RunStartP50Ms, res.RunStartMaxMs, res.AllCompletedS, res.FireP50Ms, res.FireMaxMs, res.AllFiredS)
	}
	if res.CreateS <= 0 || res.CPUS <= 0 || res.PeakRSSMB <= 0 || res.SampledRSSMB <= 0 || res.PeakHeapMB <= 0 || res.CommitsPerFire <= 0 || res.EventsPerFire <= 0 || res.DBBytes <= 0 {
		t.Errorf("result = %+v, want creation time, CPU, memory, commits, events and the database's size", res)
	}
}

func TestSchedulesRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []SchedulesOptions{{Variant: "pg", N: 1}, {Variant: "mem", N: 0}, {Variant: "mem", N: 1, Lead: -time.Second}, {Variant: "mem", N: 1, MaxQueued: -1}} {
		if _, err := Schedules(context.Background(), o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Schedules(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
}
