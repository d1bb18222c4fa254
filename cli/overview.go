package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// overview is what agentrt overview --json prints: a stable object,
// documented in docs/cli.md. Fields are added, never renamed or removed.
type overview struct {
	// Where is the server's URL, or the data directory.
	Where       string    `json:"where"`
	GeneratedAt time.Time `json:"generatedAt"`
	// Health is the runtime's health as GET /v1/health answers it, whole.
	Health    json.RawMessage   `json:"health"`
	Approvals approvalsOverview `json:"approvals"`
	// Attention lists recent requests that wait, are blocked or paused,
	// or failed: newest first, at most overviewRows.
	Attention []requestOverview `json:"attention"`
	// Sessions lists the sessions with an open request, and the most
	// recent ones, with the agent of the request that holds each.
	Sessions []sessionOverview `json:"sessions"`
	// LastActivity is the time of the newest event; null without events.
	LastActivity *time.Time `json:"lastActivity"`
	// Schedules are the schedules that fire soonest and those failing;
	// null when the server predates schedules.
	Schedules *schedulesOverview `json:"schedules"`
}

type approvalsOverview struct {
	// Pending counts the pending actions of the tenant whose actions are
	// listed: on a data directory the count the store keeps; else the
	// health's count when the health is that tenant's view, else those
	// listed, up to maxListLimit.
	Pending int `json:"pending"`
	// More: there are more than Pending (only when counted from a list).
	More bool `json:"more"`
	// Oldest are the oldest pending actions, oldest first, at most
	// overviewOldest.
	Oldest []approvalOverview `json:"oldest"`
}

type approvalOverview struct {
	ActionID   string    `json:"actionId"`
	ToolName   string    `json:"toolName"`
	SessionID  string    `json:"sessionId"`
	TurnID     string    `json:"turnId"`
	CreatedAt  time.Time `json:"createdAt"`
	AgeSeconds int64     `json:"ageSeconds"`
}

type requestOverview struct {
	RequestID    string             `json:"requestId"`
	SessionID    string             `json:"sessionId"`
	Agent        string             `json:"agent"`
	Status       runtype.TaskStatus `json:"status"`
	StatusReason string             `json:"statusReason,omitempty"`
	// Since is when the request ended, else started, else was created.
	Since      *time.Time `json:"since"`
	AgeSeconds int64      `json:"ageSeconds"`
	// WaitingFor names, for a request parked waiting_children, the
	// delegated agents it waits for (the open tasks deepest down its
	// delegation tree); absent otherwise.
	WaitingFor []delegateOverview `json:"waitingFor,omitempty"`
}

type sessionOverview struct {
	SessionID string `json:"sessionId"`
	// ActiveRequestID and ActiveAgent are of the request holding the
	// session's thread (running, parked or paused, else the next queued);
	// null when none is open.
	ActiveRequestID *string             `json:"activeRequestId"`
	ActiveAgent     *string             `json:"activeAgent"`
	Status          *runtype.TaskStatus `json:"status"`
}

const (
	overviewRows     = 10  // most attention requests and sessions shown
	overviewOldest   = 5   // most pending actions shown
	overviewRequests = 200 // open requests read, for the sessions
	overviewSessions = 5   // recent sessions shown even when idle
)

type overviewFlags struct {
	storeFlags
	json bool
}

func newOverviewCmd() *cobra.Command {
	var f overviewFlags
	cmd := &cobra.Command{
		Use:   "overview [--json]",
		Short: "One screen: health, pending approvals, requests needing attention, sessions",
		Long: `Show, on one screen, what an operator looks at first: the runtime's health and any
failing checks; the pending approvals (how many, and the oldest with their age); recent
requests that wait, are blocked or paused, or failed (one parked waiting_children names the
delegated agents it waits for); the sessions with an open request and
the agent running it ("none" when no request is open); and when the last event happened.

Works on a daemon (--server) or a data directory. On a terminal it prints a table with
colour (never with NO_COLOR set), elsewhere the same table without colour; with --json,
the stable JSON object documented in docs/cli.md.

Exit codes: 0 shown (whatever the health), 1 the store or server could not be read, 2
usage or configuration error.`,
		Example: `  agentrt overview --config agentrt.yaml
  agentrt overview --server http://127.0.0.1:7420 --json | jq .approvals.pending`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			ov, err := readOverview(commandContext(cmd), b, time.Now().UTC())
			if err != nil {
				return runtimeErr(err)
			}
			out := cmd.OutOrStdout()
			if f.json {
				return writeIndented(out, ov)
			}
			printOverview(out, ov, newStyle(out, f.json))
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&f.json, "json", false, "print the overview as JSON")
	return cmd
}

// readOverview gathers the overview from b.
func readOverview(ctx context.Context, b backend, now time.Time) (*overview, error) {
	ov := &overview{Where: b.Where(), GeneratedAt: now, Attention: []requestOverview{}, Sessions: []sessionOverview{}}
	h, err := b.Health(ctx)
	if err != nil {
		return nil, err
	}
	if ov.Health, err = json.Marshal(h); err != nil {
		return nil, err
	}

	acts, err := oldestApprovals(ctx, b, h, &ov.Approvals)
	if err != nil {
		return nil, err
	}
	for _, a := range acts[:min(len(acts), overviewOldest)] {
		ov.Approvals.Oldest = append(ov.Approvals.Oldest, approvalOverview{
			ActionID: a.ActionID, ToolName: a.ToolName, SessionID: a.SessionID, TurnID: a.TurnID,
			CreatedAt: a.CreatedAt, AgeSeconds: int64(now.Sub(a.CreatedAt) / time.Second),
		})
	}
	if ov.Approvals.Oldest == nil {
		ov.Approvals.Oldest = []approvalOverview{}
	}

	// The store filters by status before its limit: a request parked
	// long ago shows however many have run since.
	attention, err := b.ListRequests(ctx, &apitype.ListRequestsParams{Limit: overviewRows, Statuses: runtype.AttentionStatuses})
	if err != nil {
		return nil, err
	}
	for _, r := range attention {
		since := cmp.Or(r.EndedAt, r.StartedAt, r.CreatedAt)
		ro := requestOverview{RequestID: r.TurnID, SessionID: r.SessionID, Agent: r.Agent, Status: r.Status, StatusReason: string(r.StatusReason), Since: since}
		if since != nil {
			ro.AgeSeconds = int64(now.Sub(*since) / time.Second)
		}
		if r.StatusReason == runtype.ReasonWaitingChildren {
			if ro.WaitingFor, err = delegatesOf(ctx, b, &r); err != nil {
				return nil, err
			}
		}
		ov.Attention = append(ov.Attention, ro)
	}
	open, err := b.ListRequests(ctx, &apitype.ListRequestsParams{Limit: overviewRequests, Statuses: openStatuses})
	if err != nil {
		return nil, err
	}
	active := map[string]*apitype.RequestSummary{} // session → the request holding it
	var order []string                             // sessions, newest request first
	for i := range open {
		r := &open[i]
		if cur, ok := active[r.SessionID]; !ok {
			order = append(order, r.SessionID)
			active[r.SessionID] = r
		} else if r.Status.HoldRank() <= cur.Status.HoldRank() {
			// Older requests hold the thread before newer ones.
			active[r.SessionID] = r
		}
	}
	recent, err := b.ListSessions(ctx, &apitype.ListSessionsParams{Limit: overviewSessions})
	if err != nil {
		return nil, err
	}
	for _, s := range recent {
		if !slices.Contains(order, s.SessionID) {
			order = append(order, s.SessionID)
		}
	}
	for _, sid := range order[:min(len(order), overviewRows)] {
		so := sessionOverview{SessionID: sid}
		if r := active[sid]; r != nil {
			so.ActiveRequestID, so.ActiveAgent, so.Status = &r.TurnID, &r.Agent, &r.Status
		}
		ov.Sessions = append(ov.Sessions, so)
	}

	if ov.Schedules, err = readScheduleOverview(ctx, b); err != nil {
		return nil, err
	}
	if ov.LastActivity, err = lastActivity(ctx, b); err != nil {
		return nil, err
	}
	return ov, nil
}

// delegatesOf names the delegated agents request r waits for, read from
// its task's delegation tree.
func delegatesOf(ctx context.Context, b backend, r *apitype.RequestSummary) ([]delegateOverview, error) {
	page, err := b.ListTasks(ctx, &apitype.ListTasksParams{SessionID: r.SessionID, Status: r.Status, Limit: maxListLimit})
	if err != nil {
		return nil, err
	}
	for _, t := range page.Tasks {
		if t.TurnID != r.TurnID {
			continue
		}
		tree, err := delegationTree(ctx, b, t.TaskID)
		if err != nil || tree == nil {
			return nil, err
		}
		return waitingFor(tree), nil
	}
	return nil, nil
}

// oldestApprovals counts the pending approvals into ao and returns the
// oldest, oldest first. On a data directory the store keeps the count
// (the tenant's health reads it) and lists the oldest first: a count and
// overviewOldest rows, however many wait. A server may predate the
// oldest-first list: there the count is the health's when it is the
// listed tenant's, else those of a list of the newest, up to
// maxListLimit, whose last are the oldest shown.
func oldestApprovals(ctx context.Context, b backend, h *apitype.Health, ao *approvalsOverview) ([]apitype.ActionRead, error) {
	if lb, ok := b.(*localBackend); ok {
		if n, ok := pendingApprovals(lb.TenantHealth(ctx, "")); ok {
			ao.Pending = n
			return b.ListActions(ctx, &apitype.ListActionsParams{Status: runtype.ActionPending, Oldest: true, Limit: overviewOldest})
		}
	}
	acts, err := b.ListActions(ctx, &apitype.ListActionsParams{Status: runtype.ActionPending, Limit: maxListLimit})
	if err != nil {
		return nil, err
	}
	ao.Pending, ao.More = len(acts), len(acts) == maxListLimit
	if n, ok := pendingApprovals(h); ok {
		ao.Pending, ao.More = n, false // counted by the store, not capped
	}
	slices.Reverse(acts) // oldest first
	return acts, nil
}

// pendingApprovals is the count of pending approvals the health checked;
// false when it did not (its store did not answer, the runtime is
// stopped, or the server predates the check), or when it counted every
// tenant's (the whole runtime's view), not the one tenant's the overview
// lists.
func pendingApprovals(h *apitype.Health) (int, bool) {
	if h.TenantID == "" {
		return 0, false
	}
	for _, c := range h.Checks {
		if c.Name == "approvals" {
			// A check that could not read the store warns with no
			// oldest action; one that read none is ok.
			return h.Approvals.Pending, c.Status == apitype.CheckOK || h.Approvals.OldestActionID != ""
		}
	}
	return 0, false
}

// openStatuses are those of a request that has not ended.
var openStatuses = slices.DeleteFunc(slices.Clone(runtype.TaskStatuses), runtype.TaskStatus.Terminal)

// lastActivity is the time of the newest event, nil without any.
func lastActivity(ctx context.Context, b backend) (*time.Time, error) {
	last, err := b.LastCursor(ctx)
	if err != nil || last == 0 {
		return nil, err
	}
	sub, err := b.Events(ctx, &apitype.SubscribeParams{AfterCursor: last - 1})
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	e, err := sub.TryNext(ctx)
	if err != nil || e == nil {
		return nil, err
	}
	t := e.Timestamp.UTC()
	return &t, nil
}

// healthView is what the overview shows of a health object. It decodes
// the JSON, so that fields the runtime adds (checks, say) show here
// without a change in this file's callers.
type healthView struct {
	Status      string   `json:"status"`
	Version     string   `json:"version"`
	ActiveTurns int      `json:"activeTurns"`
	Problems    []string `json:"problems"`
	Store       struct {
		Driver   string `json:"driver"`
		Location string `json:"location"`
	} `json:"store"`
	Nodes  []apitype.NodeInfo `json:"nodes"`
	Checks []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
		Reason string `json:"reason"`
	} `json:"checks"`
}

// printOverview prints the overview for people, in stable columns.
func printOverview(w io.Writer, ov *overview, st style) {
	now := ov.GeneratedAt
	var h healthView
	json.Unmarshal(ov.Health, &h)
	fmt.Fprintf(w, "%s %s\n", st.bold("agentrt overview"), st.dim("· "+ov.Where))
	fmt.Fprintf(w, "%-10s %s · agentrt %s · %s · last activity %s\n", "health", st.status(h.Status), h.Version,
		plural(h.ActiveTurns, "active turn"), relTimeOf(now, ov.LastActivity))
	if sharedStore(h.Store.Driver) {
		fmt.Fprintf(w, "%-10s %s\n", "store", strings.TrimSuffix(h.Store.Driver+" · "+h.Store.Location, " · "))
	}
	if len(h.Nodes) > 0 {
		fmt.Fprintf(w, "%-10s %s holding leases\n", "nodes", plural(len(h.Nodes), "node"))
		t := newTable("WORKER", "LEASES", "RUN OUT", "HEARTBEAT")
		for _, n := range h.Nodes {
			t.row(n.Worker, fmt.Sprint(n.Leases), fmt.Sprint(n.ExpiredLeases), relTimeOf(now, n.LastHeartbeatAt))
		}
		t.write(w, "           ", st)
	}
	failing := newTable("CHECK", "STATUS", "REASON")
	failing.paint[1] = st.status
	for _, c := range h.Checks {
		if c.Status != "ok" && c.Status != "pass" {
			failing.row(c.Name, c.Status, oneLine(c.Reason, 80))
		}
	}
	for _, p := range h.Problems {
		failing.row("-", "problem", oneLine(p, 80))
	}
	if len(failing.rows) > 0 {
		failing.write(w, "           ", st)
	}

	pending := plural(ov.Approvals.Pending, "pending approval")
	if ov.Approvals.More {
		pending = "more than " + pending
	}
	fmt.Fprintf(w, "%-10s %s\n", "approvals", pending)
	if len(ov.Approvals.Oldest) > 0 {
		t := newTable("ACTION", "TOOL", "SESSION", "AGE")
		for _, a := range ov.Approvals.Oldest {
			t.row(a.ActionID, a.ToolName, a.SessionID, relTime(now, a.CreatedAt))
		}
		t.write(w, "           ", st)
	}

	fmt.Fprintf(w, "%-10s %s\n", "attention", plural(len(ov.Attention), "request")+" waiting, blocked or failed")
	if len(ov.Attention) > 0 {
		t := newTable("REQUEST", "STATUS", "REASON", "AGENT", "SESSION", "SINCE")
		t.paint[1] = st.status
		for _, r := range ov.Attention {
			reason := cmp.Or(r.StatusReason, "-")
			if len(r.WaitingFor) > 0 {
				reason += ": " + delegatesText(r.WaitingFor)
			}
			t.row(r.RequestID, string(r.Status), reason, r.Agent, r.SessionID, relTimeOf(now, r.Since))
		}
		t.write(w, "           ", st)
	}

	fmt.Fprintf(w, "%-10s %s\n", "sessions", plural(len(ov.Sessions), "session")+" (open or recent)")
	if len(ov.Sessions) > 0 {
		t := newTable("SESSION", "ACTIVE AGENT", "REQUEST", "STATUS")
		t.paint[3] = st.status
		for _, s := range ov.Sessions {
			if s.ActiveRequestID == nil {
				t.row(s.SessionID, "none", "-", "idle")
				continue
			}
			t.row(s.SessionID, *s.ActiveAgent, *s.ActiveRequestID, string(*s.Status))
		}
		t.write(w, "           ", st)
	}
	printScheduleOverview(w, ov.Schedules, now, st)
}
