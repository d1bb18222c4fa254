package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

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
