package agentrt

import (
	"context"
	"errors"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// errTODO marks the control-plane methods whose bodies land with the
// delegation core (this file is replaced before the branch merges).
var errTODO = errors.New("delegation: not built yet")

// SpawnSubagent starts a child agent on a thread of its own.
func (rt *Runtime) SpawnSubagent(ctx context.Context, p *apitype.SpawnSubagentParams) (*apitype.SubagentRead, error) {
	return nil, errTODO
}

// SendSubagentInput gives a subagent another input.
func (rt *Runtime) SendSubagentInput(ctx context.Context, p *apitype.SendSubagentInputParams) (*apitype.SubagentRead, error) {
	return nil, errTODO
}

// WaitSubagents waits until the subagents' latest inputs settled.
func (rt *Runtime) WaitSubagents(ctx context.Context, p *apitype.WaitSubagentsParams) (*apitype.WaitSubagentsResult, error) {
	return nil, errTODO
}

// CloseSubagent closes a subagent, cancelling its open work.
func (rt *Runtime) CloseSubagent(ctx context.Context, p *apitype.SubagentParams) (*apitype.SubagentRead, error) {
	return nil, errTODO
}

// GetSubagent reads one subagent.
func (rt *Runtime) GetSubagent(ctx context.Context, p *apitype.SubagentParams) (*apitype.SubagentRead, error) {
	return nil, errTODO
}

// ListSubagents lists a session's subagents, oldest first.
func (rt *Runtime) ListSubagents(ctx context.Context, owner runtype.Owner, sessionID string) ([]apitype.SubagentRead, error) {
	return nil, errTODO
}

// DelegationTree reads the delegation tree under a task.
func (rt *Runtime) DelegationTree(ctx context.Context, owner runtype.Owner, taskID string) (*apitype.DelegationNode, error) {
	return nil, errTODO
}

// CreateJob creates a job.
func (rt *Runtime) CreateJob(ctx context.Context, p *apitype.CreateJobParams) (*apitype.JobRead, error) {
	return nil, errTODO
}

// GetJob reads a job.
func (rt *Runtime) GetJob(ctx context.Context, p *apitype.JobParams) (*apitype.JobRead, error) {
	return nil, errTODO
}

// ListJobItems lists a job's items.
func (rt *Runtime) ListJobItems(ctx context.Context, p *apitype.ListJobItemsParams) (*apitype.JobItemsPage, error) {
	return nil, errTODO
}

// RetryJobItems retries failed items of a job.
func (rt *Runtime) RetryJobItems(ctx context.Context, p *apitype.RetryJobItemsParams) (*apitype.RetryJobItemsResult, error) {
	return nil, errTODO
}

// CancelJob cancels a job and its open items.
func (rt *Runtime) CancelJob(ctx context.Context, p *apitype.JobParams) (*apitype.JobRead, error) {
	return nil, errTODO
}
