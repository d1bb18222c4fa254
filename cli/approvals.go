package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

func newApprovalsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List, watch and answer the tool calls waiting for a person",
		Long: `When the policy asks about a tool call, the turn parks waiting_permission and the call
waits as an action. These commands list and watch the actions of the config's data
directory, and approve or deny them; answering a turn's last pending action resumes the
turn in this process. When an MCP server asks for input during a tool call (an
elicitation), the call waits as an action too, its run still running: answer it with
answer.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newApprovalsListCmd(), newApprovalsWatchCmd(), newRespondCmd(runtype.DecisionApprove), newRespondCmd(runtype.DecisionDeny), newAnswerCmd())
	return cmd
}

type listFlags struct {
	storeFlags
	status  string
	session string
	limit   int
	json    bool
}

func newApprovalsListCmd() *cobra.Command {
	var f listFlags
	cmd := &cobra.Command{
		Use:   "list [--status STATUS] [--session ID] [--json]",
		Short: "List actions, pending ones by default",
		Long: `List the actions of the config's data directory, newest first: on a terminal as a table,
otherwise (or with --json) as JSON Lines, one action per line.

Exit codes: 0 listed (even none), 1 the store could not be read, 2 usage or configuration error.`,
		Example: `  agentrt approvals list --config agentrt.yaml
  agentrt approvals list --config agentrt.yaml --status all --session ses-42 --json | jq -r .actionId`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			status, err := parseActionStatus(f.status)
			if err != nil {
				return err
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			acts, err := b.ListActions(commandContext(cmd), &apitype.ListActionsParams{SessionID: f.session, Status: status, Limit: f.limit})
			if err != nil {
				return runtimeErr(err)
			}
			return newActionLister(cmd.OutOrStdout(), f.json, status != runtype.ActionPending, time.Now).print(acts)
		},
	}
	f.register(cmd)
	f.flags(cmd)
	cmd.Flags().IntVar(&f.limit, "limit", 100, "list at most this many actions (at most 1000)")
	return cmd
}

func (f *listFlags) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.status, "status", "pending", "pending, approved, denied, expired, cancelled or all")
	cmd.Flags().StringVar(&f.session, "session", "", "only the actions of this session")
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON Lines even on a terminal")
}

// parseActionStatus reads --status: all is every status.
func parseActionStatus(s string) (runtype.ActionStatus, error) {
	switch st := runtype.ActionStatus(s); st {
	case "all":
		return "", nil
	case runtype.ActionPending, runtype.ActionApproved, runtype.ActionDenied, runtype.ActionExpired, runtype.ActionCancelled:
		return st, nil
	}
	return "", usageErr("invalid --status %q: use pending, approved, denied, expired, cancelled or all", s)
}

type watchFlags struct {
	listFlags
	once     bool
	interval time.Duration
}

func newApprovalsWatchCmd() *cobra.Command {
	var f watchFlags
	cmd := &cobra.Command{
		Use:   "watch [--status STATUS] [--once] [--json]",
		Short: "Print actions as they appear and change",
		Long: `Print the actions approvals list would, then follow the event stream and print the actions
that are new or changed (action.required, action.resolved, expiry), until interrupted. An
action that left the listed status, say approved elsewhere, is printed with its new status.
With --once, print the current set and exit (for scripts). Output is a table on a
terminal, otherwise (or with --json) JSON Lines of the action as GET /v1/actions/{id}
answers.

With --server the stream is the daemon's (GET /v1/events). On a data directory the command
also reads the store every --interval for the events of other processes (a daemon on the
same directory).

Exit codes: 0 interrupted (or --once done), 1 the store or server could not be read, 2
usage or configuration error.`,
		Example: `  agentrt approvals watch --config agentrt.yaml
  agentrt approvals watch --server http://127.0.0.1:7420 --once --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			status, err := parseActionStatus(f.status)
			if err != nil {
				return err
			}
			if f.interval <= 0 {
				return usageErr("invalid --interval %s: must be positive", f.interval)
			}
			f.poll = f.interval
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			ctx, cancel := signal.NotifyContext(commandContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			w := &actionWatch{
				list: func(ctx context.Context) ([]apitype.ActionRead, error) {
					return b.ListActions(ctx, &apitype.ListActionsParams{SessionID: f.session, Status: status, Limit: maxListLimit})
				},
				get: func(ctx context.Context, id string) (*apitype.ActionRead, error) {
					return b.GetAction(ctx, runtype.Owner{}, id)
				},
				printer: newActionLister(cmd.OutOrStdout(), f.json, true, time.Now),
			}
			if f.once {
				if err := w.run(ctx, nil); err != nil {
					return runtimeErr(err)
				}
				return nil
			}
			err = followEvents(ctx, b, &apitype.SubscribeParams{SessionID: f.session}, func(ctx context.Context, wake <-chan time.Time) error {
				return w.run(ctx, wake)
			}, func(e *event.Event) bool { return e.Type == event.ActionRequired || e.Type == event.ActionResolved })
			if err != nil {
				return runtimeErr(err)
			}
			return nil
		},
	}
	f.register(cmd)
	f.flags(cmd)
	cmd.Flags().BoolVar(&f.once, "once", false, "print the current actions and exit")
	cmd.Flags().DurationVar(&f.interval, "interval", time.Second, "on a data directory, how often to read the store for other processes' events")
	return cmd
}

// followEvents runs watch with a channel that receives a value whenever
// an event of the stream from now on (p.AfterCursor is set here) passes
// match; values coalesce while watch is busy. The stream starts before
// watch, so that nothing committed after watch's first read is missed.
// watch runs until its ctx ends, which the stream failing also ends. It
// returns watch's error, or the stream's when the stream failed.
func followEvents(ctx context.Context, b backend, p *apitype.SubscribeParams, watch func(ctx context.Context, wake <-chan time.Time) error, match func(*event.Event) bool) error {
	from, err := b.LastCursor(ctx)
	if err != nil {
		return err
	}
	p.AfterCursor = from
	sub, err := b.Events(ctx, p)
	if err != nil {
		return err
	}
	defer sub.Close()
	streamCtx, stopStream := context.WithCancelCause(ctx)
	wake := make(chan time.Time, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			e, err := sub.Next(streamCtx)
			if err != nil {
				stopStream(err)
				return
			}
			if match(e) {
				select {
				case wake <- e.Timestamp:
				default: // a wake is pending already
				}
			}
		}
	}()
	werr := watch(streamCtx, wake)
	stopStream(context.Canceled)
	<-done
	if werr != nil {
		return werr
	}
	if cause := context.Cause(streamCtx); ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
		return fmt.Errorf("following events: %w", cause)
	}
	return nil
}

// maxListLimit is the most actions one list returns.
const maxListLimit = 1000

// actionWatch prints actions as they appear and change.
type actionWatch struct {
	list    func(ctx context.Context) ([]apitype.ActionRead, error)
	get     func(ctx context.Context, id string) (*apitype.ActionRead, error)
	printer *lister[apitype.ActionRead]

	// seen holds what was last printed of each action, by id.
	seen   map[string]actionState
	polled bool // the first poll is done
}

// actionState is what a change of an action changes.
type actionState struct {
	status   runtype.ActionStatus
	decision string
}

func stateOf(a *apitype.ActionRead) actionState {
	return actionState{status: a.Status, decision: a.Decision}
}

// run prints the current actions, then, at every tick, those new or
// changed, until ctx ends (which is not an error). A nil tick prints once.
func (w *actionWatch) run(ctx context.Context, tick <-chan time.Time) error {
	w.seen, w.polled = make(map[string]actionState), false
	for {
		if err := w.poll(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if tick == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
		}
	}
}

// poll lists the actions and prints the new and changed ones. Actions
// printed before that are no longer listed (their status moved out of the
// filter) are read one by one, and printed when they changed.
func (w *actionWatch) poll(ctx context.Context) error {
	acts, err := w.list(ctx)
	if err != nil {
		return err
	}
	listed := make(map[string]bool, len(acts))
	var changed []apitype.ActionRead
	for _, a := range acts {
		listed[a.ActionID] = true
		if st, ok := w.seen[a.ActionID]; !ok || st != stateOf(&a) {
			changed = append(changed, a)
		}
	}
	for _, id := range sortedKeys(w.seen) {
		if listed[id] {
			continue
		}
		a, err := w.get(ctx, id)
		switch {
		case errors.Is(err, apitype.ErrNotFound):
			delete(w.seen, id)
			continue
		case err != nil:
			return err
		}
		if stateOf(a) != w.seen[id] {
			changed = append(changed, *a)
		}
		// Unlisted now, it is followed no further.
		delete(w.seen, id)
	}
	// Oldest first, so that a watch reads as a log.
	slices.SortStableFunc(changed, func(a, b apitype.ActionRead) int { return a.CreatedAt.Compare(b.CreatedAt) })
	for _, a := range changed {
		if listed[a.ActionID] {
			w.seen[a.ActionID] = stateOf(&a)
		}
	}
	if len(changed) == 0 && w.polled {
		return nil
	}
	// The first poll prints even nothing: a table then says so.
	w.polled = true
	return w.printer.print(changed)
}

type respondFlags struct {
	storeFlags
	forSession bool
	always     bool
	message    string
	edit       string
	noWait     bool
	principal  string
}

func newRespondCmd(verb string) *cobra.Command {
	var f respondFlags
	cmd := &cobra.Command{
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return respond(cmd, &f, verb, args)
		},
	}
	const exits = `

Exit codes, as for run: 0 the turn completed, 1 it failed or was cancelled, or the action
is unknown, already answered or the principal may not answer it; 2 usage error (including
an edit the tool's input schema rejects); 3 the turn is parked again (another action of
its hop is pending, or a later call asks again).`
	if verb == runtype.DecisionApprove {
		cmd.Use = "approve ACTION_ID [--for-session | --always] [--edit JSON] [--message M] [--no-wait]"
		cmd.Short = "Approve a pending tool call and resume its turn"
		cmd.Long = `Approve a pending action: the call runs (with --edit, with the given input instead), and
once no other action of the turn's hop is pending, the turn resumes in this process. The
command follows the resumed turn like run does, and exits like run.

--for-session also allows the tool in the session from now on; --always adds a rule
allowing it for the agent in every session.` + exits
		cmd.Example = `  agentrt approvals approve act_01M7Z6E98T14HZ9P6EVS3DAV37 --config agentrt.yaml
  agentrt approvals approve act_01M7Z6E98T14HZ9P6EVS3DAV37 --config agentrt.yaml --edit '{"order_id":"1043"}'`
		cmd.Flags().BoolVar(&f.forSession, "for-session", false, "also allow the tool for the rest of the session (approve_for_session)")
		cmd.Flags().BoolVar(&f.always, "always", false, "also allow the tool for the agent from now on (approve_always)")
		cmd.Flags().StringVar(&f.edit, "edit", "", "run the call with this JSON input instead (edit)")
		cmd.Flags().BoolVar(&f.noWait, "no-wait", false, "do not follow the resumed turn or wait for its outcome")
		cmd.Flags().StringVar(&f.message, "message", "", "a note kept with the decision")
	} else {
		cmd.Use = "deny ACTION_ID [--message M]"
		cmd.Short = "Deny a pending tool call and resume its turn"
		cmd.Long = `Deny a pending action: the call does not run, and the model is told it was denied, with
the message. Once no other action of the turn's hop is pending, the turn resumes in this
process; the command follows it like run does, and exits like run.` + exits
		cmd.Example = `  agentrt approvals deny act_01M7Z6E98T14HZ9P6EVS3DAV37 --config agentrt.yaml --message "not for this customer"`
		cmd.Flags().StringVar(&f.message, "message", "", "why; the model sees it")
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.principal, "principal", apitype.DefaultPrincipal, "who responds; needs the operator role")
	return cmd
}

// decision reads the flags of approve or deny into a decision.
func (f *respondFlags) decision(verb string) (string, json.RawMessage, error) {
	if verb == runtype.DecisionDeny {
		return runtype.DecisionDeny, nil, nil
	}
	switch {
	case f.forSession && f.always:
		return "", nil, usageErr("--for-session and --always cannot be combined")
	case f.edit != "" && (f.forSession || f.always):
		return "", nil, usageErr("--edit approves this call only; it cannot be combined with --for-session or --always")
	case f.edit != "":
		if !json.Valid([]byte(f.edit)) {
			return "", nil, usageErr("invalid --edit: not valid JSON: %s", oneLine(f.edit, 60))
		}
		return runtype.DecisionEdit, json.RawMessage(f.edit), nil
	case f.forSession:
		return runtype.DecisionApproveForSession, nil, nil
	case f.always:
		return runtype.DecisionApproveAlways, nil, nil
	}
	return runtype.DecisionApprove, nil, nil
}

func respond(cmd *cobra.Command, f *respondFlags, verb string, args []string) error {
	if len(args) != 1 {
		return usageErr("%s takes one ACTION_ID, got %d arguments", cmd.CommandPath(), len(args))
	}
	id := args[0]
	decision, updated, err := f.decision(verb)
	if err != nil {
		return err
	}
	if serverURL(cmd) != "" && cmd.Flags().Changed("principal") {
		return usageErr("--principal applies to a data directory; with --server the daemon answers as its own principal")
	}
	b, stop, err := f.backend(cmd, true)
	if err != nil {
		return err
	}
	defer stop()
	ctx := commandContext(cmd)
	owner := runtype.Owner{PrincipalID: f.principal}

	act, err := b.GetAction(ctx, owner, id)
	if err != nil {
		return actionErr(id, err)
	}
	if act.Type == runtype.ActionUserInput {
		return respondWorkflowStep(cmd, b, owner, act, decision, f.message)
	}
	turn, err := b.WaitTurn(ctx, owner, act.TurnID, 0)
	if err != nil {
		return runtimeErr(err)
	}
	// Subscribe before responding, so that no event of the resumed run
	// falls between.
	from, err := b.LastCursor(ctx)
	if err != nil {
		return runtimeErr(err)
	}
	sub, err := b.Events(ctx, &apitype.SubscribeParams{SessionID: act.SessionID, AfterCursor: from})
	if err != nil {
		return runtimeErr(err)
	}
	defer sub.Close()

	res, err := b.RespondAction(ctx, &apitype.RespondActionParams{
		Owner: owner, ActionID: id, Decision: decision, Message: f.message, UpdatedInput: updated,
	})
	if err != nil {
		// Responding to an action whose time is up expires it (a
		// conflict), which may resume its turn here: let that run reach
		// its end or next park rather than cancel it on the way out. A
		// daemon runs it on its own.
		if !b.Remote() {
			b.WaitTurn(ctx, owner, act.TurnID, from)
		}
		return actionErr(id, err)
	}
	out := cmd.OutOrStdout()
	printResolved(out, &res.Action)
	again := f.again(cmd)
	if !res.Resumed {
		// Another action of the hop is pending, or the turn no longer
		// waits (it was cancelled, say).
		turn, err := b.WaitTurn(ctx, owner, act.TurnID, 0)
		if err != nil {
			return runtimeErr(err)
		}
		if turn.Status == runtype.StatusWaitingPermission {
			fmt.Fprintf(out, "⏸ request %s still waits for a decision\n", turn.ID)
			return parkedForApproval(ctx, cmd, b, turn, false, again)
		}
		fmt.Fprintf(out, "request %s is %s (%s)\n", turn.ID, turn.Status, turn.StatusReason)
		return exitFor(turn)
	}
	if f.noWait {
		fmt.Fprintf(out, "request %s resumed; not following it (--no-wait)\n", turn.ID)
		if lb, ok := b.(*localBackend); ok {
			// The run lives in this process: let it reach its end or its
			// next park before the store closes, rather than leave it to
			// the next start.
			lb.WaitTurn(ctx, owner, turn.ID, from)
			if err := lb.Stop(ctx); err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
		}
		return nil
	}
	stopSignals := interruptOnSignal(cmd, b, turn.ID)
	defer stopSignals()
	p := newTimeline(out, timelineOptionsFor(out, true))
	p.header(turn.ID, turn.Agent, turn.SessionID, " (resumed)")
	turn, err = followTurn(ctx, b, sub, turn.ID, from, func(e *event.Event) error {
		if e.Type != event.ActionResolved || e.ActionID != id {
			p.event(e) // the answer is printed above
		}
		return nil
	})
	p.close()
	if err != nil {
		return err
	}
	if turn.Status == runtype.StatusWaitingPermission {
		return parkedForApproval(ctx, cmd, b, turn, false, again)
	}
	return exitFor(turn)
}

// respondWorkflowStep answers a workflow's human step: the answer is the
// step's output, and the run goes on (in the daemon, or where the data
// directory's work runs next). Only approve and deny answer it.
func respondWorkflowStep(cmd *cobra.Command, b backend, owner runtype.Owner, act *apitype.ActionRead, decision, message string) error {
	if decision != runtype.DecisionApprove && decision != runtype.DecisionDeny {
		return usageErr("action %s is a workflow's question to a person: answer it with approve or deny (and --message), not %s", act.ActionID, decision)
	}
	res, err := b.RespondAction(commandContext(cmd), &apitype.RespondActionParams{
		Owner: owner, ActionID: act.ActionID, Decision: decision, Message: message,
	})
	if err != nil {
		return actionErr(act.ActionID, err)
	}
	a := res.Action
	line := fmt.Sprintf("action %s %s (%s by %s): %s", a.ActionID, a.Status, a.Decision, a.ResolvedBy, oneLine(a.Prompt, 80))
	if a.Message != "" {
		line += fmt.Sprintf(" · %q", oneLine(a.Message, 80))
	}
	out := cmd.OutOrStdout()
	fmt.Fprintln(out, line)
	if run := workflowRunOf(cmd, b, act); run != "" {
		fmt.Fprintf(out, "workflow run %s goes on: agentrt workflows show %s\n", run, run)
	}
	return nil
}

// workflowRunOf is the id of the workflow run whose human step asked
// act, or "" when it cannot be found.
func workflowRunOf(cmd *cobra.Command, b backend, act *apitype.ActionRead) string {
	p := &apitype.ListWorkflowsParams{SessionID: act.SessionID, Limit: maxListLimit}
	for {
		page, err := b.ListWorkflows(commandContext(cmd), p)
		if err != nil {
			return ""
		}
		for _, r := range page.Runs {
			for _, s := range r.Steps {
				if s.ActionID == act.ActionID {
					return r.RunID
				}
			}
		}
		if page.NextAfterID == "" {
			return ""
		}
		p.AfterID = page.NextAfterID
	}
}

// actionErr reports what went wrong answering action id.
func actionErr(id string, err error) error {
	switch {
	case errors.Is(err, apitype.ErrNotFound):
		return &exitError{code: ExitFailed, err: fmt.Errorf("no action %s", id)}
	case errors.Is(err, apitype.ErrConflict), errors.Is(err, apitype.ErrForbidden):
		return &exitError{code: ExitFailed, err: err}
	}
	return runtimeErr(err)
}

// actionLister lists actions: a backend, or the Runtime itself.
type actionLister interface {
	ListActions(ctx context.Context, p *apitype.ListActionsParams) ([]apitype.ActionRead, error)
}

// printResolved prints how an action was resolved.
func printResolved(w io.Writer, a *apitype.ActionRead) {
	line := fmt.Sprintf("action %s %s (%s by %s): %s %s", a.ActionID, a.Status, a.Decision, a.ResolvedBy, a.ToolName, oneLine(a.InputPreview, 60))
	if a.Message != "" {
		line += fmt.Sprintf(" · %q", oneLine(a.Message, 80))
	}
	fmt.Fprintln(w, line)
}

// parkedForApproval shows the turn's pending actions and the commands
// that answer them, and returns the exit of a parked turn. With asJSON,
// standard output holds only events, so they go to standard error.
func parkedForApproval(ctx context.Context, cmd *cobra.Command, rt actionLister, turn *runtype.Turn, asJSON bool, flags string) error {
	acts, err := rt.ListActions(ctx, &apitype.ListActionsParams{TurnID: turn.ID, Status: runtype.ActionPending, Limit: maxListLimit})
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	slices.Reverse(acts) // in the order the calls were made
	var b strings.Builder
	for _, a := range acts {
		fmt.Fprintf(&b, "  pending %s: %s %s\n", a.ActionID, a.ToolName, oneLine(a.InputPreview, 70))
		fmt.Fprintf(&b, "    approve: agentrt approvals approve %s %s\n", a.ActionID, flags)
		fmt.Fprintf(&b, "    deny:    agentrt approvals deny %s %s --message \"…\"\n", a.ActionID, flags)
	}
	if asJSON {
		return &exitError{code: ExitParked, err: fmt.Errorf("request %s waits for a decision:\n%s", turn.ID, strings.TrimRight(b.String(), "\n"))}
	}
	io.WriteString(cmd.OutOrStdout(), b.String())
	return &exitError{code: ExitParked, err: errors.New("")}
}
