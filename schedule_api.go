package agentrt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/schedule"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// This file holds the control plane of schedules (docs/schedules.md):
// each mutation reads the schedule, changes it and writes it back
// conditional on the version it read (retrying when another process or
// a fire's end changed it meanwhile), with its event in the same batch.

// Bounds of a schedule's spec.
const (
	maxCatchupWindow     = 7 * 24 * time.Hour
	maxPauseAfter        = 1000
	maxScheduleOverrides = 64 // tools an override may name
)

// CreateSchedule records a schedule; its first fire is due at its spec's
// first time after now. It is idempotent on IdempotencyKey.
func (rt *Runtime) CreateSchedule(ctx context.Context, p *apitype.CreateScheduleParams) (*apitype.ScheduleRead, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	if err := checkKey(p.IdempotencyKey); err != nil {
		return nil, err
	}
	return rt.createSchedule(ctx, p)
}

func (rt *Runtime) createSchedule(ctx context.Context, p *apitype.CreateScheduleParams) (*apitype.ScheduleRead, error) {
	owner := ownerOrDefault(p.Owner)
	if p.IdempotencyKey != "" {
		got, err := rt.store.ScheduleList(ctx, &store.ScheduleListParams{TenantID: owner.TenantID, IdempotencyKey: p.IdempotencyKey, Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("reading schedules: %w", err)
		}
		if len(got) > 0 {
			return rt.scheduleRead(got[0]), nil
		}
	}
	now := rt.cfg.Now().UTC()
	s := &runtype.Schedule{ID: rt.ids.New(runtype.PrefixSchedule), Owner: owner, Status: runtype.ScheduleActive,
		IdempotencyKey: p.IdempotencyKey, TraceID: rt.ids.TraceID(), CreatedAt: now, UpdatedAt: now}
	if err := rt.applySpec(s, &p.ScheduleSpec, now); err != nil {
		return nil, err
	}
	b := &store.Batch{}
	if s.Instance != "" {
		// The instance owns the schedule: its fires run on the
		// instance's session.
		in, err := rt.instanceByName(ctx, owner, s.Instance)
		if err != nil {
			return nil, err
		}
		if in.Agent != s.Agent {
			return nil, invalid("instance", "instance %s belongs to agent %q, not %q", in.Name, in.Agent, s.Agent)
		}
		s.SessionID = in.SessionID
		b.Events = append(b.Events, rt.scheduleEvent(event.JobCreated, s, "", nil))
	} else {
		s.SessionID = rt.ids.New(runtype.PrefixSession)
		sess := &runtype.Session{ID: s.SessionID, Owner: owner, Agent: s.Agent, Title: "schedule " + cmpOrID(s.Name, s.ID), CreatedAt: now, UpdatedAt: now}
		thr := &runtype.Thread{ID: rt.ids.New(runtype.PrefixThread), SessionID: s.SessionID, Owner: owner, CreatedAt: now}
		b.Sessions, b.Threads = []*runtype.Session{sess}, []*runtype.Thread{thr}
		ids := &runtype.Turn{SessionID: s.SessionID, ThreadID: thr.ID, Owner: owner, TraceID: s.TraceID}
		b.Events = append(b.Events,
			rt.turnEvent(event.SessionCreated, ids, "", &event.SessionPayload{Agent: s.Agent, Title: sess.Title}),
			rt.turnEvent(event.ThreadStarted, ids, "", &event.ThreadPayload{Agent: s.Agent}),
			rt.scheduleEvent(event.JobCreated, s, "", nil),
		)
	}
	b.Schedules = []*runtype.Schedule{s}
	if err := rt.writer.Write(ctx, b); err != nil {
		if errors.Is(err, store.ErrConflict) && p.IdempotencyKey != "" {
			// The same key, created meanwhile by another call.
			got, lerr := rt.store.ScheduleList(ctx, &store.ScheduleListParams{TenantID: owner.TenantID, IdempotencyKey: p.IdempotencyKey, Limit: 1})
			if lerr == nil && len(got) > 0 {
				return rt.scheduleRead(got[0]), nil
			}
		}
		return nil, fmt.Errorf("recording the schedule: %w", err)
	}
	s.Version = 1
	rt.kickScheduler()
	return rt.scheduleRead(s), nil
}

// checkKey checks a caller's idempotency key.
func checkKey(key string) error {
	if key == "" {
		return nil
	}
	if err := runtype.ValidateCallerID("idempotencyKey", key); err != nil {
		return invalid("idempotencyKey", "%s", err)
	}
	return nil
}

func cmpOrID(name, id string) string {
	if name != "" {
		return name
	}
	return id
}

// declaredKey is the idempotency key of a schedule agentrt.yaml declares.
func declaredKey(name string) string { return "config:" + name }

// declareSchedules makes the declared schedules (Config.Schedules) exist
// as declared: each is created once, by its name, and updated when its
// declaration changed.
func (rt *Runtime) declareSchedules(ctx context.Context) error {
	for i := range rt.cfg.Schedules {
		spec := rt.cfg.Schedules[i]
		key := declaredKey(spec.Name)
		got, err := rt.store.ScheduleList(ctx, &store.ScheduleListParams{TenantID: apitype.DefaultTenant, IdempotencyKey: key, Limit: 1})
		if err != nil {
			return fmt.Errorf("reading schedule %s: %w", spec.Name, err)
		}
		if len(got) == 0 {
			if spec.Instance != "" {
				// A declared instance's schedule makes its instance (with the
				// agent's initial state) when it has none yet.
				if _, err := rt.instanceByName(ctx, runtype.Owner{}, spec.Instance); errors.Is(err, apitype.ErrNotFound) {
					if _, err := rt.createInstance(ctx, ownerOrDefault(runtype.Owner{}), spec.Instance, spec.Agent); err != nil {
						return fmt.Errorf("schedule %s: instance %s: %w", spec.Name, spec.Instance, err)
					}
				}
			}
			if _, err := rt.createSchedule(ctx, &apitype.CreateScheduleParams{ScheduleSpec: spec, IdempotencyKey: key}); err != nil {
				return fmt.Errorf("schedule %s: %w", spec.Name, err)
			}
			continue
		}
		old := got[0]
		if old.Status == runtype.ScheduleDeleted {
			continue // deleted by an operator: it stays deleted
		}
		probe := *old
		if err := rt.applySpec(&probe, &spec, rt.cfg.Now().UTC()); err != nil {
			return fmt.Errorf("schedule %s: %w", spec.Name, err)
		}
		if len(changedFields(old, &probe)) == 0 {
			continue
		}
		if _, err := rt.UpdateSchedule(ctx, &apitype.UpdateScheduleParams{ScheduleID: old.ID, ScheduleSpec: spec}); err != nil {
			return fmt.Errorf("schedule %s: %w", spec.Name, err)
		}
	}
	return nil
}

// applySpec validates spec and sets s's spec fields from it, and its next
// fire from now. Errors are *apitype.InvalidError naming the field.
func (rt *Runtime) applySpec(s *runtype.Schedule, spec *apitype.ScheduleSpec, now time.Time) error {
	if len(spec.Name) > apitype.MaxScheduleNameBytes {
		return invalid("name", "is %d bytes, more than the limit of %d", len(spec.Name), apitype.MaxScheduleNameBytes)
	}
	a, ok := rt.agents[spec.Agent]
	switch {
	case spec.Agent == "":
		return invalid("agent", "required")
	case !ok || spec.Agent != baseAgent(spec.Agent):
		return invalid("agent", "unknown agent %q", spec.Agent)
	}
	sp := schedule.Spec{Kind: schedule.Kind(spec.Kind), Cron: spec.Cron, TimeZone: spec.TimeZone}
	var err error
	if sp.Every, err = parseDuration("every", spec.Every); err != nil {
		return err
	}
	if sp.At, err = parseTime("at", spec.At); err != nil {
		return err
	}
	if sp.Start, err = parseTime("start", spec.Start); err != nil {
		return err
	}
	parsed, err := schedule.Parse(sp)
	if err != nil {
		return invalid(specField(spec.Kind, err), "%v", err)
	}
	overlap, err := schedule.ParseOverlap(spec.Overlap)
	if err != nil {
		return invalid("overlap", "%v", err)
	}
	inactivity, err := parseDuration("inactivityTimeout", spec.InactivityTimeout)
	if err != nil {
		return err
	}
	catchup, err := parseDuration("catchupWindow", spec.CatchupWindow)
	if err != nil {
		return err
	}
	switch {
	case catchup > maxCatchupWindow:
		return invalid("catchupWindow", "%s is more than the limit of %s", catchup, maxCatchupWindow)
	case spec.PauseAfterFailures < 0 || spec.PauseAfterFailures > maxPauseAfter:
		return invalid("pauseAfterFailures", "%d is out of range: use 0 (never) to %d", spec.PauseAfterFailures, maxPauseAfter)
	}
	params, err := rt.checkInput(spec)
	if err != nil {
		return err
	}
	if spec.Model != "" && !slices.ContainsFunc(a.Candidates, func(c *model.Candidate) bool { return c.Name == spec.Model }) {
		return invalid("model", "agent %s has no model %q", spec.Agent, spec.Model)
	}
	if len(spec.Tools) > maxScheduleOverrides {
		return invalid("tools", "%d tools are more than the limit of %d", len(spec.Tools), maxScheduleOverrides)
	}
	for _, name := range spec.Tools {
		if !slices.ContainsFunc(a.Tools, func(t tool.Tool) bool { return t.Spec().Name == name }) {
			return invalid("tools", "agent %s has no tool %q", spec.Agent, name)
		}
	}
	var preTool, preInput string
	if pr := spec.PreRun; pr != nil {
		i := slices.IndexFunc(a.Tools, func(t tool.Tool) bool { return t.Spec().Name == pr.Tool })
		switch {
		case pr.Tool == "":
			return invalid("preRun.tool", "required")
		case i < 0:
			return invalid("preRun.tool", "agent %s has no tool %q", spec.Agent, pr.Tool)
		case a.Tools[i].Spec().Source != "command":
			return invalid("preRun.tool", "%s is not a command tool (a pre-run script must be one, to run sandboxed)", pr.Tool)
		}
		preTool, preInput = pr.Tool, string(cmpRaw(pr.Input, `{}`))
		if err := rt.registry.Validate(pr.Tool, json.RawMessage(preInput)); err != nil {
			return invalid("preRun.input", "%v", err)
		}
	}
	if _, ok := rt.cfg.Webhooks[spec.Webhook]; spec.Webhook != "" && !ok {
		return invalid("webhook", "no webhook %q is configured", spec.Webhook)
	}
	s.Name, s.Agent, s.Instance = spec.Name, spec.Agent, spec.Instance
	s.Kind, s.Cron, s.TimeZone, s.Every, s.At, s.Start = string(sp.Kind), sp.Cron, sp.TimeZone, sp.Every, sp.At, sp.Start
	s.Input, s.Params, s.InputSchema = spec.Input, params, string(spec.InputSchema)
	s.Model, s.Tools, s.InactivityTimeout = spec.Model, slices.Clone(spec.Tools), inactivity
	s.Overlap, s.CatchupWindow, s.PauseAfterFailures = string(overlap), catchup, spec.PauseAfterFailures
	s.PreRunTool, s.PreRunInput, s.Webhook = preTool, preInput, spec.Webhook
	s.NextFireAt = parsed.Next(now)
	if s.NextFireAt.IsZero() && sp.Kind == schedule.KindOnce {
		return invalid("at", "%s has passed", sp.At.Format(time.RFC3339))
	}
	if s.Status == runtype.ScheduleActive && (s.NextCheckAt.IsZero() || s.NextFireAt.Before(s.NextCheckAt)) {
		s.NextCheckAt = s.NextFireAt
	}
	return nil
}

// specField is the field a schedule.Parse error is about: its message
// starts with the field's name.
func specField(kind string, err error) string {
	msg := err.Error()
	for _, f := range []string{"kind", "cron", "timeZone", "every", "at", "start"} {
		if len(msg) > len(f) && msg[:len(f)] == f && msg[len(f)] == ':' {
			return f
		}
	}
	if kind == "" {
		return "kind"
	}
	return "kind"
}

// checkInput checks a spec's input template, params and input schema,
// and renders the template once as a fire would, so that a fire never
// finds it broken. It returns the params as stored (compact JSON).
func (rt *Runtime) checkInput(spec *apitype.ScheduleSpec) (string, error) {
	switch {
	case spec.Input == "":
		return "", invalid("input", "required")
	case len(spec.Input) > apitype.MaxScheduleInputBytes:
		return "", invalid("input", "is %d bytes, more than the limit of %d", len(spec.Input), apitype.MaxScheduleInputBytes)
	case len(spec.Params) > apitype.MaxScheduleInputBytes:
		return "", invalid("params", "is %d bytes, more than the limit of %d", len(spec.Params), apitype.MaxScheduleInputBytes)
	case len(spec.InputSchema) > apitype.MaxScheduleInputBytes:
		return "", invalid("inputSchema", "is %d bytes, more than the limit of %d", len(spec.InputSchema), apitype.MaxScheduleInputBytes)
	}
	if _, err := parseInput(spec.Input); err != nil {
		return "", invalid("input", "not a template: %v", err)
	}
	params := cmpRaw(spec.Params, `{}`)
	var obj map[string]any
	if err := json.Unmarshal(params, &obj); err != nil || obj == nil {
		return "", invalid("params", "must be a JSON object")
	}
	if len(spec.InputSchema) > 0 {
		schema, err := tool.CompileSchema("inputSchema", spec.InputSchema)
		if err != nil {
			return "", invalid("inputSchema", "%v", err)
		}
		if err := schema.Check(params); err != nil {
			return "", invalid("params", "do not match the input schema: %v", err)
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, params); err != nil {
		return "", invalid("params", "%v", err)
	}
	probe := &runtype.Schedule{ID: "sch_probe", Name: spec.Name, Input: spec.Input, Params: compact.String()}
	if _, err := renderInput(probe, &runtype.Fire{FireAt: time.Unix(0, 0)}); err != nil {
		return "", invalid("input", "%v", err)
	}
	return compact.String(), nil
}

func cmpRaw(raw json.RawMessage, def string) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return json.RawMessage(def)
	}
	return raw
}

func parseDuration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, invalid(field, "not a duration (use e.g. 90s, 15m, 2h): %q", s)
	}
	if d < 0 {
		return 0, invalid(field, "must not be negative")
	}
	return d, nil
}

func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, invalid(field, "not an RFC 3339 time (e.g. 2026-12-01T09:00:00Z): %q", s)
	}
	return t.UTC(), nil
}

// GetSchedule reads a schedule.
func (rt *Runtime) GetSchedule(ctx context.Context, p *apitype.ScheduleParams) (*apitype.ScheduleRead, error) {
	s, err := rt.store.ScheduleGet(ctx, &store.ScheduleGetParams{TenantID: ownerOrDefault(p.Owner).TenantID, ID: p.ScheduleID})
	if err != nil {
		return nil, fmt.Errorf("reading schedule %s: %w", p.ScheduleID, err)
	}
	return rt.scheduleRead(s), nil
}

// ListSchedules lists the tenant's schedules, oldest first.
func (rt *Runtime) ListSchedules(ctx context.Context, p *apitype.ListSchedulesParams) (*apitype.SchedulePage, error) {
	q := &store.ScheduleListParams{TenantID: ownerOrDefault(p.Owner).TenantID, Instance: p.Instance, Agent: p.Agent,
		AfterID: p.Cursor, Limit: store.ClampLimit(p.Limit)}
	if p.Status != "" {
		switch p.Status {
		case runtype.ScheduleActive, runtype.SchedulePaused, runtype.ScheduleDeleted:
		default:
			return nil, invalid("status", "unknown status %q: use active, paused or deleted", p.Status)
		}
		q.Statuses = []runtype.ScheduleStatus{p.Status}
	}
	list, err := rt.store.ScheduleList(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("listing schedules: %w", err)
	}
	page := &apitype.SchedulePage{Schedules: make([]apitype.ScheduleRead, len(list))}
	for i, s := range list {
		page.Schedules[i] = *rt.scheduleRead(s)
	}
	if len(list) == q.Limit {
		page.NextCursor = list[len(list)-1].ID
	}
	return page, nil
}

// UpdateSchedule replaces a schedule's spec (its agent and instance
// stay); its next fire is computed anew from now.
func (rt *Runtime) UpdateSchedule(ctx context.Context, p *apitype.UpdateScheduleParams) (*apitype.ScheduleRead, error) {
	return rt.changeSchedule(ctx, p.Owner, p.ScheduleID, func(s *runtype.Schedule, b *store.Batch, now time.Time) error {
		if s.Status == runtype.ScheduleDeleted {
			return fmt.Errorf("%w: schedule %s was deleted", apitype.ErrConflict, s.ID)
		}
		spec := p.ScheduleSpec
		if spec.Agent == "" {
			spec.Agent = s.Agent
		}
		switch {
		case spec.Agent != s.Agent:
			return invalid("agent", "a schedule's agent cannot change (it is %s): delete it and create another", s.Agent)
		case spec.Instance != "" && spec.Instance != s.Instance:
			return invalid("instance", "a schedule's instance cannot change")
		}
		spec.Instance = s.Instance
		before := *s
		s.NextCheckAt = time.Time{}
		if err := rt.applySpec(s, &spec, now); err != nil {
			return err
		}
		if s.Status != runtype.ScheduleActive || (!before.NextCheckAt.IsZero() && before.NextCheckAt.Before(s.NextCheckAt)) {
			s.NextCheckAt = before.NextCheckAt // a delivery or an ended fire still to look at
		}
		e := rt.scheduleEvent(event.JobProgress, s, "updated", nil)
		e.Payload.(*event.JobPayload).Schedule.Changed = changedFields(&before, s)
		b.Events = append(b.Events, e)
		return nil
	})
}

// changedFields names the spec fields that differ between a and b.
func changedFields(a, b *runtype.Schedule) []string {
	var out []string
	add := func(name string, differ bool) {
		if differ {
			out = append(out, name)
		}
	}
	add("name", a.Name != b.Name)
	add("kind", a.Kind != b.Kind)
	add("cron", a.Cron != b.Cron)
	add("timeZone", a.TimeZone != b.TimeZone)
	add("every", a.Every != b.Every)
	add("at", !a.At.Equal(b.At))
	add("input", a.Input != b.Input)
	add("params", a.Params != b.Params)
	add("inputSchema", a.InputSchema != b.InputSchema)
	add("model", a.Model != b.Model)
	add("tools", !slices.Equal(a.Tools, b.Tools))
	add("inactivityTimeout", a.InactivityTimeout != b.InactivityTimeout)
	add("overlap", a.Overlap != b.Overlap)
	add("catchupWindow", a.CatchupWindow != b.CatchupWindow)
	add("pauseAfterFailures", a.PauseAfterFailures != b.PauseAfterFailures)
	add("preRun", a.PreRunTool != b.PreRunTool || a.PreRunInput != b.PreRunInput)
	add("webhook", a.Webhook != b.Webhook)
	return out
}

// PauseSchedule stops a schedule firing; fires that run go on.
func (rt *Runtime) PauseSchedule(ctx context.Context, p *apitype.PauseScheduleParams) (*apitype.ScheduleRead, error) {
	return rt.changeSchedule(ctx, p.Owner, p.ScheduleID, func(s *runtype.Schedule, b *store.Batch, now time.Time) error {
		switch s.Status {
		case runtype.ScheduleDeleted:
			return fmt.Errorf("%w: schedule %s was deleted", apitype.ErrConflict, s.ID)
		case runtype.SchedulePaused:
			return errUnchanged
		}
		s.Status, s.PausedReason = runtype.SchedulePaused, PausedOperator
		b.Events = append(b.Events, rt.scheduleEvent(event.JobProgress, s, reasonText(PausedOperator, p.Reason), nil))
		return nil
	})
}

// ResumeSchedule makes a paused schedule fire again from now: fires due
// while it was paused are not run (nor recorded missed), and its count
// of failures starts again.
func (rt *Runtime) ResumeSchedule(ctx context.Context, p *apitype.PauseScheduleParams) (*apitype.ScheduleRead, error) {
	return rt.changeSchedule(ctx, p.Owner, p.ScheduleID, func(s *runtype.Schedule, b *store.Batch, now time.Time) error {
		switch s.Status {
		case runtype.ScheduleDeleted:
			return fmt.Errorf("%w: schedule %s was deleted", apitype.ErrConflict, s.ID)
		case runtype.ScheduleActive:
			return errUnchanged
		}
		sp, err := schedule.Parse(specOf(s))
		if err != nil {
			return fmt.Errorf("schedule %s: %w", s.ID, err)
		}
		s.Status, s.PausedReason, s.ConsecutiveFailures = runtype.ScheduleActive, "", 0
		s.NextFireAt = sp.Next(now)
		// Now: buffered fires may start.
		s.NextCheckAt = now
		b.Events = append(b.Events, rt.scheduleEvent(event.JobProgress, s, reasonText("resumed", p.Reason), nil))
		return nil
	})
}

func reasonText(code, text string) string {
	if text == "" {
		return code
	}
	return code + ": " + preview(text, 500)
}

// TriggerSchedule fires a schedule now (a manual fire; the overlap
// policy applies). It is idempotent on IdempotencyKey.
func (rt *Runtime) TriggerSchedule(ctx context.Context, p *apitype.TriggerScheduleParams) (*apitype.FireRead, error) {
	if !rt.running() {
		return nil, apitype.ErrStopped
	}
	owner := ownerOrDefault(p.Owner)
	if err := checkKey(p.IdempotencyKey); err != nil {
		return nil, err
	}
	byKey := func() (*apitype.FireRead, error) {
		got, err := rt.store.FireList(ctx, &store.FireListParams{TenantID: owner.TenantID, ScheduleID: p.ScheduleID, IdempotencyKey: p.IdempotencyKey, Limit: 1})
		if err != nil || len(got) == 0 {
			return nil, err
		}
		return rt.fireRead(got[0], ""), nil
	}
	if p.IdempotencyKey != "" {
		if f, err := byKey(); err != nil || f != nil {
			return f, err
		}
	}
	for range 5 {
		s, err := rt.store.ScheduleGet(ctx, &store.ScheduleGetParams{TenantID: owner.TenantID, ID: p.ScheduleID})
		if err != nil {
			return nil, fmt.Errorf("reading schedule %s: %w", p.ScheduleID, err)
		}
		if s.Status == runtype.ScheduleDeleted {
			return nil, fmt.Errorf("%w: schedule %s was deleted", apitype.ErrConflict, s.ID)
		}
		now := rt.cfg.Now().UTC()
		t, err := rt.planTick(ctx, s, now)
		if err != nil {
			return nil, err
		}
		f := t.newFire(now, true, "")
		f.IdempotencyKey = p.IdempotencyKey
		if err := t.arrive(f); err != nil {
			return nil, err
		}
		t.sched.NextCheckAt = t.nextCheck()
		err = rt.writer.Write(ctx, t.b)
		if errors.Is(err, store.ErrConflict) {
			if p.IdempotencyKey != "" {
				if f, err := byKey(); err != nil || f != nil {
					return f, err
				}
			}
			continue
		}
		if err != nil {
			var full *store.QueueFullError
			if errors.As(err, &full) {
				return nil, rt.overloaded(full)
			}
			return nil, fmt.Errorf("recording the fire: %w", err)
		}
		rt.afterTick(ctx, t)
		return rt.fireRead(f, s.Webhook), nil
	}
	return nil, fmt.Errorf("%w: schedule %s kept changing; try again", apitype.ErrConflict, p.ScheduleID)
}

// DeleteSchedule ends a schedule: it never fires again (fires running go
// on; buffered ones never start); its history stays readable.
func (rt *Runtime) DeleteSchedule(ctx context.Context, p *apitype.ScheduleParams) (*apitype.ScheduleRead, error) {
	return rt.changeSchedule(ctx, p.Owner, p.ScheduleID, func(s *runtype.Schedule, b *store.Batch, now time.Time) error {
		if s.Status == runtype.ScheduleDeleted {
			return errUnchanged
		}
		buffered, err := rt.allFires(ctx, &store.FireListParams{TenantID: s.TenantID, ScheduleID: s.ID, Statuses: []runtype.FireStatus{runtype.FireBuffered}})
		if err != nil {
			return fmt.Errorf("listing the buffered fires: %w", err)
		}
		for _, f := range buffered {
			next := *f
			next.Status, next.Reason, next.UpdatedAt, next.EndedAt = runtype.FireSkipped, runtype.FireReasonPaused, now, now
			b.Fires = append(b.Fires, &next)
		}
		s.Status, s.Buffered, s.NextFireAt = runtype.ScheduleDeleted, 0, time.Time{}
		b.Events = append(b.Events, rt.scheduleEvent(event.JobCancelled, s, "deleted", nil))
		return nil
	})
}

// errUnchanged says a change has nothing to do (pausing a paused
// schedule): nothing is written, and the schedule is returned as it is.
var errUnchanged = errors.New("unchanged")

// changeSchedule reads a schedule, lets change change it (adding its
// events to b) and writes it conditional on the version read, again when
// it changed meanwhile.
func (rt *Runtime) changeSchedule(ctx context.Context, o runtype.Owner, id string, change func(s *runtype.Schedule, b *store.Batch, now time.Time) error) (*apitype.ScheduleRead, error) {
	owner := ownerOrDefault(o)
	for range 5 {
		s, err := rt.store.ScheduleGet(ctx, &store.ScheduleGetParams{TenantID: owner.TenantID, ID: id})
		if err != nil {
			return nil, fmt.Errorf("reading schedule %s: %w", id, err)
		}
		now := rt.cfg.Now().UTC()
		next := *s
		b := &store.Batch{Schedules: []*runtype.Schedule{&next}}
		switch err := change(&next, b, now); {
		case errors.Is(err, errUnchanged):
			return rt.scheduleRead(s), nil
		case err != nil:
			return nil, err
		}
		next.UpdatedAt = now
		err = rt.writer.Write(ctx, b)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("recording schedule %s: %w", id, err)
		}
		next.Version++
		rt.kickScheduler()
		return rt.scheduleRead(&next), nil
	}
	return nil, fmt.Errorf("%w: schedule %s kept changing; try again", apitype.ErrConflict, id)
}

// ListFires lists a schedule's fires (its history), newest first.
func (rt *Runtime) ListFires(ctx context.Context, p *apitype.ListFiresParams) (*apitype.FirePage, error) {
	owner := ownerOrDefault(p.Owner)
	s, err := rt.store.ScheduleGet(ctx, &store.ScheduleGetParams{TenantID: owner.TenantID, ID: p.ScheduleID})
	if err != nil {
		return nil, fmt.Errorf("reading schedule %s: %w", p.ScheduleID, err)
	}
	q := &store.FireListParams{TenantID: owner.TenantID, ScheduleID: s.ID, BeforeID: p.Cursor, Limit: store.ClampLimit(p.Limit)}
	if p.Status != "" {
		switch p.Status {
		case runtype.FireRunning, runtype.FireBuffered, runtype.FireSkipped, runtype.FireMissed, runtype.FireCompleted, runtype.FireFailed, runtype.FireCancelled:
		default:
			return nil, invalid("status", "unknown fire status %q", p.Status)
		}
		q.Statuses = []runtype.FireStatus{p.Status}
	}
	fires, err := rt.store.FireList(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("listing the fires of schedule %s: %w", s.ID, err)
	}
	page := &apitype.FirePage{Fires: make([]apitype.FireRead, len(fires))}
	for i, f := range fires {
		page.Fires[i] = *rt.fireRead(f, s.Webhook)
	}
	if len(fires) == q.Limit {
		page.NextCursor = fires[len(fires)-1].ID
	}
	return page, nil
}

// RetryDelivery delivers a fire's result again after its delivery
// failed: it is pending again, with a new round of attempts.
func (rt *Runtime) RetryDelivery(ctx context.Context, p *apitype.FireParams) (*apitype.FireRead, error) {
	owner := ownerOrDefault(p.Owner)
	f, err := rt.store.FireGet(ctx, &store.FireGetParams{TenantID: owner.TenantID, ID: p.FireID})
	if err != nil {
		return nil, fmt.Errorf("reading fire %s: %w", p.FireID, err)
	}
	s, err := rt.store.ScheduleGet(ctx, &store.ScheduleGetParams{TenantID: owner.TenantID, ID: f.ScheduleID})
	if err != nil {
		return nil, fmt.Errorf("reading schedule %s: %w", f.ScheduleID, err)
	}
	switch {
	case f.Delivery == "":
		return nil, fmt.Errorf("%w: fire %s has no delivery", apitype.ErrConflict, f.ID)
	case f.Delivery != runtype.DeliveryFailed:
		return nil, fmt.Errorf("%w: fire %s's delivery is %s, not failed", apitype.ErrConflict, f.ID, f.Delivery)
	}
	if _, ok := rt.cfg.Webhooks[s.Webhook]; !ok {
		return nil, fmt.Errorf("%w: webhook %q is no longer configured", apitype.ErrConflict, s.Webhook)
	}
	now := rt.cfg.Now().UTC()
	next := *f
	next.Delivery, next.DeliveryAttempts, next.DeliveryNextAt, next.DeliveryError, next.UpdatedAt = runtype.DeliveryPending, 0, now, "", now
	b := &store.Batch{
		Fires:         []*runtype.Fire{&next},
		ScheduleWakes: []*store.ScheduleWake{{TenantID: s.TenantID, ScheduleID: s.ID, At: now}},
		Events:        []*event.Event{rt.deliveryEvent(s, &next, 0)},
	}
	if err := rt.writer.Write(ctx, b); err != nil {
		return nil, fmt.Errorf("recording the retry of fire %s's delivery: %w", f.ID, err)
	}
	rt.kickScheduler()
	return rt.fireRead(&next, s.Webhook), nil
}

func (rt *Runtime) scheduleRead(s *runtype.Schedule) *apitype.ScheduleRead {
	r := &apitype.ScheduleRead{
		ScheduleID: s.ID, SessionID: s.SessionID,
		ScheduleSpec: apitype.ScheduleSpec{
			Name: s.Name, Agent: s.Agent, Instance: s.Instance, Kind: s.Kind, Cron: s.Cron, TimeZone: s.TimeZone,
			Input: s.Input, Model: s.Model, Tools: s.Tools, Overlap: s.Overlap, PauseAfterFailures: s.PauseAfterFailures, Webhook: s.Webhook,
		},
		Status: s.Status, PausedReason: s.PausedReason, Running: s.Running, Buffered: s.Buffered, Fires: s.Fires,
		ConsecutiveFailures: s.ConsecutiveFailures, CreatedBy: s.PrincipalID,
		CreatedAt: ts(s.CreatedAt), UpdatedAt: ts(s.UpdatedAt), LastFireAt: ts(s.LastFireAt),
	}
	if s.Status == runtype.ScheduleActive {
		r.NextFireAt = ts(s.NextFireAt)
	}
	if s.Every > 0 {
		r.Every = s.Every.String()
	}
	if !s.At.IsZero() {
		r.At = s.At.UTC().Format(time.RFC3339)
	}
	if !s.Start.IsZero() && s.Kind == string(schedule.KindInterval) {
		r.Start = s.Start.UTC().Format(time.RFC3339)
	}
	if s.Params != "" && s.Params != "{}" {
		r.Params = json.RawMessage(s.Params)
	}
	if s.InputSchema != "" {
		r.InputSchema = json.RawMessage(s.InputSchema)
	}
	if s.InactivityTimeout > 0 {
		r.InactivityTimeout = s.InactivityTimeout.String()
	}
	if s.CatchupWindow > 0 {
		r.CatchupWindow = s.CatchupWindow.String()
	}
	if s.PreRunTool != "" {
		r.PreRun = &apitype.PreRunSpec{Tool: s.PreRunTool, Input: json.RawMessage(s.PreRunInput)}
	}
	return r
}

func (rt *Runtime) fireRead(f *runtype.Fire, webhookName string) *apitype.FireRead {
	r := &apitype.FireRead{
		FireID: f.ID, ScheduleID: f.ScheduleID, FireAt: ts(f.FireAt), Manual: f.Manual, Status: f.Status, Reason: f.Reason,
		MissedCount: f.MissedCount, ThreadID: f.ThreadID, TurnID: f.TurnID, TaskID: f.TaskID, Failure: f.Failure,
		CreatedAt: ts(f.CreatedAt), EndedAt: ts(f.EndedAt),
	}
	if f.Delivery != "" {
		r.Delivery = &apitype.DeliveryRead{Webhook: webhookName, Status: f.Delivery, Attempts: f.DeliveryAttempts,
			LastError: f.DeliveryError, DeliveredAt: ts(f.DeliveredAt)}
		if f.Delivery == runtype.DeliveryPending {
			r.Delivery.NextAttemptAt = ts(f.DeliveryNextAt)
		}
	}
	return r
}

// deliveryOf puts the delivery state of a schedule fire's task on its
// read.
func (rt *Runtime) deliveryOf(ctx context.Context, task *runtype.Task, tr *apitype.TaskRead) error {
	f, err := rt.store.FireGet(ctx, &store.FireGetParams{TenantID: task.TenantID, ID: task.FireID})
	if err != nil {
		return err
	}
	if f.Delivery == "" {
		return nil
	}
	s, err := rt.store.ScheduleGet(ctx, &store.ScheduleGetParams{TenantID: task.TenantID, ID: f.ScheduleID})
	if err != nil {
		return err
	}
	tr.DeliveryState = rt.fireRead(f, s.Webhook).Delivery
	return nil
}
