package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
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

func newRequestsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "requests",
		Short: "Follow requests (turns) as they change state, or show one's timeline",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newRequestsListCmd(), newRequestsTailCmd(), newRequestsShowCmd())
	return cmd
}

// requestLine is one line of requests tail --json: a stable object,
// documented in docs/cli.md. The first lines list the recent requests
// (event "listed"); the following ones are the state changes the event
// stream shows.
type requestLine struct {
	At           time.Time          `json:"at"`
	Event        string             `json:"event"`
	RequestID    string             `json:"requestId"`
	SessionID    string             `json:"sessionId"`
	Agent        string             `json:"agent"`
	Status       runtype.TaskStatus `json:"status"`
	StatusReason string             `json:"statusReason,omitempty"`
	// Detail says more: the tool and action of action.required, the
	// decision of action.resolved.
	Detail string `json:"detail,omitempty"`
	// Cursor is the event's position in the log (0 for listed lines).
	Cursor int64 `json:"cursor,omitempty"`
}

// tailEvents are the events requests tail prints, with the status each
// leaves its request in when the event does not say.
var tailEvents = map[event.Type]runtype.TaskStatus{
	event.TurnSubmitted:  runtype.StatusQueued,
	event.TurnStarted:    runtype.StatusRunning,
	event.TurnCompleted:  runtype.StatusCompleted,
	event.TurnFailed:     runtype.StatusFailed,
	event.TaskWaiting:    runtype.StatusWaitingPermission,
	event.TaskBlocked:    runtype.StatusBlocked,
	event.TaskPaused:     runtype.StatusPaused,
	event.TaskResumed:    runtype.StatusRunning,
	event.TaskRetrying:   runtype.StatusRetrying,
	event.TaskCancelled:  runtype.StatusCancelled,
	event.TaskTimedOut:   runtype.StatusTimedOut,
	event.TaskLost:       runtype.StatusLost,
	event.ActionRequired: runtype.StatusWaitingPermission,
	event.ActionResolved: runtype.StatusRunning,
}

type tailFlags struct {
	storeFlags
	session  string
	statuses string
	limit    int
	once     bool
	json     bool
}

func newRequestsTailCmd() *cobra.Command {
	var f tailFlags
	cmd := &cobra.Command{
		Use:   "tail [--session ID] [--status S,...] [--once] [--json]",
		Short: "Print recent requests, then a line per state change as it happens",
		Long: `Print the most recent requests (turns), oldest first, then follow the event stream and print
one line per change of a request's state: submitted, started, completed, failed, waiting
for a decision (action.required), resolved, blocked, paused, resumed, retrying, cancelled,
timed out, lost. With --once, print the recent requests and exit (for scripts).

On a terminal the lines form a table: TIME (UTC), EVENT ("listed" for the recent requests),
STATUS, REQUEST, AGENT, SESSION, DETAIL. Otherwise, or with --json, each line is a JSON
object (documented in docs/cli.md). --status keeps the lines whose status is one of the
given ones (all: every status).

With --server the stream is the daemon's (GET /v1/events). On a data directory the command
also reads the store every --interval for the events of other processes.

Exit codes: 0 interrupted (or --once done), 1 the store or server could not be read, 2
usage or configuration error.`,
		Example: `  agentrt requests tail --server http://127.0.0.1:7420
  agentrt requests tail --config agentrt.yaml --status waiting_permission,failed --once --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return tailRequests(cmd, &f)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.session, "session", "", "only the requests of this session")
	cmd.Flags().StringVar(&f.statuses, "status", "", "only lines with one of these statuses (comma-separated; all: every status)")
	cmd.Flags().IntVar(&f.limit, "limit", 20, "list at most this many recent requests first (0: none)")
	cmd.Flags().BoolVar(&f.once, "once", false, "print the recent requests and exit")
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON Lines even on a terminal")
	cmd.Flags().DurationVar(&f.poll, "interval", time.Second, "on a data directory, how often to read the store for other processes' events")
	return cmd
}

// statusAll is the --status that keeps every status, as status=all does
// in the HTTP API.
const statusAll = "all"

// parseStatuses reads --status: nil keeps every status ("" or all).
func parseStatuses(s string) (map[runtype.TaskStatus]bool, error) {
	if s == "" || s == statusAll {
		return nil, nil
	}
	keep := map[runtype.TaskStatus]bool{}
	for _, w := range strings.Split(s, ",") {
		st := runtype.TaskStatus(strings.TrimSpace(w))
		if !slices.Contains(runtype.TaskStatuses, st) {
			names := make([]string, len(runtype.TaskStatuses))
			for i, a := range runtype.TaskStatuses {
				names[i] = string(a)
			}
			return nil, usageErr("invalid --status %q: use %s, several of them comma-separated, or all", st, strings.Join(names, ", "))
		}
		keep[st] = true
	}
	return keep, nil
}

func tailRequests(cmd *cobra.Command, f *tailFlags) error {
	keep, err := parseStatuses(f.statuses)
	if err != nil {
		return err
	}
	switch {
	case f.limit < 0 || f.limit > maxListLimit:
		return usageErr("invalid --limit %d: use 0 to %d", f.limit, maxListLimit)
	case f.poll <= 0:
		return usageErr("invalid --interval %s: must be positive", f.poll)
	}
	b, stop, err := f.backend(cmd, false)
	if err != nil {
		return err
	}
	defer stop()
	ctx, cancel := signal.NotifyContext(commandContext(cmd), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	p := &tailPrinter{out: newTailLister(cmd.OutOrStdout(), f.json), keep: keep, agents: map[string]string{}}

	// From before the listing, so that no change falls between.
	from, err := b.LastCursor(ctx)
	if err != nil {
		return runtimeErr(err)
	}
	var lines []requestLine
	if f.limit > 0 {
		// The store filters by status before its limit, so that old
		// requests in a status asked for show however many newer ones
		// there are.
		reqs, err := b.ListRequests(ctx, &apitype.ListRequestsParams{SessionID: f.session, Limit: f.limit, Statuses: slices.Collect(maps.Keys(keep))})
		if err != nil {
			return runtimeErr(err)
		}
		for _, r := range reqs {
			p.agents[r.TurnID] = r.Agent
			line := requestLine{Event: "listed", RequestID: r.TurnID, SessionID: r.SessionID, Agent: r.Agent, Status: r.Status, StatusReason: string(r.StatusReason)}
			if at := cmpOrTime(r.EndedAt, r.StartedAt, r.CreatedAt); at != nil {
				line.At = *at
			}
			lines = append(lines, line)
		}
		slices.Reverse(lines) // oldest first, as a log reads
	}
	// A table's header even with nothing listed: the command follows.
	if err := p.out.print(lines); err != nil {
		return err
	}
	if f.once {
		return nil
	}
	sub, err := b.Events(ctx, &apitype.SubscribeParams{SessionID: f.session, AfterCursor: from})
	if err != nil {
		return runtimeErr(err)
	}
	defer sub.Close()
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted: the normal end
			}
			return runtimeErr(fmt.Errorf("following events: %w", err))
		}
		line, ok := p.lineOf(ctx, b, e)
		if !ok {
			continue
		}
		if err := p.out.print([]requestLine{line}); err != nil {
			return err
		}
	}
}

func cmpOrTime(ts ...*time.Time) *time.Time {
	for _, t := range ts {
		if t != nil {
			return t
		}
	}
	return nil
}

// tailPrinter prints request lines.
type tailPrinter struct {
	out    *lister[requestLine]
	keep   map[runtype.TaskStatus]bool
	agents map[string]string // request → agent, as read
}

// newTailLister prints request lines: a table on a terminal, whose
// columns (TIME in UTC, EVENT, STATUS, REQUEST, AGENT, SESSION, DETAIL)
// start wide enough for ids, so that lines stay aligned as they come;
// JSON Lines of requestLine otherwise.
func newTailLister(w io.Writer, asJSON bool) *lister[requestLine] {
	l := newLister(w, asJSON, []string{"TIME", "EVENT", "STATUS", "REQUEST", "AGENT", "SESSION", "DETAIL"}, func(l *requestLine) []string {
		at := "-"
		if !l.At.IsZero() {
			at = l.At.UTC().Format(time.TimeOnly)
		}
		return []string{at, l.Event, statusText(l.Status, l.StatusReason), l.RequestID, l.Agent, l.SessionID, l.Detail}
	})
	l.minWidths = []int{8, 15, 18, 31, 12, 30}
	l.paint[2] = paintStatusWord
	return l
}

// lineOf makes the line of an event; false when it prints none.
func (p *tailPrinter) lineOf(ctx context.Context, b backend, e *event.Event) (requestLine, bool) {
	status, ok := tailEvents[e.Type]
	if !ok || e.TurnID == "" {
		return requestLine{}, false
	}
	line := requestLine{At: e.Timestamp.UTC(), Event: string(e.Type), RequestID: e.TurnID, SessionID: e.SessionID, Status: status, StatusReason: string(e.StatusReason), Cursor: e.Cursor}
	if s := runtype.TaskStatus(e.Status); e.Status != "" && slices.Contains(runtype.TaskStatuses, s) {
		line.Status = s
	}
	if a, ok := e.Payload.(*event.ActionPayload); ok {
		switch e.Type {
		case event.ActionRequired:
			line.Detail = strings.TrimSpace(a.ToolName + " " + e.ActionID)
		case event.ActionResolved:
			line.Detail = strings.TrimSpace(e.ActionID + " " + a.Status + " " + a.Decision)
		}
	}
	if p.keep != nil && !p.keep[line.Status] {
		return requestLine{}, false
	}
	agent, ok := p.agents[e.TurnID]
	if !ok {
		if r, err := b.GetRequest(ctx, runtype.Owner{}, e.TurnID); err == nil {
			agent = r.Agent
		}
		p.agents[e.TurnID] = agent
	}
	line.Agent = agent
	return line, true
}
