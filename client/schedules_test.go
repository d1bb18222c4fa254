package client_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/client"
	"github.com/agentrt/agentrt/runtype"
)

// TestClientScheduleRequests: each schedule method sends the route's
// method, path, query and body, from its params (the Owner ignored), and
// decodes the answer.
func TestClientScheduleRequests(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	owner := runtype.Owner{TenantID: "ignored", PrincipalID: "ignored"}
	spec := apitype.ScheduleSpec{
		Name: "nightly", Agent: "digest", Kind: "cron", Cron: "0 2 * * *", TimeZone: "Europe/Berlin", Input: "digest {{.FireTime}}",
		Params: json.RawMessage(`{"team":"ops"}`), Tools: []string{"read_file"}, Overlap: "buffer_one", PauseAfterFailures: 3,
		PreRun: &apitype.PreRunSpec{Tool: "fetch", Input: json.RawMessage(`{"q":1}`)}, Webhook: "ops",
	}
	specJSON := `"name":"nightly","agent":"digest","kind":"cron","cron":"0 2 * * *","timeZone":"Europe/Berlin","input":"digest {{.FireTime}}",` +
		`"params":{"team":"ops"},"tools":["read_file"],"overlap":"buffer_one","pauseAfterFailures":3,"preRun":{"tool":"fetch","input":{"q":1}},"webhook":"ops"`
	at := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		call   func(c *client.Client) (any, error)
		answer string
		want   sent
		result any
	}{
		{"CreateSchedule", func(c *client.Client) (any, error) {
			return c.CreateSchedule(ctx, &apitype.CreateScheduleParams{Owner: owner, ScheduleSpec: spec, IdempotencyKey: "k"})
		}, `{"scheduleId":"sch_1","status":"active","nextFireAt":"2026-11-28T02:00:00Z"}`,
			sent{"POST", "/v1/schedules", "", `{` + specJSON + `,"idempotencyKey":"k"}`},
			&apitype.ScheduleRead{ScheduleID: "sch_1", Status: runtype.ScheduleActive, NextFireAt: &at}},
		{"GetSchedule", func(c *client.Client) (any, error) {
			return c.GetSchedule(ctx, &apitype.ScheduleParams{Owner: owner, ScheduleID: "sch/1"})
		}, `{"scheduleId":"sch/1","fires":4}`,
			sent{"GET", "/v1/schedules/sch/1", "", ""}, &apitype.ScheduleRead{ScheduleID: "sch/1", Fires: 4}},
		{"ListSchedules", func(c *client.Client) (any, error) {
			return c.ListSchedules(ctx, &apitype.ListSchedulesParams{Owner: owner, Instance: "case/4711", Agent: "digest", Status: runtype.SchedulePaused, Cursor: "c1", Limit: 5})
		}, `{"schedules":[{"scheduleId":"sch_1"}],"nextCursor":"c2"}`,
			sent{"GET", "/v1/schedules", "agent=digest&cursor=c1&instance=case%2F4711&limit=5&status=paused", ""},
			&apitype.SchedulePage{Schedules: []apitype.ScheduleRead{{ScheduleID: "sch_1"}}, NextCursor: "c2"}},
		{"ListSchedules first page", func(c *client.Client) (any, error) {
			return c.ListSchedules(ctx, &apitype.ListSchedulesParams{})
		}, `{"schedules":[],"nextCursor":""}`,
			sent{"GET", "/v1/schedules", "", ""}, &apitype.SchedulePage{Schedules: []apitype.ScheduleRead{}}},
		{"UpdateSchedule", func(c *client.Client) (any, error) {
			return c.UpdateSchedule(ctx, &apitype.UpdateScheduleParams{Owner: owner, ScheduleID: "sch_1", ScheduleSpec: spec})
		}, `{"scheduleId":"sch_1","cron":"0 2 * * *"}`,
			sent{"PUT", "/v1/schedules/sch_1", "", `{` + specJSON + `}`}, &apitype.ScheduleRead{ScheduleID: "sch_1", ScheduleSpec: apitype.ScheduleSpec{Cron: "0 2 * * *"}}},
		{"PauseSchedule", func(c *client.Client) (any, error) {
			return c.PauseSchedule(ctx, &apitype.PauseScheduleParams{Owner: owner, ScheduleID: "sch_1", Reason: "maintenance"})
		}, `{"scheduleId":"sch_1","status":"paused","pausedReason":"operator"}`,
			sent{"POST", "/v1/schedules/sch_1/pause", "", `{"reason":"maintenance"}`},
			&apitype.ScheduleRead{ScheduleID: "sch_1", Status: runtype.SchedulePaused, PausedReason: "operator"}},
		{"ResumeSchedule", func(c *client.Client) (any, error) {
			return c.ResumeSchedule(ctx, &apitype.PauseScheduleParams{Owner: owner, ScheduleID: "sch_1"})
		}, `{"scheduleId":"sch_1","status":"active"}`,
			sent{"POST", "/v1/schedules/sch_1/resume", "", `{}`}, &apitype.ScheduleRead{ScheduleID: "sch_1", Status: runtype.ScheduleActive}},
		{"TriggerSchedule", func(c *client.Client) (any, error) {
			return c.TriggerSchedule(ctx, &apitype.TriggerScheduleParams{Owner: owner, ScheduleID: "sch_1", IdempotencyKey: "now"})
		}, `{"fireId":"fire_1","scheduleId":"sch_1","manual":true,"status":"running","taskId":"task_1"}`,
			sent{"POST", "/v1/schedules/sch_1/trigger", "", `{"idempotencyKey":"now"}`},
			&apitype.FireRead{FireID: "fire_1", ScheduleID: "sch_1", Manual: true, Status: runtype.FireRunning, TaskID: "task_1"}},
		{"DeleteSchedule", func(c *client.Client) (any, error) {
			return c.DeleteSchedule(ctx, &apitype.ScheduleParams{Owner: owner, ScheduleID: "sch_1"})
		}, `{"scheduleId":"sch_1","status":"deleted"}`,
			sent{"DELETE", "/v1/schedules/sch_1", "", ""}, &apitype.ScheduleRead{ScheduleID: "sch_1", Status: runtype.ScheduleDeleted}},
		{"ListFires", func(c *client.Client) (any, error) {
			return c.ListFires(ctx, &apitype.ListFiresParams{Owner: owner, ScheduleID: "sch_1", Status: runtype.FireMissed, Cursor: "c1", Limit: 20})
		}, `{"fires":[{"fireId":"fire_1","status":"missed","reason":"outside_catch_up","missedCount":3}],"nextCursor":""}`,
			sent{"GET", "/v1/schedules/sch_1/fires", "cursor=c1&limit=20&status=missed", ""},
			&apitype.FirePage{Fires: []apitype.FireRead{{FireID: "fire_1", Status: runtype.FireMissed, Reason: runtype.FireReasonMissed, MissedCount: 3}}}},
		{"RetryDelivery", func(c *client.Client) (any, error) {
			return c.RetryDelivery(ctx, &apitype.FireParams{Owner: owner, FireID: "fire_1"})
		}, `{"fireId":"fire_1","delivery":{"webhook":"ops","status":"pending","attempts":0}}`,
			sent{"POST", "/v1/fires/fire_1/retry-delivery", "", `{}`},
			&apitype.FireRead{FireID: "fire_1", Delivery: &apitype.DeliveryRead{Webhook: "ops", Status: runtype.DeliveryPending}}},
		{"ScheduleOverview", func(c *client.Client) (any, error) {
			return c.ScheduleOverview(ctx, &apitype.ScheduleOverviewParams{Owner: owner})
		}, `{"nextFires":[{"scheduleId":"sch_1"}],"failing":[]}`,
			sent{"GET", "/v1/schedules/overview", "", ""},
			&apitype.ScheduleOverview{NextFires: []apitype.ScheduleRead{{ScheduleID: "sch_1"}}, Failing: []apitype.ScheduleRead{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, c := newFake(t, func(int) string { return tt.answer })
			got, err := tt.call(c)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]sent{tt.want}, f.requests()); d != "" {
				t.Errorf("requests (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.result, got); d != "" {
				t.Errorf("result (-want +got):\n%s", d)
			}
		})
	}
}

// TestClientMirrorsSchedules: over a real server, each schedule method
// of the client returns what the Runtime's own method does (the reads
// compared after the commands acted), and each command acts.
func TestClientMirrorsSchedules(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := t.Context()
	owner := runtype.Owner{TenantID: apitype.DefaultTenant, PrincipalID: apitype.APIPrincipal}
	same := func(name string, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s over HTTP differs from the runtime's (-runtime +client):\n%s", name, d)
		}
	}
	spec := apitype.ScheduleSpec{Name: "hourly", Agent: "support", Kind: "interval", Every: "1h", Input: "digest"}
	sch, err := b.c.CreateSchedule(ctx, &apitype.CreateScheduleParams{ScheduleSpec: spec, IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.c.CreateSchedule(ctx, &apitype.CreateScheduleParams{ScheduleSpec: spec, IdempotencyKey: "k1"})
	if err != nil || again.ScheduleID != sch.ScheduleID {
		t.Errorf("CreateSchedule again with the key = %+v, %v; want %s", again, err, sch.ScheduleID)
	}
	ps := &apitype.ScheduleParams{Owner: owner, ScheduleID: sch.ScheduleID}
	want, _ := b.rt.GetSchedule(ctx, ps)
	got, err := b.c.GetSchedule(ctx, ps)
	same("GetSchedule", got, roundTrip(t, want), err)
	lp := &apitype.ListSchedulesParams{Owner: owner, Agent: "support", Status: runtype.ScheduleActive, Limit: 10}
	wantPage, _ := b.rt.ListSchedules(ctx, lp)
	gotPage, err := b.c.ListSchedules(ctx, lp)
	same("ListSchedules", gotPage, roundTrip(t, wantPage), err)

	spec.Every = "2h"
	upd, err := b.c.UpdateSchedule(ctx, &apitype.UpdateScheduleParams{ScheduleID: sch.ScheduleID, ScheduleSpec: spec})
	if every, perr := time.ParseDuration(upd.Every); err != nil || perr != nil || every != 2*time.Hour {
		t.Errorf("UpdateSchedule = %+v, %v; want every 2h", upd, err)
	}
	paused, err := b.c.PauseSchedule(ctx, &apitype.PauseScheduleParams{ScheduleID: sch.ScheduleID, Reason: "maintenance"})
	if err != nil || paused.Status != runtype.SchedulePaused {
		t.Errorf("PauseSchedule = %+v, %v; want paused", paused, err)
	}
	resumed, err := b.c.ResumeSchedule(ctx, &apitype.PauseScheduleParams{ScheduleID: sch.ScheduleID})
	if err != nil || resumed.Status != runtype.ScheduleActive {
		t.Errorf("ResumeSchedule = %+v, %v; want active", resumed, err)
	}
	fire, err := b.c.TriggerSchedule(ctx, &apitype.TriggerScheduleParams{ScheduleID: sch.ScheduleID, IdempotencyKey: "t1"})
	if err != nil || !fire.Manual {
		t.Fatalf("TriggerSchedule = %+v, %v; want a manual fire", fire, err)
	}
	fp := &apitype.ListFiresParams{Owner: owner, ScheduleID: sch.ScheduleID}
	wantFires, _ := b.rt.ListFires(ctx, fp)
	gotFires, err := b.c.ListFires(ctx, fp)
	same("ListFires", gotFires, roundTrip(t, wantFires), err)
	if len(gotFires.Fires) != 1 || gotFires.Fires[0].FireID != fire.FireID {
		t.Errorf("fires %+v, want the one triggered", gotFires.Fires)
	}
	wantOv, _ := b.rt.ScheduleOverview(ctx, &apitype.ScheduleOverviewParams{Owner: owner})
	gotOv, err := b.c.ScheduleOverview(ctx, &apitype.ScheduleOverviewParams{})
	same("ScheduleOverview", gotOv, roundTrip(t, wantOv), err)
	// The fire has no webhook: nothing to deliver again.
	if _, err := b.c.RetryDelivery(ctx, &apitype.FireParams{FireID: fire.FireID}); err == nil {
		t.Error("RetryDelivery of a fire without a delivery succeeded")
	}
	del, err := b.c.DeleteSchedule(ctx, &apitype.ScheduleParams{ScheduleID: sch.ScheduleID})
	if err != nil || del.Status != runtype.ScheduleDeleted {
		t.Errorf("DeleteSchedule = %+v, %v; want deleted", del, err)
	}
	want, _ = b.rt.GetSchedule(ctx, ps)
	got, err = b.c.GetSchedule(ctx, ps)
	same("GetSchedule after delete", got, roundTrip(t, want), err)
}
