package bench

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/policy"
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

// TestLoopPG runs the workload small on three nodes sharing one
// PostgreSQL database, with the floor beside it: every session must
// verify whichever node ran it.
func TestLoopPG(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	res, err := Loop(context.Background(), Options{Variant: "pg", DSN: dsn, Nodes: 3, Floor: true, S: 30, T: 3, C: 4, W: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 30*7 || res.Nodes != 3 || len(res.Floors) != 2 || res.Floors[1].C != 4 || res.EventsPerSession < 20 {
		t.Errorf("result = %+v", res)
	}
}

func TestLoopRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{Variant: "pg", S: 1, C: 1, DSN: "mysql://db"}, {Variant: "nope", S: 1, C: 1}, {Variant: "mem", S: 0, C: 1}, {Variant: "mem", S: 1, C: 1, Nodes: 2}} {
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
	for _, rules := range []int{0, 100} {
		b.Run(fmt.Sprintf("rules=%d", rules), func(b *testing.B) {
			const t = 5
			res, err := Loop(context.Background(), Options{Variant: "mem", S: max(1, b.N/(2*t+1)), T: t, C: 1, W: 0, Rules: rules})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(res.CPUUsPerStep, "cpu-us/step")
		})
	}
}

// TestParked parks a few hundred sessions on an approval and resumes a
// few on both variants: every session must park, parking must add no
// goroutines, and every resume must be measured. It does not call
// t.Parallel: it counts the process's goroutines, which tests running
// alongside would change.
func TestParked(t *testing.T) {
	for _, v := range []string{"mem", "sqlite"} {
		t.Run(v, func(t *testing.T) {
			res, err := Parked(context.Background(), ParkedOptions{Variant: v, Sessions: 300, Resumes: 5, Concurrency: 8, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Sessions != 300 || res.Resumes != 5 || res.Variant != v {
				t.Errorf("result = %+v, want 300 sessions and 5 resumes of %s", res, v)
			}
			if d := res.GoroutinesParked - res.GoroutinesIdle; d >= 10 {
				t.Errorf("goroutines: %d idle, %d parked; parked sessions must hold none", res.GoroutinesIdle, res.GoroutinesParked)
			}
			if res.IdleRSSMB <= 0 || res.ParkedRSSMB <= 0 || res.HeapIdleMB <= 0 || res.HeapParkedMB <= 0 || res.ParkedRSSAnonMB <= 0 || res.ParkedRSSFileMB <= 0 || res.MaxRSSMB < res.ParkedRSSMB {
				t.Errorf("memory figures missing: %+v", res)
			}
			if res.ResumeMsP50 <= 0 || res.ResumeMsMax < res.ResumeMsP50 || res.CompleteMsP50 < res.ResumeMsP50 {
				t.Errorf("resume figures = p50 %v max %v, complete p50 %v", res.ResumeMsP50, res.ResumeMsMax, res.CompleteMsP50)
			}
		})
	}
}

func TestParkedRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []ParkedOptions{
		{Variant: "pg"}, {Variant: "nope"}, {Sessions: -1}, {Sessions: 10, Resumes: 11}, {Resumes: -1}, {Concurrency: -2},
	} {
		if _, err := Parked(context.Background(), o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Parked(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(100-i) * time.Millisecond
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.9, 90 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}} {
		if got := quantile(ds, c.q); got != c.want {
			t.Errorf("quantile(1..100 ms, %v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := quantile(nil, 0.5); got != 0 {
		t.Errorf("quantile(nil) = %v, want 0", got)
	}
}

// TestPolicyRules checks the --rules policy: n rules, every echo call of
// the workload allowed by the allow-echo rule, with the conditions on
// echo's argument evaluated on the way.
func TestPolicyRules(t *testing.T) {
	t.Parallel()
	rules, err := PolicyRules(100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 100 {
		t.Fatalf("PolicyRules(100) = %d rules", len(rules))
	}
	k, err := policy.NewKernel(policy.KernelConfig{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := k.Explain(context.Background(), &policy.Request{
		Agent: "bench", SessionID: "s-7", ToolName: "echo", ReadOnly: true,
		Input: []byte(`{"text":"` + ToolText(7, 1) + `"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ex.Decision; got.Outcome != policy.Allow || len(got.RuleIDs) != 1 || got.RuleIDs[0] != "allow-echo" {
		t.Errorf("echo decision = %+v, want allowed by allow-echo alone", got)
	}
	conds := 0
	for _, r := range ex.Rules {
		if r.InputDependent {
			conds++
		}
	}
	if conds != 5 {
		t.Errorf("%d rules on echo depend on its input, want 5", conds)
	}
	if rules, err := PolicyRules(0); err != nil || rules != nil {
		t.Errorf("PolicyRules(0) = %v, %v; want none", rules, err)
	}
}

// TestLoopWithRules runs the workload under the --rules policy: it must
// still verify.
func TestLoopWithRules(t *testing.T) {
	t.Parallel()
	res, err := Loop(context.Background(), Options{Variant: "mem", S: 10, T: 3, C: 2, W: 1, Rules: 100})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rules != 100 || res.Steps != 10*7 {
		t.Errorf("result = %+v, want 100 rules and 70 steps", res)
	}
}

// stepAllocsCeiling is the most allocations one in-memory step of the
// workload may make (a session's allocations, the benchmark's own
// submission and wait included, over its 2T+1 steps), with 100 policy
// rules and without. It sits just above the achieved figures: lower it
// when a change cuts allocations, and do not raise it without a reason.
var stepAllocsCeiling = map[int]float64{0: 64, 100: 77}

// TestStepAllocs guards the in-memory step's allocations. Not parallel:
// testing.AllocsPerRun counts the whole process's allocations.
func TestStepAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a few hundred sessions")
	}
	if raceEnabled {
		t.Skip("allocation counts under the race detector are not the program's; .ci/run runs this without -race")
	}
	for _, rules := range []int{0, 100} {
		t.Run(fmt.Sprintf("rules=%d", rules), func(t *testing.T) {
			const T = 5
			o := Options{Variant: "mem", S: 1, T: T, C: 1, Rules: rules}
			cfg, _, _, err := loopConfig(o)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			rt, _, done, err := start(ctx, cfg, "mem", "", "")
			if err != nil {
				t.Fatal(err)
			}
			defer done()
			if err := runSessions(ctx, []*agentrt.Runtime{rt}, 1000, 1020, 1, T); err != nil {
				t.Fatal(err)
			}
			i := 0
			perSession := testing.AllocsPerRun(100, func() {
				if err := runSession(ctx, rt, i, T); err != nil {
					t.Fatal(err)
				}
				i++
			})
			perStep := perSession / (2*T + 1)
			t.Logf("%.1f allocations per step (%.0f per session)", perStep, perSession)
			if ceiling := stepAllocsCeiling[rules]; perStep > ceiling {
				t.Errorf("one in-memory step allocates %.1f times, want ≤ %.0f", perStep, ceiling)
			}
		})
	}
}

// TestSessionVerifies runs a short long session on both variants: it must
// pass its own verification and report turns 1, 10 and N.
func TestSessionVerifies(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"mem", "sqlite"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			res, err := Session(context.Background(), SessionOptions{Variant: v, Turns: 12, T: 2, W: 1, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Steps != 12*5 || res.Turns != 12 || res.Variant != v {
				t.Errorf("result = %+v, want 60 steps of 12 turns of %s", res, v)
			}
			var turns []int
			for _, p := range res.At {
				turns = append(turns, p.Turn)
				if p.WallUsPerStep <= 0 {
					t.Errorf("turn %d: wall per step %v, want > 0", p.Turn, p.WallUsPerStep)
				}
			}
			if diff := cmp.Diff([]int{1, 10, 12}, turns); diff != "" {
				t.Errorf("reported turns (-want +got):\n%s", diff)
			}
			if res.RatioWall <= 0 {
				t.Errorf("ratio_wall = %v, want > 0", res.RatioWall)
			}
		})
	}
}

// TestSessionCompacts: with a window, the long session compacts along
// the way and still verifies every turn.
func TestSessionCompacts(t *testing.T) {
	t.Parallel()
	res, err := Session(context.Background(), SessionOptions{Variant: "sqlite", Turns: 30, T: 3, W: 1, Dir: t.TempDir(), CompactWindow: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Compactions < 3 || res.CompactWindow != 2000 {
		t.Errorf("result = %+v, want several compactions within 2000 tokens", res)
	}
}

func TestSessionRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []SessionOptions{{Variant: "pg", Turns: 1}, {Variant: "mem", Turns: 0}, {Variant: "mem", Turns: 1, T: -1}, {Variant: "mem", Turns: 1, CompactWindow: -1}} {
		if _, err := Session(context.Background(), o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Session(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
}

func TestMedianAround(t *testing.T) {
	t.Parallel()
	ds := make([]time.Duration, 21) // turns 1..20, turn j took j ms
	for j := range ds {
		ds[j] = time.Duration(j) * time.Millisecond
	}
	for _, c := range []struct{ at, want int }{{1, 4}, {10, 10}, {20, 17}} {
		if got := medianAround(ds, c.at); got != time.Duration(c.want)*time.Millisecond {
			t.Errorf("medianAround(turn %d) = %v, want %d ms", c.at, got, c.want)
		}
	}
}

// TestDelegationCommits runs the delegation benchmark small on SQLite:
// it must verify, and a spawn and join must cost at most
// DelegationTarget durable commits beyond the child's own steps and the
// parent's.
func TestDelegationCommits(t *testing.T) {
	t.Parallel()
	res, err := Delegation(context.Background(), DelegationOptions{Variant: "sqlite", N: 6, T: 2, W: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("commits per turn: child %.2f, parent %.2f, delegated %.2f; per delegation %.2f, median %.0f (%.2f writes, %.2f events)",
		res.ChildCommitsPerTurn, res.ParentCommitsPerTurn, res.DelegatedCommitsPerTurn, res.CommitsPerDelegation, res.CommitsPerDelegationMedian,
		res.WritesPerDelegation, res.EventsPerDelegation)
	if res.ChildCommitsPerTurn <= 0 || res.ParentCommitsPerTurn <= 0 || res.DelegatedCommitsPerTurn <= res.ChildCommitsPerTurn {
		t.Errorf("result = %+v, want commits in every phase, the delegated phase's the most", res)
	}
	if res.CommitsPerDelegationMedian > DelegationTarget || !res.CommitsOK {
		t.Errorf("a spawn and join cost %.0f commits (median) beyond the child's and the parent's own, want ≤ %d", res.CommitsPerDelegationMedian, DelegationTarget)
	}
	// The mean also counts stray wakes, which the race detector's
	// slowness makes frequent.
	if !raceEnabled && res.CommitsPerDelegation > DelegationTarget {
		t.Errorf("a spawn and join cost %.2f commits (mean) beyond the child's and the parent's own, want ≤ %d", res.CommitsPerDelegation, DelegationTarget)
	}
}

func TestDelegationRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []DelegationOptions{{Variant: "pg", N: 1}, {Variant: "mem", N: 0}, {Variant: "mem", N: 1, T: -1}, {Variant: "mem", N: 1, W: -1}} {
		if _, err := Delegation(context.Background(), o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Delegation(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
}
