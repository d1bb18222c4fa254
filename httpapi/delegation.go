package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds delegation: subagents (spawn, input, wait, close and
// their reads), a task's delegation tree, and jobs (create, read, list
// items, retry, cancel). See docs/subagents.md.

// Limits of the delegation routes.
const (
	// MaxJobBodyBytes bounds the body of POST /v1/sessions/{sessionId}/jobs,
	// which carries the items; every other body is bounded by
	// MaxBodyBytes.
	MaxJobBodyBytes = 16 << 20
	// MaxJobItemsPage bounds the limit of GET /v1/jobs/{jobId}/items.
	MaxJobItemsPage = 1000
)

func (s *Server) spawnSubagent(w http.ResponseWriter, r *http.Request) {
	var req apitype.SpawnSubagentRequest
	if !decodeBody(w, r, &req) || !idempotencyKey(w, r, &req.IdempotencyKey) {
		return
	}
	switch {
	case req.Agent == "":
		writeError(w, apitype.ProblemInvalidRequest, "agent is empty; name the agent to spawn")
		return
	case req.Input == "":
		writeError(w, apitype.ProblemInvalidRequest, "input is empty; give the subagent its first input")
		return
	}
	sub, err := s.rt.SpawnSubagent(r.Context(), &apitype.SpawnSubagentParams{
		Owner: owner(r), SessionID: r.PathValue("sessionId"), Agent: req.Agent, Name: req.Name,
		Input: req.Input, ParentTaskID: req.ParentTaskID, IdempotencyKey: req.IdempotencyKey,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/subagents/"+sub.SubagentID)
	writeJSON(w, http.StatusCreated, sub)
}

func (s *Server) listSubagents(w http.ResponseWriter, r *http.Request) {
	subs, err := s.rt.ListSubagents(r.Context(), owner(r), r.PathValue("sessionId"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	if subs == nil {
		subs = []apitype.SubagentRead{}
	}
	writeJSON(w, http.StatusOK, apitype.SubagentList{Subagents: subs})
}

func (s *Server) getSubagent(w http.ResponseWriter, r *http.Request) {
	s.subagentAnswer(w, r, s.rt.GetSubagent)
}

func (s *Server) closeSubagent(w http.ResponseWriter, r *http.Request) {
	s.subagentAnswer(w, r, s.rt.CloseSubagent)
}

// subagentAnswer answers the subagent of the path as do leaves it.
func (s *Server) subagentAnswer(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, p *apitype.SubagentParams) (*apitype.SubagentRead, error)) {
	sub, err := do(r.Context(), &apitype.SubagentParams{Owner: owner(r), SubagentID: r.PathValue("subagentId")})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sub)
}

func (s *Server) sendSubagentInput(w http.ResponseWriter, r *http.Request) {
	var req apitype.SendSubagentInputRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Input == "" {
		writeError(w, apitype.ProblemInvalidRequest, "input is empty; give the subagent something to do")
		return
	}
	sub, err := s.rt.SendSubagentInput(r.Context(), &apitype.SendSubagentInputParams{
		Owner: owner(r), SubagentID: r.PathValue("subagentId"), Input: req.Input,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, sub)
}

// waitSubagents waits for the subagents the body names. A submitter may
// name only its own: the ids are in the body, so the guard cannot check
// them.
func (s *Server) waitSubagents(w http.ResponseWriter, r *http.Request) {
	var req apitype.WaitSubagentsRequest
	if !decodeBody(w, r, &req) {
		return
	}
	switch {
	case len(req.SubagentIDs) == 0:
		writeError(w, apitype.ProblemInvalidRequest, "subagentIds is empty; name the subagents to wait for")
		return
	case len(req.SubagentIDs) > apitype.MaxWaitSubagents:
		writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("subagentIds names %d subagents; one wait may name at most %d", len(req.SubagentIDs), apitype.MaxWaitSubagents))
		return
	case req.TimeoutMs < 0 || req.TimeoutMs > apitype.MaxWaitTimeout.Milliseconds():
		writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("timeoutMs %d is out of range: want 0 (the longest wait, %d) to %d", req.TimeoutMs, apitype.MaxWaitTimeout.Milliseconds(), apitype.MaxWaitTimeout.Milliseconds()))
		return
	}
	for i, id := range req.SubagentIDs {
		if id == "" {
			writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("subagentIds[%d] is empty", i))
			return
		}
		if onlyOwn(r) {
			if err := s.rt.CheckOwn(r.Context(), owner(r), apitype.OwnSubagent, id); err != nil {
				s.writeErr(w, r, err)
				return
			}
		}
	}
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	if timeout == 0 {
		timeout = apitype.MaxWaitTimeout
	}
	res, err := s.rt.WaitSubagents(r.Context(), &apitype.WaitSubagentsParams{Owner: owner(r), SubagentIDs: req.SubagentIDs, Timeout: timeout})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	if res.Subagents == nil {
		res.Subagents = []apitype.SubagentRead{}
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) getDelegationTree(w http.ResponseWriter, r *http.Request) {
	tree, err := s.rt.DelegationTree(r.Context(), owner(r), r.PathValue("taskId"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, tree)
}

func (s *Server) createJob(w http.ResponseWriter, r *http.Request) {
	var req apitype.CreateJobRequest
	if !decodeBodyLimit(w, r, &req, MaxJobBodyBytes) || !idempotencyKey(w, r, &req.IdempotencyKey) {
		return
	}
	if msg := checkJob(&req); msg != "" {
		writeError(w, apitype.ProblemInvalidRequest, msg)
		return
	}
	job, err := s.rt.CreateJob(r.Context(), &apitype.CreateJobParams{
		Owner: owner(r), SessionID: r.PathValue("sessionId"), Agent: req.Agent, Instruction: req.Instruction,
		Items: req.Items, Concurrency: req.Concurrency, MaxAttempts: req.MaxAttempts,
		ParentTaskID: req.ParentTaskID, IdempotencyKey: req.IdempotencyKey,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+job.JobID)
	writeJSON(w, http.StatusCreated, job)
}

// checkJob is what is wrong with a job's request, or "".
func checkJob(req *apitype.CreateJobRequest) string {
	switch {
	case req.Agent == "":
		return "agent is empty; name the agent that works on each item"
	case len(req.Items) == 0:
		return "items is empty; a job needs at least one item"
	case len(req.Items) > apitype.MaxJobItems:
		return fmt.Sprintf("items holds %d items; a job holds at most %d", len(req.Items), apitype.MaxJobItems)
	case req.Concurrency < 0 || req.Concurrency > apitype.MaxJobConcurrency:
		return fmt.Sprintf("concurrency %d is out of range: want 0 (the default) to %d", req.Concurrency, apitype.MaxJobConcurrency)
	case req.MaxAttempts < 0:
		return fmt.Sprintf("maxAttempts %d is negative: want 0 (the default, 1) or more", req.MaxAttempts)
	}
	for i, it := range req.Items {
		if len(it) > apitype.MaxJobItemBytes {
			return fmt.Sprintf("items[%d] is %d bytes; an item may be at most %d", i, len(it), apitype.MaxJobItemBytes)
		}
	}
	return ""
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	s.jobAnswer(w, r, s.rt.GetJob, http.StatusOK)
}

// cancelJob answers 202, as a task's cancel does: the job's open items
// are being cancelled (or it had already ended: its status says).
func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	s.jobAnswer(w, r, s.rt.CancelJob, http.StatusAccepted)
}

// jobAnswer answers the job of the path as do leaves it, with code.
func (s *Server) jobAnswer(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, p *apitype.JobParams) (*apitype.JobRead, error), code int) {
	job, err := do(r.Context(), &apitype.JobParams{Owner: owner(r), JobID: r.PathValue("jobId")})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, code, job)
}

func (s *Server) listJobItems(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, ok := intParam(w, q.Get("from"), "from")
	if !ok {
		return
	}
	limit, ok := intParam(w, q.Get("limit"), "limit")
	if !ok {
		return
	}
	if limit > MaxJobItemsPage {
		writeError(w, apitype.ProblemInvalidParameter, fmt.Sprintf("limit %d is more than %d", limit, MaxJobItemsPage))
		return
	}
	status := runtype.JobItemStatus(q.Get("status"))
	switch status {
	case "", runtype.ItemPending, runtype.ItemRunning, runtype.ItemCompleted, runtype.ItemFailed, runtype.ItemCancelled:
	default:
		writeError(w, apitype.ProblemInvalidParameter, fmt.Sprintf("status %q is not an item status: want pending, running, completed, failed or cancelled", status))
		return
	}
	page, err := s.rt.ListJobItems(r.Context(), &apitype.ListJobItemsParams{
		Owner: owner(r), JobID: r.PathValue("jobId"), Status: status, FromIndex: from, Limit: limit,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	if page.Items == nil {
		page.Items = []apitype.JobItemRead{}
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) retryJobItems(w http.ResponseWriter, r *http.Request) {
	var req apitype.RetryJobItemsRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if len(req.ItemIDs) > apitype.MaxJobItems {
		writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("itemIds names %d items; a job holds at most %d", len(req.ItemIDs), apitype.MaxJobItems))
		return
	}
	for i, id := range req.ItemIDs {
		if id == "" {
			writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("itemIds[%d] is empty", i))
			return
		}
	}
	res, err := s.rt.RetryJobItems(r.Context(), &apitype.RetryJobItemsParams{Owner: owner(r), JobID: r.PathValue("jobId"), ItemIDs: req.ItemIDs})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	if res.Retried == nil {
		res.Retried = []string{}
	}
	writeJSON(w, http.StatusOK, res)
}
