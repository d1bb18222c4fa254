package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/runtype"
)

// TestScheduleRejects: the schedule routes answer bad input with a 4xx
// naming what is wrong, before the runtime does anything.
func TestScheduleRejects(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	const (
		list    = "/v1/schedules"
		one     = "/v1/schedules/sch_x"
		pause   = "/v1/schedules/sch_x/pause"
		trigger = "/v1/schedules/sch_x/trigger"
		fires   = "/v1/schedules/sch_x/fires"
		retry   = "/v1/fires/fire_x/retry-delivery"
	)
	valid := `"agent":"support","kind":"interval","every":"1h","input":"digest"`
	tests := []struct {
		name         string
		method, path string
		body         string
		header       map[string]string
		status       int
		kind         string
		words        []string
	}{
		{"create without a body", "POST", list, "", nil, 400, "invalid_json", []string{"empty"}},
		{"create with bad JSON", "POST", list, `{"agent":`, nil, 400, "invalid_json", nil},
		{"create with an unknown field", "POST", list, `{` + valid + `,"schedule":"daily"}`, nil, 400, "invalid_json", []string{"schedule"}},
		{"create with a wrong type", "POST", list, `{"agent":"support","kind":"interval","every":"1h","input":"x","pauseAfterFailures":"3"}`, nil, 400, "invalid_json", []string{"pauseAfterFailures"}},
		{"create with tools not a list", "POST", list, `{` + valid + `,"tools":"read_file"}`, nil, 400, "invalid_json", []string{"tools"}},
		{"create with two values", "POST", list, `{` + valid + `} {}`, nil, 400, "invalid_json", []string{"more than one"}},
		{"create without an agent", "POST", list, `{"kind":"interval","every":"1h","input":"x"}`, nil, 400, "invalid_request", []string{"agent is empty"}},
		{"create with a long name", "POST", list, `{` + valid + `,"name":"` + strings.Repeat("n", apitype.MaxScheduleNameBytes+1) + `"}`, nil, 400, "invalid_request", []string{"name is 201 bytes", "at most 200"}},
		{"create with a big input", "POST", list, `{"agent":"support","kind":"once","at":"2030-01-01T00:00:00Z","input":"` + strings.Repeat("x", apitype.MaxScheduleInputBytes+1) + `"}`, nil, 400, "invalid_request", []string{"input is 65537 bytes", "65536"}},
		{"create with negative pause", "POST", list, `{` + valid + `,"pauseAfterFailures":-1}`, nil, 400, "invalid_request", []string{"pauseAfterFailures -1"}},
		{"create with an empty tool", "POST", list, `{` + valid + `,"tools":["read_file",""]}`, nil, 400, "invalid_request", []string{"tools[1] is empty"}},
		{"create with a pre-run without tool", "POST", list, `{` + valid + `,"preRun":{"input":{}}}`, nil, 400, "invalid_request", []string{"preRun.tool is empty"}},
		{"create with two keys", "POST", list, `{` + valid + `,"idempotencyKey":"a"}`, map[string]string{"Idempotency-Key": "b"}, 400, "invalid_request", []string{"Idempotency-Key"}},
		{"create as text", "POST", list, `agent=support`, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type", nil},
		{"create over 2 MiB", "POST", list, `{` + valid + `,"name":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}`, nil, 413, "body_too_large", []string{fmt.Sprint(httpapi.MaxBodyBytes)}},
		{"update with an unknown field", "PUT", one, `{` + valid + `,"idempotencyKey":"k"}`, nil, 400, "invalid_json", []string{"idempotencyKey"}},
		{"update with negative pause", "PUT", one, `{` + valid + `,"pauseAfterFailures":-2}`, nil, 400, "invalid_request", []string{"pauseAfterFailures -2"}},
		{"update without a body", "PUT", one, "", nil, 400, "invalid_json", []string{"empty"}},
		{"pause with an unknown field", "POST", pause, `{"why":"x"}`, nil, 400, "invalid_json", []string{"why"}},
		{"pause with a reason not text", "POST", pause, `{"reason":5}`, nil, 400, "invalid_json", []string{"reason"}},
		{"pause with a long reason", "POST", pause, `{"reason":"` + strings.Repeat("r", 201) + `"}`, nil, 400, "invalid_request", []string{"reason is 201 bytes"}},
		{"resume with bad JSON", "POST", "/v1/schedules/sch_x/resume", `{`, nil, 400, "invalid_json", nil},
		{"trigger with an unknown field", "POST", trigger, `{"at":"now"}`, nil, 400, "invalid_json", []string{"at"}},
		{"trigger with two keys", "POST", trigger, `{"idempotencyKey":"a"}`, map[string]string{"Idempotency-Key": "b"}, 400, "invalid_request", []string{"Idempotency-Key"}},
		{"list by a bad status", "GET", list + "?status=sleeping", "", nil, 400, "invalid_parameter", []string{`status "sleeping"`, "active, paused, deleted"}},
		{"list a negative limit", "GET", list + "?limit=-1", "", nil, 400, "invalid_parameter", []string{"limit"}},
		{"list a limit that is no number", "GET", list + "?limit=ten", "", nil, 400, "invalid_parameter", []string{`"ten"`}},
		{"list too many", "GET", list + "?limit=1001", "", nil, 400, "invalid_parameter", []string{"limit 1001", "1000"}},
		{"fires of a bad status", "GET", fires + "?status=ok", "", nil, 400, "invalid_parameter", []string{`status "ok"`, "missed"}},
		{"fires too many", "GET", fires + "?limit=5000", "", nil, 400, "invalid_parameter", []string{"limit 5000"}},
		{"fires a bad limit", "GET", fires + "?limit=1.5", "", nil, 400, "invalid_parameter", []string{"limit"}},
		{"a schedule with PATCH", "PATCH", one, `{}`, nil, 405, "method_not_allowed", []string{"GET, HEAD, PUT, DELETE"}},
		{"retry-delivery with GET", "GET", retry, "", nil, 405, "method_not_allowed", []string{"POST"}},
		{"fires with POST", "POST", fires, `{}`, nil, 405, "method_not_allowed", []string{"GET"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := b.do(t, call{method: tt.method, path: tt.path, body: tt.body, header: tt.header})
			wantError(t, resp, body, tt.status, tt.kind, tt.words...)
		})
	}
}

// TestScheduleRoles: operators change schedules and readers other than
// submitters read them; a schedule is no one principal's, so a
// submitter neither reads nor changes one.
func TestScheduleRoles(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	viewer := b.as(t, apitype.DefaultTenant, "vera", runtype.APIRoleViewer)
	sam := b.as(t, apitype.DefaultTenant, "sam", runtype.APIRoleSubmitter)
	changes := []call{
		{method: "POST", path: "/v1/schedules", body: `{"agent":"support","kind":"interval","every":"1h","input":"x"}`},
		{method: "PUT", path: "/v1/schedules/sch_x", body: `{"agent":"support","kind":"interval","every":"1h","input":"x"}`},
		{method: "DELETE", path: "/v1/schedules/sch_x"},
		{method: "POST", path: "/v1/schedules/sch_x/pause"},
		{method: "POST", path: "/v1/schedules/sch_x/resume"},
		{method: "POST", path: "/v1/schedules/sch_x/trigger"},
		{method: "POST", path: "/v1/fires/fire_x/retry-delivery"},
	}
	reads := []call{
		{method: "GET", path: "/v1/schedules"},
		{method: "GET", path: "/v1/schedules/overview"},
		{method: "GET", path: "/v1/schedules/sch_x"},
		{method: "GET", path: "/v1/schedules/sch_x/fires"},
	}
	for _, c := range changes {
		resp, body := viewer.do(t, c)
		wantError(t, resp, body, http.StatusForbidden, "forbidden", "role viewer", "admin or operator")
	}
	for _, c := range append(changes, reads...) {
		resp, body := sam.do(t, c)
		wantError(t, resp, body, http.StatusForbidden, "forbidden", "role submitter")
	}
}

// TestSchedulesOverHTTP: a schedule made over HTTP answers 201 with its
// Location; it is read, listed (filtered), updated, paused, resumed and
// triggered (202 with the fire, in its history), and deleted, after which
// it is still read, deleted; another tenant sees none of it, and a fire
// without a failed delivery cannot be retried.
func TestSchedulesOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	var sch apitype.ScheduleRead
	resp, raw := b.do(t, call{method: "POST", path: "/v1/schedules", body: `{"name":"hourly","agent":"support","kind":"interval","every":"1h","input":"digest","pauseAfterFailures":3}`})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d %s, want 201", resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, &sch); err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Header.Get("Location"), "/v1/schedules/"+sch.ScheduleID; got != want || !strings.HasPrefix(sch.ScheduleID, runtype.PrefixSchedule) {
		t.Errorf("Location %q, id %q; want %s", got, sch.ScheduleID, want)
	}
	if sch.Status != runtype.ScheduleActive || sch.Name != "hourly" || sch.NextFireAt == nil {
		t.Errorf("created %+v, want it active, named, with a next fire", sch)
	}
	path := "/v1/schedules/" + sch.ScheduleID
	var got apitype.ScheduleRead
	b.getJSON(t, call{path: path}, http.StatusOK, &got)
	if got.ScheduleID != sch.ScheduleID {
		t.Errorf("get = %+v", got)
	}
	var page apitype.SchedulePage
	b.getJSON(t, call{path: "/v1/schedules?agent=support&status=active"}, http.StatusOK, &page)
	if len(page.Schedules) != 1 || page.Schedules[0].ScheduleID != sch.ScheduleID {
		t.Errorf("list = %+v, want the one", page.Schedules)
	}
	b.getJSON(t, call{path: "/v1/schedules?status=paused"}, http.StatusOK, &page)
	if len(page.Schedules) != 0 {
		t.Errorf("paused ones = %+v, want none", page.Schedules)
	}
	var upd apitype.ScheduleRead
	b.getJSON(t, call{method: "PUT", path: path, body: `{"name":"two-hourly","agent":"support","kind":"interval","every":"2h","input":"digest"}`}, http.StatusOK, &upd)
	if every, err := time.ParseDuration(upd.Every); err != nil || every != 2*time.Hour || upd.Name != "two-hourly" || upd.PauseAfterFailures != 0 {
		t.Errorf("updated = %+v, want every 2h, renamed, never pausing", upd)
	}
	b.getJSON(t, call{method: "POST", path: path + "/pause", body: `{"reason":"maintenance"}`}, http.StatusOK, &got)
	if got.Status != runtype.SchedulePaused {
		t.Errorf("paused = %+v", got)
	}
	b.getJSON(t, call{method: "POST", path: path + "/resume"}, http.StatusOK, &got)
	if got.Status != runtype.ScheduleActive {
		t.Errorf("resumed = %+v", got)
	}
	var fire apitype.FireRead
	b.getJSON(t, call{method: "POST", path: path + "/trigger", body: `{"idempotencyKey":"now-1"}`}, http.StatusAccepted, &fire)
	if !fire.Manual || fire.ScheduleID != sch.ScheduleID {
		t.Errorf("fire = %+v, want a manual fire of the schedule", fire)
	}
	var again apitype.FireRead
	b.getJSON(t, call{method: "POST", path: path + "/trigger", header: map[string]string{"Idempotency-Key": "now-1"}}, http.StatusAccepted, &again)
	if again.FireID != fire.FireID {
		t.Errorf("the same key made fire %s, then %s", fire.FireID, again.FireID)
	}
	var fires apitype.FirePage
	b.getJSON(t, call{path: path + "/fires"}, http.StatusOK, &fires)
	if len(fires.Fires) != 1 || fires.Fires[0].FireID != fire.FireID {
		t.Errorf("fires = %+v, want the one", fires.Fires)
	}
	resp, raw = b.do(t, call{method: "POST", path: "/v1/fires/" + fire.FireID + "/retry-delivery"})
	wantError(t, resp, raw, http.StatusConflict, "conflict")

	other := b.as(t, "tenant_other", "olga", runtype.APIRoleOperator)
	resp, raw = other.do(t, call{method: "GET", path: path})
	wantError(t, resp, raw, http.StatusNotFound, "not_found", "not found: schedule "+sch.ScheduleID)
	other.getJSON(t, call{path: "/v1/schedules"}, http.StatusOK, &page)
	if len(page.Schedules) != 0 {
		t.Errorf("another tenant lists %+v", page.Schedules)
	}

	b.getJSON(t, call{method: "DELETE", path: path}, http.StatusOK, &got)
	if got.Status != runtype.ScheduleDeleted {
		t.Errorf("deleted = %+v", got)
	}
	b.getJSON(t, call{path: path}, http.StatusOK, &got)
	if got.Status != runtype.ScheduleDeleted {
		t.Errorf("read after delete = %+v", got)
	}
}
