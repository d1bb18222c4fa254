package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// readsBundle is a server with three completed turns: two in one
// session (a), one in another (b).
func readsBundle(t *testing.T) (*testBundle, apitype.SubmitTurnResult, apitype.SubmitTurnResult, []string) {
	t.Helper()
	b := setup(t, setupOpts{script: "responses: [{text: hi}, {text: again}, {text: more}]", builtins: []string{"read_file"}})
	a := b.submit(t, apitype.SubmitTurnRequest{Input: "one"})
	b.wait(t, a.TurnID)
	a2 := b.submit(t, apitype.SubmitTurnRequest{Input: "two", SessionID: a.SessionID})
	b.wait(t, a2.TurnID)
	o := b.submit(t, apitype.SubmitTurnRequest{Agent: "support", Input: "three", SessionID: "ses-other"})
	b.wait(t, o.TurnID)
	return b, a, o, []string{o.TurnID, a2.TurnID, a.TurnID} // newest first
}

// TestListsPageByCursor follows nextCursor through each list and checks
// the filters and the legacy before parameter.
func TestListsPageByCursor(t *testing.T) {
	t.Parallel()
	b, a, o, turns := readsBundle(t)

	var got []string
	for cursor, pages := "", 0; ; pages++ {
		var page struct {
			Requests   []apitype.RequestSummary
			NextCursor *string
		}
		b.getJSON(t, call{path: "/v1/requests?limit=1&cursor=" + url.QueryEscape(cursor)}, http.StatusOK, &page)
		if page.NextCursor == nil {
			t.Fatal("GET /v1/requests has no nextCursor key")
		}
		for _, r := range page.Requests {
			got = append(got, r.TurnID)
		}
		if cursor = *page.NextCursor; cursor == "" || pages > 5 {
			break
		}
	}
	if !slices.Equal(got, turns) {
		t.Errorf("paged requests = %v, want %v", got, turns)
	}

	var reqs struct{ Requests []apitype.RequestSummary }
	b.getJSON(t, call{path: "/v1/requests?before=" + turns[0]}, http.StatusOK, &reqs)
	if len(reqs.Requests) != 2 || reqs.Requests[0].TurnID != turns[1] {
		t.Errorf("GET /v1/requests?before= lists %d, want the 2 older", len(reqs.Requests))
	}
	b.getJSON(t, call{path: "/v1/requests?sessionId=" + a.SessionID + "&threadId=" + a.ThreadID + "&status=completed&agent=support"}, http.StatusOK, &reqs)
	if len(reqs.Requests) != 2 {
		t.Errorf("requests of session a's thread = %d, want 2", len(reqs.Requests))
	}
	future := url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	b.getJSON(t, call{path: "/v1/requests?since=" + future}, http.StatusOK, &reqs)
	if len(reqs.Requests) != 0 {
		t.Errorf("requests since an hour from now = %d, want none", len(reqs.Requests))
	}
	b.getJSON(t, call{path: "/v1/requests?until=" + future + "&agent=nobody"}, http.StatusOK, &reqs)
	if len(reqs.Requests) != 0 {
		t.Errorf("requests of agent nobody = %d, want none", len(reqs.Requests))
	}

	var tasks struct {
		Tasks      []apitype.TaskRead
		NextCursor string
	}
	b.getJSON(t, call{path: "/v1/tasks?limit=2"}, http.StatusOK, &tasks)
	if len(tasks.Tasks) != 2 || tasks.NextCursor == "" || tasks.Tasks[0].TurnID != o.TurnID || len(tasks.Tasks[0].Attempts) != 1 {
		t.Errorf("GET /v1/tasks?limit=2 = %+v", tasks)
	}
	b.getJSON(t, call{path: "/v1/tasks?limit=2&cursor=" + tasks.NextCursor}, http.StatusOK, &tasks)
	if len(tasks.Tasks) != 1 || tasks.NextCursor != "" || tasks.Tasks[0].TurnID != a.TurnID {
		t.Errorf("second page of /v1/tasks = %+v, want the oldest task and no cursor", tasks)
	}
	b.getJSON(t, call{path: "/v1/tasks?sessionId=ses-other&status=completed"}, http.StatusOK, &tasks)
	if len(tasks.Tasks) != 1 || tasks.Tasks[0].SessionID != "ses-other" {
		t.Errorf("tasks of ses-other = %+v", tasks.Tasks)
	}

	var sessions struct {
		Sessions   []apitype.SessionSummary
		NextCursor string
	}
	b.getJSON(t, call{path: "/v1/sessions?agent=support&limit=1"}, http.StatusOK, &sessions)
	if len(sessions.Sessions) != 1 || sessions.NextCursor == "" {
		t.Errorf("GET /v1/sessions?limit=1 = %+v, want one and a cursor", sessions)
	}

	var acts struct {
		Actions    []apitype.ActionRead
		NextCursor *string
	}
	b.getJSON(t, call{path: "/v1/actions?status=pending&agent=support"}, http.StatusOK, &acts)
	if acts.Actions == nil || acts.NextCursor == nil || *acts.NextCursor != "" {
		t.Errorf("GET /v1/actions = %+v, want an empty list and an empty nextCursor", acts)
	}
	b.getJSON(t, call{path: "/v1/actions?status=pending&order=oldest&limit=5"}, http.StatusOK, &acts)
	if acts.Actions == nil || acts.NextCursor == nil || *acts.NextCursor != "" {
		t.Errorf("GET /v1/actions?order=oldest = %+v, want a list and an empty nextCursor", acts)
	}
}

// TestListsRejectBadParameters: every malformed parameter is a 400 that
// names it.
func TestListsRejectBadParameters(t *testing.T) {
	t.Parallel()
	b, a, _, turns := readsBundle(t)
	for _, tt := range []struct{ path, names string }{
		{"/v1/requests?since=yesterday", "since"},
		{"/v1/requests?until=2026-13-01T00:00:00Z", "until"},
		{"/v1/requests?status=napping", "status"},
		{"/v1/requests?cursor=%21%21", "cursor"},
		{"/v1/requests?cursor=dHVybg&before=" + turns[0], "cursor"},
		{"/v1/requests?threadId=" + a.ThreadID, "threadId"},
		{"/v1/requests?limit=-1", "limit"},
		{"/v1/requests?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", "until"},
		{"/v1/sessions?status=completed", "status"},
		{"/v1/sessions?until=soon", "until"},
		{"/v1/tasks?since=1", "since"},
		{"/v1/tasks?status=napping", "status"},
		{"/v1/tasks?before=task_x", "before"},
		{"/v1/actions?status=napping", "status"},
		{"/v1/actions?since=x", "since"},
		{"/v1/actions?order=sideways", "order"},
		{"/v1/actions?order=oldest&before=act_x", "order"},
		{"/v1/sessions/" + a.SessionID + "/threads/" + a.ThreadID + "/history?cursor=abc", "cursor"},
		{"/v1/sessions/" + a.SessionID + "/threads/" + a.ThreadID + "/history?limit=x", "limit"},
		{"/v1/tools?agent=support&mode=yolo", "mode"},
	} {
		resp, body := b.do(t, call{method: http.MethodGet, path: tt.path})
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tt.names) {
			t.Errorf("GET %s = %d %s, want 400 naming %s", tt.path, resp.StatusCode, body, tt.names)
		}
	}
}

// TestHistoryRoute pages a thread's history and finds the olderCursor of
// its snapshot usable.
func TestHistoryRoute(t *testing.T) {
	t.Parallel()
	b, a, o, _ := readsBundle(t)
	base := "/v1/sessions/" + a.SessionID + "/threads/" + a.ThreadID + "/history"
	var all apitype.HistoryPage
	b.getJSON(t, call{path: base}, http.StatusOK, &all)
	if len(all.Messages) < 4 || all.NextCursor != "" || all.Messages[0].Seq != 1 || all.Messages[0].Role != runtype.RoleUser || all.Messages[0].Content != "one" {
		t.Fatalf("GET %s = %+v, want the thread's messages from seq 1", base, all)
	}
	var page apitype.HistoryPage
	b.getJSON(t, call{path: base + "?limit=1"}, http.StatusOK, &page)
	last := all.Messages[len(all.Messages)-1]
	if len(page.Messages) != 1 || page.Messages[0].Seq != last.Seq || page.NextCursor == "" {
		t.Fatalf("GET %s?limit=1 = %+v, want the newest message and a cursor", base, page)
	}
	b.getJSON(t, call{path: base + "?limit=100&cursor=" + page.NextCursor}, http.StatusOK, &page)
	if len(page.Messages) != len(all.Messages)-1 || page.NextCursor != "" {
		t.Errorf("the page before the newest = %d messages, cursor %q; want %d and none", len(page.Messages), page.NextCursor, len(all.Messages)-1)
	}
	for _, path := range []string{
		"/v1/sessions/" + a.SessionID + "/threads/thr_nope/history",
		"/v1/sessions/" + a.SessionID + "/threads/" + o.ThreadID + "/history", // another session's thread
	} {
		resp, body := b.do(t, call{method: http.MethodGet, path: path})
		wantError(t, resp, body, http.StatusNotFound, "not_found")
	}
}

func TestToolsRoute(t *testing.T) {
	t.Parallel()
	b, _, _, _ := readsBundle(t)
	var inv apitype.ToolInventory
	for _, path := range []string{"/v1/tools?agent=support", "/v1/tools", "/v1/tools?agent=support&mode=read_only"} {
		b.getJSON(t, call{path: path}, http.StatusOK, &inv)
		if inv.Agent != "support" || inv.Principal != apitype.APIPrincipal || len(inv.Tools) != 1 || inv.Tools[0].Name != "read_file" ||
			inv.Tools[0].Policy.Decision != "allow" || len(inv.Tools[0].InputSchema) == 0 {
			t.Errorf("GET %s = %+v", path, inv)
		}
	}
	resp, body := b.do(t, call{method: http.MethodGet, path: "/v1/tools?agent=nobody"})
	wantError(t, resp, body, http.StatusNotFound, "not_found")
}

// TestReadsKeepTenantsApart serves the same runtime as another tenant:
// it sees none of the first tenant's records.
func TestReadsKeepTenantsApart(t *testing.T) {
	t.Parallel()
	b, a, _, _ := readsBundle(t)
	other := b.as(t, "tenant_other", "eve", runtype.APIRoleViewer)
	get := func(path string) (int, string) {
		t.Helper()
		resp, body := other.do(t, call{method: http.MethodGet, path: path})
		return resp.StatusCode, string(body)
	}
	for path, want := range map[string]string{
		"/v1/requests":                          `{"requests":[],"nextCursor":""}`,
		"/v1/sessions":                          `{"sessions":[],"nextCursor":""}`,
		"/v1/tasks":                             `{"tasks":[],"nextCursor":""}`,
		"/v1/actions":                           `{"actions":[],"nextCursor":""}`,
		"/v1/requests?sessionId=" + a.SessionID: `{"requests":[],"nextCursor":""}`,
	} {
		if code, body := get(path); code != http.StatusOK || strings.TrimSpace(body) != want {
			t.Errorf("GET %s as another tenant = %d %s, want %s", path, code, body, want)
		}
	}
	for _, path := range []string{
		"/v1/sessions/" + a.SessionID,
		"/v1/sessions/" + a.SessionID + "/threads/" + a.ThreadID,
		"/v1/sessions/" + a.SessionID + "/threads/" + a.ThreadID + "/history",
	} {
		if code, body := get(path); code != http.StatusNotFound {
			t.Errorf("GET %s as another tenant = %d %s, want 404", path, code, body)
		}
	}
}

// TestRequestsInSeveralStatuses filters requests by a comma-separated
// list of statuses, in the store.
func TestRequestsInSeveralStatuses(t *testing.T) {
	t.Parallel()
	b, _, _, turns := readsBundle(t)
	for _, tt := range []struct {
		status string
		want   []string
	}{
		{"completed,failed", turns},
		{"failed,cancelled", nil},
		{"waiting_permission, completed", turns},
	} {
		var page apitype.RequestPage
		b.getJSON(t, call{path: "/v1/requests?status=" + url.QueryEscape(tt.status)}, http.StatusOK, &page)
		var got []string
		for _, r := range page.Requests {
			got = append(got, r.TurnID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("GET /v1/requests?status=%s = %v, want %v", tt.status, got, tt.want)
		}
	}
	resp, body := b.do(t, call{method: http.MethodGet, path: "/v1/requests?status=completed,napping"})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "napping") {
		t.Errorf("an unknown status among several = %d %s, want 400 naming it", resp.StatusCode, body)
	}
}

// TestStatusAll: status=all lists every status on each list route that
// filters by status, as no status does (and as agentrt's --status all
// does); a real status still filters.
func TestStatusAll(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"}})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn %s", turn.Status)
	}
	count := func(path string) int {
		t.Helper()
		var page map[string]json.RawMessage
		b.getJSON(t, call{path: path}, http.StatusOK, &page)
		for k, v := range page {
			if k != "nextCursor" {
				var items []json.RawMessage
				if err := json.Unmarshal(v, &items); err != nil {
					t.Fatalf("GET %s: %s: %v", path, k, err)
				}
				return len(items)
			}
		}
		t.Fatalf("GET %s: no list in %v", path, page)
		return 0
	}
	for _, route := range []struct {
		path, other string // other: a status none is in
	}{{"/v1/requests", "completed"}, {"/v1/tasks", "completed"}, {"/v1/actions", "approved"}} {
		all, none := count(route.path+"?status=all"), count(route.path)
		if all != 1 || none != 1 {
			t.Errorf("GET %s?status=all lists %d, without status %d; want 1 both", route.path, all, none)
		}
		if n := count(route.path + "?status=" + route.other); n != 0 {
			t.Errorf("GET %s?status=%s lists %d, want 0", route.path, route.other, n)
		}
	}
}
