package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// DelegationOptions are the parameters of the delegation benchmark: N
// parent turns that each delegate one child through a subagent tool,
// measured against the same work done without delegating.
type DelegationOptions struct {
	Variant string // mem or sqlite
	N       int    // turns of each phase
	T       int    // echo calls of each child turn
	W       int    // warm-up turns of each phase, not measured
	// Dir is the parent of the sqlite variant's fresh temporary directory
	// (default: the system's).
	Dir string
	// ProcessStart is when the process started, for setup_s.
	ProcessStart time.Time
}

// Validate reports whether o describes a run this build can do.
func (o DelegationOptions) Validate() error {
	switch o.Variant {
	case "mem", "sqlite":
	default:
		return fmt.Errorf("%w: variant %q (want mem or sqlite)", ErrInvalidOptions, o.Variant)
	}
	if o.N < 1 || o.T < 0 || o.W < 0 {
		return fmt.Errorf("%w: need --turns ≥ 1, -t ≥ 0, -w ≥ 0", ErrInvalidOptions)
	}
	return nil
}

// DelegationTarget is the most durable commits a spawn and join may
// cost beyond the child's own steps and the parent's (issue 19).
const DelegationTarget = 3

// DelegationResult is the delegation benchmark's RESULT line.
type DelegationResult struct {
	Peer    string `json:"peer"`
	Bench   string `json:"bench"`
	Variant string `json:"variant"`
	N       int    `json:"N"`
	T       int    `json:"T"`
	W       int    `json:"W"`
	// Commits of each phase, per turn: the child agent's turns alone
	// (the child's own steps), the parent's turns calling an echo tool
	// where it would delegate (the parent's own steps), and the parent's
	// turns delegating to the child.
	ChildCommitsPerTurn     float64 `json:"child_commits_per_turn"`
	ParentCommitsPerTurn    float64 `json:"parent_commits_per_turn"`
	DelegatedCommitsPerTurn float64 `json:"delegated_commits_per_turn"`
	// CommitsPerDelegation is what a spawn and join add: (delegated −
	// child − parent) / N. It includes what happens now and then only,
	// such as a stray wake (a parent claimed before its child settled).
	CommitsPerDelegation float64 `json:"commits_per_delegation"`
	// CommitsPerDelegationMedian is the same difference of the phases'
	// median commits per turn: what a typical delegation adds. The
	// target applies to it.
	CommitsPerDelegationMedian float64 `json:"commits_per_delegation_median"`
	// WritesPerDelegation is the same difference for the batches handed
	// to the store's writer (a commit may carry several, written at
	// once); EventsPerDelegation for the events written.
	WritesPerDelegation float64 `json:"writes_per_delegation"`
	EventsPerDelegation float64 `json:"events_per_delegation"`
	// The medians of one turn's wall and CPU time in each phase, and
	// what delegation adds to them (delegated − child − parent).
	ChildWallMs      float64           `json:"child_wall_ms"`
	ParentWallMs     float64           `json:"parent_wall_ms"`
	DelegatedWallMs  float64           `json:"delegated_wall_ms"`
	DelegationWallMs float64           `json:"delegation_wall_ms"`
	ChildCPUMs       float64           `json:"child_cpu_ms"`
	ParentCPUMs      float64           `json:"parent_cpu_ms"`
	DelegatedCPUMs   float64           `json:"delegated_cpu_ms"`
	DelegationCPUMs  float64           `json:"delegation_cpu_ms"`
	TargetCommits    int               `json:"target_commits"`
	CommitsOK        bool              `json:"commits_ok"`
	SetupS           float64           `json:"setup_s"`
	MaxRSSMB         float64           `json:"maxrss_mb"`
	DBBytes          int64             `json:"db_bytes,omitempty"`
	Versions         map[string]string `json:"versions"`
}

// delegationPhase is one phase's agent and what each of its turns must
// answer.
type delegationPhase struct {
	agent, prefix string
	want          func(i int) string
}

// Delegation runs the delegation benchmark and verifies it. Its three
// phases run one after the other on one runtime, one turn at a time,
// each turn in a session of its own:
//
//   - child: the child agent's turn "session i: call echo T times, then
//     answer", submitted directly (the loop workload's session i);
//   - parent: the parent's turn, whose model calls an echo tool once and
//     answers with its result;
//   - delegated: the parent's turn, whose model calls the subagent tool
//     lookup once with the child's turn as its task (the child runs on a
//     thread of its own and answers as in the child phase), and answers
//     with the child's result.
//
// The delegated phase does the work of the other two and the spawn and
// join: the differences of the commits are what delegating costs.
func Delegation(ctx context.Context, o DelegationOptions) (*DelegationResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.ProcessStart.IsZero() {
		o.ProcessStart = time.Now()
	}
	child, parent, echo := &scriptedModel{t: o.T}, &delegatingModel{}, &echoTool{}
	cfg := agentrt.Config{
		Agents: map[string]*agentrt.Agent{
			"child": {Provider: child, Tools: []string{"echo"}, MaxToolHops: o.T + 1},
			"parent": {Provider: parent, Tools: []string{"echo"}, MaxToolHops: 2, Subagents: []agentrt.SubagentUse{{
				Agent: "child", AsTool: "lookup", Description: "Does the task it is given with the echo tool.",
			}}},
		},
		Tools: []tool.Tool{echo},
	}
	rt, dbPath, done, err := start(ctx, cfg, o.Variant, o.Dir, "agentrt-bench-delegation-")
	if err != nil {
		return nil, err
	}
	defer done()

	final := func(i int) string { return finalText(i, o.T) }
	phases := []delegationPhase{
		{agent: "child", prefix: "c-", want: final},
		{agent: "parent", prefix: "p-", want: func(i int) string { return "parent: echo " + strconv.Itoa(i) }},
		{agent: "parent", prefix: "d-", want: func(i int) string { return "parent: " + final(i) }},
	}
	type tally struct {
		commits, writes, events int64
		wall, cpu               []time.Duration
		turnCommits             []int64
	}
	var tallies [3]tally
	setup := time.Since(o.ProcessStart)
	for p, ph := range phases {
		for i := o.N; i < o.N+o.W; i++ {
			if _, _, err := runDelegationTurn(ctx, rt, ph, i, o.T); err != nil {
				return nil, fmt.Errorf("warm-up: %w", err)
			}
		}
		h0 := rt.Health(ctx)
		ta := &tallies[p]
		before := h0.Store.Writer.Commits
		for i := range o.N {
			wall, cpu, err := runDelegationTurn(ctx, rt, ph, i, o.T)
			if err != nil {
				return nil, err
			}
			after := rt.Health(ctx).Store.Writer.Commits
			ta.wall, ta.cpu = append(ta.wall, wall), append(ta.cpu, cpu)
			ta.turnCommits = append(ta.turnCommits, after-before)
			before = after
		}
		h1 := rt.Health(ctx)
		ta.commits = h1.Store.Writer.Commits - h0.Store.Writer.Commits
		ta.writes = h1.Store.Writer.Writes - h0.Store.Writer.Writes
		ta.events = h1.Store.LastCursor - h0.Store.LastCursor
	}
	turns := int64(len(phases)) * int64(o.N+o.W)
	if got, want := child.calls.Load(), 2*int64(o.N+o.W)*int64(o.T+1); got != want {
		return nil, fmt.Errorf("verification: the child's model was called %d times, want %d", got, want)
	}
	if got, want := parent.calls.Load(), 2*2*int64(o.N+o.W); got != want {
		return nil, fmt.Errorf("verification: the parent's model was called %d times, want %d", got, want)
	}
	if got, want := echo.calls.Load(), 2*int64(o.N+o.W)*int64(o.T)+int64(o.N+o.W); got != want {
		return nil, fmt.Errorf("verification: echo was called %d times over %d turns, want %d", got, turns, want)
	}

	n := float64(o.N)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	med := func(ds []time.Duration) float64 { return ms(quantile(ds, 0.5)) }
	c, pa, d := tallies[0], tallies[1], tallies[2]
	res := &DelegationResult{
		Peer: "agentrt", Bench: "delegation", Variant: o.Variant, N: o.N, T: o.T, W: o.W,
		ChildCommitsPerTurn:        float64(c.commits) / n,
		ParentCommitsPerTurn:       float64(pa.commits) / n,
		DelegatedCommitsPerTurn:    float64(d.commits) / n,
		CommitsPerDelegation:       float64(d.commits-c.commits-pa.commits) / n,
		CommitsPerDelegationMedian: float64(medianCount(d.turnCommits) - medianCount(c.turnCommits) - medianCount(pa.turnCommits)),
		WritesPerDelegation:        float64(d.writes-c.writes-pa.writes) / n,
		EventsPerDelegation:        float64(d.events-c.events-pa.events) / n,
		ChildWallMs:                med(c.wall),
		ParentWallMs:               med(pa.wall),
		DelegatedWallMs:            med(d.wall),
		ChildCPUMs:                 med(c.cpu),
		ParentCPUMs:                med(pa.cpu),
		DelegatedCPUMs:             med(d.cpu),
		TargetCommits:              DelegationTarget,
		SetupS:                     setup.Seconds(),
		MaxRSSMB:                   maxRSSMB(),
		Versions:                   versions(),
	}
	res.DelegationWallMs = res.DelegatedWallMs - res.ChildWallMs - res.ParentWallMs
	res.DelegationCPUMs = res.DelegatedCPUMs - res.ChildCPUMs - res.ParentCPUMs
	res.CommitsOK = res.CommitsPerDelegationMedian <= DelegationTarget
	if dbPath != "" {
		for _, suffix := range []string{"", "-wal"} {
			if fi, err := os.Stat(dbPath + suffix); err == nil {
				res.DBBytes += fi.Size()
			}
		}
	}
	return res, nil
}

// medianCount is the median of ns (the lower of the two middle ones).
func medianCount(ns []int64) int64 {
	s := slices.Clone(ns)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// runDelegationTurn runs turn i of a phase in a session of its own,
// waits for it to end (a delegating parent parks on the way) and
// verifies its answer; it returns the turn's wall and CPU time.
func runDelegationTurn(ctx context.Context, rt *agentrt.Runtime, ph delegationPhase, i, t int) (time.Duration, time.Duration, error) {
	input := fmt.Sprintf("session %d: call echo %d times, then answer", i, t)
	if ph.prefix == "p-" {
		input = fmt.Sprintf("session %d: call echo once, then answer", i)
	}
	t0, c0 := time.Now(), cpuTime()
	res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{
		Agent: ph.agent, Input: input, SessionID: ph.prefix + strconv.Itoa(i), Source: "embed",
	})
	if err != nil {
		return 0, 0, fmt.Errorf("%s turn %d: submitting: %w", ph.agent, i, err)
	}
	turn, err := waitEnded(ctx, rt, res.SessionID, res.TurnID)
	if err != nil {
		return 0, 0, fmt.Errorf("%s turn %d: waiting: %w", ph.agent, i, err)
	}
	wall, cpu := time.Since(t0), cpuTime()-c0
	if want := ph.want(i); turn.Status != runtype.StatusCompleted || turn.Result != want {
		return 0, 0, fmt.Errorf("verification: %s turn %d ended %s (%s) with %q, want completed with %q", ph.agent, i, turn.Status, turn.StatusReason, turn.Result, want)
	}
	return wall, cpu, nil
}

// waitEnded waits until a turn has ended. WaitTurn returns as soon as
// a turn rests, which a parent waiting for its child does: then it waits
// for the session's subagents' latest turns, and for the parent again
// (the child's end made it due, so it rests only once it has ended).
func waitEnded(ctx context.Context, rt *agentrt.Runtime, sessionID, turnID string) (*runtype.Turn, error) {
	for range 3 {
		turn, err := rt.WaitTurn(ctx, runtype.Owner{}, turnID)
		if err != nil {
			return nil, err
		}
		if turn.Status.Terminal() || turn.StatusReason != runtype.ReasonWaitingChildren {
			return turn, nil
		}
		subs, err := rt.ListSubagents(ctx, runtype.Owner{}, sessionID)
		if err != nil {
			return nil, err
		}
		for _, s := range subs {
			if _, err := rt.WaitTurn(ctx, runtype.Owner{}, s.TurnID); err != nil {
				return nil, err
			}
		}
	}
	return nil, fmt.Errorf("turn %s still waits for its children after they rested", turnID)
}

// delegatingModel is the parent's model. Its first answer calls one
// tool with the turn's input: lookup (the subagent tool) with it as the
// task, or echo when the input asks for echo ("call echo once"); its
// second answers "parent: " and the tool's result.
type delegatingModel struct {
	calls atomic.Int64
}

func (m *delegatingModel) Info() model.Info {
	return model.Info{Kind: "replay", Model: "bench-delegating"}
}

func (m *delegatingModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.calls.Add(1)
	input := ""
	for _, msg := range req.Messages {
		switch msg.Role {
		case runtype.RoleUser:
			if input == "" {
				input = msg.Content
			}
		case runtype.RoleTool:
			return &model.Response{Text: "parent: " + msg.Content, FinishReason: model.FinishStop}, nil
		}
	}
	i := sessionIndex(input)
	if i < 0 {
		return nil, &model.Error{Kind: model.ErrInvalidRequest, Message: "no session index in the first user message"}
	}
	call := runtype.MessageToolCall{ID: "call_" + strconv.Itoa(i), Name: "lookup"}
	var args []byte
	if input == fmt.Sprintf("session %d: call echo once, then answer", i) {
		call.Name = "echo"
		args, _ = json.Marshal(map[string]string{"text": "echo " + strconv.Itoa(i)})
	} else {
		args, _ = json.Marshal(map[string]string{"task": input})
	}
	call.Arguments = string(args)
	return &model.Response{ToolCalls: []runtype.MessageToolCall{call}, FinishReason: model.FinishToolCalls}, nil
}
