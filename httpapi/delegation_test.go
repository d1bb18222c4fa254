package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/runtype"
)

// jsonItems is a JSON array of n small items.
func jsonItems(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"n":%d}`, i)
	}
	return "[" + strings.Join(items, ",") + "]"
}

// jsonIDs is a JSON array of n ids.
func jsonIDs(prefix string, n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf(`"%s%d"`, prefix, i)
	}
	return "[" + strings.Join(ids, ",") + "]"
}

// TestDelegationRejects: the delegation routes answer bad input with a
// 4xx naming what is wrong, before the runtime does anything.
func TestDelegationRejects(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	const (
		spawn = "/v1/sessions/ses_x/subagents"
		input = "/v1/subagents/sub_x/input"
		wait  = "/v1/subagents/wait"
		jobs  = "/v1/sessions/ses_x/jobs"
		items = "/v1/jobs/job_x/items"
		retry = "/v1/jobs/job_x/retry"
	)
	bigItem := `["` + strings.Repeat("x", apitype.MaxJobItemBytes) + `"]`
	tests := []struct {
		name         string
		method, path string
		body         string
		header       map[string]string
		status       int
		kind         string
		words        []string
	}{
		{"spawn without a body", "POST", spawn, "", nil, 400, "invalid_json", []string{"empty"}},
		{"spawn with an unknown field", "POST", spawn, `{"agent":"support","input":"x","model":"big"}`, nil, 400, "invalid_json", []string{"model"}},
		{"spawn without an agent", "POST", spawn, `{"input":"x"}`, nil, 400, "invalid_request", []string{"agent is empty"}},
		{"spawn without input", "POST", spawn, `{"agent":"support"}`, nil, 400, "invalid_request", []string{"input is empty"}},
		{"spawn with two keys", "POST", spawn, `{"agent":"support","input":"x","idempotencyKey":"a"}`, map[string]string{"Idempotency-Key": "b"}, 400, "invalid_request", []string{"Idempotency-Key"}},
		{"spawn as text", "POST", spawn, `agent=support`, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type", nil},
		{"input without input", "POST", input, `{}`, nil, 400, "invalid_request", []string{"input is empty"}},
		{"input with an unknown field", "POST", input, `{"input":"x","text":"y"}`, nil, 400, "invalid_json", []string{"text"}},
		{"wait for none", "POST", wait, `{"subagentIds":[]}`, nil, 400, "invalid_request", []string{"subagentIds is empty"}},
		{"wait for too many", "POST", wait, `{"subagentIds":` + jsonIDs("sub_", apitype.MaxWaitSubagents+1) + `}`, nil, 400, "invalid_request", []string{"101 subagents", "at most 100"}},
		{"wait for an empty id", "POST", wait, `{"subagentIds":["sub_a",""]}`, nil, 400, "invalid_request", []string{"subagentIds[1] is empty"}},
		{"wait too long", "POST", wait, `{"subagentIds":["sub_a"],"timeoutMs":300001}`, nil, 400, "invalid_request", []string{"timeoutMs 300001", "300000"}},
		{"wait a negative time", "POST", wait, `{"subagentIds":["sub_a"],"timeoutMs":-1}`, nil, 400, "invalid_request", []string{"timeoutMs -1"}},
		{"job without an agent", "POST", jobs, `{"items":[1]}`, nil, 400, "invalid_request", []string{"agent is empty"}},
		{"job without items", "POST", jobs, `{"agent":"support","items":[]}`, nil, 400, "invalid_request", []string{"items is empty"}},
		{"job with too many items", "POST", jobs, `{"agent":"support","items":` + jsonItems(apitype.MaxJobItems+1) + `}`, nil, 400, "invalid_request", []string{"10001 items", "at most 10000"}},
		{"job with a big item", "POST", jobs, `{"agent":"support","items":[1,` + bigItem + `]}`, nil, 400, "invalid_request", []string{"items[1]", "at most 65536"}},
		{"job too concurrent", "POST", jobs, `{"agent":"support","items":[1],"concurrency":65}`, nil, 400, "invalid_request", []string{"concurrency 65", "64"}},
		{"job with negative attempts", "POST", jobs, `{"agent":"support","items":[1],"maxAttempts":-1}`, nil, 400, "invalid_request", []string{"maxAttempts -1"}},
		{"job with an unknown field", "POST", jobs, `{"agent":"support","items":[1],"parallel":3}`, nil, 400, "invalid_json", []string{"parallel"}},
		{"job with two keys", "POST", jobs, `{"agent":"support","items":[1],"idempotencyKey":"a"}`, map[string]string{"Idempotency-Key": "b"}, 400, "invalid_request", []string{"Idempotency-Key"}},
		{"job over 16 MiB", "POST", jobs, `{"agent":"support","items":["` + strings.Repeat("x", httpapi.MaxJobBodyBytes) + `"]}`, nil, 413, "body_too_large", []string{fmt.Sprint(httpapi.MaxJobBodyBytes)}},
		{"items of a bad status", "GET", items + "?status=broken", "", nil, 400, "invalid_parameter", []string{`status "broken"`}},
		{"items from a negative index", "GET", items + "?from=-1", "", nil, 400, "invalid_parameter", []string{"from"}},
		{"items too many", "GET", items + "?limit=1001", "", nil, 400, "invalid_parameter", []string{"limit 1001"}},
		{"retry an empty id", "POST", retry, `{"itemIds":[""]}`, nil, 400, "invalid_request", []string{"itemIds[0] is empty"}},
		{"retry with an unknown field", "POST", retry, `{"items":["item_a"]}`, nil, 400, "invalid_json", []string{"items"}},
		{"wait with GET", "GET", wait, "", nil, 405, "method_not_allowed", []string{"POST"}},
		{"a subagent with DELETE", "DELETE", "/v1/subagents/sub_x", "", nil, 405, "method_not_allowed", []string{"GET, HEAD"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := b.do(t, call{method: tt.method, path: tt.path, body: tt.body, header: tt.header})
			wantError(t, resp, body, tt.status, tt.kind, tt.words...)
		})
	}
}

// TestDelegationAuth: every delegation route needs a token; a role the
// route does not name is refused 403; a submitter names only its own
// session, subagent or job, and anything else answers as missing.
func TestDelegationAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	viewer := b.as(t, apitype.DefaultTenant, "vera", runtype.APIRoleViewer)
	sam := b.as(t, apitype.DefaultTenant, "sam", runtype.APIRoleSubmitter)
	theirs := b.submit(t, apitype.SubmitTurnRequest{Input: "hello"})
	b.wait(t, theirs.TurnID)

	routes := []struct{ method, path, body string }{
		{"POST", "/v1/sessions/ses_x/subagents", `{"agent":"support","input":"x"}`},
		{"GET", "/v1/sessions/ses_x/subagents", ""},
		{"GET", "/v1/subagents/sub_x", ""},
		{"POST", "/v1/subagents/sub_x/input", `{"input":"x"}`},
		{"POST", "/v1/subagents/sub_x/close", ""},
		{"POST", "/v1/subagents/wait", `{"subagentIds":["sub_x"]}`},
		{"GET", "/v1/tasks/task_x/tree", ""},
		{"POST", "/v1/sessions/ses_x/jobs", `{"agent":"support","items":[1]}`},
		{"GET", "/v1/jobs/job_x", ""},
		{"GET", "/v1/jobs/job_x/items", ""},
		{"POST", "/v1/jobs/job_x/retry", `{}`},
		{"POST", "/v1/jobs/job_x/cancel", ""},
	}
	for _, r := range routes {
		resp, body := b.do(t, call{method: r.method, path: r.path, body: r.body, header: map[string]string{"Authorization": ""}})
		wantError(t, resp, body, http.StatusUnauthorized, "unauthorized", "missing bearer token")
	}

	// A viewer reads but neither spawns, gives input, closes, creates,
	// retries nor cancels.
	for _, r := range []struct{ method, path, body string }{routes[0], routes[3], routes[4], routes[7], routes[10], routes[11]} {
		resp, body := viewer.do(t, call{method: r.method, path: r.path, body: r.body})
		wantError(t, resp, body, http.StatusForbidden, "forbidden", "role viewer")
	}
	// Retrying an item reruns work: an operator's call, as retry_task.
	resp, body := sam.do(t, call{method: "POST", path: "/v1/jobs/job_x/retry", body: `{}`})
	wantError(t, resp, body, http.StatusForbidden, "forbidden", "role submitter", "admin or operator")

	// A submitter's own checks: another principal's session, and ids
	// that name nothing, answer 404 naming only what was asked.
	for _, tt := range []struct {
		method, path, body string
		words              []string
	}{
		{"POST", "/v1/sessions/" + theirs.SessionID + "/subagents", `{"agent":"support","input":"x"}`, []string{"not found: session " + theirs.SessionID}},
		{"GET", "/v1/sessions/" + theirs.SessionID + "/subagents", "", []string{"not found: session " + theirs.SessionID}},
		{"POST", "/v1/sessions/" + theirs.SessionID + "/jobs", `{"agent":"support","items":[1]}`, []string{"not found: session " + theirs.SessionID}},
		{"GET", "/v1/tasks/" + theirs.TaskID + "/tree", "", []string{"not found: task " + theirs.TaskID}},
		{"GET", "/v1/subagents/sub_x", "", []string{"not found: subagent sub_x"}},
		{"POST", "/v1/subagents/sub_x/input", `{"input":"x"}`, []string{"not found: subagent sub_x"}},
		{"POST", "/v1/subagents/sub_x/close", "", []string{"not found: subagent sub_x"}},
		{"POST", "/v1/subagents/wait", `{"subagentIds":["sub_x"]}`, []string{"subagent sub_x"}},
		{"GET", "/v1/jobs/job_x", "", []string{"not found: job job_x"}},
		{"GET", "/v1/jobs/job_x/items", "", []string{"not found: job job_x"}},
		{"POST", "/v1/jobs/job_x/cancel", "", []string{"not found: job job_x"}},
	} {
		resp, body := sam.do(t, call{method: tt.method, path: tt.path, body: tt.body})
		wantError(t, resp, body, http.StatusNotFound, "not_found", tt.words...)
	}
}

// repliesScript is a replay script of n text replies: every model call of
// a session, its children's included, gets one.
func repliesScript(n int) string {
	r := make([]string, n)
	for i := range r {
		r[i] = fmt.Sprintf("{text: reply %d}", i)
	}
	return "responses: [" + strings.Join(r, ", ") + "]"
}

// postJSON sends a POST of body, fails t unless it answers want, and
// decodes the answer into v; it returns the response.
func (b *testBundle) postJSON(t *testing.T, path, body string, want int, v any) *http.Response {
	t.Helper()
	resp, raw := b.do(t, call{method: http.MethodPost, path: path, body: body})
	if resp.StatusCode != want {
		t.Fatalf("POST %s = %d %s, want %d", path, resp.StatusCode, raw, want)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("POST %s: decoding %s: %v", path, raw, err)
		}
	}
	return resp
}

// TestSubagentsOverHTTP: a host spawns a subagent under a request's
// task, waits for it, reads it, lists it, sees it in the task's tree,
// gives it more input and closes it; what the routes answer is what the
// runtime's methods answer. Another tenant's caller finds nothing.
func TestSubagentsOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: repliesScript(10)})
	ctx := t.Context()
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "hello"})
	b.wait(t, res.TurnID)
	owner := runtype.Owner{TenantID: apitype.DefaultTenant, PrincipalID: apitype.APIPrincipal}

	var sub apitype.SubagentRead
	spawn := `{"agent":"support","name":"helper","input":"look it up","parentTaskId":"` + res.TaskID + `","idempotencyKey":"spawn-1"}`
	resp := b.postJSON(t, "/v1/sessions/"+res.SessionID+"/subagents", spawn, http.StatusCreated, &sub)
	if loc := resp.Header.Get("Location"); loc != "/v1/subagents/"+sub.SubagentID || !strings.HasPrefix(sub.SubagentID, "sub_") {
		t.Errorf("Location %q for subagent %q", loc, sub.SubagentID)
	}
	if sub.SessionID != res.SessionID || sub.ParentTaskID != res.TaskID || sub.Depth != 1 || sub.Agent != "support" || sub.Name != "helper" || sub.Inputs != 1 {
		t.Errorf("spawned %+v, want a depth-1 child of task %s named helper", sub, res.TaskID)
	}
	var again apitype.SubagentRead
	b.postJSON(t, "/v1/sessions/"+res.SessionID+"/subagents", spawn, http.StatusCreated, &again)
	if again.SubagentID != sub.SubagentID {
		t.Errorf("the same idempotency key spawned %s, then %s", sub.SubagentID, again.SubagentID)
	}

	var w apitype.WaitSubagentsResult
	b.postJSON(t, "/v1/subagents/wait", `{"subagentIds":["`+sub.SubagentID+`"],"timeoutMs":60000}`, http.StatusOK, &w)
	if w.TimedOut || len(w.Subagents) != 1 || w.Subagents[0].Status != runtype.StatusCompleted || w.Subagents[0].Result == "" {
		t.Fatalf("wait = %+v, want the subagent completed with a result", w)
	}
	want, err := b.rt.GetSubagent(ctx, &apitype.SubagentParams{Owner: owner, SubagentID: sub.SubagentID})
	if err != nil {
		t.Fatal(err)
	}
	var got apitype.SubagentRead
	b.getJSON(t, call{path: "/v1/subagents/" + sub.SubagentID}, http.StatusOK, &got)
	if d := cmp.Diff(roundTrip(t, want), got); d != "" {
		t.Errorf("GET subagent differs from the runtime's (-runtime +http):\n%s", d)
	}
	var list apitype.SubagentList
	b.getJSON(t, call{path: "/v1/sessions/" + res.SessionID + "/subagents"}, http.StatusOK, &list)
	if len(list.Subagents) != 1 || list.Subagents[0].SubagentID != sub.SubagentID {
		t.Errorf("subagents of the session: %+v, want the one", list.Subagents)
	}
	var tree apitype.DelegationNode
	b.getJSON(t, call{path: "/v1/tasks/" + res.TaskID + "/tree"}, http.StatusOK, &tree)
	if tree.TaskID != res.TaskID || len(tree.Children) != 1 || tree.Children[0].Kind != apitype.NodeSubagent ||
		tree.Children[0].SubagentID != sub.SubagentID || tree.Children[0].Depth != 1 {
		t.Errorf("tree of the request's task: %+v, want it with the subagent as its child", tree)
	}

	var more apitype.SubagentRead
	b.postJSON(t, "/v1/subagents/"+sub.SubagentID+"/input", `{"input":"and this"}`, http.StatusAccepted, &more)
	if more.Inputs != 2 || more.TaskID == got.TaskID {
		t.Errorf("after more input: %+v, want a second input with a task of its own", more)
	}
	b.postJSON(t, "/v1/subagents/wait", `{"subagentIds":["`+sub.SubagentID+`"]}`, http.StatusOK, &w)
	if w.TimedOut || w.Subagents[0].Status != runtype.StatusCompleted || w.Subagents[0].TaskID != more.TaskID {
		t.Errorf("second wait = %+v, want the second input completed", w)
	}

	var closed apitype.SubagentRead
	b.postJSON(t, "/v1/subagents/"+sub.SubagentID+"/close", "", http.StatusOK, &closed)
	if !closed.Closed || closed.ClosedAt == nil {
		t.Errorf("closed = %+v", closed)
	}
	resp, body := b.do(t, call{method: http.MethodPost, path: "/v1/subagents/" + sub.SubagentID + "/input", body: `{"input":"again"}`})
	wantError(t, resp, body, http.StatusConflict, "conflict", "closed")
	resp, body = b.do(t, call{method: http.MethodPost, path: "/v1/subagents/wait", body: `{"subagentIds":["` + sub.SubagentID + `"]}`})
	wantError(t, resp, body, http.StatusConflict, "conflict", "closed")

	// Another tenant's caller, and a submitter of this one who spawned
	// none of it, find nothing.
	foreign := b.as(t, "tenant_other", "olga", runtype.APIRoleOperator)
	resp, body = foreign.do(t, call{method: http.MethodGet, path: "/v1/subagents/" + sub.SubagentID})
	wantError(t, resp, body, http.StatusNotFound, "not_found", "not found: subagent "+sub.SubagentID)
	resp, body = foreign.do(t, call{method: http.MethodGet, path: "/v1/tasks/" + res.TaskID + "/tree"})
	wantError(t, resp, body, http.StatusNotFound, "not_found", "not found: task "+res.TaskID)
	resp, body = foreign.do(t, call{method: http.MethodPost, path: "/v1/subagents/wait", body: `{"subagentIds":["` + sub.SubagentID + `"]}`})
	wantError(t, resp, body, http.StatusNotFound, "not_found")
	sam := b.as(t, apitype.DefaultTenant, "sam", runtype.APIRoleSubmitter)
	resp, body = sam.do(t, call{method: http.MethodGet, path: "/v1/subagents/" + sub.SubagentID})
	wantError(t, resp, body, http.StatusNotFound, "not_found", "not found: subagent "+sub.SubagentID)
	resp, body = sam.do(t, call{method: http.MethodPost, path: "/v1/subagents/wait", body: `{"subagentIds":["` + sub.SubagentID + `"]}`})
	wantError(t, resp, body, http.StatusNotFound, "not_found", "subagent "+sub.SubagentID)
}

// TestSubagentsOfASubmitter: a submitter spawns in its own session and
// reads, waits for and closes its own subagent.
func TestSubagentsOfASubmitter(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: repliesScript(10)})
	sam := b.as(t, apitype.DefaultTenant, "sam", runtype.APIRoleSubmitter)
	res := sam.submit(t, apitype.SubmitTurnRequest{Input: "hello"})
	b.wait(t, res.TurnID)
	var sub apitype.SubagentRead
	sam.postJSON(t, "/v1/sessions/"+res.SessionID+"/subagents", `{"agent":"support","input":"look it up"}`, http.StatusCreated, &sub)
	var w apitype.WaitSubagentsResult
	sam.postJSON(t, "/v1/subagents/wait", `{"subagentIds":["`+sub.SubagentID+`"]}`, http.StatusOK, &w)
	if w.TimedOut || w.Subagents[0].Status != runtype.StatusCompleted {
		t.Errorf("wait = %+v", w)
	}
	sam.getJSON(t, call{path: "/v1/subagents/" + sub.SubagentID}, http.StatusOK, nil)
	sam.getJSON(t, call{path: "/v1/sessions/" + res.SessionID + "/subagents"}, http.StatusOK, nil)
	sam.postJSON(t, "/v1/subagents/"+sub.SubagentID+"/close", "", http.StatusOK, nil)
}

// TestJobsOverHTTP: a job of three items runs to completion; its items
// page in index order and filter by status; retrying a job with no failed
// item retries nothing; cancelling a job that ended changes nothing; the
// job's task roots a tree of its items. Another tenant finds nothing.
func TestJobsOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: repliesScript(10)})
	ctx := t.Context()
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "hello"})
	b.wait(t, res.TurnID)
	owner := runtype.Owner{TenantID: apitype.DefaultTenant, PrincipalID: apitype.APIPrincipal}

	var job apitype.JobRead
	resp := b.postJSON(t, "/v1/sessions/"+res.SessionID+"/jobs",
		`{"agent":"support","instruction":"tag it","items":[{"n":1},"two",3],"concurrency":2}`, http.StatusCreated, &job)
	if loc := resp.Header.Get("Location"); loc != "/v1/jobs/"+job.JobID || job.Items != 3 || job.Concurrency != 2 || job.SessionID != res.SessionID {
		t.Errorf("created %+v at %q", job, loc)
	}
	var task apitype.TaskRead
	b.getJSON(t, call{path: "/v1/tasks/" + job.TaskID}, http.StatusOK, &task)
	// The dispatcher parks while its items run: its turn ends with the job.
	b.openEvents(t, "sessionId="+res.SessionID, nil).until(turnEnded(task.TurnID))

	b.getJSON(t, call{path: "/v1/jobs/" + job.JobID}, http.StatusOK, &job)
	if job.Status != runtype.JobCompleted || job.Completed != 3 || job.Failed != 0 {
		t.Fatalf("job after its dispatcher ended: %+v, want 3 completed", job)
	}
	want, err := b.rt.GetJob(ctx, &apitype.JobParams{Owner: owner, JobID: job.JobID})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(roundTrip(t, want), job); d != "" {
		t.Errorf("GET job differs from the runtime's (-runtime +http):\n%s", d)
	}

	var page apitype.JobItemsPage
	b.getJSON(t, call{path: "/v1/jobs/" + job.JobID + "/items?limit=2"}, http.StatusOK, &page)
	if len(page.Items) != 2 || page.Items[0].Index != 0 || page.Items[1].Index != 1 || page.NextIndex != 2 {
		t.Fatalf("first page %+v, want items 0 and 1, next 2", page)
	}
	if string(page.Items[1].Input) != `"two"` || page.Items[0].Status != runtype.ItemCompleted || page.Items[0].Attempts != 1 || page.Items[0].Result == "" {
		t.Errorf("items %+v, want each as given, completed once with a result", page.Items)
	}
	page = apitype.JobItemsPage{}
	b.getJSON(t, call{path: "/v1/jobs/" + job.JobID + "/items?from=2"}, http.StatusOK, &page)
	if len(page.Items) != 1 || page.Items[0].Index != 2 || page.NextIndex != 0 {
		t.Errorf("second page %+v, want item 2 and no more", page)
	}
	page = apitype.JobItemsPage{}
	b.getJSON(t, call{path: "/v1/jobs/" + job.JobID + "/items?status=failed"}, http.StatusOK, &page)
	if len(page.Items) != 0 {
		t.Errorf("failed items %+v, want none", page.Items)
	}

	var retry apitype.RetryJobItemsResult
	b.postJSON(t, "/v1/jobs/"+job.JobID+"/retry", `{}`, http.StatusOK, &retry)
	if len(retry.Retried) != 0 || retry.Job.Status != runtype.JobCompleted {
		t.Errorf("retry of a job without failures: %+v", retry)
	}
	var cancelled apitype.JobRead
	b.postJSON(t, "/v1/jobs/"+job.JobID+"/cancel", "", http.StatusAccepted, &cancelled)
	if cancelled.Status != runtype.JobCompleted || cancelled.Completed != 3 {
		t.Errorf("cancel of an ended job: %+v, want it unchanged", cancelled)
	}

	var tree apitype.DelegationNode
	b.getJSON(t, call{path: "/v1/tasks/" + job.TaskID + "/tree"}, http.StatusOK, &tree)
	if tree.Kind != apitype.NodeJob || len(tree.Children) != 3 || tree.Children[0].Kind != apitype.NodeItem {
		t.Errorf("tree of the job's task: %+v, want the job with its 3 items", tree)
	}

	foreign := b.as(t, "tenant_other", "vera", runtype.APIRoleViewer)
	resp, body := foreign.do(t, call{method: http.MethodGet, path: "/v1/jobs/" + job.JobID})
	wantError(t, resp, body, http.StatusNotFound, "not_found", "not found: job "+job.JobID)
	resp, body = foreign.do(t, call{method: http.MethodGet, path: "/v1/jobs/" + job.JobID + "/items"})
	wantError(t, resp, body, http.StatusNotFound, "not_found", "not found: job "+job.JobID)
	resp, body = b.as(t, "tenant_other", "olga", runtype.APIRoleOperator).do(t, call{method: http.MethodPost, path: "/v1/jobs/" + job.JobID + "/retry", body: `{}`})
	wantError(t, resp, body, http.StatusNotFound, "not_found", "not found: job "+job.JobID)
}

// roundTrip is v as a client reads it: encoded and decoded as JSON.
func roundTrip[T any](t *testing.T, v *T) T {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
