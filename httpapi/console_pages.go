package httpapi

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// The console's list pages: the overview, requests and sessions. Every
// read uses the caller's tenant (owner(r)), and a submitter's its own
// records (onlyOwn), as the /v1 routes do.

// consoleRows is how many rows a console list shows per page.
const consoleRows = 50

// consoleOverview is the overview's data: what agentrt overview shows.
type consoleOverview struct {
	// Health is the tenant's (the runtime's for an admin); nil for a
	// submitter, who may not read it.
	Health *apitype.Health
	// Oldest are the oldest pending approvals, oldest first.
	Oldest []apitype.ActionRead
	// Attention are recent requests an operator may have to act on.
	Attention []consoleAttention
	// Sessions are those with an open request, then the most recent.
	Sessions     []consoleSessionRow
	LastActivity time.Time
}

type consoleAttention struct {
	apitype.RequestSummary
	Since time.Time
	// WaitingFor names the delegated agents a request parked
	// waiting_children waits for.
	WaitingFor []string
}

type consoleSessionRow struct {
	SessionID string
	// Active is the request holding the session's thread; nil when none
	// is open.
	Active *apitype.RequestSummary
}

func (c *console) overview(w http.ResponseWriter, r *http.Request, v *consoleView) {
	ctx := r.Context()
	ov, err := c.readOverview(ctx, r, v)
	if err != nil {
		c.failErr(w, r, v, err)
		return
	}
	v.Title, v.Live, v.Data = "Overview", "tenant", ov
	c.render(w, r, "overview", http.StatusOK, v)
}

// readOverview gathers the overview as cli.readOverview does, from the
// runtime itself.
func (c *console) readOverview(ctx context.Context, r *http.Request, v *consoleView) (*consoleOverview, error) {
	rt, cred := c.s.rt, caller(r)
	ov := &consoleOverview{}
	if v.CanRead {
		if cred.Role == runtype.APIRoleAdmin {
			ov.Health = rt.Health(ctx)
		} else {
			ov.Health = rt.TenantHealth(ctx, cred.TenantID)
		}
		page, err := rt.ListActionsPage(ctx, &apitype.ListActionsParams{Owner: owner(r), Status: runtype.ActionPending, Oldest: true, Limit: 5})
		if err != nil {
			return nil, err
		}
		ov.Oldest = page.Actions
	}
	attention, err := rt.ListRequestsPage(ctx, &apitype.ListRequestsParams{Owner: owner(r), OnlyOwn: onlyOwn(r), Statuses: runtype.AttentionStatuses, Limit: 10})
	if err != nil {
		return nil, err
	}
	for _, q := range attention.Requests {
		a := consoleAttention{RequestSummary: q}
		if t := cmp.Or(q.EndedAt, q.StartedAt, q.CreatedAt); t != nil {
			a.Since = *t
		}
		if q.StatusReason == runtype.ReasonWaitingChildren {
			a.WaitingFor = c.delegates(ctx, r, &q)
		}
		ov.Attention = append(ov.Attention, a)
	}
	open := slices.DeleteFunc(slices.Clone(runtype.TaskStatuses), runtype.TaskStatus.Terminal)
	openPage, err := rt.ListRequestsPage(ctx, &apitype.ListRequestsParams{Owner: owner(r), OnlyOwn: onlyOwn(r), Statuses: open, Limit: 200})
	if err != nil {
		return nil, err
	}
	active := map[string]*apitype.RequestSummary{}
	var order []string
	for i := range openPage.Requests {
		q := &openPage.Requests[i]
		if cur, ok := active[q.SessionID]; !ok {
			order = append(order, q.SessionID)
			active[q.SessionID] = q
		} else if q.Status.HoldRank() <= cur.Status.HoldRank() {
			active[q.SessionID] = q // older requests hold the thread first
		}
	}
	recent, err := rt.ListSessionsPage(ctx, &apitype.ListSessionsParams{Owner: owner(r), OnlyOwn: onlyOwn(r), Limit: 5})
	if err != nil {
		return nil, err
	}
	for _, s := range recent.Sessions {
		if !slices.Contains(order, s.SessionID) {
			order = append(order, s.SessionID)
		}
	}
	for _, sid := range order[:min(len(order), 10)] {
		ov.Sessions = append(ov.Sessions, consoleSessionRow{SessionID: sid, Active: active[sid]})
	}
	// The last activity: the newest of the tenant's newest request's
	// times (one row; the log's last event may be another tenant's).
	if newest, err := rt.ListRequestsPage(ctx, &apitype.ListRequestsParams{Owner: owner(r), OnlyOwn: onlyOwn(r), Limit: 1}); err == nil && len(newest.Requests) > 0 {
		q := newest.Requests[0]
		for _, t := range []*time.Time{q.CreatedAt, q.StartedAt, q.EndedAt} {
			if t != nil && t.After(ov.LastActivity) {
				ov.LastActivity = *t
			}
		}
	}
	if ov.Health != nil {
		for _, a := range ov.Oldest {
			if a.CreatedAt.After(ov.LastActivity) {
				ov.LastActivity = a.CreatedAt
			}
		}
	}
	return ov, nil
}

// delegates names the agents a request parked waiting_children waits
// for: the open tasks deepest down its delegation tree. It shows what it
// can: a read that fails names none.
func (c *console) delegates(ctx context.Context, r *http.Request, q *apitype.RequestSummary) []string {
	tasks, err := c.s.rt.ListTasks(ctx, &apitype.ListTasksParams{Owner: owner(r), OnlyOwn: onlyOwn(r), SessionID: q.SessionID, Status: q.Status, Limit: 200})
	if err != nil {
		return nil
	}
	for _, t := range tasks.Tasks {
		if t.TurnID != q.TurnID {
			continue
		}
		tree, err := c.s.rt.DelegationTree(ctx, owner(r), t.TaskID)
		if err != nil || tree == nil {
			return nil
		}
		var out []string
		for _, n := range tree.Waiting() {
			if !slices.Contains(out, n.Agent) {
				out = append(out, n.Agent)
			}
		}
		return out
	}
	return nil
}

// consoleRequests is the requests page's data.
type consoleRequests struct {
	Status, Agent, SessionID, ThreadID string
	Statuses                           []runtype.TaskStatus
	Requests                           []apitype.RequestSummary
	// Next is the URL of the next page; "" on the last.
	Next string
}

func (c *console) requests(w http.ResponseWriter, r *http.Request, v *consoleView) {
	q := r.URL.Query()
	d := consoleRequests{Status: q.Get("status"), Agent: q.Get("agent"), SessionID: q.Get("sessionId"), ThreadID: q.Get("threadId"), Statuses: runtype.TaskStatuses}
	p := &apitype.ListRequestsParams{
		Owner: owner(r), OnlyOwn: onlyOwn(r), SessionID: d.SessionID, ThreadID: d.ThreadID, Agent: d.Agent,
		Cursor: q.Get("cursor"), Limit: consoleRows,
	}
	if d.Status != "" && d.Status != StatusAll {
		p.Status = runtype.TaskStatus(d.Status)
	}
	page, err := c.s.rt.ListRequestsPage(r.Context(), p)
	if err != nil {
		c.failErr(w, r, v, err)
		return
	}
	d.Requests = page.Requests
	if page.NextCursor != "" {
		d.Next = consoleNextPage(r.URL, page.NextCursor)
	}
	v.Title, v.Live, v.Data = "Requests", "tenant", d
	c.render(w, r, "requests", http.StatusOK, v)
}

// consoleNextPage is u with cursor set to cursor.
func consoleNextPage(u *url.URL, cursor string) string {
	q := u.Query()
	q.Set("cursor", cursor)
	return u.Path + "?" + q.Encode()
}

// consoleSessions is the sessions page's data.
type consoleSessions struct {
	Agent    string
	Sessions []apitype.SessionSummary
	Next     string
}

func (c *console) sessions(w http.ResponseWriter, r *http.Request, v *consoleView) {
	q := r.URL.Query()
	d := consoleSessions{Agent: q.Get("agent")}
	page, err := c.s.rt.ListSessionsPage(r.Context(), &apitype.ListSessionsParams{
		Owner: owner(r), OnlyOwn: onlyOwn(r), Agent: d.Agent, Cursor: q.Get("cursor"), Limit: consoleRows,
	})
	if err != nil {
		c.failErr(w, r, v, err)
		return
	}
	d.Sessions = page.Sessions
	if page.NextCursor != "" {
		d.Next = consoleNextPage(r.URL, page.NextCursor)
	}
	v.Title, v.Live, v.Data = "Sessions", "tenant", d
	c.render(w, r, "sessions", http.StatusOK, v)
}

// consoleSession is one session's page: its snapshot, or one thread's
// read model.
type consoleSession struct {
	Snapshot *apitype.Snapshot
	// ThreadID is set when the page shows one thread.
	ThreadID string
}

func (c *console) session(w http.ResponseWriter, r *http.Request, v *consoleView) {
	ctx, sid, tid := r.Context(), r.PathValue("sessionId"), r.URL.Query().Get("threadId")
	if onlyOwn(r) {
		if err := c.s.rt.CheckOwn(ctx, owner(r), apitype.OwnSession, sid); err != nil {
			c.failErr(w, r, v, err)
			return
		}
	}
	var snap *apitype.Snapshot
	var err error
	if tid != "" {
		snap, err = c.s.rt.GetThreadRead(ctx, owner(r), sid, tid)
	} else {
		snap, err = c.s.rt.GetSession(ctx, owner(r), sid)
	}
	if err != nil {
		c.failErr(w, r, v, err)
		return
	}
	v.Title, v.Live, v.Data = "Session "+sid, "tenant", consoleSession{Snapshot: snap, ThreadID: tid}
	c.render(w, r, "session", http.StatusOK, v)
}
