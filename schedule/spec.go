package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Kind is how a schedule's fire times are given.
type Kind string

// The kinds of schedule.
const (
	// KindCron fires at the times a 5-field cron expression names in a time zone.
	KindCron Kind = "cron"
	// KindInterval fires every Every after Start.
	KindInterval Kind = "interval"
	// KindOnce fires once, at At.
	KindOnce Kind = "once"
)

// MinEvery is the shortest interval of an interval schedule.
const MinEvery = time.Second

// Spec describes when a schedule fires. Only the fields of its Kind may be
// set: Cron for a cron schedule, Every for an interval, At for a once
// schedule; TimeZone and Start for any.
type Spec struct {
	Kind Kind
	// Cron is a standard 5-field cron expression (minute hour day-of-month
	// month day-of-week) or a descriptor: @yearly, @annually, @monthly,
	// @weekly, @daily, @midnight, @hourly. The zone goes in TimeZone, not in
	// a CRON_TZ= or TZ= prefix.
	Cron string
	// TimeZone is the IANA name of the zone a cron expression is read in;
	// empty means UTC.
	TimeZone string
	// Every is the interval of an interval schedule, at least MinEvery.
	Every time.Duration
	// At is the fire time of a once schedule.
	At time.Time
	// Start is the earliest time the schedule may fire, and the anchor of
	// an interval schedule: it fires at Start + k*Every, k >= 1 (the Unix
	// epoch stands in for a zero Start).
	Start time.Time
}

// Schedule is a parsed Spec. It is immutable and safe for concurrent use.
type Schedule struct {
	spec Spec
	loc  *time.Location
	src  fireSource
}

// fireSource is a kind's fire times.
type fireSource interface {
	// next returns the first fire strictly after after, or the zero time.
	next(after time.Time) time.Time
	// count returns the number of fires in [a, b], a being a fire.
	count(a, b time.Time, w *work) int
	// skip returns the fire n fires after the fire a (n >= 0), which the
	// caller knows exists.
	skip(a time.Time, n int, w *work) time.Time
}

// work counts the single steps Due takes, so tests can pin that it does
// not walk every fire.
type work struct{ steps int }

func (w *work) step() {
	if w != nil {
		w.steps++
	}
}

// cronParser reads standard 5-field expressions and descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse validates s and returns its Schedule. Errors name the field.
func Parse(s Spec) (*Schedule, error) {
	loc, err := loadZone(s.TimeZone)
	if err != nil {
		return nil, err
	}
	sch := &Schedule{spec: s, loc: loc}
	switch s.Kind {
	case KindCron:
		if err := only(s, "cron"); err != nil {
			return nil, err
		}
		sch.src, err = parseCron(s.Cron, loc)
		if err != nil {
			return nil, err
		}
		if sch.Next(s.Start).IsZero() {
			return nil, fmt.Errorf("cron: %q never fires", s.Cron)
		}
	case KindInterval:
		if err := only(s, "every"); err != nil {
			return nil, err
		}
		if s.Every < MinEvery {
			return nil, fmt.Errorf("every: must be at least %s, got %s", MinEvery, s.Every)
		}
		anchor := s.Start
		if anchor.IsZero() {
			anchor = time.Unix(0, 0)
		}
		sch.src = interval{anchor: anchor.UTC(), every: s.Every}
	case KindOnce:
		if err := only(s, "at"); err != nil {
			return nil, err
		}
		if s.At.IsZero() {
			return nil, errors.New("at: required for a once schedule")
		}
		if s.At.Before(s.Start) {
			return nil, fmt.Errorf("at: %s is before start %s", s.At.UTC().Format(time.RFC3339), s.Start.UTC().Format(time.RFC3339))
		}
		sch.src = once{at: s.At.UTC()}
	case "":
		return nil, errors.New("kind: required (cron, interval or once)")
	default:
		return nil, fmt.Errorf("kind: unknown kind %q (want cron, interval or once)", s.Kind)
	}
	return sch, nil
}

// only refuses the kind-specific fields of other kinds than the one that
// owns want.
func only(s Spec, want string) error {
	set := []struct {
		name string
		set  bool
	}{
		{"cron", s.Cron != ""},
		{"every", s.Every != 0},
		{"at", !s.At.IsZero()},
	}
	for _, f := range set {
		if f.set && f.name != want {
			return fmt.Errorf("%s: not allowed in a %s schedule", f.name, s.Kind)
		}
	}
	return nil
}

func loadZone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	// time.LoadLocation also takes "Local" and "", which depend on the
	// machine; a schedule must mean the same everywhere.
	if name == "Local" {
		return nil, fmt.Errorf("timeZone: %q depends on the machine: name an IANA zone such as \"Europe/Berlin\"", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("timeZone: unknown time zone %q", name)
	}
	return loc, nil
}

// Spec returns the Spec s was parsed from.
func (s *Schedule) Spec() Spec { return s.spec }

// Location returns the time zone s reads its cron expression in.
func (s *Schedule) Location() *time.Location { return s.loc }

// epoch bounds the past a schedule looks into: robfig returns the zero
// time both for "none" and for a fire at 0001-01-01T00:00:00Z.
var epoch = time.Unix(0, 0).UTC()

// Next returns the first fire strictly after after, in UTC, or the zero time
// when there is none (a once schedule that passed). It finds no fire before
// the Unix epoch.
func (s *Schedule) Next(after time.Time) time.Time {
	if floor := s.spec.Start; after.Before(floor) {
		after = floor.Add(-time.Nanosecond)
	}
	if after.Before(epoch) {
		after = epoch.Add(-time.Nanosecond)
	}
	t := s.src.next(after)
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// parseCron parses a 5-field expression or a descriptor.
func parseCron(expr string, loc *time.Location) (fireSource, error) {
	expr = strings.TrimSpace(expr)
	switch {
	case expr == "":
		return nil, errors.New("cron: required for a cron schedule")
	case strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ="):
		return nil, fmt.Errorf("cron: %q carries a time zone: put the zone in timeZone", expr)
	case strings.HasPrefix(expr, "@every"):
		return nil, fmt.Errorf("cron: %q: use an interval schedule for a fixed interval", expr)
	case !strings.HasPrefix(expr, "@"):
		if n := len(strings.Fields(expr)); n != 5 {
			return nil, fmt.Errorf("cron: expected 5 fields, got %d", n)
		}
	}
	parsed, err := cronParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("cron: %w", err)
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("cron: %q is not a calendar expression", expr)
	}
	return newCronSource(spec, loc), nil
}
