package client

import (
	"context"
	"net/http"

	"github.com/agentrt/agentrt/apitype"
)

// This file holds schedules (docs/api.md § Schedules). Each method
// mirrors the Runtime's of the same name; the Owner of its params is
// ignored: the server acts for the token's tenant and principal.

// CreateSchedule records a schedule (create_schedule); it is idempotent
// on p.IdempotencyKey.
func (c *Client) CreateSchedule(ctx context.Context, p *apitype.CreateScheduleParams) (*apitype.ScheduleRead, error) {
	var res apitype.ScheduleRead
	body := apitype.CreateScheduleRequest{ScheduleSpec: p.ScheduleSpec, IdempotencyKey: p.IdempotencyKey}
	return &res, c.do(ctx, http.MethodPost, "/v1/schedules", nil, body, &res)
}

// GetSchedule reads a schedule (get_schedule).
func (c *Client) GetSchedule(ctx context.Context, p *apitype.ScheduleParams) (*apitype.ScheduleRead, error) {
	var res apitype.ScheduleRead
	return &res, c.do(ctx, http.MethodGet, "/v1/schedules/"+seg(p.ScheduleID), nil, nil, &res)
}

// ListSchedules lists a page of the tenant's schedules, oldest first
// (list_schedules).
func (c *Client) ListSchedules(ctx context.Context, p *apitype.ListSchedulesParams) (*apitype.SchedulePage, error) {
	var res apitype.SchedulePage
	q := query("instance", p.Instance, "agent", p.Agent, "status", string(p.Status), "cursor", p.Cursor, "limit", itoa(p.Limit))
	return &res, c.do(ctx, http.MethodGet, "/v1/schedules", q, nil, &res)
}

// UpdateSchedule replaces a schedule's spec (update_schedule).
func (c *Client) UpdateSchedule(ctx context.Context, p *apitype.UpdateScheduleParams) (*apitype.ScheduleRead, error) {
	var res apitype.ScheduleRead
	return &res, c.do(ctx, http.MethodPut, "/v1/schedules/"+seg(p.ScheduleID), nil, p.ScheduleSpec, &res)
}

// PauseSchedule stops a schedule firing (pause_schedule).
func (c *Client) PauseSchedule(ctx context.Context, p *apitype.PauseScheduleParams) (*apitype.ScheduleRead, error) {
	return c.pauseOrResume(ctx, p, "/pause")
}

// ResumeSchedule makes a paused schedule fire again from now
// (resume_schedule).
func (c *Client) ResumeSchedule(ctx context.Context, p *apitype.PauseScheduleParams) (*apitype.ScheduleRead, error) {
	return c.pauseOrResume(ctx, p, "/resume")
}

func (c *Client) pauseOrResume(ctx context.Context, p *apitype.PauseScheduleParams, verb string) (*apitype.ScheduleRead, error) {
	var res apitype.ScheduleRead
	body := apitype.PauseScheduleRequest{Reason: p.Reason}
	return &res, c.do(ctx, http.MethodPost, "/v1/schedules/"+seg(p.ScheduleID)+verb, nil, body, &res)
}

// TriggerSchedule fires a schedule now (trigger_schedule); it is
// idempotent on p.IdempotencyKey.
func (c *Client) TriggerSchedule(ctx context.Context, p *apitype.TriggerScheduleParams) (*apitype.FireRead, error) {
	var res apitype.FireRead
	body := apitype.TriggerScheduleRequest{IdempotencyKey: p.IdempotencyKey}
	return &res, c.do(ctx, http.MethodPost, "/v1/schedules/"+seg(p.ScheduleID)+"/trigger", nil, body, &res)
}

// DeleteSchedule ends a schedule; its history stays readable
// (delete_schedule).
func (c *Client) DeleteSchedule(ctx context.Context, p *apitype.ScheduleParams) (*apitype.ScheduleRead, error) {
	var res apitype.ScheduleRead
	return &res, c.do(ctx, http.MethodDelete, "/v1/schedules/"+seg(p.ScheduleID), nil, nil, &res)
}

// ListFires lists a page of a schedule's fires, newest first
// (list_fires).
func (c *Client) ListFires(ctx context.Context, p *apitype.ListFiresParams) (*apitype.FirePage, error) {
	var res apitype.FirePage
	q := query("status", string(p.Status), "cursor", p.Cursor, "limit", itoa(p.Limit))
	return &res, c.do(ctx, http.MethodGet, "/v1/schedules/"+seg(p.ScheduleID)+"/fires", q, nil, &res)
}

// RetryDelivery delivers a fire's result again after its delivery
// failed (retry_delivery).
func (c *Client) RetryDelivery(ctx context.Context, p *apitype.FireParams) (*apitype.FireRead, error) {
	var res apitype.FireRead
	return &res, c.do(ctx, http.MethodPost, "/v1/fires/"+seg(p.FireID)+"/retry-delivery", nil, struct{}{}, &res)
}

// ScheduleOverview reads the tenant's soonest and failing schedules.
func (c *Client) ScheduleOverview(ctx context.Context, _ *apitype.ScheduleOverviewParams) (*apitype.ScheduleOverview, error) {
	var res apitype.ScheduleOverview
	return &res, c.do(ctx, http.MethodGet, "/v1/schedules/overview", nil, nil, &res)
}
