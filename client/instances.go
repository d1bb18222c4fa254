package client

import (
	"context"
	"net/http"

	"github.com/agentrt/agentrt/apitype"
)

// This file holds named instances and workflow runs (docs/api.md § Named
// instances, § Workflows). Each method mirrors the Runtime's of the same
// name; the Owner of its params is ignored: the server acts for the
// token's tenant and principal. An instance's name is escaped into one
// path segment: case/4711 is /v1/instances/case%2F4711.

// GetInstance reads a named instance (get_instance).
func (c *Client) GetInstance(ctx context.Context, p *apitype.GetInstanceParams) (*apitype.InstanceRead, error) {
	var res apitype.InstanceRead
	return &res, c.do(ctx, http.MethodGet, "/v1/instances/"+seg(p.Name), nil, nil, &res)
}

// ListInstances lists a page of the tenant's instances by ID
// (list_instances); p.AfterID is the nextAfterId of the page before.
func (c *Client) ListInstances(ctx context.Context, p *apitype.ListInstancesParams) (*apitype.InstanceList, error) {
	var res apitype.InstanceList
	q := query("agent", p.Agent, "cursor", p.AfterID, "limit", itoa(p.Limit))
	return &res, c.do(ctx, http.MethodGet, "/v1/instances", q, nil, &res)
}

// GetInstanceState reads an instance's state (get_instance_state).
func (c *Client) GetInstanceState(ctx context.Context, p *apitype.GetInstanceParams) (*apitype.InstanceState, error) {
	var res apitype.InstanceState
	return &res, c.do(ctx, http.MethodGet, "/v1/instances/"+seg(p.Name)+"/state", nil, nil, &res)
}

// SetInstanceState replaces an instance's state (set_instance_state);
// with p.ExpectedStateVersion another version is a 409 (*Error, code
// conflict).
func (c *Client) SetInstanceState(ctx context.Context, p *apitype.SetInstanceStateParams) (*apitype.InstanceState, error) {
	var res apitype.InstanceState
	body := apitype.SetInstanceStateRequest{State: p.State, ExpectedStateVersion: p.ExpectedStateVersion}
	return &res, c.do(ctx, http.MethodPut, "/v1/instances/"+seg(p.Name)+"/state", nil, body, &res)
}

// SendInstanceEvent posts an event to an instance, creating it on first
// use when p.Agent is set (send_instance_event); it is idempotent on
// p.IdempotencyKey.
func (c *Client) SendInstanceEvent(ctx context.Context, p *apitype.SendInstanceEventParams) (*apitype.SendInstanceEventResult, error) {
	var res apitype.SendInstanceEventResult
	body := apitype.SendInstanceEventRequest{Type: p.Type, Data: p.Data, Agent: p.Agent, IdempotencyKey: p.IdempotencyKey}
	return &res, c.do(ctx, http.MethodPost, "/v1/instances/"+seg(p.Name)+"/events", nil, body, &res)
}

// StartWorkflow starts a run of a workflow definition (start_workflow);
// it is idempotent on p.IdempotencyKey.
func (c *Client) StartWorkflow(ctx context.Context, p *apitype.StartWorkflowParams) (*apitype.WorkflowRead, error) {
	var res apitype.WorkflowRead
	body := apitype.StartWorkflowRequest{Workflow: p.Workflow, Input: p.Input, SessionID: p.SessionID, IdempotencyKey: p.IdempotencyKey}
	return &res, c.do(ctx, http.MethodPost, "/v1/workflows", nil, body, &res)
}

// GetWorkflow reads a workflow run (get_workflow).
func (c *Client) GetWorkflow(ctx context.Context, p *apitype.WorkflowParams) (*apitype.WorkflowRead, error) {
	var res apitype.WorkflowRead
	return &res, c.do(ctx, http.MethodGet, "/v1/workflows/"+seg(p.RunID), nil, nil, &res)
}

// ListWorkflows lists a page of the tenant's workflow runs by ID
// (list_workflows); p.AfterID is the nextAfterId of the page before.
func (c *Client) ListWorkflows(ctx context.Context, p *apitype.ListWorkflowsParams) (*apitype.WorkflowsPage, error) {
	var res apitype.WorkflowsPage
	q := query("workflow", p.Workflow, "sessionId", p.SessionID, "status", string(p.Status), "cursor", p.AfterID, "limit", itoa(p.Limit))
	return &res, c.do(ctx, http.MethodGet, "/v1/workflows", q, nil, &res)
}

// CancelWorkflow cancels a workflow run (cancel_workflow).
func (c *Client) CancelWorkflow(ctx context.Context, p *apitype.WorkflowParams) (*apitype.WorkflowRead, error) {
	var res apitype.WorkflowRead
	return &res, c.do(ctx, http.MethodPost, "/v1/workflows/"+seg(p.RunID)+"/cancel", nil, struct{}{}, &res)
}

// ResumeWorkflow goes on with a failed workflow run (resume_workflow).
func (c *Client) ResumeWorkflow(ctx context.Context, p *apitype.WorkflowParams) (*apitype.WorkflowRead, error) {
	var res apitype.WorkflowRead
	return &res, c.do(ctx, http.MethodPost, "/v1/workflows/"+seg(p.RunID)+"/resume", nil, struct{}{}, &res)
}
