package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds schedules: create, read, list, update, pause, resume,
// trigger and delete a schedule, list its fires (its history), retry a
// fire's delivery, and the overview of the tenant's schedules. See
// docs/schedules.md. A schedule is no one principal's: operators make
// and change them, and readers other than submitters read them.

// MaxSchedulesPage bounds the limit of GET /v1/schedules and
// GET /v1/schedules/{scheduleId}/fires.
const MaxSchedulesPage = 1000

func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request) {
	var req apitype.CreateScheduleRequest
	if !decodeBody(w, r, &req) || !idempotencyKey(w, r, &req.IdempotencyKey) {
		return
	}
	if req.Agent == "" {
		writeError(w, apitype.ProblemInvalidRequest, "agent is empty; name the agent each fire runs")
		return
	}
	if msg := checkScheduleSpec(&req.ScheduleSpec); msg != "" {
		writeError(w, apitype.ProblemInvalidRequest, msg)
		return
	}
	sch, err := s.rt.CreateSchedule(r.Context(), &apitype.CreateScheduleParams{
		Owner: owner(r), ScheduleSpec: req.ScheduleSpec, IdempotencyKey: req.IdempotencyKey,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/schedules/"+sch.ScheduleID)
	writeJSON(w, http.StatusCreated, sch)
}

// checkScheduleSpec is what is wrong with a spec that the edge can tell
// without the configuration, or "". The runtime checks the rest (the
// kind and its fields, the agent, the overrides, the webhook).
func checkScheduleSpec(sp *apitype.ScheduleSpec) string {
	switch {
	case len(sp.Name) > apitype.MaxScheduleNameBytes:
		return fmt.Sprintf("name is %d bytes; a name may be at most %d", len(sp.Name), apitype.MaxScheduleNameBytes)
	case len(sp.Input) > apitype.MaxScheduleInputBytes:
		return fmt.Sprintf("input is %d bytes; an input template may be at most %d", len(sp.Input), apitype.MaxScheduleInputBytes)
	case len(sp.Params) > apitype.MaxScheduleInputBytes:
		return fmt.Sprintf("params is %d bytes; params may be at most %d", len(sp.Params), apitype.MaxScheduleInputBytes)
	case sp.PauseAfterFailures < 0:
		return fmt.Sprintf("pauseAfterFailures %d is negative: want 0 (never pause) or more", sp.PauseAfterFailures)
	case sp.PreRun != nil && sp.PreRun.Tool == "":
		return "preRun.tool is empty; name the command tool to run before each fire, or leave preRun out"
	}
	for i, t := range sp.Tools {
		if t == "" {
			return fmt.Sprintf("tools[%d] is empty", i)
		}
	}
	return ""
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := pageLimit(w, q.Get("limit"))
	if !ok {
		return
	}
	status := runtype.ScheduleStatus(q.Get("status"))
	switch status {
	case StatusAll:
		status = ""
	case "", runtype.ScheduleActive, runtype.SchedulePaused, runtype.ScheduleDeleted:
	default:
		writeError(w, apitype.ProblemInvalidParameter, fmt.Sprintf("status %q is not a schedule status: want active, paused, deleted or all", status))
		return
	}
	page, err := s.rt.ListSchedules(r.Context(), &apitype.ListSchedulesParams{
		Owner: owner(r), Instance: q.Get("instance"), Agent: q.Get("agent"), Status: status,
		Cursor: q.Get("cursor"), Limit: limit,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	if page.Schedules == nil {
		page.Schedules = []apitype.ScheduleRead{}
	}
	writeJSON(w, http.StatusOK, page)
}

// pageLimit reads the limit of a schedules list: 0 (the default) to
// MaxSchedulesPage.
func pageLimit(w http.ResponseWriter, v string) (int, bool) {
	limit, ok := intParam(w, v, "limit")
	if ok && limit > MaxSchedulesPage {
		writeError(w, apitype.ProblemInvalidParameter, fmt.Sprintf("limit %d is more than %d", limit, MaxSchedulesPage))
		return 0, false
	}
	return limit, ok
}

func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) {
	s.scheduleAnswer(w, r, s.rt.GetSchedule)
}

func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	s.scheduleAnswer(w, r, s.rt.DeleteSchedule)
}

// scheduleAnswer answers the schedule of the path as do leaves it.
func (s *Server) scheduleAnswer(w http.ResponseWriter, r *http.Request, do func(context.Context, *apitype.ScheduleParams) (*apitype.ScheduleRead, error)) {
	sch, err := do(r.Context(), &apitype.ScheduleParams{Owner: owner(r), ScheduleID: r.PathValue("scheduleId")})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sch)
}

func (s *Server) updateSchedule(w http.ResponseWriter, r *http.Request) {
	var spec apitype.ScheduleSpec
	if !decodeBody(w, r, &spec) {
		return
	}
	if msg := checkScheduleSpec(&spec); msg != "" {
		writeError(w, apitype.ProblemInvalidRequest, msg)
		return
	}
	sch, err := s.rt.UpdateSchedule(r.Context(), &apitype.UpdateScheduleParams{
		Owner: owner(r), ScheduleID: r.PathValue("scheduleId"), ScheduleSpec: spec,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sch)
}

func (s *Server) pauseSchedule(w http.ResponseWriter, r *http.Request) {
	s.pauseOrResume(w, r, s.rt.PauseSchedule)
}

func (s *Server) resumeSchedule(w http.ResponseWriter, r *http.Request) {
	s.pauseOrResume(w, r, s.rt.ResumeSchedule)
}

// pauseOrResume answers a pause or resume: its body, a reason, is
// optional.
func (s *Server) pauseOrResume(w http.ResponseWriter, r *http.Request, do func(context.Context, *apitype.PauseScheduleParams) (*apitype.ScheduleRead, error)) {
	var req apitype.PauseScheduleRequest
	if r.ContentLength != 0 && !decodeBody(w, r, &req) {
		return
	}
	if len(req.Reason) > apitype.MaxScheduleNameBytes {
		writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("reason is %d bytes; a reason may be at most %d", len(req.Reason), apitype.MaxScheduleNameBytes))
		return
	}
	sch, err := do(r.Context(), &apitype.PauseScheduleParams{Owner: owner(r), ScheduleID: r.PathValue("scheduleId"), Reason: req.Reason})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sch)
}

// triggerSchedule answers 202 with the fire: it is recorded, and its run
// (if the overlap policy lets it start) goes on.
func (s *Server) triggerSchedule(w http.ResponseWriter, r *http.Request) {
	var req apitype.TriggerScheduleRequest
	if r.ContentLength != 0 && !decodeBody(w, r, &req) {
		return
	}
	if !idempotencyKey(w, r, &req.IdempotencyKey) {
		return
	}
	fire, err := s.rt.TriggerSchedule(r.Context(), &apitype.TriggerScheduleParams{
		Owner: owner(r), ScheduleID: r.PathValue("scheduleId"), IdempotencyKey: req.IdempotencyKey,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, fire)
}

func (s *Server) listFires(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := pageLimit(w, q.Get("limit"))
	if !ok {
		return
	}
	status := runtype.FireStatus(q.Get("status"))
	switch status {
	case StatusAll:
		status = ""
	case "", runtype.FireRunning, runtype.FireBuffered, runtype.FireSkipped, runtype.FireMissed,
		runtype.FireCompleted, runtype.FireFailed, runtype.FireCancelled:
	default:
		writeError(w, apitype.ProblemInvalidParameter, fmt.Sprintf("status %q is not a fire status: want %s or all", status, strings.Join(fireStatuses, ", ")))
		return
	}
	page, err := s.rt.ListFires(r.Context(), &apitype.ListFiresParams{
		Owner: owner(r), ScheduleID: r.PathValue("scheduleId"), Status: status, Cursor: q.Get("cursor"), Limit: limit,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	if page.Fires == nil {
		page.Fires = []apitype.FireRead{}
	}
	writeJSON(w, http.StatusOK, page)
}

// fireStatuses name the fire statuses, for messages.
var fireStatuses = []string{
	string(runtype.FireRunning), string(runtype.FireBuffered), string(runtype.FireSkipped), string(runtype.FireMissed),
	string(runtype.FireCompleted), string(runtype.FireFailed), string(runtype.FireCancelled),
}

func (s *Server) retryDelivery(w http.ResponseWriter, r *http.Request) {
	fire, err := s.rt.RetryDelivery(r.Context(), &apitype.FireParams{Owner: owner(r), FireID: r.PathValue("fireId")})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, fire)
}

func (s *Server) scheduleOverview(w http.ResponseWriter, r *http.Request) {
	ov, err := s.rt.ScheduleOverview(r.Context(), &apitype.ScheduleOverviewParams{Owner: owner(r)})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ov)
}
