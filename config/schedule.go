package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/internal/yamlpos"
	"github.com/agentrt/agentrt/schedule"
	"github.com/agentrt/agentrt/webhook"
)

// Webhook is one entry of the webhooks section: an endpoint schedules
// may deliver their fires' results to (docs/schedules.md, "Delivery").
type Webhook struct {
	// Name is the webhook's key under webhooks.
	Name string
	// URL receives a signed POST per delivery.
	URL string
	// SecretEnv names the environment variable holding the signing
	// secret ("whsec_" and base64), read when the runtime is configured.
	SecretEnv string
	// AllowPrivate lets URL reach loopback, private and link-local
	// addresses.
	AllowPrivate bool
	// MaxAttempts bounds the attempts of one delivery; zero means the
	// runtime's default (8).
	MaxAttempts int
	// Timeout bounds one attempt; zero means the runtime's default (10s).
	Timeout time.Duration
}

// Schedule kinds, decided by which of cron, every and at a schedule sets.
const (
	ScheduleCron     = "cron"
	ScheduleInterval = "interval"
	ScheduleOnce     = "once"
)

// Overlaps lists the values of a schedule's overlap; empty means skip.
var Overlaps = []string{"skip", "buffer_one", "buffer_all", "cancel_other", "allow_all"}

// Schedule is one item of the schedules section: a schedule the runtime
// creates when it starts, and brings up to date when the file changes.
type Schedule struct {
	// Name identifies the schedule across starts; unique in the file.
	Name string
	// Agent runs each fire, a key under agents.
	Agent string
	// Kind is ScheduleCron, ScheduleInterval or ScheduleOnce: which of
	// Cron, Every and At is set.
	Kind     string
	Cron     string
	TimeZone string
	Every    time.Duration
	At       time.Time
	// Start is the earliest fire, and an interval's anchor; zero when
	// not set.
	Start time.Time
	// Input is the input template; Params its values (a JSON object, nil
	// when none) and InputSchema their JSON Schema (nil when none).
	Input       string
	Params      json.RawMessage
	InputSchema json.RawMessage
	// Overrides of each fire's run: a model key of the agent, a subset of
	// its tools, an inactivity timeout (zero: the runtime's).
	Model             string
	Tools             []string
	InactivityTimeout time.Duration
	// Overlap is one of Overlaps; empty means skip.
	Overlap string
	// CatchupWindow is how late a fire may still run; zero means the
	// runtime's default (1m).
	CatchupWindow time.Duration
	// PauseAfterFailures pauses the schedule after that many failed fires
	// in a row; zero never pauses.
	PauseAfterFailures int
	// PreRun is the pre-run script; nil when none.
	PreRun *PreRun
	// Webhook names the webhook each fire's result goes to; empty when
	// none.
	Webhook string
	// Instance names the named instance that owns the schedule: its fires
	// are turns of the instance's session. Empty when none. The instance
	// must exist when the runtime starts.
	Instance string
}

// PreRun is a schedule's pre-run script: a command tool of its agent and
// the tool's input.
type PreRun struct {
	Tool string
	// Input is a JSON object; nil when the file gives none.
	Input json.RawMessage
}

var (
	webhookKeys  = []string{"url", "secret_env", "allow_private", "max_attempts", "timeout"}
	scheduleKeys = []string{"name", "agent", "cron", "time_zone", "every", "at", "start", "input", "params", "input_schema",
		"model", "tools", "inactivity_timeout", "overlap", "catchup_window", "pause_after_failures", "pre_run", "webhook", "instance"}
	preRunKeys = []string{"tool", "input"}
	// kindKeys are the keys that decide a schedule's kind.
	kindKeys = []string{"cron", "every", "at"}
)

// Limits on the webhooks and schedules sections, as the runtime's.
const (
	maxWebhookAttempts = 50
	maxCatchupWindow   = 7 * 24 * time.Hour
	maxPauseAfter      = 1000
)

// scheduleRef is one schedule, checked once every agent, tool and
// webhook is known.
type scheduleRef struct {
	s     *Schedule
	where string
	// Positions of the values of agent, model, pre_run.tool, webhook and
	// instance.
	agentPos, modelPos, preRunPos, webhookPos, instancePos yamlpos.Pos
}

// webhooks decodes the webhooks section.
func (d *decoder) webhooks(e yamlpos.Field) map[string]*Webhook {
	m, _ := d.mapping(e, "webhooks")
	var out map[string]*Webhook
	for _, we := range m.Fields() {
		if out == nil {
			out = make(map[string]*Webhook)
		}
		w := d.webhook(we)
		out[w.Name] = w
	}
	return out
}

func (d *decoder) webhook(we yamlpos.Field) *Webhook {
	name := we.Key
	where := fmt.Sprintf("webhook %q", name)
	if !namePattern.MatchString(name) {
		d.errorAt(we.KeyPos, "invalid webhook name %q: use 1 to 64 letters, digits, '_' or '-'", name)
	}
	w := &Webhook{Name: name}
	m, st := d.mapping(we, where)
	switch st {
	case valBad:
		return w
	case valNull:
		d.errorAt(we.KeyPos, "%s is empty: it needs url and secret_env", where)
		return w
	}
	var urlVal *yamlpos.Value
	urlSt, secretSt := valNull, valNull
	for _, f := range m.Fields() {
		label := f.Key + " in " + where
		switch f.Key {
		case "url":
			var u string
			if u, urlSt = d.str(f, label); urlSt == valOK {
				w.URL, urlVal = u, f.Value()
			}
		case "secret_env":
			var env string
			if env, secretSt = d.str(f, label); secretSt == valOK {
				if !envNamePattern.MatchString(env) {
					d.errorAt(f.Value().Pos, "%s must name an environment variable (letters, digits and '_', not starting with a digit), got %q", label, env)
				}
				w.SecretEnv = env
			}
		case "allow_private":
			if b, st := d.boolean(f, label); st == valOK {
				w.AllowPrivate = b
			}
		case "max_attempts":
			if n, st := d.count(f, label, 1, maxWebhookAttempts); st == valOK {
				w.MaxAttempts = int(n)
			}
		case "timeout":
			if v, st := d.duration(f, label); st == valOK {
				w.Timeout = v
			}
		default:
			d.unknownKey(f, where, webhookKeys)
		}
	}
	switch urlSt {
	case valNull:
		d.errorAt(we.KeyPos, "url is required in %s", where)
	case valOK:
		if err := webhook.ValidateURL(w.URL, w.AllowPrivate); err != nil {
			d.errorAt(urlVal.Pos, "url in %s: %v%s", where, err, privateHint(err))
			w.URL = ""
		}
	}
	if secretSt == valNull {
		d.errorAt(we.KeyPos, "secret_env is required in %s: the environment variable holding its whsec_… signing secret", where)
	}
	return w
}

// privateHint tells how to allow a private address.
func privateHint(err error) string {
	if errors.Is(err, webhook.ErrPrivateAddress) {
		return "; set allow_private: true to deliver there"
	}
	return ""
}

// schedules decodes the schedules section, a list of schedules.
func (d *decoder) schedules(e yamlpos.Field) []*Schedule {
	v, st := d.present(e, "schedules", "a list of schedules, each with name, agent, input and one of cron, every or at", is(yamlpos.Seq))
	if st != valOK {
		return nil
	}
	var out []*Schedule
	seen := make(map[string]int) // name → line
	for i, item := range v.Items() {
		switch {
		case item == nil:
			continue
		case item.Kind != yamlpos.Map:
			d.errorAt(item.Pos, "schedules[%d] must be a mapping with name, agent, input and one of cron, every or at, got %s", i, item.Describe())
			continue
		}
		r, namePos := d.schedule(item, i)
		s := r.s
		if s.Name != "" {
			if line, dup := seen[s.Name]; dup {
				d.errorAt(namePos, "schedule name %q is used twice (first at line %d); names identify schedules across starts", s.Name, line)
				continue
			}
			seen[s.Name] = namePos.Line
		}
		out = append(out, s)
		d.schedRefs = append(d.schedRefs, r)
	}
	return out
}

// schedule decodes one item of the schedules section, and returns the
// position of its name.
func (d *decoder) schedule(v *yamlpos.Value, i int) (scheduleRef, yamlpos.Pos) {
	s := &Schedule{}
	where := fmt.Sprintf("schedules[%d]", i)
	namePos := v.Pos
	nameSt := valNull
	// The name first, so that every message names the schedule.
	for _, f := range v.Fields() {
		if f.Key != "name" {
			continue
		}
		var name string
		name, nameSt = d.str(f, "name in "+where)
		switch {
		case nameSt != valOK:
		case name == "":
			d.errorAt(f.Value().Pos, "name in %s must not be empty", where)
		case len(name) > apitype.MaxScheduleNameBytes:
			d.errorAt(f.Value().Pos, "name in %s is %d bytes, more than the limit of %d", where, len(name), apitype.MaxScheduleNameBytes)
		default:
			s.Name, namePos = name, f.Value().Pos
			where = fmt.Sprintf("schedule %q", name)
		}
	}
	r := scheduleRef{s: s, where: where}
	kinds := map[string]yamlpos.Pos{} // kind key → key position
	timeOK := true                    // the when fields decoded; schedule.Parse may check them
	vals := map[string]yamlpos.Pos{}  // key → value position, for schedule.Parse's errors
	inputSt, agentSt := valNull, valNull
	for _, f := range v.Fields() {
		label := f.Key + " in " + where
		if fv := f.Value(); fv != nil {
			vals[f.Key] = fv.Pos
		}
		if slices.Contains(kindKeys, f.Key) {
			if fv := f.Value(); fv != nil && fv.Kind != yamlpos.Null {
				kinds[f.Key] = f.KeyPos
			}
		}
		switch f.Key {
		case "name":
		case "agent":
			if s.Agent, agentSt = d.str(f, label); agentSt == valOK {
				r.agentPos = f.Value().Pos
			}
		case "cron":
			var st status
			if s.Cron, st = d.str(f, label); st == valBad {
				timeOK = false
			}
		case "time_zone":
			var st status
			if s.TimeZone, st = d.str(f, label); st == valBad {
				timeOK = false
			}
		case "every":
			var st status
			if s.Every, st = d.duration(f, label); st == valBad {
				timeOK = false
			}
		case "at", "start":
			t, st := d.rfc3339(f, label)
			if st == valBad {
				timeOK = false
			}
			*map[string]*time.Time{"at": &s.At, "start": &s.Start}[f.Key] = t
		case "input":
			var in string
			if in, inputSt = d.str(f, label); inputSt == valOK {
				switch {
				case in == "":
					d.errorAt(f.Value().Pos, "%s must not be empty: it is each fire's input", label)
					inputSt = valBad
				case len(in) > apitype.MaxScheduleInputBytes:
					d.errorAt(f.Value().Pos, "%s is %d bytes, more than the limit of %d", label, len(in), apitype.MaxScheduleInputBytes)
					inputSt = valBad
				default:
					s.Input = in
				}
			}
		case "params":
			s.Params = d.jsonObject(f, label)
		case "input_schema":
			s.InputSchema, _ = d.inputSchema(f, where, false)
		case "model":
			if m, st := d.str(f, label); st == valOK {
				s.Model, r.modelPos = m, f.Value().Pos
			}
		case "tools":
			d.scalarList(f, label, "tool names", func(item *yamlpos.Value) {
				switch {
				case !namePattern.MatchString(item.Text):
					d.errorAt(item.Pos, "invalid tool name %q in %s: use 1 to 64 letters, digits, '_' or '-'", item.Text, label)
				case slices.Contains(s.Tools, item.Text):
					d.errorAt(item.Pos, "tool %q is listed twice in %s", item.Text, label)
				default:
					s.Tools = append(s.Tools, item.Text)
				}
			})
		case "inactivity_timeout":
			if dur, st := d.duration(f, label); st == valOK {
				s.InactivityTimeout = dur
			}
		case "overlap":
			if o, st := d.oneOf(f, label, Overlaps); st == valOK {
				s.Overlap = o
			}
		case "catchup_window":
			dur, st := d.duration(f, label)
			switch {
			case st != valOK:
			case dur > maxCatchupWindow:
				d.errorAt(f.Value().Pos, "%s must be at most 168h (7 days), got %s", label, f.Value().Describe())
			default:
				s.CatchupWindow = dur
			}
		case "pause_after_failures":
			if n, st := d.count(f, label, 0, maxPauseAfter); st == valOK {
				s.PauseAfterFailures = int(n)
			}
		case "pre_run":
			s.PreRun, r.preRunPos = d.preRun(f, where)
		case "webhook":
			if w, st := d.str(f, label); st == valOK {
				s.Webhook, r.webhookPos = w, f.Value().Pos
			}
		case "instance":
			if in, st := d.str(f, label); st == valOK {
				if msg := instanceNameProblem(in); msg != "" {
					d.errorAt(f.Value().Pos, "%s: %q %s", label, in, msg)
					continue
				}
				s.Instance, r.instancePos = in, f.Value().Pos
			}
		default:
			d.unknownKey(f, where, scheduleKeys)
		}
	}
	if nameSt == valNull {
		d.errorAt(v.Pos, "name is required in %s: it identifies the schedule across starts", where)
	}
	if agentSt == valNull {
		d.errorAt(v.Pos, "agent is required in %s: the agent that runs each fire", where)
	}
	if inputSt == valNull {
		d.errorAt(v.Pos, "input is required in %s: the template of each fire's input", where)
	}
	s.Kind = d.scheduleKind(v.Pos, where, kinds)
	if s.Kind != "" && timeOK {
		d.checkWhen(s, where, vals)
	}
	return r, namePos
}

// scheduleKind returns the kind the kind keys written decide, or "" after
// reporting a schedule with none or several.
func (d *decoder) scheduleKind(pos yamlpos.Pos, where string, kinds map[string]yamlpos.Pos) string {
	var keys []string
	for _, k := range kindKeys {
		if _, ok := kinds[k]; ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return comparePos(kinds[a], kinds[b]) })
	switch len(keys) {
	case 0:
		d.errorAt(pos, "%s needs one of cron, every or at: when it fires", where)
		return ""
	case 1:
		return map[string]string{"cron": ScheduleCron, "every": ScheduleInterval, "at": ScheduleOnce}[keys[0]]
	}
	d.errorAt(kinds[keys[1]], "%s has both %s and %s; set one of cron, every or at", where, keys[0], keys[1])
	return ""
}

func comparePos(a, b yamlpos.Pos) int {
	if a.Line != b.Line {
		return a.Line - b.Line
	}
	return a.Column - b.Column
}

// checkWhen checks a schedule's when fields as the runtime does (cron
// syntax, the time zone, every's minimum, at after start), reporting the
// problem at the value of the key it is about.
func (d *decoder) checkWhen(s *Schedule, where string, vals map[string]yamlpos.Pos) {
	_, err := schedule.Parse(schedule.Spec{Kind: schedule.Kind(s.Kind), Cron: s.Cron, TimeZone: s.TimeZone, Every: s.Every, At: s.At, Start: s.Start})
	if err == nil {
		return
	}
	field, msg, ok := strings.Cut(err.Error(), ": ")
	key := map[string]string{"timeZone": "time_zone"}[field]
	if key == "" {
		key = field
	}
	pos, known := vals[key]
	if !ok || !known {
		d.errorAt(vals[kindKey(s.Kind)], "%s: %v", where, err)
		return
	}
	d.errorAt(pos, "%s in %s: %s", key, where, msg)
}

// kindKey is the key that decides kind.
func kindKey(kind string) string {
	return map[string]string{ScheduleCron: "cron", ScheduleInterval: "every", ScheduleOnce: "at"}[kind]
}

// rfc3339 decodes f's value as an RFC 3339 time.
func (d *decoder) rfc3339(f yamlpos.Field, label string) (time.Time, status) {
	var t time.Time
	_, st := d.present(f, label, "an RFC 3339 time such as 2026-12-01T09:00:00Z", func(v *yamlpos.Value) bool {
		var err error
		t, err = time.Parse(time.RFC3339, v.Text)
		return v.Scalar() && err == nil
	})
	return t.UTC(), st
}

// jsonObject converts f's value, a mapping, to a JSON object; nil when it
// is absent or not one (reported).
func (d *decoder) jsonObject(f yamlpos.Field, label string) json.RawMessage {
	v, st := d.mapping(f, label)
	if st != valOK {
		return nil
	}
	raw, ok := d.toJSON(v, label)
	if !ok {
		return nil
	}
	return raw
}

// preRun decodes a schedule's pre_run, and returns the position of its
// tool's value.
func (d *decoder) preRun(e yamlpos.Field, where string) (*PreRun, yamlpos.Pos) {
	where = "pre_run in " + where
	m, st := d.mapping(e, where)
	if st != valOK {
		return nil, yamlpos.Pos{}
	}
	p := &PreRun{}
	var toolPos yamlpos.Pos
	toolSt := valNull
	for _, f := range m.Fields() {
		label := f.Key + " in " + where
		switch f.Key {
		case "tool":
			if p.Tool, toolSt = d.str(f, label); toolSt == valOK {
				toolPos = f.Value().Pos
			}
		case "input":
			p.Input = d.jsonObject(f, label)
		default:
			d.unknownKey(f, where, preRunKeys)
		}
	}
	if toolSt == valNull {
		d.errorAt(e.KeyPos, "tool is required in %s: a command tool of the schedule's agent", where)
	}
	if p.Tool == "" {
		return nil, yamlpos.Pos{}
	}
	return p, toolPos
}

// checkSchedules reports schedules naming an agent, a model of the
// agent, a pre-run tool or a webhook the file does not declare.
func (d *decoder) checkSchedules(f *File) {
	agents := f.AgentNames()
	hooks := sortedNames(f.Webhooks)
	for _, r := range d.schedRefs {
		s := r.s
		a := f.Agents[s.Agent]
		if s.Agent != "" && a == nil {
			d.errorAt(r.agentPos, "agent %q in %s is not an agent under agents%s", s.Agent, r.where, didYouMean(s.Agent, agents))
		}
		if a != nil && s.Model != "" && !slices.ContainsFunc(a.Models, func(m *Model) bool { return m != nil && m.Key == s.Model }) {
			var keys []string
			for _, m := range a.Models {
				if m != nil {
					keys = append(keys, m.Key)
				}
			}
			d.errorAt(r.modelPos, "model %q in %s is not a model of agent %q (it has %s)%s", s.Model, r.where, s.Agent, strings.Join(keys, ", "), didYouMean(s.Model, keys))
		}
		if p := s.PreRun; p != nil {
			switch {
			case f.Tools[p.Tool] == nil:
				d.errorAt(r.preRunPos, "tool %q in pre_run in %s is not a tool declared under tools: a pre-run script is a command tool%s", p.Tool, r.where, didYouMean(p.Tool, sortedNames(f.Tools)))
			case a != nil && !slices.Contains(a.Tools, p.Tool):
				d.errorAt(r.preRunPos, "tool %q in pre_run in %s is not in the tools of agent %q; add it there", p.Tool, r.where, s.Agent)
			}
		}
		if a != nil && s.Instance != "" && a.State == nil {
			d.errorAt(r.instancePos, "instance %q in %s needs agent %q to have a state section: only an agent with a state has named instances", s.Instance, r.where, s.Agent)
		}
		if s.Webhook != "" && f.Webhooks[s.Webhook] == nil {
			d.errorAt(r.webhookPos, "webhook %q in %s is not a webhook under webhooks%s", s.Webhook, r.where, didYouMean(s.Webhook, hooks))
		}
	}
}

// instanceNamePattern is what an instance's name must match, as the
// runtime's.
var instanceNamePattern = regexp.MustCompile(`^[A-Za-z0-9/_.:-]{1,200}$`)

// instanceNameProblem says what is wrong with an instance's name, as the
// runtime checks it; "" when nothing.
func instanceNameProblem(name string) string {
	switch {
	case !instanceNamePattern.MatchString(name):
		return "is not 1 to 200 letters, digits, '/', '_', '-', '.' or ':'"
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/"):
		return "must not begin or end with '/'"
	case strings.Contains(name, ".."):
		return "must not contain '..'"
	}
	return ""
}

// sortedNames returns m's keys, sorted.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
