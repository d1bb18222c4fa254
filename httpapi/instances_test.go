package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/runtype"
)

// caseState is a state schema for the agent: its instances keep a count.
var caseState = &agentrt.StateSchema{
	Version: 1,
	Schema:  json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}},"additionalProperties":false}`),
	Initial: json.RawMessage(`{"count":0}`),
}

// reviewWorkflow asks a person, then runs the agent.
var reviewWorkflow = map[string]*agentrt.Workflow{"review": {
	InputSchema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"integer"}},"required":["order"]}`),
	Steps: []agentrt.WorkflowStep{
		{ID: "ask", Human: "Ship order {{.Input.order}}?"},
		{ID: "reply", Agent: "support", Input: "Ship order {{.Input.order}}", Needs: []string{"ask"}},
	},
}}

// TestInstanceAndWorkflowRejects: the instance and workflow routes answer
// bad input with a 4xx naming what is wrong.
func TestInstanceAndWorkflowRejects(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{state: caseState, workflows: reviewWorkflow})
	const (
		state  = "/v1/instances/case%2F1/state"
		events = "/v1/instances/case%2F1/events"
		wfs    = "/v1/workflows"
	)
	tests := []struct {
		name         string
		method, path string
		body         string
		header       map[string]string
		status       int
		kind         string
		words        []string
	}{
		{"list a bad cursor", "GET", "/v1/instances?cursor=zzz", "", nil, 400, "invalid_parameter", []string{`cursor "zzz"`, "ins_"}},
		{"list a run's id as cursor", "GET", "/v1/instances?cursor=wfr_1", "", nil, 400, "invalid_parameter", []string{"cursor"}},
		{"list a cursor with a space", "GET", "/v1/instances?cursor=ins_%20x", "", nil, 400, "invalid_parameter", []string{"cursor"}},
		{"list a negative limit", "GET", "/v1/instances?limit=-1", "", nil, 400, "invalid_parameter", []string{"limit"}},
		{"list too many", "GET", "/v1/instances?limit=1001", "", nil, 400, "invalid_parameter", []string{"limit 1001"}},
		{"a name with ..", "GET", "/v1/instances/case%2F..%2Fother", "", nil, 400, "invalid_request", []string{"'..'"}},
		{"a name that is ..", "GET", "/v1/instances/%2E%2E/state", "", nil, 400, "invalid_request", []string{"'..'"}},
		{"a name with a space", "GET", "/v1/instances/case%201", "", nil, 400, "invalid_request", []string{"case 1"}},
		{"a name ending in /", "GET", "/v1/instances/case%2F", "", nil, 400, "invalid_request", []string{"must not begin or end"}},
		{"a name too long", "GET", "/v1/instances/" + strings.Repeat("n", 201), "", nil, 400, "invalid_request", []string{"1 to 200"}},
		{"state without a body", "PUT", state, "", nil, 400, "invalid_json", []string{"empty"}},
		{"state with bad JSON", "PUT", state, `{"state":`, nil, 400, "invalid_json", nil},
		{"state with an unknown field", "PUT", state, `{"state":{},"version":3}`, nil, 400, "invalid_json", []string{"version"}},
		{"state without a state", "PUT", state, `{"expectedStateVersion":1}`, nil, 400, "invalid_request", []string{"state must be a JSON object"}},
		{"state not an object", "PUT", state, `{"state":[1]}`, nil, 400, "invalid_request", []string{"state must be a JSON object"}},
		{"state with a version not a number", "PUT", state, `{"state":{},"expectedStateVersion":"1"}`, nil, 400, "invalid_json", []string{"expectedStateVersion"}},
		{"state over 2 MiB", "PUT", state, `{"state":{"x":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}}`, nil, 413, "body_too_large", nil},
		{"state as text", "PUT", state, `state`, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type", nil},
		{"event without a type", "POST", events, `{"agent":"support"}`, nil, 400, "invalid_request", []string{"type is empty"}},
		{"event with an unknown field", "POST", events, `{"type":"x","payload":{}}`, nil, 400, "invalid_json", []string{"payload"}},
		{"event with two keys", "POST", events, `{"type":"x","idempotencyKey":"a"}`, map[string]string{"Idempotency-Key": "b"}, 400, "invalid_request", []string{"Idempotency-Key"}},
		{"event with a long type", "POST", events, `{"type":"` + strings.Repeat("t", 201) + `","agent":"support"}`, nil, 400, "invalid_request", []string{"type"}},
		{"event with an unknown agent", "POST", events, `{"type":"x","agent":"nobody"}`, nil, 400, "invalid_request", []string{`"nobody"`}},
		{"event to a missing instance without agent", "POST", events, `{"type":"x"}`, nil, 404, "not_found", []string{"instance case/1"}},
		{"event with two values", "POST", events, `{"type":"x"} {}`, nil, 400, "invalid_json", []string{"more than one"}},
		{"an instance with DELETE", "DELETE", "/v1/instances/case%2F1", "", nil, 405, "method_not_allowed", []string{"GET"}},
		{"events with GET", "GET", events, "", nil, 405, "method_not_allowed", []string{"POST"}},
		{"start without a body", "POST", wfs, "", nil, 400, "invalid_json", []string{"empty"}},
		{"start without a workflow", "POST", wfs, `{"input":{"order":1}}`, nil, 400, "invalid_request", []string{"workflow is empty"}},
		{"start an unknown workflow", "POST", wfs, `{"workflow":"nope"}`, nil, 400, "invalid_request", []string{`"nope"`}},
		{"start with an unknown field", "POST", wfs, `{"workflow":"review","inputs":{}}`, nil, 400, "invalid_json", []string{"inputs"}},
		{"start with input not an object", "POST", wfs, `{"workflow":"review","input":[1]}`, nil, 400, "invalid_request", []string{"JSON object"}},
		{"start with input against the schema", "POST", wfs, `{"workflow":"review","input":{"order":"x"}}`, nil, 400, "invalid_request", []string{"input schema"}},
		{"start with a bad session id", "POST", wfs, `{"workflow":"review","input":{"order":1},"sessionId":"a b"}`, nil, 400, "invalid_request", []string{"sessionId"}},
		{"start in a missing session", "POST", wfs, `{"workflow":"review","input":{"order":1},"sessionId":"ses_missing"}`, nil, 404, "not_found", nil},
		{"start with two keys", "POST", wfs, `{"workflow":"review","idempotencyKey":"a"}`, map[string]string{"Idempotency-Key": "b"}, 400, "invalid_request", []string{"Idempotency-Key"}},
		{"start over 2 MiB", "POST", wfs, `{"workflow":"review","input":{"x":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}}`, nil, 413, "body_too_large", nil},
		{"list runs by a bad status", "GET", wfs + "?status=done", "", nil, 400, "invalid_parameter", []string{`status "done"`, "running, waiting, completed, failed, cancelled"}},
		{"list runs by a bad cursor", "GET", wfs + "?cursor=ins_1", "", nil, 400, "invalid_parameter", []string{"wfr_"}},
		{"list runs too many", "GET", wfs + "?limit=5000", "", nil, 400, "invalid_parameter", []string{"limit 5000"}},
		{"a missing run", "GET", wfs + "/wfr_missing", "", nil, 404, "not_found", []string{"not found: run wfr_missing"}},
		{"cancel a missing run", "POST", wfs + "/wfr_missing/cancel", "", nil, 404, "not_found", []string{"run wfr_missing"}},
		{"resume a missing run", "POST", wfs + "/wfr_missing/resume", "", nil, 404, "not_found", []string{"run wfr_missing"}},
		{"cancel with GET", "GET", wfs + "/wfr_missing/cancel", "", nil, 405, "method_not_allowed", []string{"POST"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := b.do(t, call{method: tt.method, path: tt.path, body: tt.body, header: tt.header})
			wantError(t, resp, body, tt.status, tt.kind, tt.words...)
		})
	}
}

// TestInstanceAndWorkflowRoles: operators change instances and runs, and
// readers other than submitters read them; neither is one principal's,
// so a submitter neither reads nor changes one.
func TestInstanceAndWorkflowRoles(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{state: caseState, workflows: reviewWorkflow})
	viewer := b.as(t, apitype.DefaultTenant, "vera", runtype.APIRoleViewer)
	sam := b.as(t, apitype.DefaultTenant, "sam", runtype.APIRoleSubmitter)
	changes := []call{
		{method: "PUT", path: "/v1/instances/case%2F1/state", body: `{"state":{}}`},
		{method: "POST", path: "/v1/instances/case%2F1/events", body: `{"type":"x","agent":"support"}`},
		{method: "POST", path: "/v1/workflows", body: `{"workflow":"review","input":{"order":1}}`},
		{method: "POST", path: "/v1/workflows/wfr_x/cancel"},
		{method: "POST", path: "/v1/workflows/wfr_x/resume"},
	}
	reads := []call{
		{method: "GET", path: "/v1/instances"},
		{method: "GET", path: "/v1/instances/case%2F1"},
		{method: "GET", path: "/v1/instances/case%2F1/state"},
		{method: "GET", path: "/v1/workflows"},
		{method: "GET", path: "/v1/workflows/wfr_x"},
	}
	for _, c := range changes {
		resp, body := viewer.do(t, c)
		wantError(t, resp, body, http.StatusForbidden, "forbidden", "role viewer", "admin or operator")
	}
	for _, c := range append(changes, reads...) {
		resp, body := sam.do(t, c)
		wantError(t, resp, body, http.StatusForbidden, "forbidden", "role submitter")
	}
}

// TestInstancesOverHTTP: the first event to a name holding '/', escaped
// into one path segment, creates the instance (202 with its turn); the
// instance is read, listed (by agent, a page at a time), its state read
// and set (a stale expectedStateVersion is a 409 that changes nothing);
// a second event with the same key is the same turn; the unescaped path
// is no route, and another tenant sees none of it.
func TestInstancesOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{state: caseState})
	const path = "/v1/instances/case%2F4711"
	var sent apitype.SendInstanceEventResult
	resp := b.postJSON(t, path+"/events", `{"type":"opened","data":{"by":"mail"},"agent":"support","idempotencyKey":"e1"}`, http.StatusAccepted, &sent)
	if sent.Instance.Name != "case/4711" || sent.Instance.Agent != "support" || sent.TurnID == "" || sent.TaskID == "" {
		t.Fatalf("sent = %+v, want instance case/4711 of support, with its turn", sent)
	}
	if got, want := resp.Header.Get("Location"), "/v1/requests/"+sent.TurnID; got != want {
		t.Errorf("Location %q, want %q", got, want)
	}
	if turn := b.wait(t, sent.TurnID); turn.SessionID != sent.Instance.SessionID || turn.Status != runtype.StatusCompleted {
		t.Errorf("the event's turn: session %s (%s), want completed in the instance's %s", turn.SessionID, turn.Status, sent.Instance.SessionID)
	}
	var again apitype.SendInstanceEventResult
	resp, raw := b.do(t, call{method: "POST", path: path + "/events", body: `{"type":"opened","data":{"by":"mail"}}`, header: map[string]string{"Idempotency-Key": "e1"}})
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(raw, &again) != nil || again.TurnID != sent.TurnID {
		t.Errorf("the same key again = %d %s, want turn %s", resp.StatusCode, raw, sent.TurnID)
	}

	var in apitype.InstanceRead
	b.getJSON(t, call{path: path}, http.StatusOK, &in)
	if in.Name != "case/4711" || in.InstanceID != sent.Instance.InstanceID || string(in.State) != `{"count":0}` {
		t.Errorf("get = %+v, want the instance with its initial state", in)
	}
	resp, raw = b.do(t, call{method: "GET", path: "/v1/instances/case/4711"})
	wantError(t, resp, raw, http.StatusNotFound, "not_found", "no route")

	var st apitype.InstanceState
	b.getJSON(t, call{path: path + "/state"}, http.StatusOK, &st)
	if string(st.State) != `{"count":0}` || st.SchemaVersion != 1 {
		t.Errorf("state = %+v", st)
	}
	v := st.StateVersion
	var set apitype.InstanceState
	b.getJSON(t, call{method: "PUT", path: path + "/state", body: fmt.Sprintf(`{"state":{"count":5},"expectedStateVersion":%d}`, v)}, http.StatusOK, &set)
	if string(set.State) != `{"count":5}` || set.StateVersion != v+1 {
		t.Errorf("set = %+v, want count 5 at version %d", set, v+1)
	}
	resp, raw = b.do(t, call{method: "PUT", path: path + "/state", body: fmt.Sprintf(`{"state":{"count":9},"expectedStateVersion":%d}`, v)})
	wantError(t, resp, raw, http.StatusConflict, "conflict")
	resp, raw = b.do(t, call{method: "PUT", path: path + "/state", body: `{"state":{"count":"many"}}`})
	wantError(t, resp, raw, http.StatusBadRequest, "invalid_request", "state")
	b.getJSON(t, call{path: path + "/state"}, http.StatusOK, &st)
	if string(st.State) != `{"count":5}` {
		t.Errorf("state after the refused changes = %s, want count 5", st.State)
	}

	b.postJSON(t, "/v1/instances/case%2F4712/events", `{"type":"opened","agent":"support"}`, http.StatusAccepted, nil)
	var page apitype.InstanceList
	b.getJSON(t, call{path: "/v1/instances?agent=support&limit=1"}, http.StatusOK, &page)
	if len(page.Instances) != 1 || page.Instances[0].Name != "case/4711" || page.NextAfterID == "" {
		t.Fatalf("first page = %+v, want case/4711 and a cursor", page)
	}
	b.getJSON(t, call{path: "/v1/instances?agent=support&limit=1&cursor=" + page.NextAfterID}, http.StatusOK, &page)
	if len(page.Instances) != 1 || page.Instances[0].Name != "case/4712" {
		t.Errorf("second page = %+v, want case/4712", page)
	}
	b.getJSON(t, call{path: "/v1/instances?agent=other"}, http.StatusOK, &page)
	if len(page.Instances) != 0 {
		t.Errorf("another agent's instances = %+v, want none", page.Instances)
	}

	other := b.as(t, "tenant_other", "olga", runtype.APIRoleOperator)
	resp, raw = other.do(t, call{method: "GET", path: path})
	wantError(t, resp, raw, http.StatusNotFound, "not_found", "not found: instance case/4711")
	other.getJSON(t, call{path: "/v1/instances"}, http.StatusOK, &page)
	if len(page.Instances) != 0 {
		t.Errorf("another tenant lists %+v", page.Instances)
	}
}

// TestWorkflowsOverHTTP: a run started over HTTP answers 201 with its
// Location (the same key again: the same run); its human step is
// answered through POST /v1/actions/{actionId}, after which its agent
// step runs and it completes; it is read and listed (by workflow and
// status); cancelling it once ended answers it as it is, resuming it is a
// conflict, and another tenant sees none of it.
func TestWorkflowsOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{workflows: reviewWorkflow})
	var run apitype.WorkflowRead
	resp := b.postJSON(t, "/v1/workflows", `{"workflow":"review","input":{"order":1042},"idempotencyKey":"w1"}`, http.StatusCreated, &run)
	if got, want := resp.Header.Get("Location"), "/v1/workflows/"+run.RunID; got != want || !strings.HasPrefix(run.RunID, runtype.PrefixWorkflowRun) {
		t.Errorf("Location %q, run %q; want %s", got, run.RunID, want)
	}
	if run.Workflow != "review" || len(run.Steps) != 2 || string(run.Input) != `{"order":1042}` {
		t.Errorf("started = %+v", run)
	}
	var again apitype.WorkflowRead
	b.getJSON(t, call{method: "POST", path: "/v1/workflows", body: `{"workflow":"review","input":{"order":1042}}`, header: map[string]string{"Idempotency-Key": "w1"}}, http.StatusCreated, &again)
	if again.RunID != run.RunID {
		t.Errorf("the same key started %s, then %s", run.RunID, again.RunID)
	}

	s := b.openEvents(t, "sessionId="+run.SessionID, nil)
	s.until(func(e sseEvent) bool { return e.Type == "action.required" })
	path := "/v1/workflows/" + run.RunID
	b.getJSON(t, call{path: path}, http.StatusOK, &run)
	ask := run.Steps[0]
	if ask.StepID != "ask" || ask.Kind != "human" || ask.Status != runtype.StepWaiting || ask.ActionID == "" {
		t.Fatalf("the human step = %+v, want it waiting on its action", ask)
	}
	var act apitype.ActionRead
	b.getJSON(t, call{path: "/v1/actions/" + ask.ActionID}, http.StatusOK, &act)
	if act.Prompt != "Ship order 1042?" {
		t.Errorf("the action asks %q", act.Prompt)
	}
	var answered apitype.RespondActionResult
	b.postJSON(t, "/v1/actions/"+ask.ActionID, `{"decision":"approve","message":"ship it"}`, http.StatusOK, &answered)
	if !answered.Resumed || answered.Action.Status != runtype.ActionApproved {
		t.Errorf("answer = %+v, want approved, resumed", answered)
	}
	s.until(func(e sseEvent) bool { return e.Type == "job.completed" })
	b.getJSON(t, call{path: path}, http.StatusOK, &run)
	if run.Status != runtype.WorkflowCompleted || run.Steps[0].Status != runtype.StepCompleted || run.Steps[1].Status != runtype.StepCompleted ||
		!strings.Contains(run.Steps[0].OutputPreview, "ship it") {
		t.Errorf("run after the answer = %+v, want completed, the answer the human step's output", run)
	}

	var page apitype.WorkflowsPage
	b.getJSON(t, call{path: "/v1/workflows?workflow=review&status=completed"}, http.StatusOK, &page)
	if len(page.Runs) != 1 || page.Runs[0].RunID != run.RunID {
		t.Errorf("completed runs = %+v, want the one", page.Runs)
	}
	b.getJSON(t, call{path: "/v1/workflows?status=running"}, http.StatusOK, &page)
	if len(page.Runs) != 0 {
		t.Errorf("running runs = %+v, want none", page.Runs)
	}
	var cancelled apitype.WorkflowRead
	b.getJSON(t, call{method: "POST", path: path + "/cancel"}, http.StatusOK, &cancelled)
	if cancelled.Status != runtype.WorkflowCompleted {
		t.Errorf("cancel of an ended run = %s, want it as it is", cancelled.Status)
	}
	resp, raw := b.do(t, call{method: "POST", path: path + "/resume"})
	wantError(t, resp, raw, http.StatusConflict, "conflict", "only a failed run")

	other := b.as(t, "tenant_other", "olga", runtype.APIRoleOperator)
	resp, raw = other.do(t, call{method: "GET", path: path})
	wantError(t, resp, raw, http.StatusNotFound, "not_found", "not found: run "+run.RunID)
	other.getJSON(t, call{path: "/v1/workflows"}, http.StatusOK, &page)
	if len(page.Runs) != 0 {
		t.Errorf("another tenant lists %+v", page.Runs)
	}
}
