package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
)

// SchedulesOptions are the parameters of the schedules benchmark: N once
// schedules, all due at the same moment, fired by one runtime on the real
// clock.
type SchedulesOptions struct {
	Variant string // mem or sqlite
	N       int    // schedules
	// Lead is how long after the creation starts the schedules are due
	// (rounded up to a whole second); the creation must end before. Zero:
	// 5s + 2ms per schedule.
	Lead time.Duration
	// Timeout bounds the wait, from the due moment, for every fire to
	// start and every fired run to end. Zero: 5 minutes.
	Timeout time.Duration
	// MaxQueued, when above zero, sets both of the runtime's queue bounds
	// (Config.MaxQueued and MaxQueuedPerTenant); zero keeps the defaults.
	MaxQueued int
	// Runs, when above zero, is Config.MaxConcurrentRuns; zero keeps the
	// default.
	Runs int
	// Dir is the parent of the sqlite variant's fresh temporary directory
	// (default: the system's).
	Dir string
	// ProcessStart is when the process started, for setup_s.
	ProcessStart time.Time
	// CPUProfile, when set, receives a CPU profile from the due moment
	// until every fired run ended.
	CPUProfile io.Writer
}

// Validate reports whether o describes a run this build can do.
func (o SchedulesOptions) Validate() error {
	switch o.Variant {
	case "mem", "sqlite":
	default:
		return fmt.Errorf("%w: variant %q (want mem or sqlite)", ErrInvalidOptions, o.Variant)
	}
	if o.N < 1 || o.Lead < 0 || o.Timeout < 0 || o.MaxQueued < 0 || o.Runs < 0 {
		return fmt.Errorf("%w: need -n ≥ 1, --lead ≥ 0, --timeout ≥ 0, --max-queued ≥ 0, --runs ≥ 0", ErrInvalidOptions)
	}
	return nil
}

// The schedules benchmark's targets (issue 20): every fire started within
// a minute of the due moment, in a process whose RSS stays under 100 MB.
const (
	SchedulesTargetFired = 60 * time.Second
	SchedulesTargetRSSMB = 100
)

// SchedulesResult is the schedules benchmark's RESULT line. Latencies are
// from the due moment, in milliseconds.
type SchedulesResult struct {
	Peer      string `json:"peer"`
	Bench     string `json:"bench"`
	Variant   string `json:"variant"`
	N         int    `json:"N"`
	MaxQueued int    `json:"max_queued,omitempty"`
	Runs      int    `json:"runs,omitempty"`
	// CreateS is how long creating the N schedules took (not measured
	// otherwise), CreatePerS its rate.
	CreateS    float64 `json:"create_s"`
	CreatePerS float64 `json:"create_per_s"`
	// Fired counts the fires that started (job.item.started), NotRun those
	// recorded without running (missed: past the catch-up window; skipped),
	// Completed the fired runs that ended completed.
	Fired     int `json:"fired"`
	NotRun    int `json:"not_run"`
	Completed int `json:"completed"`
	// TimedOut says the wait (--timeout) ended before every fire did.
	TimedOut bool `json:"timed_out,omitempty"`
	// Fire latency: when each fire's job.item.started was made (its
	// timestamp, a moment before its commit).
	FireP50Ms float64 `json:"fire_p50_ms"`
	FireP99Ms float64 `json:"fire_p99_ms"`
	FireMaxMs float64 `json:"fire_max_ms"`
	// AllFiredS is the latest of them (the fire's job.item.started, made
	// a moment before its commit), from the due moment; the target
	// applies to it.
	AllFiredS float64 `json:"all_fired_s"`
	// Run start latency: when each fired run called its model (after its
	// fire committed and a worker claimed it), and when the last did.
	RunStartP50Ms   float64 `json:"run_start_p50_ms"`
	RunStartP99Ms   float64 `json:"run_start_p99_ms"`
	RunStartMaxMs   float64 `json:"run_start_max_ms"`
	AllRunsStartedS float64 `json:"all_runs_started_s"`
	// AllCompletedS is when the last fire was recorded completed (its
	// run ended and the scheduler collected it: job.item.completed's
	// timestamp); informational.
	AllCompletedS float64 `json:"all_completed_s"`
	// CPUS is the process's CPU time from the due moment until every
	// fired run called its model (the CPU profile covers the same).
	CPUS float64 `json:"cpu_s"`
	// Memory: the process's peak RSS (VmHWM) over the creation, and over
	// the firing (the peak reset at the due moment where Linux allows it;
	// otherwise the whole run's). Sampled every 20 ms during the firing:
	// the largest RSS seen, split into anonymous memory and file-backed
	// pages (the executable's), with the Go heap in use then and all the
	// memory the Go runtime had mapped then (Sys − HeapReleased, an upper
	// bound of its resident share; the rest of the
	// anonymous memory is SQLite's, allocated outside Go); the Go heap in
	// use at its largest; the most goroutines.
	CreateRSSMB   float64 `json:"create_rss_mb"`
	PeakRSSMB     float64 `json:"peak_rss_mb"`
	PeakRSSReset  bool    `json:"peak_rss_reset"`
	SampledRSSMB  float64 `json:"sampled_rss_mb"`
	AnonAtPeakMB  float64 `json:"anon_at_peak_mb"`
	FileAtPeakMB  float64 `json:"file_at_peak_mb"`
	HeapAtPeakMB  float64 `json:"heap_at_peak_mb"`
	GoAtPeakMB    float64 `json:"go_at_peak_mb"`
	PeakHeapMB    float64 `json:"peak_heap_mb"`
	MaxGoroutines int     `json:"max_goroutines"`
	// Warnings and errors the runtime logged from the due moment to the
	// end, by message: a fire that found the queue full (the runtime's
	// MaxQueuedPerTenant) warns and waits for the scheduler's next poll.
	Logged map[string]int `json:"logged,omitempty"`
	// Commits and writes of the store's writer, and events, from the due
	// moment to the end, per schedule.
	CommitsPerFire float64 `json:"commits_per_fire"`
	WritesPerFire  float64 `json:"writes_per_fire"`
	EventsPerFire  float64 `json:"events_per_fire"`
	FiredOK        bool    `json:"fired_ok"`
	RSSOK          bool    `json:"rss_ok"`
	SetupS         float64 `json:"setup_s"`
	DBBytes        int64   `json:"db_bytes,omitempty"`
	// Versions of agentrt, Go and the SQLite driver.
	Versions map[string]string `json:"versions"`
}

// Pass reports whether both targets were met.
func (r *SchedulesResult) Pass() bool { return r.FiredOK && r.RSSOK }

// Schedules runs the schedules benchmark and verifies it. It starts a
// runtime whose one agent answers at once (one model call), creates N
// once schedules of it, in parallel, all due at the same whole second
// (Lead after the creation started), and waits on the real clock: the
// scheduler lists the due schedules and starts each one's fire (a turn
// and task the workers then claim and run). It records when each fire
// started, when its run called the model, and when the fire was recorded
// completed, and samples the process's memory meanwhile.
func Schedules(ctx context.Context, o SchedulesOptions) (*SchedulesResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.ProcessStart.IsZero() {
		o.ProcessStart = time.Now()
	}
	if o.Lead == 0 {
		o.Lead = 5*time.Second + time.Duration(o.N)*2*time.Millisecond
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	m, logs := &firedModel{}, &logCounter{}
	cfg := agentrt.Config{
		Logger:             slog.New(logs),
		Agents:             map[string]*agentrt.Agent{"bench": {Provider: m}},
		MaxQueued:          o.MaxQueued,
		MaxQueuedPerTenant: o.MaxQueued,
		MaxConcurrentRuns:  o.Runs,
	}
	rt, dbPath, done, err := start(ctx, cfg, o.Variant, o.Dir, "agentrt-bench-schedules-")
	if err != nil {
		return nil, err
	}
	defer done()
	setup := time.Since(o.ProcessStart)

	t0 := time.Now()
	due := t0.Add(o.Lead).Truncate(time.Second).Add(time.Second).UTC()
	ids, err := createSchedules(ctx, rt, o.N, due)
	if err != nil {
		return nil, err
	}
	created := time.Now()
	if created.After(due.Add(-500 * time.Millisecond)) {
		return nil, fmt.Errorf("creating %d schedules took %s, too close to their due moment %s after the start: raise --lead", o.N, created.Sub(t0).Round(time.Millisecond), due.Sub(t0))
	}
	createRSS, err := procStatus("VmHWM")
	if err != nil {
		return nil, err
	}
	h0 := rt.Health(ctx)
	sub, err := rt.Subscribe(ctx, &apitype.SubscribeParams{AfterCursor: h0.Store.LastCursor})
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	m.due.Store(due.UnixNano())

	// Wait for the due moment, then reset the peak RSS (Linux: "5" in
	// clear_refs) so that the firing's peak is measured apart.
	select {
	case <-time.After(time.Until(due)):
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	reset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	if o.CPUProfile != nil {
		if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
			return nil, fmt.Errorf("starting CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	cpu0 := cpuTime()
	logs.start()
	samples := sampleMemory()

	// While timed, only the model's calls are watched (a subscriber
	// reading every event would compete with the scheduler for the CPU);
	// the fires' events are read afterwards.
	deadline := due.Add(o.Timeout)
	runsStarted := m.waitCalls(ctx, o.N, deadline)
	cpu := cpuTime() - cpu0
	if o.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	w, err := watchFires(ctx, sub, ids, due, deadline)
	mem := samples.stop()
	if err != nil {
		return nil, err
	}
	h1 := rt.Health(ctx)
	peak, err := procStatus("VmHWM")
	if err != nil {
		return nil, err
	}
	if got := int(m.calls.Load()); !w.timedOut && got != len(w.fired) {
		return nil, fmt.Errorf("verification: the model was called %d times for %d fires started", got, len(w.fired))
	}

	n := float64(o.N)
	runStarts := m.latencies()
	res := &SchedulesResult{
		Peer: "agentrt", Bench: "schedules", Variant: o.Variant, N: o.N, MaxQueued: o.MaxQueued, Runs: o.Runs,
		CreateS:         created.Sub(t0).Seconds(),
		CreatePerS:      n / created.Sub(t0).Seconds(),
		Fired:           len(w.fired),
		NotRun:          w.notRun,
		Completed:       w.completed,
		TimedOut:        w.timedOut,
		FireP50Ms:       ms(quantile(w.fired, 0.5)),
		FireP99Ms:       ms(quantile(w.fired, 0.99)),
		FireMaxMs:       ms(quantile(w.fired, 1)),
		AllFiredS:       w.allFired.Seconds(),
		RunStartP50Ms:   ms(quantile(runStarts, 0.5)),
		RunStartP99Ms:   ms(quantile(runStarts, 0.99)),
		RunStartMaxMs:   ms(quantile(runStarts, 1)),
		AllRunsStartedS: runsStarted.Seconds(),
		AllCompletedS:   w.allEnded.Seconds(),
		CPUS:            cpu.Seconds(),
		CreateRSSMB:     mb(createRSS[0]),
		PeakRSSMB:       mb(peak[0]),
		PeakRSSReset:    reset,
		SampledRSSMB:    mb(mem.maxRSS),
		AnonAtPeakMB:    mb(mem.anonAtMaxRSS),
		FileAtPeakMB:    mb(mem.fileAtMaxRSS),
		HeapAtPeakMB:    mb(mem.heapAtMaxRSS),
		GoAtPeakMB:      mb(mem.goAtMaxRSS),
		PeakHeapMB:      mb(mem.maxHeap),
		MaxGoroutines:   mem.maxGoroutines,
		CommitsPerFire:  float64(h1.Store.Writer.Commits-h0.Store.Writer.Commits) / n,
		WritesPerFire:   float64(h1.Store.Writer.Writes-h0.Store.Writer.Writes) / n,
		EventsPerFire:   float64(h1.Store.LastCursor-h0.Store.LastCursor) / n,
		SetupS:          setup.Seconds(),
		Logged:          logs.counts(),
		Versions:        versions(),
	}
	res.FiredOK = res.Fired == o.N && w.allFired <= SchedulesTargetFired
	res.RSSOK = max(res.CreateRSSMB, res.PeakRSSMB) < SchedulesTargetRSSMB
	if dbPath != "" {
		for _, suffix := range []string{"", "-wal"} {
			if fi, err := os.Stat(dbPath + suffix); err == nil {
				res.DBBytes += fi.Size()
			}
		}
	}
	return res, nil
}

// createSchedules creates n once schedules of the bench agent due at due,
// in parallel, and returns their ids.
func createSchedules(ctx context.Context, rt *agentrt.Runtime, n int, due time.Time) (map[string]bool, error) {
	ids := make([]string, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			s, err := rt.CreateSchedule(gctx, &apitype.CreateScheduleParams{ScheduleSpec: apitype.ScheduleSpec{
				Name: fmt.Sprintf("bench-%d", i), Agent: "bench", Kind: "once", At: due.Format(time.RFC3339), Input: "tick",
			}})
			if err != nil {
				return fmt.Errorf("creating schedule %d: %w", i, err)
			}
			ids[i] = s.ScheduleID
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	set := make(map[string]bool, n)
	for _, id := range ids {
		set[id] = true
	}
	return set, nil
}

// fireWatch is what the event log says of the schedules' fires.
type fireWatch struct {
	fired              []time.Duration // job.item.started's timestamp − due
	notRun, completed  int
	allFired, allEnded time.Duration // the latest start, and the latest end
	timedOut           bool          // the deadline passed first
}

// watchFires reads the event log until every schedule of ids has fired
// and its fire ended, or fired not at all (missed or skipped), or until
// the deadline (then it returns what it read). A schedule that fires
// twice is an error.
func watchFires(ctx context.Context, sub *agentrt.Subscription, ids map[string]bool, due, deadline time.Time) (*fireWatch, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	w := &fireWatch{}
	started := make(map[string]bool, len(ids))
	ended := 0
	for ended < len(ids) {
		var e *event.Event
		var err error
		if ctx.Err() == nil {
			e, err = sub.Next(ctx)
		}
		if ctx.Err() != nil {
			// Past the deadline: what is committed already.
			if e, err = sub.TryNext(context.WithoutCancel(ctx)); e == nil && err == nil {
				w.timedOut = true
				return w, nil
			}
		}
		if err != nil {
			return nil, err
		}
		if !ids[e.JobID] || e.JobItemID == "" {
			continue
		}
		at := e.Timestamp.Sub(due)
		switch e.Type {
		case event.JobItemStarted:
			if started[e.JobID] {
				return nil, fmt.Errorf("verification: schedule %s fired twice", e.JobID)
			}
			started[e.JobID] = true
			w.fired = append(w.fired, at)
			w.allFired = max(w.allFired, at)
			continue
		case event.JobItemCompleted, event.JobItemFailed:
			if e.Type == event.JobItemCompleted {
				w.completed++
			}
		case event.JobProgress:
			w.notRun++
		default:
			continue
		}
		ended++
		w.allEnded = max(w.allEnded, at)
	}
	return w, nil
}

// logCounter is a slog.Handler that counts the warnings and errors
// logged, by message, once started.
type logCounter struct {
	on atomic.Bool
	mu sync.Mutex
	n  map[string]int
}

func (h *logCounter) start() { h.on.Store(true) }

func (h *logCounter) Enabled(_ context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.on.Load()
}

func (h *logCounter) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[r.Level.String()+": "+r.Message]++
	return nil
}

func (h *logCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logCounter) WithGroup(string) slog.Handler      { return h }

func (h *logCounter) counts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.n)
}

// memSampler samples the process's RSS, Go heap and goroutines every
// 20 ms until stopped.
type memSampler struct {
	stopc chan struct{}
	done  chan memPeaks
}

type memPeaks struct {
	maxRSS, maxHeap                          int64
	anonAtMaxRSS, fileAtMaxRSS, heapAtMaxRSS int64
	goAtMaxRSS                               int64
	maxGoroutines                            int
}

func sampleMemory() *memSampler {
	s := &memSampler{stopc: make(chan struct{}), done: make(chan memPeaks, 1)}
	go func() {
		var p memPeaks
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			heap := int64(ms.HeapInuse)
			if st, err := procStatus("VmRSS", "RssAnon", "RssFile"); err == nil && st[0] > p.maxRSS {
				p.maxRSS, p.anonAtMaxRSS, p.fileAtMaxRSS, p.heapAtMaxRSS = st[0], st[1], st[2], heap
				p.goAtMaxRSS = int64(ms.Sys - ms.HeapReleased)
			}
			p.maxHeap = max(p.maxHeap, heap)
			p.maxGoroutines = max(p.maxGoroutines, runtime.NumGoroutine())
			select {
			case <-s.stopc:
				s.done <- p
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *memSampler) stop() memPeaks {
	close(s.stopc)
	return <-s.done
}

// firedModel answers every request at once, and records when it was
// called, from the due moment.
type firedModel struct {
	calls atomic.Int64
	due   atomic.Int64 // unix nanoseconds
	mu    sync.Mutex
	at    []time.Duration
}

func (m *firedModel) Info() model.Info { return model.Info{Kind: "replay", Model: "bench-fired"} }

func (m *firedModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.calls.Add(1)
	d := time.Since(time.Unix(0, m.due.Load()))
	m.mu.Lock()
	m.at = append(m.at, d)
	m.mu.Unlock()
	return &model.Response{Text: "done", FinishReason: model.FinishStop}, nil
}

// waitCalls waits until the model was called n times, or the deadline,
// and returns how long after the due moment the last call came.
func (m *firedModel) waitCalls(ctx context.Context, n int, deadline time.Time) time.Duration {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for m.calls.Load() < int64(n) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return 0
		case <-tick.C:
		}
	}
	return quantile(m.latencies(), 1)
}

func (m *firedModel) latencies() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]time.Duration(nil), m.at...)
}
