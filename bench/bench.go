// Package bench implements agentrt's benchmarks on the real runtime: the
// same coordinator, policy evaluation, events and store as agentrt serve,
// with scripted models and Go tools (see docs/benchmarks.md). Each prints
// one RESULT line.
//
// Loop is the agent-loop workload (the shared agent-loop workload, v1): a
// stateless scripted model and an echo tool; `agentrt bench loop` runs it.
//
// Session runs one long session (the workload's v2 "Long session") and
// reports how a step's cost grows with the session's length; `agentrt
// bench session` runs it.
//
// Parked parks many sessions on an approval, measures the memory and
// goroutines they hold, and times how soon an approved one runs again;
// `agentrt bench parked` runs it.
package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// Options are the workload's parameters.
type Options struct {
	Variant string // mem, sqlite or pg
	S       int    // sessions measured
	T       int    // tool calls per session
	C       int    // sessions in flight
	W       int    // warm-up sessions
	// Rules, when above zero, decides every tool call with a policy
	// kernel of that many rules (see PolicyRules) instead of the default
	// evaluator.
	Rules int
	// Dir is the parent of the fresh temporary directory of the sqlite
	// variant (default: the system's).
	Dir string
	// DSN is the PostgreSQL server of the pg variant (default
	// $AGENTRT_STORE_URL): the benchmark runs on a database it creates
	// there and drops after.
	DSN string
	// Nodes is how many runtimes share the pg variant's database, each
	// with its own store (connections and writer), sessions dealt to
	// them in turn. Default 1.
	Nodes int
	// Floor, for the pg variant, also measures the physical floor in the
	// same run (see MeasureFloor) at C connections and at 1.
	Floor bool
	// ProcessStart is when the process started, for setup_s.
	ProcessStart time.Time
	// CPUProfile, when set, receives a CPU profile of the measured phase.
	CPUProfile io.Writer
}

// Result is the RESULT line's JSON.
type Result struct {
	Peer                  string  `json:"peer"`
	Variant               string  `json:"variant"`
	S                     int     `json:"S"`
	T                     int     `json:"T"`
	C                     int     `json:"C"`
	W                     int     `json:"W"`
	Rules                 int     `json:"rules,omitempty"`
	Steps                 int     `json:"steps"`
	WallS                 float64 `json:"wall_s"`
	StepsPerS             float64 `json:"steps_per_s"`
	WallUsPerStep         float64 `json:"wall_us_per_step"`
	CPUUsPerStep          float64 `json:"cpu_us_per_step"`
	SetupS                float64 `json:"setup_s"`
	MaxRSSMB              float64 `json:"maxrss_mb"`
	EventsPerSession      float64 `json:"events_per_session"`
	StoreWritesPerSession float64 `json:"store_writes_per_session"`
	CommitsPerSession     float64 `json:"commits_per_session"`
	// Nodes is the pg variant's runtimes on one database.
	Nodes int `json:"nodes,omitempty"`
	// Floors are the physical floor measured in the same run (pg variant
	// with Floor): at 1 connection and at C.
	Floors  []*Floor `json:"floors,omitempty"`
	DBBytes int64    `json:"db_bytes,omitempty"`
	// BytesPerStep is the database's growth over the measured phase per
	// step: the file's size after a checkpoint that empties the WAL,
	// before and after (sqlite variant).
	BytesPerStep float64 `json:"bytes_per_step,omitempty"`
	// WALBytesPerStep is what the process wrote to files during the
	// measured phase per step (the wchar of /proc/self/io): the WAL's
	// frames, and the automatic checkpoints' copies of WAL pages into the
	// database file (sqlite variant, Linux).
	WALBytesPerStep float64           `json:"wal_bytes_per_step,omitempty"`
	Versions        map[string]string `json:"versions"`
}

// ErrInvalidOptions wraps every problem Options.Validate reports: an
// unknown or unsupported variant, or counts out of range.
var ErrInvalidOptions = errors.New("invalid benchmark options")

// Validate reports whether o describes a run this build can do.
func (o Options) Validate() error {
	switch o.Variant {
	case "mem", "sqlite":
		if o.Nodes > 1 {
			return fmt.Errorf("%w: --nodes needs the pg variant", ErrInvalidOptions)
		}
	case "pg":
		if o.dsn() == "" {
			return fmt.Errorf("%w: variant pg needs a PostgreSQL server: --dsn or AGENTRT_STORE_URL", ErrInvalidOptions)
		}
	default:
		return fmt.Errorf("%w: variant %q (want mem, sqlite or pg)", ErrInvalidOptions, o.Variant)
	}
	if o.S < 1 || o.T < 0 || o.C < 1 || o.W < 0 || o.Rules < 0 || o.Nodes < 0 {
		return fmt.Errorf("%w: need -s ≥ 1, -t ≥ 0, -c ≥ 1, -w ≥ 0, --rules ≥ 0, --nodes ≥ 0", ErrInvalidOptions)
	}
	return nil
}

// Loop runs the workload and verifies it.
func Loop(ctx context.Context, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.ProcessStart.IsZero() {
		o.ProcessStart = time.Now()
	}
	cfg, sm, echo, err := loopConfig(o)
	if err != nil {
		return nil, err
	}
	var (
		rts    []*agentrt.Runtime
		dbPath string
		done   func()
		floors []*Floor
	)
	if o.Variant == "pg" {
		if o.Floor {
			for _, c := range []int{1, o.C} {
				f, err := MeasureFloor(ctx, o.dsn(), c, max(2000, 200*c))
				if err != nil {
					return nil, err
				}
				floors = append(floors, f)
				if o.C == 1 {
					break
				}
			}
		}
		rts, _, done, err = startPG(ctx, cfg, o.dsn(), max(1, o.Nodes))
	} else {
		var rt *agentrt.Runtime
		rt, dbPath, done, err = start(ctx, cfg, o.Variant, o.Dir, "agentrt-bench-")
		rts = []*agentrt.Runtime{rt}
	}
	if err != nil {
		return nil, err
	}
	defer done()
	rt := rts[0]

	// Warm-up: sessions S .. S+W-1, same configuration, not measured.
	if err := runSessions(ctx, rts, o.S, o.S+o.W, o.C, o.T); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	sm.calls.Store(0)
	echo.calls.Store(0)
	size0, err := checkpointedSize(ctx, dbPath)
	if err != nil {
		return nil, err
	}
	wchar0 := writtenBytes()
	h0 := rt.Health(ctx)
	if o.CPUProfile != nil {
		if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
			return nil, fmt.Errorf("starting CPU profile: %w", err)
		}
	}
	cpu0 := cpuTime()
	t0 := time.Now()
	setup := t0.Sub(o.ProcessStart)

	if err := runSessions(ctx, rts, 0, o.S, o.C, o.T); err != nil {
		return nil, err
	}

	wall := time.Since(t0)
	cpu := cpuTime() - cpu0
	wchar := writtenBytes() - wchar0
	if o.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	h1 := rt.Health(ctx)
	if got, want := sm.calls.Load(), int64(o.S*(o.T+1)); got != want {
		return nil, fmt.Errorf("verification: the model was called %d times, want %d", got, want)
	}
	if got, want := echo.calls.Load(), int64(o.S*o.T); got != want {
		return nil, fmt.Errorf("verification: the tool was called %d times, want %d", got, want)
	}

	steps := o.S * (2*o.T + 1)
	s := float64(o.S)
	res := &Result{
		Peer: "agentrt", Variant: o.Variant, S: o.S, T: o.T, C: o.C, W: o.W, Rules: o.Rules, Steps: steps,
		WallS:                 wall.Seconds(),
		StepsPerS:             float64(steps) / wall.Seconds(),
		WallUsPerStep:         float64(wall.Microseconds()) / float64(steps),
		CPUUsPerStep:          float64(cpu.Microseconds()) / float64(steps),
		SetupS:                setup.Seconds(),
		MaxRSSMB:              maxRSSMB(),
		EventsPerSession:      float64(h1.Store.LastCursor-h0.Store.LastCursor) / s,
		StoreWritesPerSession: float64(h1.Store.Writer.Writes-h0.Store.Writer.Writes) / s,
		CommitsPerSession:     float64(h1.Store.Writer.Commits-h0.Store.Writer.Commits) / s,
		Versions:              versions(),
		Floors:                floors,
	}
	if o.Variant == "pg" {
		res.Nodes = len(rts)
	}
	if dbPath != "" {
		for _, suffix := range []string{"", "-wal"} {
			if fi, err := os.Stat(dbPath + suffix); err == nil {
				res.DBBytes += fi.Size()
			}
		}
		size1, err := checkpointedSize(ctx, dbPath)
		if err != nil {
			return nil, err
		}
		res.BytesPerStep = float64(size1-size0) / float64(steps)
		if wchar0 >= 0 && wchar >= 0 {
			res.WALBytesPerStep = float64(wchar) / float64(steps)
		}
	}
	return res, nil
}

// loopConfig returns the workload's runtime configuration, its model and
// its tool.
func loopConfig(o Options) (agentrt.Config, *scriptedModel, *echoTool, error) {
	sm, echo := &scriptedModel{t: o.T}, &echoTool{}
	cfg := agentrt.Config{
		Agents: map[string]*agentrt.Agent{"bench": {
			Provider:    sm,
			Tools:       []string{"echo"},
			MaxToolHops: o.T + 1,
		}},
		Tools:             []tool.Tool{echo},
		MaxConcurrentRuns: o.C,
	}
	if o.Rules > 0 {
		rules, err := PolicyRules(o.Rules)
		if err != nil {
			return agentrt.Config{}, nil, nil, fmt.Errorf("building the policy: %w", err)
		}
		if cfg.Policy, err = policy.NewKernel(policy.KernelConfig{Rules: rules}); err != nil {
			return agentrt.Config{}, nil, nil, fmt.Errorf("building the policy: %w", err)
		}
	}
	return cfg, sm, echo, nil
}

// checkpointedSize copies the whole WAL of the database at path into the
// file (a RESTART checkpoint, on a connection of its own), then returns
// the file's size: what the database holds, without the WAL. The WAL file
// keeps its size and is written from its start again, as after an
// automatic checkpoint (truncating it would make the measured commits
// grow the file, which costs each fsync more). It returns 0 for no path
// (the mem variant).
func checkpointedSize(ctx context.Context, path string) (int64, error) {
	if path == "" {
		return 0, nil
	}
	db, err := sql.Open("sqlite", path+"?_busy_timeout=5000")
	if err != nil {
		return 0, fmt.Errorf("opening the database to checkpoint: %w", err)
	}
	defer db.Close()
	var busy, frames, copied int
	if err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(RESTART)`).Scan(&busy, &frames, &copied); err != nil {
		return 0, fmt.Errorf("checkpointing the database: %w", err)
	}
	if busy != 0 {
		return 0, fmt.Errorf("checkpointing the database: a reader or writer was busy")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("checkpointing the database: %w", err)
	}
	return fi.Size(), nil
}

// writtenBytes returns the bytes the process has passed to write system
// calls (wchar in /proc/self/io), or -1 where that is not known.
func writtenBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// runSessions runs sessions [from, to) on c workers taking indexes from a
// shared counter, session i on runtime i mod len(rts), and verifies each
// session's final output.
func runSessions(ctx context.Context, rts []*agentrt.Runtime, from, to, c, t int) error {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	next.Store(int64(from))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range c {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				if err := runSession(ctx, rts[i%len(rts)], i, t); err != nil {
					errOnce.Do(func() { first = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

func runSession(ctx context.Context, rt *agentrt.Runtime, i, t int) error {
	res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{
		Agent:     "bench",
		Input:     fmt.Sprintf("session %d: call echo %d times, then answer", i, t),
		SessionID: "s-" + strconv.Itoa(i),
		Source:    "embed",
	})
	if err != nil {
		return fmt.Errorf("session %d: submitting: %w", i, err)
	}
	turn, err := rt.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
	if err != nil {
		return fmt.Errorf("session %d: waiting: %w", i, err)
	}
	want := fmt.Sprintf("final: session=%d tool_calls=%d", i, t)
	if turn.Status != runtype.StatusCompleted || turn.Result != want {
		return fmt.Errorf("verification: session %d ended %s (%s) with %q, want completed with %q", i, turn.Status, turn.StatusReason, turn.Result, want)
	}
	return nil
}

// ToolText is the workload's tool argument: "session={i} turn={k} "
// padded with x to exactly 200 bytes.
func ToolText(i, k int) string {
	s := fmt.Sprintf("session=%d turn=%d ", i, k)
	if len(s) >= 200 {
		return s[:200]
	}
	return s + strings.Repeat("x", 200-len(s))
}

// scriptedModel is the workload's model: a pure function of (i, k, T),
// where i comes from the first user message and k counts tool results.
type scriptedModel struct {
	t     int
	calls atomic.Int64
}

func (m *scriptedModel) Info() model.Info { return model.Info{Kind: "replay", Model: "bench-scripted"} }

func (m *scriptedModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.calls.Add(1)
	i, k := -1, 0
	for _, msg := range req.Messages {
		switch msg.Role {
		case runtype.RoleUser:
			if i < 0 {
				i = sessionIndex(msg.Content)
			}
		case runtype.RoleTool:
			k++
		}
	}
	if i < 0 {
		return nil, &model.Error{Kind: model.ErrInvalidRequest, Message: "no session index in the first user message"}
	}
	if k < m.t {
		return &model.Response{
			ToolCalls: []runtype.MessageToolCall{{
				ID:        "call_" + strconv.Itoa(i) + "_" + strconv.Itoa(k),
				Name:      "echo",
				Arguments: `{"text":"` + ToolText(i, k) + `"}`,
			}},
			FinishReason: model.FinishToolCalls,
		}, nil
	}
	return &model.Response{Text: "final: session=" + strconv.Itoa(i) + " tool_calls=" + strconv.Itoa(m.t), FinishReason: model.FinishStop}, nil
}

// sessionIndex parses i from "session {i}: …", or returns -1.
func sessionIndex(s string) int {
	rest, ok := strings.CutPrefix(s, "session ")
	if !ok {
		return -1
	}
	digits, _, ok := strings.Cut(rest, ":")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(digits)
	if err != nil {
		return -1
	}
	return i
}

// echoTool returns its input text unchanged.
type echoTool struct {
	calls atomic.Int64
}

var echoSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)

func (e *echoTool) Spec() tool.Spec {
	return tool.Spec{Name: "echo", Description: "Returns its input unchanged.", InputSchema: echoSchema, Source: "go",
		Annotations: tool.Annotations{ReadOnly: true, Idempotent: true}}
}

func (e *echoTool) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	e.calls.Add(1)
	var in struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return nil, fmt.Errorf("decoding echo input: %w", err)
	}
	return &tool.Result{Content: in.Text}, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func maxRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // Linux reports KiB
}

func versions() map[string]string {
	v := map[string]string{"agentrt": agentrt.Version(), "go": runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "modernc.org/sqlite" {
				v["modernc.org/sqlite"] = d.Version
			}
		}
	}
	return v
}

// start starts a runtime for a benchmark: on a fresh data directory under
// parent for the sqlite variant (dbPath is its database), in memory
// otherwise. done stops it and removes the directory.
func start(ctx context.Context, cfg agentrt.Config, variant, parent, prefix string) (rt *agentrt.Runtime, dbPath string, done func(), err error) {
	cleanup := func() {}
	if variant == "sqlite" {
		dir, err := os.MkdirTemp(parent, prefix)
		if err != nil {
			return nil, "", nil, fmt.Errorf("creating temp dir: %w", err)
		}
		cleanup = func() { os.RemoveAll(dir) }
		cfg.DataDir = dir
		dbPath = filepath.Join(dir, "agentrt.db")
	}
	if rt, err = agentrt.New(cfg); err != nil {
		cleanup()
		return nil, "", nil, err
	}
	if err := rt.Start(ctx); err != nil {
		rt.Stop(ctx)
		cleanup()
		return nil, "", nil, err
	}
	return rt, dbPath, func() { rt.Stop(context.WithoutCancel(ctx)); cleanup() }, nil
}
