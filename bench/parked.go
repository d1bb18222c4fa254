package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// The parked-sessions benchmark's targets: N sessions parked on an
// approval cost at most ParkedCostTargetMB of RSS above the idle runtime,
// and a parked session is running again within ResumeTargetMs of its
// approval (p99).
const (
	ParkedCostTargetMB = 50
	ResumeTargetMs     = 10
)

// parkedWarmup sessions are parked and resumed before the idle runtime is
// measured, so that one-time costs (code paths run for the first time,
// the store's caches, lazily built tables) count as idle, not as parked.
const parkedWarmup = 16

// ParkedOptions are the parameters of the parked-sessions benchmark.
type ParkedOptions struct {
	// Variant is mem or sqlite (default sqlite).
	Variant string
	// Sessions is how many sessions park on an approval (default 10000).
	Sessions int
	// Resumes is how many of them, chosen at random, are approved one at
	// a time and timed (default 200).
	Resumes int
	// Concurrency bounds the submissions in flight while parking
	// (default 32).
	Concurrency int
	// Dir is the parent of the sqlite variant's fresh temporary
	// directory (default: the system's).
	Dir string
	// CPUProfile, when set, receives a CPU profile of the resumes.
	CPUProfile io.Writer
}

// WithDefaults returns o with zero fields set to their defaults.
func (o ParkedOptions) WithDefaults() ParkedOptions {
	if o.Variant == "" {
		o.Variant = "sqlite"
	}
	if o.Sessions == 0 {
		o.Sessions = 10000
	}
	if o.Resumes == 0 {
		o.Resumes = min(200, o.Sessions)
	}
	if o.Concurrency == 0 {
		o.Concurrency = 32
	}
	return o
}

// Validate reports whether o (with defaults applied) describes a run this
// build can do.
func (o ParkedOptions) Validate() error {
	o = o.WithDefaults()
	switch o.Variant {
	case "mem", "sqlite":
	default:
		return fmt.Errorf("%w: variant %q (want mem or sqlite)", ErrInvalidOptions, o.Variant)
	}
	switch {
	case o.Sessions < 1:
		return fmt.Errorf("%w: need -n ≥ 1, got %d", ErrInvalidOptions, o.Sessions)
	case o.Resumes < 1 || o.Resumes > o.Sessions:
		return fmt.Errorf("%w: need 1 ≤ -r ≤ -n (%d), got %d", ErrInvalidOptions, o.Sessions, o.Resumes)
	case o.Concurrency < 1:
		return fmt.Errorf("%w: need -c ≥ 1, got %d", ErrInvalidOptions, o.Concurrency)
	}
	return nil
}

// ParkedResult is the parked benchmark's RESULT line. Times are in
// milliseconds, sizes in MiB ("mb").
type ParkedResult struct {
	Bench       string  `json:"bench"`
	Variant     string  `json:"variant"`
	Sessions    int     `json:"sessions"`
	Resumes     int     `json:"resumes"`
	Concurrency int     `json:"concurrency"`
	ParkS       float64 `json:"park_s"`

	// RSS (VmRSS) and Go heap in use, each read after a forced
	// collection that returns freed memory to the OS: of the idle runtime
	// (after a warm-up) and with every session parked.
	IdleRSSMB        float64 `json:"idle_rss_mb"`
	ParkedRSSMB      float64 `json:"parked_rss_mb"`
	ParkedCostMB     float64 `json:"parked_cost_mb"`
	ParkedCostKBPer  float64 `json:"parked_cost_kb_per_session"`
	HeapIdleMB       float64 `json:"heap_idle_mb"`
	HeapParkedMB     float64 `json:"heap_parked_mb"`
	GoroutinesIdle   int     `json:"goroutines_idle"`
	GoroutinesParked int     `json:"goroutines_parked"`
	// The parked RSS split into anonymous memory (Go heap and stacks,
	// SQLite's page caches) and file-backed pages (the executable's
	// touched pages, the database's shared-memory index), and the
	// process's peak RSS over the whole run (parking included), which is
	// what "whole-process RSS" means in docs/benchmarks.md.
	ParkedRSSAnonMB float64 `json:"parked_rss_anon_mb"`
	ParkedRSSFileMB float64 `json:"parked_rss_file_mb"`
	MaxRSSMB        float64 `json:"maxrss_mb"`

	// Resume: from just before RespondAction until the turn's
	// task.resumed event reaches a subscriber (it commits with the
	// approved call's start, before the call runs).
	ResumeMsP50 float64 `json:"resume_ms_p50"`
	ResumeMsP90 float64 `json:"resume_ms_p90"`
	ResumeMsP99 float64 `json:"resume_ms_p99"`
	ResumeMsMax float64 `json:"resume_ms_max"`
	// Where the resume time goes (p50 / p99 of each part): RespondAction
	// itself (recording the answer, making the task due); from its return
	// until a worker created task.resumed (dispatch, claim, loading the
	// run); from then until the subscriber read it (the commit, the bus,
	// the read).
	RespondMsP50 float64 `json:"respond_ms_p50"`
	RespondMsP99 float64 `json:"respond_ms_p99"`
	ClaimMsP50   float64 `json:"claim_ms_p50"`
	ClaimMsP99   float64 `json:"claim_ms_p99"`
	CommitMsP50  float64 `json:"commit_ms_p50"`
	CommitMsP99  float64 `json:"commit_ms_p99"`
	// Complete: from just before RespondAction until WaitTurn returns
	// the turn completed (the tool ran, the model answered).
	CompleteMsP50 float64 `json:"complete_ms_p50"`
	CompleteMsP99 float64 `json:"complete_ms_p99"`

	CostOK   bool              `json:"cost_ok"`
	ResumeOK bool              `json:"resume_ok"`
	DBBytes  int64             `json:"db_bytes,omitempty"`
	Versions map[string]string `json:"versions"`
}

// Pass reports whether both targets were met.
func (r *ParkedResult) Pass() bool { return r.CostOK && r.ResumeOK }

// Parked parks o.Sessions sessions on an approval, measures what they
// cost in memory and goroutines, then approves o.Resumes of them one at a
// time and measures how soon each runs again and completes.
func Parked(ctx context.Context, o ParkedOptions) (*ParkedResult, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	sm := &approvalModel{}
	var deploys atomic.Int64
	deploy := tool.Func("deploy", "Deploys a service (pretends to).", tool.Annotations{},
		func(ctx context.Context, call *tool.Call, in deployInput) (string, error) {
			deploys.Add(1)
			return "deployed " + in.Service, nil
		})
	kernel, err := policy.NewKernel(policy.KernelConfig{Rules: []*policy.Rule{{
		ID: "ask-deploy", Tier: policy.TierWorkspace, Tools: []string{"deploy"},
		Decision: policy.Ask, ReasonCode: "deploy_needs_approval", Message: "a person approves every deploy",
	}}})
	if err != nil {
		return nil, fmt.Errorf("building the policy: %w", err)
	}
	cfg := agentrt.Config{
		Agents: map[string]*agentrt.Agent{"bench": {Provider: sm, Tools: []string{"deploy"}}},
		Tools:  []tool.Tool{deploy},
		Policy: kernel,
	}
	rt, dbPath, done, err := start(ctx, cfg, o.Variant, o.Dir, "agentrt-bench-parked-")
	if err != nil {
		return nil, err
	}
	defer done()

	// Warm up: park and resume a few sessions, unmeasured.
	warm, err := park(ctx, rt, "w", parkedWarmup, o.Concurrency)
	if err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	for i, turnID := range warm {
		if _, err := resume(ctx, rt, "w-"+strconv.Itoa(i), turnID); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	idle, err := sampleIdle(ctx, rt)
	if err != nil {
		return nil, err
	}

	t0 := time.Now()
	turns, err := park(ctx, rt, "p", o.Sessions, o.Concurrency)
	if err != nil {
		return nil, err
	}
	parkTime := time.Since(t0)
	parked, err := sampleIdle(ctx, rt)
	if err != nil {
		return nil, err
	}

	rng := rand.New(rand.NewPCG(uint64(o.Sessions), uint64(o.Resumes)))
	ts, err := resumeSome(ctx, rt, turns, rng.Perm(o.Sessions)[:o.Resumes], o.CPUProfile)
	if err != nil {
		return nil, err
	}

	if got, want := sm.calls.Load(), int64(parkedWarmup*2+o.Sessions+o.Resumes); got != want {
		return nil, fmt.Errorf("verification: the model was called %d times, want %d", got, want)
	}
	if got, want := deploys.Load(), int64(parkedWarmup+o.Resumes); got != want {
		return nil, fmt.Errorf("verification: the tool was called %d times, want %d", got, want)
	}
	res := &ParkedResult{
		Bench: "parked", Variant: o.Variant, Sessions: o.Sessions, Resumes: o.Resumes, Concurrency: o.Concurrency,
		ParkS:            parkTime.Seconds(),
		IdleRSSMB:        mb(idle.rss),
		ParkedRSSMB:      mb(parked.rss),
		ParkedCostMB:     mb(parked.rss - idle.rss),
		ParkedCostKBPer:  float64(parked.rss-idle.rss) / 1024 / float64(o.Sessions),
		HeapIdleMB:       mb(idle.heap),
		HeapParkedMB:     mb(parked.heap),
		GoroutinesIdle:   idle.goroutines,
		GoroutinesParked: parked.goroutines,
		ParkedRSSAnonMB:  mb(parked.anon),
		ParkedRSSFileMB:  mb(parked.file),
		MaxRSSMB:         maxRSSMB(),
		ResumeMsP50:      quantileMs(ts, resumeTimes.resumedOf, 0.50),
		ResumeMsP90:      quantileMs(ts, resumeTimes.resumedOf, 0.90),
		ResumeMsP99:      quantileMs(ts, resumeTimes.resumedOf, 0.99),
		ResumeMsMax:      quantileMs(ts, resumeTimes.resumedOf, 1),
		RespondMsP50:     quantileMs(ts, resumeTimes.respondOf, 0.50),
		RespondMsP99:     quantileMs(ts, resumeTimes.respondOf, 0.99),
		ClaimMsP50:       quantileMs(ts, resumeTimes.claimOf, 0.50),
		ClaimMsP99:       quantileMs(ts, resumeTimes.claimOf, 0.99),
		CommitMsP50:      quantileMs(ts, resumeTimes.commitOf, 0.50),
		CommitMsP99:      quantileMs(ts, resumeTimes.commitOf, 0.99),
		CompleteMsP50:    quantileMs(ts, resumeTimes.completeOf, 0.50),
		CompleteMsP99:    quantileMs(ts, resumeTimes.completeOf, 0.99),
		Versions:         versions(),
	}
	res.CostOK = res.ParkedCostMB <= ParkedCostTargetMB
	res.ResumeOK = res.ResumeMsP99 <= ResumeTargetMs
	if dbPath != "" {
		for _, suffix := range []string{"", "-wal"} {
			if fi, err := os.Stat(dbPath + suffix); err == nil {
				res.DBBytes += fi.Size()
			}
		}
	}
	return res, nil
}

// park submits n sessions (prefix-0 … prefix-(n-1)) on c workers and
// waits until each is parked on its approval. It returns their turn ids.
func park(ctx context.Context, rt *agentrt.Runtime, prefix string, n, c int) ([]string, error) {
	turns := make([]string, n)
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range min(c, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				id, err := parkOne(ctx, rt, prefix, i)
				if err != nil {
					errOnce.Do(func() { first = err; cancel() })
					return
				}
				turns[i] = id
			}
		})
	}
	wg.Wait()
	return turns, first
}

func parkOne(ctx context.Context, rt *agentrt.Runtime, prefix string, i int) (string, error) {
	session := prefix + "-" + strconv.Itoa(i)
	res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{
		Agent: "bench", Input: fmt.Sprintf("session %d: deploy, then answer", i), SessionID: session, Source: "embed",
	})
	if err != nil {
		return "", fmt.Errorf("session %s: submitting: %w", session, err)
	}
	turn, err := rt.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
	if err != nil {
		return "", fmt.Errorf("session %s: waiting: %w", session, err)
	}
	if turn.Status != runtype.StatusWaitingPermission {
		return "", fmt.Errorf("verification: session %s is %s (%s), want waiting_permission", session, turn.Status, turn.StatusReason)
	}
	return res.TurnID, nil
}

// resumeSome approves the parked sessions picks (indexes into turns) one
// at a time and times each; the CPU profile, when there is one, covers
// the resumes.
func resumeSome(ctx context.Context, rt *agentrt.Runtime, turns []string, picks []int, profile io.Writer) ([]resumeTimes, error) {
	if profile != nil {
		if err := pprof.StartCPUProfile(profile); err != nil {
			return nil, fmt.Errorf("starting CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	ts := make([]resumeTimes, 0, len(picks))
	for _, i := range picks {
		tm, err := resume(ctx, rt, "p-"+strconv.Itoa(i), turns[i])
		if err != nil {
			return nil, err
		}
		ts = append(ts, *tm)
	}
	return ts, nil
}

// resumeTimes are one resume's measurements, all from just before
// RespondAction.
type resumeTimes struct {
	resumed, complete      time.Duration
	respond, claim, commit time.Duration // parts of resumed
}

func (t resumeTimes) resumedOf() time.Duration  { return t.resumed }
func (t resumeTimes) completeOf() time.Duration { return t.complete }
func (t resumeTimes) respondOf() time.Duration  { return t.respond }
func (t resumeTimes) claimOf() time.Duration    { return t.claim }
func (t resumeTimes) commitOf() time.Duration   { return t.commit }

// resume approves the parked session's pending action and times how
// soon its turn runs again and completes.
func resume(ctx context.Context, rt *agentrt.Runtime, session, turnID string) (*resumeTimes, error) {
	acts, err := rt.ListActions(ctx, &apitype.ListActionsParams{SessionID: session, Status: runtype.ActionPending})
	if err != nil {
		return nil, fmt.Errorf("session %s: listing actions: %w", session, err)
	}
	if len(acts) != 1 || acts[0].TurnID != turnID {
		return nil, fmt.Errorf("verification: session %s has %d pending actions, want 1 of turn %s", session, len(acts), turnID)
	}
	cur, err := rt.LastCursor(ctx)
	if err != nil {
		return nil, err
	}
	sub, err := rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: session, AfterCursor: cur})
	if err != nil {
		return nil, fmt.Errorf("session %s: subscribing: %w", session, err)
	}
	defer sub.Close()

	t0 := time.Now()
	if _, err := rt.RespondAction(ctx, &apitype.RespondActionParams{ActionID: acts[0].ActionID, Decision: runtype.DecisionApprove}); err != nil {
		return nil, fmt.Errorf("session %s: approving: %w", session, err)
	}
	t1 := time.Now()
	var created time.Time
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			return nil, fmt.Errorf("session %s: waiting for task.resumed: %w", session, err)
		}
		if e.Type == event.TaskResumed && e.TurnID == turnID {
			created = e.Timestamp
			break
		}
	}
	t2 := time.Now()
	turn, err := rt.WaitTurn(ctx, runtype.Owner{}, turnID)
	if err != nil {
		return nil, fmt.Errorf("session %s: waiting: %w", session, err)
	}
	t3 := time.Now()
	if turn.Status != runtype.StatusCompleted || turn.Result != "done" {
		return nil, fmt.Errorf("verification: session %s ended %s (%s) with %q, want completed with \"done\"", session, turn.Status, turn.StatusReason, turn.Result)
	}
	// The event's timestamp is wall-clock time without a monotonic
	// reading; so are the differences taken with it.
	return &resumeTimes{
		resumed: t2.Sub(t0), complete: t3.Sub(t0),
		respond: t1.Sub(t0),
		claim:   max(0, created.Sub(t1.Round(0))),
		commit:  max(0, t2.Round(0).Sub(created)),
	}, nil
}

// memSample is the process's footprint at one moment.
type memSample struct {
	rss, anon, file, heap int64 // bytes
	goroutines            int
}

// sampleIdle waits until no worker holds a task, then samples the
// process's footprint after a forced collection that returns freed memory
// to the OS, so that the Go heap's slack does not count.
func sampleIdle(ctx context.Context, rt *agentrt.Runtime) (memSample, error) {
	for rt.Health(ctx).ActiveTurns > 0 {
		if err := ctx.Err(); err != nil {
			return memSample{}, context.Cause(ctx)
		}
		time.Sleep(time.Millisecond)
	}
	runtime.GC()
	debug.FreeOSMemory()
	st, err := procStatus("VmRSS", "RssAnon", "RssFile")
	if err != nil {
		return memSample{}, err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{rss: st[0], anon: st[1], file: st[2], heap: int64(ms.HeapInuse), goroutines: runtime.NumGoroutine()}, nil
}

// procStatus reads the named sizes (VmRSS, RssAnon, …) from
// /proc/self/status, in bytes.
func procStatus(names ...string) ([]int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, fmt.Errorf("reading RSS: %w", err)
	}
	out := make([]int64, len(names))
	found := 0
	for line := range strings.Lines(string(b)) {
		name, rest, ok := strings.Cut(line, ":")
		i := slices.Index(names, name)
		if !ok || i < 0 {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("reading RSS: parsing %q: %w", strings.TrimSpace(line), err)
		}
		out[i] = kb * 1024
		found++
	}
	if found != len(names) {
		return nil, fmt.Errorf("reading RSS: /proc/self/status lacks one of %v", names)
	}
	return out, nil
}

// quantile returns the q-quantile of ds by nearest rank (q = 1: the
// maximum).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// quantileMs is quantile of one of ts's measurements, in milliseconds.
func quantileMs(ts []resumeTimes, of func(resumeTimes) time.Duration, q float64) float64 {
	ds := make([]time.Duration, len(ts))
	for i, t := range ts {
		ds[i] = of(t)
	}
	return float64(quantile(ds, q).Microseconds()) / 1000
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

type deployInput struct {
	Service string `json:"service"`
}

// approvalModel asks for the deploy tool in its first response and
// answers "done" once the tool's result is in.
type approvalModel struct {
	calls atomic.Int64
}

func (m *approvalModel) Info() model.Info {
	return model.Info{Kind: "replay", Model: "bench-approval"}
}

func (m *approvalModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.calls.Add(1)
	i := -1
	for _, msg := range req.Messages {
		switch msg.Role {
		case runtype.RoleUser:
			if i < 0 {
				i = sessionIndex(msg.Content)
			}
		case runtype.RoleTool:
			return &model.Response{Text: "done", FinishReason: model.FinishStop}, nil
		}
	}
	if i < 0 {
		return nil, &model.Error{Kind: model.ErrInvalidRequest, Message: "no session index in the first user message"}
	}
	s := strconv.Itoa(i)
	return &model.Response{
		ToolCalls: []runtype.MessageToolCall{{
			ID: "call_" + s, Name: "deploy", Arguments: `{"service":"svc-` + s + `"}`,
		}},
		FinishReason: model.FinishToolCalls,
	}, nil
}
