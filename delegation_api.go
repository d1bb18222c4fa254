package agentrt

import (
	"context"
	"errors"

	"github.com/agentrt/agentrt/apitype"
)

// errTODO marks the control-plane methods whose bodies land with the
// delegation core (this file is replaced before the branch merges).
var errTODO = errors.New("delegation: not built yet")

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
