package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// SessionOptions are the parameters of the long-session benchmark (the
// workload's v2 "Long session"): one session, Turns sequential turns on
// one thread.
type SessionOptions struct {
	Variant string // mem or sqlite
	Turns   int    // turns of the measured session
	T       int    // tool calls per turn
	// CompactWindow, when positive, turns automatic compaction on: the
	// agent compacts at 80 % of a window of that many tokens, keeping the
	// two latest turns, with a scripted summary model.
	CompactWindow int64
	// W is how many turns a separate warm-up session runs first, so that
	// the measured session's first turn does not pay for code run for the
	// first time.
	W int
	// Dir is the parent of the sqlite variant's fresh temporary directory
	// (default: the system's).
	Dir string
	// ProcessStart is when the process started, for setup_s.
	ProcessStart time.Time
	// CPUProfile, when set, receives a CPU profile of the turns from
	// ProfileFrom on (all of them when ProfileFrom is 0).
	CPUProfile  io.Writer
	ProfileFrom int
}

// Validate reports whether o describes a run this build can do.
func (o SessionOptions) Validate() error {
	switch o.Variant {
	case "mem", "sqlite":
	default:
		return fmt.Errorf("%w: variant %q (want mem or sqlite)", ErrInvalidOptions, o.Variant)
	}
	if o.Turns < 1 || o.T < 0 || o.W < 0 || o.ProfileFrom < 0 || o.CompactWindow < 0 {
		return fmt.Errorf("%w: need --turns ≥ 1, -t ≥ 0, -w ≥ 0, --profile-from ≥ 0, --compact-window ≥ 0", ErrInvalidOptions)
	}
	return nil
}

// sessionWindow is how many consecutive turns around a reported turn
// give its figures (their median): one turn of the in-memory variant
// lasts well under a millisecond, and a collection landing in one turn
// must not make the figure.
const sessionWindow = 7

// SessionResult is the long-session benchmark's RESULT line.
type SessionResult struct {
	Peer    string  `json:"peer"`
	Bench   string  `json:"bench"`
	Variant string  `json:"variant"`
	Turns   int     `json:"turns"`
	T       int     `json:"T"`
	W       int     `json:"W"`
	Steps   int     `json:"steps"`
	WallS   float64 `json:"wall_s"`
	// WallUsPerStep and CPUUsPerStep are over the whole session.
	WallUsPerStep float64 `json:"wall_us_per_step"`
	CPUUsPerStep  float64 `json:"cpu_us_per_step"`
	SetupS        float64 `json:"setup_s"`
	MaxRSSMB      float64 `json:"maxrss_mb"`
	// At holds the per-step figures at turns 1, 10, 100 and Turns (those
	// the session reached).
	At []SessionPoint `json:"at"`
	// RatioWall and RatioCPU are the last point's per-step figures over
	// the first's: 1 when a turn's cost does not grow with the session.
	RatioWall float64 `json:"ratio_wall"`
	RatioCPU  float64 `json:"ratio_cpu"`
	// CompactWindow and Compactions: the window compaction kept within
	// (0: off) and how many compactions the measured session made.
	CompactWindow int64             `json:"compact_window,omitempty"`
	Compactions   int64             `json:"compactions,omitempty"`
	DBBytes       int64             `json:"db_bytes,omitempty"`
	Versions      map[string]string `json:"versions"`
}

// SessionPoint is the per-step cost of one turn of the session: the
// median over the sessionWindow turns around it.
type SessionPoint struct {
	Turn          int     `json:"turn"`
	WallUsPerStep float64 `json:"wall_us_per_step"`
	CPUUsPerStep  float64 `json:"cpu_us_per_step"`
}

// Session runs the long-session workload and verifies it.
func Session(ctx context.Context, o SessionOptions) (*SessionResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.ProcessStart.IsZero() {
		o.ProcessStart = time.Now()
	}
	sm := &turnModel{t: o.T}
	echo := &echoTool{}
	summaries := &summaryModel{}
	cfg := agentrt.Config{
		Agents: map[string]*agentrt.Agent{"bench": {
			Provider: sm, Tools: []string{"echo"}, MaxToolHops: o.T + 1,
		}},
		Tools: []tool.Tool{echo},
	}
	if o.CompactWindow > 0 {
		cfg.Agents["bench"].Context = &agentrt.ContextPolicy{
			WindowTokens: o.CompactWindow, CompactAt: 0.8, KeepRecentTurns: 2, Strategy: runtype.StrategySummarize,
			Summary: &model.Candidate{Name: "summary", Provider: summaries},
		}
	}
	rt, dbPath, done, err := start(ctx, cfg, o.Variant, o.Dir, "agentrt-bench-session-")
	if err != nil {
		return nil, err
	}
	defer done()

	for j := 1; j <= o.W; j++ {
		if err := runTurn(ctx, rt, "warm-up", j, o.T); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	sm.calls.Store(0)
	echo.calls.Store(0)
	summaries.calls.Store(0)
	steps := 2*o.T + 1
	wall := make([]time.Duration, o.Turns+1) // by turn, 1-based
	cpu := make([]time.Duration, o.Turns+1)
	t0, cpu0 := time.Now(), cpuTime()
	setup := t0.Sub(o.ProcessStart)
	for j := 1; j <= o.Turns; j++ {
		if o.CPUProfile != nil && j == max(o.ProfileFrom, 1) {
			if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
				return nil, fmt.Errorf("starting CPU profile: %w", err)
			}
			defer pprof.StopCPUProfile()
		}
		tj, cj := time.Now(), cpuTime()
		if err := runTurn(ctx, rt, "long", j, o.T); err != nil {
			return nil, err
		}
		wall[j], cpu[j] = time.Since(tj), cpuTime()-cj
	}
	total, totalCPU := time.Since(t0), cpuTime()-cpu0
	if got, want := sm.calls.Load(), int64(o.Turns*(o.T+1)); got != want {
		return nil, fmt.Errorf("verification: the model was called %d times, want %d", got, want)
	}
	if got, want := echo.calls.Load(), int64(o.Turns*o.T); got != want {
		return nil, fmt.Errorf("verification: the tool was called %d times, want %d", got, want)
	}

	n := o.Turns * steps
	res := &SessionResult{
		Peer: "agentrt", Bench: "session", Variant: o.Variant, Turns: o.Turns, T: o.T, W: o.W, Steps: n,
		WallS:         total.Seconds(),
		WallUsPerStep: float64(total.Microseconds()) / float64(n),
		CPUUsPerStep:  float64(totalCPU.Microseconds()) / float64(n),
		SetupS:        setup.Seconds(),
		MaxRSSMB:      maxRSSMB(),
		Versions:      versions(),
		CompactWindow: o.CompactWindow,
		Compactions:   summaries.calls.Load(),
	}
	if o.CompactWindow > 0 && res.Compactions == 0 {
		return nil, fmt.Errorf("verification: no compaction in %d turns within a %d-token window", o.Turns, o.CompactWindow)
	}
	for _, at := range []int{1, 10, 100, o.Turns} {
		if at > o.Turns || len(res.At) > 0 && res.At[len(res.At)-1].Turn >= at {
			continue
		}
		res.At = append(res.At, SessionPoint{
			Turn:          at,
			WallUsPerStep: float64(medianAround(wall, at).Nanoseconds()) / 1e3 / float64(steps),
			CPUUsPerStep:  float64(medianAround(cpu, at).Nanoseconds()) / 1e3 / float64(steps),
		})
	}
	first, last := res.At[0], res.At[len(res.At)-1]
	res.RatioWall = last.WallUsPerStep / first.WallUsPerStep
	res.RatioCPU = last.CPUUsPerStep / first.CPUUsPerStep
	if dbPath != "" {
		for _, suffix := range []string{"", "-wal"} {
			if fi, err := os.Stat(dbPath + suffix); err == nil {
				res.DBBytes += fi.Size()
			}
		}
	}
	return res, nil
}

// medianAround is the median of ds over the sessionWindow turns around
// turn at, shifted to stay within turns 1 .. len(ds)-1.
func medianAround(ds []time.Duration, at int) time.Duration {
	n := len(ds) - 1
	lo := max(1, min(at-sessionWindow/2, n-sessionWindow+1))
	hi := min(n, lo+sessionWindow-1)
	return quantile(ds[lo:hi+1], 0.5)
}

// runTurn runs turn j of session id and verifies its answer.
func runTurn(ctx context.Context, rt *agentrt.Runtime, id string, j, t int) error {
	res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{
		Agent: "bench", Input: fmt.Sprintf("turn %d: call echo %d times, then answer", j, t),
		SessionID: id, Source: "embed",
	})
	if err != nil {
		return fmt.Errorf("turn %d: submitting: %w", j, err)
	}
	turn, err := rt.WaitTurn(ctx, runtype.Owner{}, res.TurnID)
	if err != nil {
		return fmt.Errorf("turn %d: waiting: %w", j, err)
	}
	if want := finalText(j, t); turn.Status != runtype.StatusCompleted || turn.Result != want {
		return fmt.Errorf("verification: turn %d ended %s (%s) with %q, want completed with %q", j, turn.Status, turn.StatusReason, turn.Result, want)
	}
	return nil
}

func finalText(i, t int) string {
	return "final: session=" + strconv.Itoa(i) + " tool_calls=" + strconv.Itoa(t)
}

// turnModel is the long session's model: the workload's scripted model
// with i the number of the current turn (from its user message, "turn
// {j}: …") and k the tool results after that message. It reads the
// conversation from its end, so its own cost does not grow with the
// session.
type turnModel struct {
	t     int
	calls atomic.Int64
}

func (m *turnModel) Info() model.Info { return model.Info{Kind: "replay", Model: "bench-scripted"} }

func (m *turnModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.calls.Add(1)
	i, k := -1, 0
	for n := len(req.Messages) - 1; n >= 0 && i < 0; n-- {
		switch msg := &req.Messages[n]; msg.Role {
		case runtype.RoleUser:
			i = turnIndex(msg.Content)
		case runtype.RoleTool:
			k++
		}
	}
	if i < 0 {
		return nil, &model.Error{Kind: model.ErrInvalidRequest, Message: "no turn number in the last user message"}
	}
	if k < m.t {
		return &model.Response{
			ToolCalls: []runtype.MessageToolCall{{
				ID: "call_" + strconv.Itoa(i) + "_" + strconv.Itoa(k), Name: "echo",
				Arguments: `{"text":"` + ToolText(i, k) + `"}`,
			}},
			FinishReason: model.FinishToolCalls,
		}, nil
	}
	return &model.Response{Text: finalText(i, m.t), FinishReason: model.FinishStop}, nil
}

// summaryModel is the long session's summary model: a fixed summary, as
// cheap as the scripted model.
type summaryModel struct{ calls atomic.Int64 }

func (m *summaryModel) Info() model.Info { return model.Info{Kind: "replay", Model: "bench-summary"} }

func (m *summaryModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	n := m.calls.Add(1)
	return &model.Response{Text: "summary " + strconv.FormatInt(n, 10) + ": earlier turns called echo and answered.", FinishReason: model.FinishStop}, nil
}

// turnIndex parses j from "turn {j}: …", or returns -1.
func turnIndex(s string) int {
	rest, ok := strings.CutPrefix(s, "turn ")
	if !ok {
		return -1
	}
	digits, _, _ := strings.Cut(rest, ":")
	j, err := strconv.Atoi(digits)
	if err != nil {
		return -1
	}
	return j
}
