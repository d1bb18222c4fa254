package client

import (
	"context"
	"net/http"
	"time"

	"github.com/agentrt/agentrt/apitype"
)

// This file holds delegation: subagents, the delegation tree and jobs
// (docs/api.md § Delegation).

// SpawnSubagent starts a child agent in p.SessionID (spawn_subagent).
func (c *Client) SpawnSubagent(ctx context.Context, p *apitype.SpawnSubagentParams) (*apitype.SubagentRead, error) {
	var res apitype.SubagentRead
	body := apitype.SpawnSubagentRequest{Agent: p.Agent, Name: p.Name, Input: p.Input, ParentTaskID: p.ParentTaskID, IdempotencyKey: p.IdempotencyKey}
	return &res, c.do(ctx, http.MethodPost, "/v1/sessions/"+seg(p.SessionID)+"/subagents", nil, body, &res)
}

// ListSubagents lists a session's subagents, oldest first.
func (c *Client) ListSubagents(ctx context.Context, sessionID string) ([]apitype.SubagentRead, error) {
	var res apitype.SubagentList
	err := c.do(ctx, http.MethodGet, "/v1/sessions/"+seg(sessionID)+"/subagents", nil, nil, &res)
	return res.Subagents, err
}

// GetSubagent reads one subagent.
func (c *Client) GetSubagent(ctx context.Context, p *apitype.SubagentParams) (*apitype.SubagentRead, error) {
	var res apitype.SubagentRead
	return &res, c.do(ctx, http.MethodGet, "/v1/subagents/"+seg(p.SubagentID), nil, nil, &res)
}

// SendSubagentInput gives a subagent another input (send_subagent_input).
func (c *Client) SendSubagentInput(ctx context.Context, p *apitype.SendSubagentInputParams) (*apitype.SubagentRead, error) {
	var res apitype.SubagentRead
	body := apitype.SendSubagentInputRequest{Input: p.Input}
	return &res, c.do(ctx, http.MethodPost, "/v1/subagents/"+seg(p.SubagentID)+"/input", nil, body, &res)
}

// CloseSubagent closes a subagent, cancelling its open work
// (close_subagent).
func (c *Client) CloseSubagent(ctx context.Context, p *apitype.SubagentParams) (*apitype.SubagentRead, error) {
	var res apitype.SubagentRead
	return &res, c.do(ctx, http.MethodPost, "/v1/subagents/"+seg(p.SubagentID)+"/close", nil, struct{}{}, &res)
}

// WaitSubagents waits until each of p.SubagentIDs' latest input has
// settled, or p.Timeout passes (0: until ctx ends), as the runtime's
// does. The server bounds one wait (apitype.MaxWaitTimeout), so a longer
// one is several requests.
func (c *Client) WaitSubagents(ctx context.Context, p *apitype.WaitSubagentsParams) (*apitype.WaitSubagentsResult, error) {
	var deadline time.Time
	if p.Timeout > 0 {
		deadline = time.Now().Add(p.Timeout)
	}
	for {
		wait := apitype.MaxWaitTimeout
		if !deadline.IsZero() {
			wait = min(wait, max(time.Until(deadline), time.Millisecond))
		}
		var res apitype.WaitSubagentsResult
		ms := int64((wait + time.Millisecond - 1) / time.Millisecond) // rounded up
		body := apitype.WaitSubagentsRequest{SubagentIDs: p.SubagentIDs, TimeoutMs: ms}
		if err := c.do(ctx, http.MethodPost, "/v1/subagents/wait", nil, body, &res); err != nil {
			return nil, err
		}
		if !res.TimedOut || !deadline.IsZero() && !time.Now().Before(deadline) {
			return &res, nil
		}
	}
}

// DelegationTree reads the delegation tree under a task.
func (c *Client) DelegationTree(ctx context.Context, taskID string) (*apitype.DelegationNode, error) {
	var res apitype.DelegationNode
	return &res, c.do(ctx, http.MethodGet, "/v1/tasks/"+seg(taskID)+"/tree", nil, nil, &res)
}

// CreateJob creates a job in p.SessionID (create_job).
func (c *Client) CreateJob(ctx context.Context, p *apitype.CreateJobParams) (*apitype.JobRead, error) {
	var res apitype.JobRead
	body := apitype.CreateJobRequest{
		Agent: p.Agent, Instruction: p.Instruction, Items: p.Items, Concurrency: p.Concurrency,
		MaxAttempts: p.MaxAttempts, ParentTaskID: p.ParentTaskID, IdempotencyKey: p.IdempotencyKey,
	}
	return &res, c.do(ctx, http.MethodPost, "/v1/sessions/"+seg(p.SessionID)+"/jobs", nil, body, &res)
}

// GetJob reads a job and its progress (get_job).
func (c *Client) GetJob(ctx context.Context, p *apitype.JobParams) (*apitype.JobRead, error) {
	var res apitype.JobRead
	return &res, c.do(ctx, http.MethodGet, "/v1/jobs/"+seg(p.JobID), nil, nil, &res)
}

// ListJobItems lists a page of a job's items (list_job_items).
func (c *Client) ListJobItems(ctx context.Context, p *apitype.ListJobItemsParams) (*apitype.JobItemsPage, error) {
	var res apitype.JobItemsPage
	q := query("status", string(p.Status), "from", itoa(p.FromIndex), "limit", itoa(p.Limit))
	return &res, c.do(ctx, http.MethodGet, "/v1/jobs/"+seg(p.JobID)+"/items", q, nil, &res)
}

// RetryJobItems gives failed items of a job another attempt: those
// named, or every failed one (retry_job_items).
func (c *Client) RetryJobItems(ctx context.Context, p *apitype.RetryJobItemsParams) (*apitype.RetryJobItemsResult, error) {
	var res apitype.RetryJobItemsResult
	body := apitype.RetryJobItemsRequest{ItemIDs: p.ItemIDs}
	return &res, c.do(ctx, http.MethodPost, "/v1/jobs/"+seg(p.JobID)+"/retry", nil, body, &res)
}

// CancelJob cancels a job and its open items (cancel_job).
func (c *Client) CancelJob(ctx context.Context, p *apitype.JobParams) (*apitype.JobRead, error) {
	var res apitype.JobRead
	return &res, c.do(ctx, http.MethodPost, "/v1/jobs/"+seg(p.JobID)+"/cancel", nil, struct{}{}, &res)
}
