package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds named instances (docs/instances.md) and workflow runs
// (docs/workflows.md): read and list them, set an instance's state, post
// an event to one, and start, cancel and resume a run. An instance is the
// tenant's, not one principal's, and so is a run: operators change them
// and readers other than submitters read them. A workflow's human step is
// answered through POST /v1/actions/{actionId}.
//
// An instance's name may hold '/' (case/4711): the client escapes it
// into one path segment (case%2F4711), which the ServeMux matches as one
// segment and unescapes into {name}.

func (s *Server) listInstances(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := pageLimit(w, q.Get("limit"))
	if !ok {
		return
	}
	after, ok := afterID(w, q.Get("cursor"), runtype.PrefixInstance)
	if !ok {
		return
	}
	page, err := s.rt.ListInstances(r.Context(), &apitype.ListInstancesParams{
		Owner: owner(r), Agent: q.Get("agent"), AfterID: after, Limit: limit,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// afterID reads the cursor of a list that pages by ID (the nextAfterId
// of the page before): an ID with prefix, or "".
func afterID(w http.ResponseWriter, v, prefix string) (string, bool) {
	if v == "" {
		return "", true
	}
	if !strings.HasPrefix(v, prefix) || runtype.ValidateCallerID("cursor", v) != nil {
		writeError(w, apitype.ProblemInvalidParameter, fmt.Sprintf("cursor %q is not the nextAfterId of a page: want an id %s…", v, prefix))
		return "", false
	}
	return v, true
}

func (s *Server) getInstance(w http.ResponseWriter, r *http.Request) {
	in, err := s.rt.GetInstance(r.Context(), &apitype.GetInstanceParams{Owner: owner(r), Name: r.PathValue("name")})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, in)
}

func (s *Server) getInstanceState(w http.ResponseWriter, r *http.Request) {
	st, err := s.rt.GetInstanceState(r.Context(), &apitype.GetInstanceParams{Owner: owner(r), Name: r.PathValue("name")})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) setInstanceState(w http.ResponseWriter, r *http.Request) {
	var req apitype.SetInstanceStateRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if st := strings.TrimSpace(string(req.State)); !strings.HasPrefix(st, "{") {
		writeError(w, apitype.ProblemInvalidRequest, "state must be a JSON object: the instance's whole new state")
		return
	}
	st, err := s.rt.SetInstanceState(r.Context(), &apitype.SetInstanceStateParams{
		Owner: owner(r), Name: r.PathValue("name"), State: req.State, ExpectedStateVersion: req.ExpectedStateVersion,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// sendInstanceEvent answers 202: the event's turn is queued on the
// instance's session.
func (s *Server) sendInstanceEvent(w http.ResponseWriter, r *http.Request) {
	var req apitype.SendInstanceEventRequest
	if !decodeBody(w, r, &req) || !idempotencyKey(w, r, &req.IdempotencyKey) {
		return
	}
	if strings.TrimSpace(req.Type) == "" {
		writeError(w, apitype.ProblemInvalidRequest, "type is empty; say which event arrived")
		return
	}
	res, err := s.rt.SendInstanceEvent(r.Context(), &apitype.SendInstanceEventParams{
		Owner: owner(r), Name: r.PathValue("name"), Agent: req.Agent, Type: req.Type, Data: req.Data, IdempotencyKey: req.IdempotencyKey,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/requests/"+res.TurnID)
	writeJSON(w, http.StatusAccepted, res)
}

func (s *Server) startWorkflow(w http.ResponseWriter, r *http.Request) {
	var req apitype.StartWorkflowRequest
	if !decodeBody(w, r, &req) || !idempotencyKey(w, r, &req.IdempotencyKey) {
		return
	}
	if req.Workflow == "" {
		writeError(w, apitype.ProblemInvalidRequest, "workflow is empty; name the workflow definition to run")
		return
	}
	run, err := s.rt.StartWorkflow(r.Context(), &apitype.StartWorkflowParams{
		Owner: owner(r), Workflow: req.Workflow, Input: req.Input, SessionID: req.SessionID, IdempotencyKey: req.IdempotencyKey,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/workflows/"+run.RunID)
	writeJSON(w, http.StatusCreated, run)
}

func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := pageLimit(w, q.Get("limit"))
	if !ok {
		return
	}
	after, ok := afterID(w, q.Get("cursor"), runtype.PrefixWorkflowRun)
	if !ok {
		return
	}
	status := runtype.WorkflowStatus(q.Get("status"))
	switch status {
	case StatusAll:
		status = ""
	case "", runtype.WorkflowRunning, runtype.WorkflowWaiting, runtype.WorkflowCompleted, runtype.WorkflowFailed, runtype.WorkflowCancelled:
	default:
		writeError(w, apitype.ProblemInvalidParameter, fmt.Sprintf("status %q is not a workflow run status: want running, waiting, completed, failed, cancelled or all", status))
		return
	}
	page, err := s.rt.ListWorkflows(r.Context(), &apitype.ListWorkflowsParams{
		Owner: owner(r), SessionID: q.Get("sessionId"), Workflow: q.Get("workflow"), Status: status, AfterID: after, Limit: limit,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request) {
	s.workflowAnswer(w, r, s.rt.GetWorkflow)
}

func (s *Server) cancelWorkflow(w http.ResponseWriter, r *http.Request) {
	s.workflowAnswer(w, r, s.rt.CancelWorkflow)
}

func (s *Server) resumeWorkflow(w http.ResponseWriter, r *http.Request) {
	s.workflowAnswer(w, r, s.rt.ResumeWorkflow)
}

// workflowAnswer answers the run of the path as do leaves it.
func (s *Server) workflowAnswer(w http.ResponseWriter, r *http.Request, do func(context.Context, *apitype.WorkflowParams) (*apitype.WorkflowRead, error)) {
	run, err := do(r.Context(), &apitype.WorkflowParams{Owner: owner(r), RunID: r.PathValue("runId")})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}
