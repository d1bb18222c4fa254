package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
	"github.com/agentrt/agentrt/store/sqlitestore"
	"github.com/agentrt/agentrt/tool"
)

// StoreOptions are the parameters of the large-store benchmark.
type StoreOptions struct {
	// Variant is sqlite (default) or mem.
	Variant string
	// Sessions is how many sessions the store holds (default 10000, at
	// least 3): 1 % wait for an approval, 1 % failed, the rest finished
	// the loop workload (T=5).
	Sessions int
	// Reads is how many times each read path is timed (default 21).
	Reads int
	// Dir is the parent of the sqlite variant's fresh temporary directory
	// (default: the system's).
	Dir string
	// Keep keeps the sqlite variant's directory (StoreResult.DataDir).
	Keep bool
	// Reuse, when set, is the data directory of a store filled before
	// (with Keep): the fill is skipped and the reads timed on it.
	Reuse string
	// Overview, when set, reads what `agentrt overview` shows from rt
	// (dir is its data directory, "" in memory); it is timed as a read
	// path. The command line sets it; the package cannot import it.
	Overview func(ctx context.Context, rt *agentrt.Runtime, dir string) error
}

// WithDefaults returns o with zero fields set to their defaults.
func (o StoreOptions) WithDefaults() StoreOptions {
	if o.Variant == "" {
		o.Variant = "sqlite"
	}
	if o.Sessions == 0 {
		o.Sessions = 10000
	}
	if o.Reads == 0 {
		o.Reads = 21
	}
	return o
}

// Validate reports whether o (with defaults applied) describes a run this
// build can do.
func (o StoreOptions) Validate() error {
	o = o.WithDefaults()
	switch {
	case o.Variant != "mem" && o.Variant != "sqlite":
		return fmt.Errorf("%w: variant %q (want mem or sqlite)", ErrInvalidOptions, o.Variant)
	case o.Sessions < 3 || o.Reads < 1:
		return fmt.Errorf("%w: need --sessions ≥ 3 (a template of each kind) and --reads ≥ 1", ErrInvalidOptions)
	case o.Variant == "mem" && (o.Keep || o.Reuse != ""):
		return fmt.Errorf("%w: --keep and --reuse need the sqlite variant", ErrInvalidOptions)
	}
	return nil
}

// StoreResult is the store benchmark's RESULT line. Times are medians in
// milliseconds.
type StoreResult struct {
	Bench    string `json:"bench"`
	Variant  string `json:"variant"`
	Sessions int    `json:"sessions"`
	Waiting  int    `json:"waiting"`
	Failed   int    `json:"failed"`
	Reads    int    `json:"reads"`
	// FillS is the time the fill took (0 when reused); OpenS the time to
	// open (and migrate) the filled store.
	FillS float64 `json:"fill_s"`
	OpenS float64 `json:"open_s"`

	OverviewMs  float64 `json:"overview_ms,omitempty"`
	HealthMs    float64 `json:"health_ms"`
	RequestsMs  float64 `json:"requests_ms"`
	SnapshotMs  float64 `json:"snapshot_ms"`
	EventsMs    float64 `json:"events_ms"`
	SessionsMs  float64 `json:"sessions_ms"`
	ApprovalsMs float64 `json:"approvals_ms"`
	// CPU holds each path's median process CPU time (user+system) in ms,
	// by the name of its _ms field: steadier than wall time on a busy
	// machine.
	CPU map[string]float64 `json:"cpu_ms"`

	DBBytes         int64             `json:"db_bytes,omitempty"`
	BytesPerSession float64           `json:"bytes_per_session,omitempty"`
	DataDir         string            `json:"data_dir,omitempty"`
	Versions        map[string]string `json:"versions"`
}

// The sessions of the kinds that do not finish: every hundredth waits for
// an approval, the next one failed.
func waitingAt(i int) bool { return i%100 == 50 }
func failedAt(i int) bool  { return i%100 == 51 }

// Store fills a store with o.Sessions sessions and times the read paths
// an operator uses on it.
func Store(ctx context.Context, o StoreOptions) (*StoreResult, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	// The three templates are sessions of the store too: one of each kind.
	res := &StoreResult{Bench: "store", Variant: o.Variant, Sessions: o.Sessions, Waiting: 1, Failed: 1, Reads: o.Reads, Versions: versions()}
	for i := range o.Sessions - 3 {
		switch {
		case waitingAt(i):
			res.Waiting++
		case failedAt(i):
			res.Failed++
		}
	}

	dir := o.Reuse
	var mem store.Store
	switch {
	case o.Variant == "mem":
		mem = memstore.New()
	case dir == "":
		d, err := os.MkdirTemp(o.Dir, "agentrt-bench-store-")
		if err != nil {
			return nil, fmt.Errorf("creating temp dir: %w", err)
		}
		dir = d
		if o.Keep {
			res.DataDir = dir
		} else {
			defer os.RemoveAll(dir)
		}
	default:
		res.DataDir = dir
	}
	if o.Reuse == "" {
		t0 := time.Now()
		if err := fill(ctx, mem, dir, o.Sessions-3); err != nil {
			return nil, err
		}
		res.FillS = time.Since(t0).Seconds()
	}

	t0 := time.Now()
	cfg := agentrt.Config{Store: mem, NoWorkers: true, Tools: []tool.Tool{&echoTool{}},
		Agents: map[string]*agentrt.Agent{"bench": {Provider: &scriptedModel{t: 5}, Tools: []string{"echo"}}}}
	if mem == nil {
		cfg.DataDir, cfg.ExistingStore = dir, true
	}
	rt, err := agentrt.New(cfg)
	if err != nil {
		return nil, err
	}
	defer rt.Stop(context.WithoutCancel(ctx))
	if err := rt.Start(ctx); err != nil {
		return nil, err
	}
	res.OpenS = time.Since(t0).Seconds()
	if err := timeReads(ctx, rt, dir, o, res); err != nil {
		return nil, err
	}
	if mem == nil {
		db := filepath.Join(dir, "agentrt.db")
		for _, suffix := range []string{"", "-wal"} {
			if fi, err := os.Stat(db + suffix); err == nil {
				res.DBBytes += fi.Size()
			}
		}
		res.BytesPerSession = float64(res.DBBytes) / float64(o.Sessions)
	}
	return res, nil
}

// timeReads times each read path o.Reads times, the paths taking turns,
// and keeps the medians.
func timeReads(ctx context.Context, rt *agentrt.Runtime, dir string, o StoreOptions, res *StoreResult) error {
	mid := "s-" + strconv.Itoa(o.Sessions/2)
	turns, err := rt.ListRequests(ctx, &apitype.ListRequestsParams{SessionID: mid, Limit: 1})
	if err != nil || len(turns) != 1 {
		return fmt.Errorf("reading session %s's request: %v (%d found)", mid, err, len(turns))
	}
	turnID := turns[0].TurnID
	type path struct {
		name    string
		into    *float64
		read    func() error
		ms, cpu []float64
	}
	paths := []*path{
		{name: "health", into: &res.HealthMs, read: func() error {
			if h := rt.Health(ctx); !h.Store.Reachable {
				return fmt.Errorf("health: the store did not answer: %s", h.Store.Error)
			}
			return nil
		}},
		{name: "requests", into: &res.RequestsMs, read: func() error {
			rs, err := rt.ListRequests(ctx, &apitype.ListRequestsParams{Status: runtype.StatusFailed, Limit: 20})
			if err == nil && len(rs) != min(res.Failed, 20) {
				err = fmt.Errorf("%d failed requests listed, want %d", len(rs), min(res.Failed, 20))
			}
			return err
		}},
		{name: "sessions", into: &res.SessionsMs, read: func() error {
			_, err := rt.ListSessions(ctx, &apitype.ListSessionsParams{Limit: 20})
			return err
		}},
		{name: "approvals", into: &res.ApprovalsMs, read: func() error {
			as, err := rt.ListActionsPage(ctx, &apitype.ListActionsParams{Status: runtype.ActionPending, Limit: 20})
			if err == nil && len(as.Actions) != min(res.Waiting, 20) {
				err = fmt.Errorf("%d pending approvals listed, want %d", len(as.Actions), min(res.Waiting, 20))
			}
			return err
		}},
		{name: "snapshot", into: &res.SnapshotMs, read: func() error {
			_, err := rt.GetSession(ctx, runtype.Owner{}, mid)
			return err
		}},
		{name: "events", into: &res.EventsMs, read: func() error {
			sub, err := rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: mid, TurnID: turnID})
			if err != nil {
				return err
			}
			defer sub.Close()
			n := 0
			for {
				e, err := sub.TryNext(ctx)
				if err != nil {
					return err
				}
				if e == nil {
					break
				}
				n++
			}
			if n == 0 {
				return fmt.Errorf("request %s has no events", turnID)
			}
			return nil
		}},
	}
	if o.Overview != nil {
		paths = append(paths, &path{name: "overview", into: &res.OverviewMs, read: func() error { return o.Overview(ctx, rt, dir) }})
	}
	for range o.Reads {
		for _, p := range paths {
			t0, c0 := time.Now(), cpuTime()
			if err := p.read(); err != nil {
				return err
			}
			p.cpu = append(p.cpu, float64((cpuTime()-c0).Microseconds())/1000)
			p.ms = append(p.ms, float64(time.Since(t0).Microseconds())/1000)
		}
	}
	res.CPU = map[string]float64{}
	for _, p := range paths {
		slices.Sort(p.ms)
		slices.Sort(p.cpu)
		*p.into = p.ms[len(p.ms)/2]
		res.CPU[p.name] = p.cpu[len(p.cpu)/2]
	}
	return nil
}

// fill fills mem (or, when it is nil, a new SQLite store in dir) with
// the three templates and n sessions cloned from them: see clone.go.
func fill(ctx context.Context, mem store.Store, dir string, n int) error {
	s := mem
	if s == nil {
		ss, err := sqlitestore.Open(ctx, filepath.Join(dir, "agentrt.db"), sqlitestore.Options{Synchronous: "NORMAL"})
		if err != nil {
			return err
		}
		defer ss.Close()
		s = ss
	}
	if err := s.Migrate(ctx); err != nil {
		return err
	}
	done, waiting, failed, err := templates(ctx, s, dir)
	if err != nil {
		return err
	}

	// Sessions are made 100ms apart, the newest just before the
	// templates: a store a day's work filled.
	const every = 100 * time.Millisecond
	const perTx = 200
	var clock time.Time
	gen := runtype.NewIDGen(func() time.Time { return clock })
	var tx store.Tx
	for i := range n {
		if tx == nil {
			if tx, err = s.Begin(ctx); err != nil {
				return err
			}
		}
		t := done
		switch {
		case waitingAt(i):
			t = waiting
		case failedAt(i):
			t = failed
		}
		for _, b := range t.clone("s-"+strconv.Itoa(i), gen, &clock, time.Duration(i-n)*every) {
			if err := tx.Apply(ctx, b); err != nil {
				tx.Rollback()
				return fmt.Errorf("filling session %d: %w", i, err)
			}
		}
		if (i+1)%perTx == 0 || i == n-1 {
			if err := tx.Commit(); err != nil {
				return fmt.Errorf("filling: %w", err)
			}
			tx = nil
		}
	}
	return nil
}

// The template sessions' ids: unlike any other string in their records,
// so that a clone can replace them.
const (
	tmplDone    = "bench-template-done"
	tmplWaiting = "bench-template-waiting"
	tmplFailed  = "bench-template-failed"
)

// templates runs one session of each kind on the real runtime, recording
// the batches it writes to s.
func templates(ctx context.Context, s store.Store, dir string) (done, waiting, failed *template, err error) {
	const t = 5
	kernel, err := policy.NewKernel(policy.KernelConfig{Rules: []*policy.Rule{{
		ID: "ask-deploy", Tier: policy.TierWorkspace, Tools: []string{"deploy"},
		Decision: policy.Ask, ReasonCode: "deploy_needs_approval", Message: "a person approves every deploy",
	}}})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("building the policy: %w", err)
	}
	deploy := tool.Func("deploy", "Deploys a service (pretends to).", tool.Annotations{},
		func(ctx context.Context, call *tool.Call, in deployInput) (string, error) {
			return "deployed " + in.Service, nil
		})
	rec := &recStore{Store: s}
	rt, err := agentrt.New(agentrt.Config{
		Store: rec, DataDir: dir,
		Agents: map[string]*agentrt.Agent{
			"bench":  {Provider: &scriptedModel{t: t}, Tools: []string{"echo"}, MaxToolHops: t + 1},
			"deploy": {Provider: &approvalModel{}, Tools: []string{"deploy"}},
			"broken": {Provider: failingModel{}},
		},
		Tools:  []tool.Tool{&echoTool{}, deploy},
		Policy: kernel,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			rt.Stop(context.WithoutCancel(ctx))
		}
	}()
	if err := rt.Start(ctx); err != nil {
		return nil, nil, nil, err
	}
	for _, r := range []struct {
		agent, session, input string
		want                  runtype.TaskStatus
	}{
		{"bench", tmplDone, fmt.Sprintf("session 0: call echo %d times, then answer", t), runtype.StatusCompleted},
		{"deploy", tmplWaiting, "session 0: deploy, then answer", runtype.StatusWaitingPermission},
		{"broken", tmplFailed, "session 0: fail", runtype.StatusFailed},
	} {
		sub, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: r.agent, Input: r.input, SessionID: r.session, Source: "embed"})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("template %s: %w", r.session, err)
		}
		turn, err := rt.WaitTurn(ctx, runtype.Owner{}, sub.TurnID)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("template %s: %w", r.session, err)
		}
		if turn.Status != r.want {
			return nil, nil, nil, fmt.Errorf("template %s ended %s (%s), want %s", r.session, turn.Status, turn.StatusReason, r.want)
		}
	}
	// Stopping writes what the runtime still holds (the waiting task's
	// release): the templates are whole once it returns.
	if err := rt.Stop(ctx); err != nil {
		return nil, nil, nil, err
	}
	stopped = true
	all := rec.take()
	return newTemplate(tmplDone, all), newTemplate(tmplWaiting, all), newTemplate(tmplFailed, all), nil
}

// failingModel fails every request, for good: its turns fail.
type failingModel struct{}

func (failingModel) Info() model.Info { return model.Info{Kind: "replay", Model: "bench-failing"} }

func (failingModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	return nil, &model.Error{Kind: model.ErrInvalidRequest, Message: "the benchmark's broken agent fails every request"}
}
