package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/configure"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

type runFlags struct {
	config  string
	agent   string
	json    bool
	dataDir string
	session string
	store   string
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run --config FILE --agent NAME [flags] INPUT",
		Short: "Run one turn of an agent in-process and show its timeline",
		Long: `Run one turn of an agent in this process, on the store in the config's data_dir,
and print a readable timeline of the run as it happens (or, with --json, its events as
JSON Lines). A streaming model's text is printed as it arrives. On a terminal the timeline
is coloured (not with NO_COLOR or TERM=dumb), fitted to the terminal's width, and a spinner
shows while a model or tool works. agentrt requests show prints a past request the same way.
INPUT is the user's message; "-" reads it from standard input.

Exit codes: 0 completed, 1 failed or cancelled, 2 usage or configuration error,
3 parked (waiting for a permission decision, input or a raised budget).`,
		Example: `  agentrt run --config examples/support/agentrt.yaml --agent support "Where is order 1042?"
  agentrt run --config agentrt.yaml --agent support --json "Where is order 1042?" | jq .type`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTurn(cmd, &f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "agentrt.yaml", "the agentrt.yaml to load")
	fl.StringVar(&f.agent, "agent", "", "the agent to run (default: the only agent in the config)")
	fl.BoolVar(&f.json, "json", false, "print the events as JSON Lines instead of a timeline")
	fl.StringVar(&f.dataDir, "data-dir", "", "override the config's data_dir")
	fl.StringVar(&f.session, "session", "", "continue this session (or create it with this id)")
	registerStoreFlag(cmd, &f.store)
	return cmd
}

func runTurn(cmd *cobra.Command, f *runFlags, args []string) error {
	input, err := readInput(cmd.InOrStdin(), args)
	if err != nil {
		return err
	}
	cfg, file, err := configure.Load(f.config)
	if err != nil {
		return configErr(err)
	}
	sel, err := selectStore(f.store, file.Store)
	if err != nil {
		return err
	}
	if f.dataDir != "" {
		abs, err := filepath.Abs(f.dataDir)
		if err != nil {
			return usageErr("resolving --data-dir: %v", err)
		}
		cfg.DataDir = abs
	}
	agent := f.agent
	switch {
	case agent != "":
		if _, ok := cfg.Agents[agent]; !ok {
			return usageErr("unknown agent %q: %s defines %s", agent, f.config, strings.Join(file.AgentNames(), ", "))
		}
	case len(file.AgentNames()) == 1:
		agent = file.AgentNames()[0]
	case f.session == "":
		return usageErr("--agent is required: %s defines %s", f.config, strings.Join(file.AgentNames(), ", "))
	}
	// With --session and no --agent, the session's own agent runs.
	// The timeline shows what warnings would (model failures, budgets);
	// errors still reach standard error.
	cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelError}))
	cfg.ActionSweepInterval = noSweep
	tp, flushTraces, err := tracing(context.Background(), cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer flushTraces() // deferred first, so it runs after the runtime has stopped
	cfg.TracerProvider = tp
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	closeStore, err := openStore(ctx, sel, &cfg)
	if err != nil {
		return err
	}
	defer closeStore() // deferred before the runtime's stop, so it runs after it

	rt, err := agentrt.New(cfg)
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("starting the runtime: %w", err)}
	}
	if err := rt.Start(ctx); err != nil {
		rt.Stop(context.Background())
		return &exitError{code: ExitFailed, err: err}
	}
	// Stop gracefully: the command's own turn has ended or parked by then
	// (or was interrupted), and work of the data directory the runtime's
	// workers took up meanwhile stays queued for the next process rather
	// than being cancelled.
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		rt.Stop(stopCtx)
	}()

	if f.session != "" {
		if err := checkNotParked(ctx, rt, f.session); err != nil {
			return err
		}
	}
	from, err := rt.LastCursor(ctx)
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	res, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{Agent: agent, Input: input, SessionID: f.session, Source: "cli"})
	if err != nil {
		var inv *apitype.InvalidError
		if errors.As(err, &inv) {
			return usageErr("%v", err)
		}
		return &exitError{code: ExitFailed, err: err}
	}
	// Follow the session, not only the turn: a new session's
	// session.created and thread.started carry no turn id, and without them
	// the JSON Lines would not start at sequence 1 and could not rebuild
	// the session.
	sub, err := rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: res.SessionID, AfterCursor: from})
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	defer sub.Close()

	stopSignals := interruptOnSignal(cmd, rt, res.TurnID)
	defer stopSignals()

	out := cmd.OutOrStdout()
	show := func(e *event.Event) error { return writeEvent(out, e) }
	var p *timeline
	if !f.json {
		p = newTimeline(out, timelineOptionsFor(out, true))
		p.header(res.TurnID, agent, res.SessionID, "")
		show = func(e *event.Event) error {
			p.event(e)
			return nil
		}
	}
	turn, err := followTurn(ctx, &localBackend{Runtime: rt}, sub, res.TurnID, from, show)
	if p != nil {
		p.close()
	}
	if err != nil {
		return err
	}
	if turn.Status == runtype.StatusWaitingPermission {
		return parkedForApproval(ctx, cmd, rt, turn, f.json, continueFlags(f.config, f.dataDir))
	}
	return exitFor(turn)
}

// interruptOnSignal makes the first interrupt (SIGINT or SIGTERM) ask the
// runtime to cancel the turn, which then ends (and is recorded) as
// cancelled; a second one exits at once. Call the returned function when
// the command is done with the turn. signal.Stop never closes the channel,
// so done ends the goroutine.
func interruptOnSignal(cmd *cobra.Command, rt turnInterrupter, turnID string) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "agentrt: interrupting the turn (press Ctrl-C again to quit at once)")
		rt.InterruptTurn(context.Background(), runtype.Owner{}, turnID)
		select {
		case <-sigs:
			os.Exit(ExitFailed)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// turnInterrupter interrupts turns: a backend, or the Runtime itself.
type turnInterrupter interface {
	InterruptTurn(ctx context.Context, owner runtype.Owner, turnID string) (runtype.TaskStatus, error)
}

// followTurn shows the turn's events from sub until the turn ends or
// parks, then whatever of it committed before that, and returns the
// turn's record. show sees only the turn's events and those of no turn
// (a new session's session.created and thread.started).
//
// The stream and the wait start at the cursor from, from before the
// command made the turn move.
func followTurn(ctx context.Context, b backend, sub eventStream, turnID string, from int64, show func(*event.Event) error) (*runtype.Turn, error) {
	// WaitTurn is the authority on when the turn ends or parks: if the run
	// could not record its last events, the stream would never show them,
	// and the command must still end.
	ended := make(chan struct{})
	followCtx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	go func() {
		waitTurnEnd(followCtx, b, turnID, from)
		close(ended)
		stopFollowing() // wakes a Next still waiting for events
	}()
	for {
		e, err := sub.Next(followCtx)
		if err != nil {
			select {
			case <-ended:
			default:
				return nil, &exitError{code: ExitFailed, err: fmt.Errorf("following the turn: %w", err)}
			}
			break
		}
		if e.TurnID != "" && e.TurnID != turnID {
			continue // another turn of the session, submitted elsewhere
		}
		if err := show(e); err != nil {
			return nil, &exitError{code: ExitFailed, err: err}
		}
		if e.TurnID == turnID && endsTurn(e.Type) && !waitsForChildren(e) {
			break
		}
	}
	stopFollowing()
	<-ended
	// Whatever committed before the turn ended is shown too.
	for {
		e, err := sub.TryNext(ctx)
		if err != nil || e == nil {
			break
		}
		// The same events as above: the session's own (session.created,
		// thread.started, policy.changed carry no turn id) and the turn's.
		if e.TurnID == "" || e.TurnID == turnID {
			if err := show(e); err != nil {
				return nil, &exitError{code: ExitFailed, err: err}
			}
		}
	}
	turn, err := waitTurnEnd(ctx, b, turnID, from)
	if err != nil {
		return nil, runtimeErr(err)
	}
	return turn, nil
}

// waitsForChildren reports whether e parks its turn until the subagents
// or jobs it delegated to settle: the turn goes on by itself after.
func waitsForChildren(e *event.Event) bool {
	return e.Type == event.TaskWaiting && e.StatusReason == runtype.ReasonWaitingChildren
}

// delegationTreer reads a task's delegation tree (the in-process
// Runtime does).
type delegationTreer interface {
	DelegationTree(ctx context.Context, owner runtype.Owner, taskID string) (*apitype.DelegationNode, error)
}

// waitTurnEnd waits until the turn ends or parks for a person (or a
// budget). A turn parked for its children is waited through: it waits
// for each open child in turn (and theirs), after which the turn is due
// again and runs on. It returns the turn parked when a child parks for
// a person, or when b cannot read the delegation tree.
func waitTurnEnd(ctx context.Context, b backend, turnID string, from int64) (*runtype.Turn, error) {
	// settled counts the looks in a row that found every child settled:
	// the first may have raced the last child's end (the turn is due by
	// then, and the next WaitTurn waits for it); a second means the turn
	// rests with nothing left to wait for.
	settled := 0
	for {
		t, err := b.WaitTurn(ctx, runtype.Owner{}, turnID, from)
		if err != nil || t.Status != runtype.StatusWaitingResource || t.StatusReason != runtype.ReasonWaitingChildren {
			return t, err
		}
		tr, ok := b.(delegationTreer)
		if !ok {
			return t, nil
		}
		tree, err := tr.DelegationTree(ctx, runtype.Owner{}, t.TaskID)
		if err != nil {
			return nil, err
		}
		waited := false
		for _, c := range tree.Children {
			if c.TurnID == "" || c.Status.Terminal() || c.Status == runtype.StatusBlocked {
				continue
			}
			ct, err := waitTurnEnd(ctx, b, c.TurnID, from)
			if err != nil {
				return nil, err
			}
			if !ct.Status.Terminal() && ct.Status != runtype.StatusBlocked {
				return t, nil // the child waits for a person: so does the tree
			}
			waited = true
		}
		if waited {
			settled = 0
		} else if settled++; settled == 2 {
			return t, nil // nothing left to wait for, yet the turn rests
		}
	}
}

func writeEvent(w io.Writer, e *event.Event) error {
	b, err := e.JSON()
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// endsTurn reports whether an event is the last one of a turn's run.
func endsTurn(t event.Type) bool {
	return t == event.TurnCompleted || t == event.TurnFailed || t == event.TaskWaiting || t == event.TaskBlocked
}

func exitFor(t *runtype.Turn) error {
	switch {
	case t.Status == runtype.StatusCompleted:
		return nil
	case t.Status.Parked():
		return &exitError{code: ExitParked, err: errors.New("")}
	default:
		return &exitError{code: ExitFailed, err: errors.New("")}
	}
}

// checkNotParked refuses to run a turn behind a parked one: in this
// process it would wait until someone else resumed or interrupted the
// parked turn, which nobody can do while the command holds the data
// directory.
func checkNotParked(ctx context.Context, rt *agentrt.Runtime, session string) error {
	snap, err := rt.GetSession(ctx, runtype.Owner{}, session)
	if errors.Is(err, apitype.ErrNotFound) {
		return nil // a new session
	}
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	for _, th := range snap.Threads {
		for _, p := range th.PendingRequests {
			if p.Status.Parked() {
				return &exitError{code: ExitParked, err: fmt.Errorf(
					"session %s has a parked turn %s (%s, %s); a new turn would wait behind it: resume it (for a budget, PUT /v1/limits on agentrt serve) or interrupt it first",
					session, p.TurnID, p.Status, p.Reason)}
			}
		}
	}
	return nil
}

func readInput(stdin io.Reader, args []string) (string, error) {
	if len(args) == 0 {
		return "", usageErr(`missing INPUT: give the user's message as an argument, or "-" to read it from standard input`)
	}
	if len(args) == 1 && args[0] == "-" {
		b, err := io.ReadAll(io.LimitReader(stdin, apitype.MaxInputBytes+1))
		if err != nil {
			return "", usageErr("reading standard input: %v", err)
		}
		return string(b), nil
	}
	return strings.Join(args, " "), nil
}

// configErr reports configuration problems with exit code 2.
func configErr(err error) error {
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "\n  ")
	return &exitError{code: ExitUsage, err: fmt.Errorf("invalid configuration:\n  %s", msg)}
}
