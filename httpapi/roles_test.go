package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/runtype"
)

// matrixBodies are the request bodies of the operations that take one,
// by operationId: valid requests, so that only who calls decides.
var matrixBodies = map[string]string{
	"submitTurn":        `{"agent": "support", "input": "hello"}`,
	"respondAction":     `{"decision": "deny", "message": "not now"}`,
	"setLimit":          `{"scope": "tenant", "maxTokens": 100000000}`,
	"setPolicyMode":     `{"mode": "default"}`,
	"writeProcessStdin": `{"data": "x"}`,
	"exportEvidence":    `{}`,
	"createToken":       `{"principalId": "newcomer", "role": "viewer"}`,
	// The thread commands name no turn of the thread, or a strategy that
	// does not exist: the matrix changes no thread (threads_test.go
	// covers what they do).
	"rollbackThread": `{"toTurnId": "turn_missing"}`,
	"forkThread":     `{"fromTurnId": "turn_missing"}`,
	"compactThread":  `{"strategy": "shrink"}`,
	"resetThread":    `{"strategy": "shrink"}`,
	// Delegation: the agent exists, so the runtime decides.
	"spawnSubagent":     `{"agent": "support", "input": "look it up"}`,
	"sendSubagentInput": `{"input": "and this"}`,
	"waitSubagents":     `{"subagentIds": ["sub_missing"], "timeoutMs": 1}`,
	"createJob":         `{"agent": "support", "items": [{"ticket": 1}]}`,
	"retryJobItems":     `{}`,
	// Schedules: a valid spec, so the runtime decides.
	"createSchedule":  `{"agent": "support", "kind": "interval", "every": "1h", "input": "digest"}`,
	"updateSchedule":  `{"agent": "support", "kind": "interval", "every": "2h", "input": "digest"}`,
	"pauseSchedule":   `{"reason": "maintenance"}`,
	"resumeSchedule":  `{}`,
	"triggerSchedule": `{}`,
	// Instances and workflows: a valid state, an event to an instance
	// that exists (no agent: a missing one is not made), a run of a
	// workflow the configuration has.
	"setInstanceState":  `{"state": {"count": 1}}`,
	"sendInstanceEvent": `{"type": "ping"}`,
	"startWorkflow":     `{"workflow": "review", "input": {"order": 1}}`,
	// AG-UI: a user message on a thread of its own; the turn parks on
	// its read, which ends the stream. Other callers of the tenant send
	// the same message, whose id names the same turn.
	"runAGUI": `{"threadId": "agui-matrix", "runId": "run-1", "messages": [{"id": "m1", "role": "user", "content": "hello"}]}`,
}

// matrixCaller is who calls in the matrix.
type matrixCaller struct {
	name string
	b    *testBundle
	role runtype.APIRole
	// foreign: another tenant's; stranger: a submitter of the tenant
	// who owns none of the fixtures.
	foreign, stranger bool
}

// matrixResult is one answer.
type matrixResult struct {
	status int
	code   string
	msg    string
	body   string
}

func (b *testBundle) matrixCall(t *testing.T, method, path string, query url.Values, body string) matrixResult {
	t.Helper()
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	resp, raw := b.do(t, call{method: method, path: path, body: body})
	r := matrixResult{status: resp.StatusCode, body: string(raw)}
	if resp.StatusCode >= 400 {
		var e apitype.Problem
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("%s %s = %d with a body that is no JSON error: %s", method, path, resp.StatusCode, raw)
		}
		r.code, r.msg = e.Code, e.Detail
	}
	return r
}

// TestRoleRouteMatrix calls every route of the OpenAPI document with a
// token of every role, of the fixtures' tenant and of another, and holds
// each answer to what the document's x-agentrt-roles and x-agentrt-own
// say:
//
//   - a role the operation does not list gets 403 forbidden;
//   - another tenant's caller gets, for the fixtures' ids, exactly the
//     answer (status, code and message) it gets for ids that exist
//     nowhere, and its lists show none of the fixtures;
//   - a submitter that owns none of the fixtures gets the same on the
//     operations x-agentrt-own marks, and sees none of them in lists;
//   - everyone else gets an answer the operation documents, never 401,
//     403 or a 5xx.
//
// A route the document lists without x-agentrt-roles fails here. The
// public routes (the probes, the OpenAPI document) answer every caller
// as they answer a request without a token.
func TestRoleRouteMatrix(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"}, state: caseState, workflows: reviewWorkflow})
	const tenant, other = apitype.DefaultTenant, "tenant_other"
	sam := b.as(t, tenant, "sam", runtype.APIRoleSubmitter)
	callers := []matrixCaller{
		{name: "admin", b: b, role: runtype.APIRoleAdmin},
		{name: "operator", b: b.as(t, tenant, "olga", runtype.APIRoleOperator), role: runtype.APIRoleOperator},
		{name: "viewer", b: b.as(t, tenant, "vera", runtype.APIRoleViewer), role: runtype.APIRoleViewer},
		{name: "submitter", b: sam, role: runtype.APIRoleSubmitter},
		{name: "other submitter", b: b.as(t, tenant, "sue", runtype.APIRoleSubmitter), role: runtype.APIRoleSubmitter, stranger: true},
		{name: "foreign operator", b: b.as(t, other, "olga", runtype.APIRoleOperator), role: runtype.APIRoleOperator, foreign: true},
		{name: "foreign viewer", b: b.as(t, other, "vera", runtype.APIRoleViewer), role: runtype.APIRoleViewer, foreign: true},
		{name: "foreign submitter", b: b.as(t, other, "sam", runtype.APIRoleSubmitter), role: runtype.APIRoleSubmitter, foreign: true},
	}

	// The fixtures: sam's turn, parked on an approval, and a spare token.
	res := sam.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("sam's turn %s (%s), want waiting_permission", turn.Status, turn.StatusReason)
	}
	var acts struct{ Actions []apitype.ActionRead }
	b.getJSON(t, call{path: "/v1/actions?turnId=" + res.TurnID}, http.StatusOK, &acts)
	if len(acts.Actions) != 1 {
		t.Fatalf("actions of sam's turn: %+v", acts.Actions)
	}
	spare, err := b.rt.CreateToken(t.Context(), &apitype.CreateTokenParams{Owner: runtype.Owner{PrincipalID: "spare"}, Role: runtype.APIRoleViewer})
	if err != nil {
		t.Fatal(err)
	}
	// The model's raw response is stored content of the tenant's.
	var rawRef string
	for _, e := range b.readAll(t, "sessionId="+res.SessionID, nil) {
		if e.Type == "model.completed" && e.Refs["rawResponse"] != "" {
			rawRef = e.Refs["rawResponse"]
		}
	}
	if rawRef == "" {
		t.Fatal("sam's turn stored no raw model response")
	}
	// Sam's subagent and job, in his session.
	var sub apitype.SubagentRead
	sam.postJSON(t, "/v1/sessions/"+res.SessionID+"/subagents", `{"agent": "support", "input": "look"}`, http.StatusCreated, &sub)
	var job apitype.JobRead
	sam.postJSON(t, "/v1/sessions/"+res.SessionID+"/jobs", `{"agent": "support", "items": [1]}`, http.StatusCreated, &job)
	// The tenant's schedule, and a fire of it.
	var sch apitype.ScheduleRead
	var fire apitype.FireRead
	b.postJSON(t, "/v1/schedules", `{"agent": "support", "kind": "interval", "every": "1h", "input": "digest"}`, http.StatusCreated, &sch)
	b.postJSON(t, "/v1/schedules/"+sch.ScheduleID+"/trigger", `{}`, http.StatusAccepted, &fire)
	// The tenant's named instance, and a workflow run waiting on its
	// human step.
	var inst apitype.SendInstanceEventResult
	b.postJSON(t, "/v1/instances/case-1/events", `{"type": "opened", "agent": "support"}`, http.StatusAccepted, &inst)
	var run apitype.WorkflowRead
	b.postJSON(t, "/v1/workflows", `{"workflow": "review", "input": {"order": 1}}`, http.StatusCreated, &run)
	ids := map[string]string{
		"sessionId": res.SessionID, "threadId": res.ThreadID, "turnId": res.TurnID, "taskId": res.TaskID,
		"actionId": acts.Actions[0].ActionID, "processId": "proc_none", "tokenId": spare.TokenID, "ref": rawRef,
		"subagentId": sub.SubagentID, "jobId": job.JobID, "scheduleId": sch.ScheduleID, "fireId": fire.FireID,
		"name": "case-1", "runId": run.RunID,
	}
	missing := map[string]string{
		"sessionId": "ses_missing", "threadId": "thr_missing", "turnId": "turn_missing", "taskId": "task_missing",
		"actionId": "act_missing", "processId": "proc_none", "tokenId": "tok_missing", "ref": "sha256:" + strings.Repeat("0", 64),
		"subagentId": "sub_missing", "jobId": "job_missing", "scheduleId": "sch_missing", "fireId": "fire_missing",
		"name": "case-missing", "runId": "wfr_missing",
	}
	secrets := []string{res.SessionID, res.ThreadID, res.TurnID, res.TaskID, acts.Actions[0].ActionID, sub.SubagentID, job.JobID, sch.ScheduleID, fire.FireID,
		inst.Instance.InstanceID, inst.Instance.SessionID, inst.TurnID, run.RunID, run.SessionID}

	doc := b.openapi(t)
	routes := doc.documented()
	slices.SortFunc(routes, func(a, b httpapi.RouteInfo) int { return strings.Compare(a.Path+" "+a.Method, b.Path+" "+b.Method) })
	for _, r := range routes {
		op := doc.Paths[r.Path][strings.ToLower(r.Method)]
		if !r.Auth {
			// A public route answers everyone, and no one, alike.
			if len(op.Roles) > 0 {
				t.Errorf("%s %s needs no token but documents x-agentrt-roles %v", r.Method, r.Path, op.Roles)
			}
			resp, body := b.do(t, call{method: r.Method, path: r.Path, header: map[string]string{"Authorization": ""}})
			for _, c := range callers {
				if got := c.b.matrixCall(t, r.Method, r.Path, nil, ""); got.status != resp.StatusCode || got.body != string(body) {
					t.Errorf("%s %s as %s = %d; without a token %d: want the same answer", r.Method, r.Path, c.name, got.status, resp.StatusCode)
				}
			}
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s %s without a token = %d %s, want 200", r.Method, r.Path, resp.StatusCode, body)
			}
			continue
		}
		if len(op.Roles) == 0 {
			t.Errorf("%s %s documents no x-agentrt-roles", r.Method, r.Path)
			continue
		}
		body, hasBody := matrixBodies[op.OperationID]
		if op.RequestBody != nil && !hasBody {
			t.Errorf("%s %s (%s) takes a body the matrix has none for", r.Method, r.Path, op.OperationID)
		}
		// request fills the path's parameters, and puts the own ones the
		// path lacks in the query.
		request := func(c matrixCaller, with map[string]string) matrixResult {
			t.Helper()
			path := pathParam.ReplaceAllStringFunc(r.Path, func(m string) string { return with[m[1:len(m)-1]] })
			q := url.Values{}
			for _, name := range op.Own {
				if !strings.Contains(r.Path, "{"+name+"}") {
					q.Set(name, with[name]) // the first suffices
					break
				}
			}
			if op.OperationID == "streamEvents" {
				q.Set("follow", "false")
			}
			return c.b.matrixCall(t, r.Method, path, q, body)
		}
		for _, c := range callers {
			got := request(c, ids)
			name := fmt.Sprintf("%s %s as %s", r.Method, r.Path, c.name)
			allowed := slices.Contains(op.Roles, string(c.role))
			// An id in the path, or one the request names as its own:
			// another tenant's, or a stranger's, answers as a missing one.
			named := strings.Contains(r.Path, "{") || len(op.Own) > 0
			asMissing := c.foreign && named || c.stranger && len(op.Own) > 0
			switch {
			case !allowed:
				if got.status != http.StatusForbidden || got.code != "forbidden" {
					t.Errorf("%s = %d %s, want 403 forbidden (roles %v)", name, got.status, got.body, op.Roles)
				}
			case asMissing:
				want := request(c, missing)
				if got.status != want.status || got.code != want.code || normalize(got.msg, ids) != normalize(want.msg, missing) ||
					got.status < 300 && normalize(got.body, ids) != normalize(want.body, missing) {
					t.Errorf("%s = %d %s %q; for ids that exist nowhere %d %s %q: want the same", name,
						got.status, got.code, got.msg, want.status, want.code, want.msg)
				}
			default:
				if _, documented := op.Responses[strconv.Itoa(got.status)]; !documented || got.status == http.StatusUnauthorized ||
					got.status == http.StatusForbidden || got.status >= 500 {
					t.Errorf("%s = %d %s, want an answer the operation documents, not 401, 403 or 5xx", name, got.status, got.body)
				}
				if c.foreign || c.stranger {
					for _, s := range secrets {
						if strings.Contains(got.body, s) {
							t.Errorf("%s shows %s, sam's: %s", name, s, got.body)
						}
					}
				}
			}
		}
	}
}

// normalize puts the names of the ids back into a message.
func normalize(msg string, ids map[string]string) string {
	for name, id := range ids {
		msg = strings.ReplaceAll(msg, id, "{"+name+"}")
	}
	return msg
}

// TestSubmitterSeesItsOwn: a submitter lists, reads, follows and
// interrupts its own turns and sessions, and no one else's; it continues
// only its own sessions and answers no approvals.
func TestSubmitterSeesItsOwn(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"}})
	sam := b.as(t, apitype.DefaultTenant, "sam", runtype.APIRoleSubmitter)
	sue := b.as(t, apitype.DefaultTenant, "sue", runtype.APIRoleSubmitter)
	mine, theirs := sam.submit(t, apitype.SubmitTurnRequest{Input: "go"}), sue.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	for _, res := range []apitype.SubmitTurnResult{mine, theirs} {
		if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusWaitingPermission {
			t.Fatalf("turn %s", turn.Status)
		}
	}

	var reqs struct{ Requests []apitype.RequestSummary }
	sam.getJSON(t, call{path: "/v1/requests"}, http.StatusOK, &reqs)
	if len(reqs.Requests) != 1 || reqs.Requests[0].TurnID != mine.TurnID {
		t.Errorf("sam's requests = %+v, want his one", reqs.Requests)
	}
	var sessions struct{ Sessions []apitype.SessionSummary }
	sam.getJSON(t, call{path: "/v1/sessions"}, http.StatusOK, &sessions)
	if len(sessions.Sessions) != 1 || sessions.Sessions[0].SessionID != mine.SessionID {
		t.Errorf("sam's sessions = %+v, want his one", sessions.Sessions)
	}
	var tasks apitype.TaskPage
	sam.getJSON(t, call{path: "/v1/tasks"}, http.StatusOK, &tasks)
	if len(tasks.Tasks) != 1 || tasks.Tasks[0].TaskID != mine.TaskID {
		t.Errorf("sam's tasks = %+v, want his one", tasks.Tasks)
	}
	b.getJSON(t, call{path: "/v1/requests"}, http.StatusOK, &reqs)
	if len(reqs.Requests) != 2 {
		t.Errorf("the admin sees %d requests, want both", len(reqs.Requests))
	}
	sam.getJSON(t, call{path: "/v1/requests/" + mine.TurnID}, http.StatusOK, nil)
	sam.getJSON(t, call{path: "/v1/sessions/" + mine.SessionID}, http.StatusOK, nil)
	sam.getJSON(t, call{path: "/v1/tasks/" + mine.TaskID}, http.StatusOK, nil)
	resp, body := sam.do(t, call{method: http.MethodGet, path: "/v1/requests/" + theirs.TurnID})
	wantError(t, resp, body, http.StatusNotFound, "not_found", "not found: turn "+theirs.TurnID)

	s := sam.openEvents(t, "follow=false&sessionId="+mine.SessionID, nil)
	if evs := s.all(); len(evs) == 0 || evs[0].SessionID != mine.SessionID {
		t.Errorf("sam's session's events: %d, want its own", len(evs))
	}
	resp, body = sam.do(t, call{method: http.MethodGet, path: "/v1/events?follow=false"})
	wantError(t, resp, body, http.StatusForbidden, "forbidden", "a submitter must name its own sessionId or turnId")
	resp, body = sam.do(t, call{method: http.MethodGet, path: "/v1/events?follow=false&turnId=" + theirs.TurnID})
	wantError(t, resp, body, http.StatusNotFound, "not_found", "turn "+theirs.TurnID)

	resp, body = sam.do(t, call{method: http.MethodPost, path: "/v1/turns", body: `{"sessionId":"` + theirs.SessionID + `","input":"me too"}`})
	wantError(t, resp, body, http.StatusForbidden, "forbidden", "another principal's", "sam may continue only its own sessions")
	var acts struct{ Actions []apitype.ActionRead }
	b.getJSON(t, call{path: "/v1/actions?turnId=" + mine.TurnID}, http.StatusOK, &acts)
	resp, body = sam.do(t, call{method: http.MethodPost, path: "/v1/actions/" + acts.Actions[0].ActionID, body: `{"decision":"approve"}`})
	wantError(t, resp, body, http.StatusForbidden, "forbidden", "role submitter")

	resp, body = sam.do(t, call{method: http.MethodPost, path: "/v1/turns/" + theirs.TurnID + "/interrupt"})
	wantError(t, resp, body, http.StatusNotFound, "not_found")
	sam.getJSON(t, call{method: http.MethodPost, path: "/v1/turns/" + mine.TurnID + "/interrupt"}, http.StatusAccepted, nil)
	if turn := b.wait(t, mine.TurnID); turn.Status != runtype.StatusCancelled {
		t.Errorf("sam's turn after his interrupt: %s", turn.Status)
	}
	if turn := b.wait(t, theirs.TurnID); turn.Status != runtype.StatusWaitingPermission {
		t.Errorf("sue's turn after sam's attempt: %s", turn.Status)
	}
}

// TestSelfApprovalOverHTTP: with policy.self_approval forbid, the
// operator who submitted a turn gets 403 with the reason when it
// approves its action; another operator approves, and is recorded as
// who did.
func TestSelfApprovalOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"}, forbidSelfApproval: true})
	olga := b.as(t, apitype.DefaultTenant, "olga", runtype.APIRoleOperator)
	oscar := b.as(t, apitype.DefaultTenant, "oscar", runtype.APIRoleOperator)
	res := olga.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn %s", turn.Status)
	}
	var acts struct{ Actions []apitype.ActionRead }
	olga.getJSON(t, call{path: "/v1/actions?turnId=" + res.TurnID}, http.StatusOK, &acts)
	path := "/v1/actions/" + acts.Actions[0].ActionID
	resp, body := olga.do(t, call{method: http.MethodPost, path: path, body: `{"decision":"approve"}`})
	wantError(t, resp, body, http.StatusForbidden, "self_approval", "olga submitted turn "+res.TurnID, "self-approval", "policy.self_approval: forbid")

	var out apitype.RespondActionResult
	oscar.getJSON(t, call{method: http.MethodPost, path: path, body: `{"decision":"approve"}`}, http.StatusOK, &out)
	if out.Action.ResolvedBy != "oscar" {
		t.Errorf("resolved by %q, want oscar", out.Action.ResolvedBy)
	}
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted {
		t.Errorf("turn after oscar's approval: %s", turn.Status)
	}
	var found bool
	for _, e := range olga.readAll(t, "sessionId="+res.SessionID, nil) {
		found = found || e.Type == "action.resolved"
	}
	if !found {
		t.Error("no action.resolved in the session's events")
	}
	var v apitype.VerifyResult
	olga.getJSON(t, call{path: "/v1/sessions/" + res.SessionID + "/receipts/verify"}, http.StatusOK, &v)
	if !v.OK {
		t.Errorf("receipts = %+v", v)
	}
}
