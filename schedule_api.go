package agentrt

import (
	"context"
	"errors"

	"github.com/agentrt/agentrt/apitype"
)

// This file holds the control plane of schedules (docs/schedules.md).

var errScheduleTODO = errors.New("schedules: not built yet")

// CreateSchedule records a schedule; its first fire is due at its spec's
// first time after now. It is idempotent on IdempotencyKey.
func (rt *Runtime) CreateSchedule(ctx context.Context, p *apitype.CreateScheduleParams) (*apitype.ScheduleRead, error) {
	return nil, errScheduleTODO
}

// GetSchedule reads a schedule.
func (rt *Runtime) GetSchedule(ctx context.Context, p *apitype.ScheduleParams) (*apitype.ScheduleRead, error) {
	return nil, errScheduleTODO
}

// ListSchedules lists the tenant's schedules, oldest first.
func (rt *Runtime) ListSchedules(ctx context.Context, p *apitype.ListSchedulesParams) (*apitype.SchedulePage, error) {
	return nil, errScheduleTODO
}

// UpdateSchedule replaces a schedule's spec (its agent and instance
// stay); its next fire is computed anew from now.
func (rt *Runtime) UpdateSchedule(ctx context.Context, p *apitype.UpdateScheduleParams) (*apitype.ScheduleRead, error) {
	return nil, errScheduleTODO
}

// PauseSchedule stops a schedule firing; fires that run go on.
func (rt *Runtime) PauseSchedule(ctx context.Context, p *apitype.PauseScheduleParams) (*apitype.ScheduleRead, error) {
	return nil, errScheduleTODO
}

// ResumeSchedule makes a paused schedule fire again from now: fires due
// while it was paused are not run (nor recorded missed).
func (rt *Runtime) ResumeSchedule(ctx context.Context, p *apitype.PauseScheduleParams) (*apitype.ScheduleRead, error) {
	return nil, errScheduleTODO
}

// TriggerSchedule fires a schedule now (a manual fire; the overlap
// policy applies).
func (rt *Runtime) TriggerSchedule(ctx context.Context, p *apitype.TriggerScheduleParams) (*apitype.FireRead, error) {
	return nil, errScheduleTODO
}

// DeleteSchedule ends a schedule: it never fires again; its history
// stays readable.
func (rt *Runtime) DeleteSchedule(ctx context.Context, p *apitype.ScheduleParams) (*apitype.ScheduleRead, error) {
	return nil, errScheduleTODO
}

// ListFires lists a schedule's fires (its history), newest first.
func (rt *Runtime) ListFires(ctx context.Context, p *apitype.ListFiresParams) (*apitype.FirePage, error) {
	return nil, errScheduleTODO
}

// RetryDelivery delivers a fire's result again after its delivery
// failed.
func (rt *Runtime) RetryDelivery(ctx context.Context, p *apitype.FireParams) (*apitype.FireRead, error) {
	return nil, errScheduleTODO
}
