package loop

import (
	"context"

	"github.com/agentrt/agentrt/runtype"
)

// AccountCount returns how many accounts the ledger holds in memory.
func AccountCount(l *Ledger) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.accounts)
}

// The paths RunAttempt chooses among, for the tests that drive one of
// them directly with a job they loaded themselves.

func (c *Coordinator) Run(ctx context.Context, job *Job) (*Outcome, error) {
	return c.runNew(ctx, job)
}

func (c *Coordinator) Fail(ctx context.Context, job *Job, f *runtype.Failure) (*Outcome, error) {
	return c.fail(ctx, job, f)
}

func (c *Coordinator) Resume(ctx context.Context, job *Job, reason runtype.Reason) (*Outcome, error) {
	return c.resume(ctx, job, reason)
}

func (c *Coordinator) Continue(ctx context.Context, job *Job, reason runtype.Reason) (*Outcome, error) {
	return c.continueAttempt(ctx, job, reason)
}

func (c *Coordinator) CancelParked(ctx context.Context, job *Job, reason runtype.Reason) (*Outcome, error) {
	return c.cancelParked(ctx, job, reason)
}
