package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// The read routes: lists with filters and cursors, a thread's history and
// an agent's tool inventory. Lists answer {"<items>": [...], "nextCursor":
// "..."}; pass nextCursor back as cursor for the next page ("" means the
// list is done).

// StatusAll is the status filter of a list route that keeps every
// status, as no status does: status=all means what agentrt's --status
// all does.
const StatusAll = "all"

// listQuery is what every list route reads from its query string.
type listQuery struct {
	status, agent, sessionID, cursor, before string
	since, until                             time.Time
	limit                                    int
}

// parseList reads the list parameters, answering 400 itself (naming the
// parameter) when one is malformed.
func parseList(w http.ResponseWriter, q url.Values) (listQuery, bool) {
	l := listQuery{status: q.Get("status"), agent: q.Get("agent"), sessionID: q.Get("sessionId"), cursor: q.Get("cursor"), before: q.Get("before")}
	if l.status == StatusAll {
		l.status = "" // as agentrt --status all: no filter
	}
	var ok bool
	if l.limit, ok = intParam(w, q.Get("limit"), "limit"); !ok {
		return l, false
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &l.since}, {"until", &l.until}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			writeError(w, apitype.ProblemInvalidParameter, fmt.Sprintf("%s must be an RFC 3339 time such as 2026-01-02T15:04:05Z, not %q", p.name, v))
			return l, false
		}
		*p.dst = t
	}
	return l, true
}

func (s *Server) listRequests(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	l, ok := parseList(w, q)
	if !ok {
		return
	}
	// status may list several, comma-separated: requests in any of them.
	var status runtype.TaskStatus
	var statuses []runtype.TaskStatus
	if l.status != "" {
		for st := range strings.SplitSeq(l.status, ",") {
			statuses = append(statuses, runtype.TaskStatus(strings.TrimSpace(st)))
		}
		if len(statuses) == 1 {
			status, statuses = statuses[0], nil
		}
	}
	page, err := s.rt.ListRequestsPage(r.Context(), &apitype.ListRequestsParams{
		Owner: owner(r), OnlyOwn: onlyOwn(r), SessionID: l.sessionID, ThreadID: q.Get("threadId"), Status: status, Statuses: statuses,
		Agent: l.agent, Since: l.since, Until: l.until, Cursor: l.cursor, BeforeID: l.before, Limit: l.limit,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	l, ok := parseList(w, q)
	if !ok {
		return
	}
	if l.status != "" {
		writeError(w, apitype.ProblemInvalidParameter, "status does not apply to sessions: filter their requests or tasks")
		return
	}
	page, err := s.rt.ListSessionsPage(r.Context(), &apitype.ListSessionsParams{
		Owner: owner(r), OnlyOwn: onlyOwn(r), Agent: l.agent, Since: l.since, Until: l.until, Cursor: l.cursor, BeforeID: l.before, Limit: l.limit,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	l, ok := parseList(w, r.URL.Query())
	if !ok {
		return
	}
	if l.before != "" {
		writeError(w, apitype.ProblemInvalidParameter, "before does not apply to tasks: page with cursor")
		return
	}
	page, err := s.rt.ListTasks(r.Context(), &apitype.ListTasksParams{
		Owner: owner(r), OnlyOwn: onlyOwn(r), SessionID: l.sessionID, Status: runtype.TaskStatus(l.status), Agent: l.agent,
		Since: l.since, Until: l.until, Cursor: l.cursor, Limit: l.limit,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) listActions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	l, ok := parseList(w, q)
	if !ok {
		return
	}
	var oldest bool
	switch order := q.Get("order"); order {
	case "", "newest":
	case "oldest":
		oldest = true
	default:
		writeError(w, apitype.ProblemInvalidParameter, fmt.Sprintf("order must be newest or oldest, not %q", order))
		return
	}
	page, err := s.rt.ListActionsPage(r.Context(), &apitype.ListActionsParams{
		Owner: owner(r), SessionID: l.sessionID, TurnID: q.Get("turnId"), Status: runtype.ActionStatus(l.status),
		Agent: l.agent, Since: l.since, Until: l.until, Cursor: l.cursor, BeforeID: l.before, Limit: l.limit, Oldest: oldest,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) listHistory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := intParam(w, q.Get("limit"), "limit")
	if !ok {
		return
	}
	page, err := s.rt.ListHistory(r.Context(), owner(r), r.PathValue("sessionId"), r.PathValue("threadId"), q.Get("cursor"), limit)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	agent := q.Get("agent")
	if agent == "" {
		names := s.rt.AgentNames()
		if len(names) != 1 {
			writeError(w, apitype.ProblemInvalidParameter, "agent is required: this runtime runs more than one agent")
			return
		}
		agent = names[0]
	}
	inv, err := s.rt.ToolInventory(r.Context(), &apitype.ToolInventoryParams{Owner: owner(r), Agent: agent, Mode: q.Get("mode")})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inv)
}
