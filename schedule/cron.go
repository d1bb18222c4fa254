package schedule

import (
	"math/bits"
	"time"

	"github.com/robfig/cron/v3"
)

const (
	allHours = 1<<24 - 1
	// starBit is robfig's mark of a field written "*" or "?".
	starBit = 1 << 63
	// fieldBits masks a field's value bits (0..59).
	fieldBits = 1<<60 - 1
)

// cronSource is a cron expression in a zone.
//
// robfig's SpecSchedule.Next walks wall-clock fields with time.Add in the
// zone, so it fires by real time, which is right for specs that fire every
// hour but wrong for a fixed hour around a DST change: it skips a time in
// the spring-forward gap and fires a time in the repeated hour twice. A
// fixed-hour spec therefore runs on the wall clock: robfig computes the next
// wall time in UTC, where no DST exists, and wallInstant maps it to the
// instant it first names.
type cronSource struct {
	loc *time.Location
	// wallClock is set when the hour field names fixed hours.
	wallClock bool
	// real fires by real time in loc; wall fires by the wall clock
	// (its Location is UTC standing in for loc's wall clock).
	real, wall cron.SpecSchedule
	// perDay is the number of fires on a matching day without DST change.
	perDay int
}

func newCronSource(spec *cron.SpecSchedule, loc *time.Location) *cronSource {
	c := &cronSource{
		loc:       loc,
		wallClock: spec.Hour&allHours != allHours,
		real:      *spec,
		wall:      *spec,
		perDay: bits.OnesCount64(spec.Hour&allHours) *
			bits.OnesCount64(spec.Minute&fieldBits) *
			bits.OnesCount64(spec.Second&fieldBits),
	}
	c.real.Location = loc
	c.wall.Location = time.UTC
	return c
}

// fromMinute returns the last second before the minute after t's. A
// standard expression fires on whole minutes, so the first fire after it is
// the first fire after t, and robfig, which starts at the next second, need
// not step through the seconds of t's minute.
func fromMinute(t time.Time) time.Time {
	return t.Truncate(time.Minute).Add(time.Minute - time.Second)
}

func (c *cronSource) next(after time.Time) time.Time {
	if !c.wallClock {
		t := fromMinute(after)
		for {
			t = c.real.Next(t)
			// Guard robfig's resets to a day's or hour's start, which
			// around a transition could land on an earlier instant.
			if t.IsZero() || t.After(after) {
				return t
			}
		}
	}
	w := fromMinute(wallTime(after, c.loc))
	for {
		w = c.wall.Next(w)
		if w.IsZero() {
			return w
		}
		// A wall time in the repeated hour may name an instant at or
		// before after: it fired at its first occurrence already.
		if t := wallInstant(w, c.loc); t.After(after) {
			return t
		}
	}
}

// wallTime returns t's wall clock in loc as a UTC time with the same fields.
func wallTime(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	y, mo, d := l.Date()
	h, mi, s := l.Clock()
	return time.Date(y, mo, d, h, mi, s, l.Nanosecond(), time.UTC)
}

// wallInstant returns the instant the wall time w (fields in UTC) names in
// loc: the first of two in a repeated hour, the end of the gap for a time
// the gap skips.
func wallInstant(w time.Time, loc *time.Location) time.Time {
	y, mo, d := w.Date()
	h, mi, s := w.Clock()
	t := time.Date(y, mo, d, h, mi, s, w.Nanosecond(), loc)
	start, end := t.ZoneBounds()
	switch got := wallTime(t, loc); {
	case got.Before(w) && !end.IsZero(): // t lies before the gap: fire when it ends
		return end
	case got.After(w) && !start.IsZero(): // t lies after the gap: fire when it began
		return start
	case start.IsZero(): // the zone's first period: nothing came before
		return t
	}
	// An earlier occurrence has the previous period's offset.
	_, off := start.Add(-time.Nanosecond).Zone()
	if early := w.Add(-time.Duration(off) * time.Second); early.Before(start) && wallTime(early, loc).Equal(w) {
		return early
	}
	return t
}

// day is one local calendar day: the instants [start, end).
type day struct{ start, end time.Time }

// dayOf returns the local day of t. A midnight that a gap skips starts
// its day when the gap ends, so consecutive days always abut.
func (c *cronSource) dayOf(t time.Time) day {
	y, m, d := t.In(c.loc).Date()
	return day{
		wallInstant(time.Date(y, m, d, 0, 0, 0, 0, time.UTC), c.loc),
		wallInstant(time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC), c.loc),
	}
}

// plainCount returns the fires of the whole day d when no zone transition
// comes near it (a gap's fire may move up to a day), and false otherwise.
func (c *cronSource) plainCount(d day) (int, bool) {
	if d.end.Sub(d.start) != 24*time.Hour {
		return 0, false
	}
	before, _ := d.start.Add(-24 * time.Hour).ZoneBounds()
	after, _ := d.end.Add(24 * time.Hour).ZoneBounds()
	if !before.Equal(after) {
		return 0, false
	}
	if !c.dayMatches(d.start.In(c.loc)) {
		return 0, true
	}
	return c.perDay, true
}

// dayMatches is robfig's rule: day of month and day of week both match
// when either is "*", else either matching is enough.
func (c *cronSource) dayMatches(t time.Time) bool {
	s := &c.real
	if 1<<uint(t.Month())&s.Month == 0 {
		return false
	}
	dom := 1<<uint(t.Day())&s.Dom != 0
	dow := 1<<uint(t.Weekday())&s.Dow != 0
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// countIn counts fires in [lo, hi) one by one.
func (c *cronSource) countIn(lo, hi time.Time, w *work) int {
	n := 0
	for t := c.next(lo.Add(-time.Nanosecond)); !t.IsZero() && t.Before(hi); t = c.next(t) {
		w.step()
		n++
	}
	return n
}

// count counts whole plain days by formula and the rest one by one.
func (c *cronSource) count(a, b time.Time, w *work) int {
	hi := b.Add(time.Nanosecond)
	n := 0
	for lo := a; lo.Before(hi); {
		w.step()
		d := c.dayOf(lo)
		end := d.end
		if hi.Before(end) {
			end = hi
		}
		if k, ok := c.plainCount(d); ok && lo.Equal(d.start) && end.Equal(d.end) {
			n += k
		} else {
			n += c.countIn(lo, end, w)
		}
		lo = end
	}
	return n
}

// skip walks whole plain days by formula and the others one by one.
func (c *cronSource) skip(a time.Time, n int, w *work) time.Time {
	for lo := a; ; {
		w.step()
		d := c.dayOf(lo)
		if k, ok := c.plainCount(d); ok && lo.Equal(d.start) && k <= n {
			n -= k
			lo = d.end
			continue
		}
		for t := c.next(lo.Add(-time.Nanosecond)); !t.IsZero() && t.Before(d.end); t = c.next(t) {
			w.step()
			if n == 0 {
				return t
			}
			n--
		}
		lo = d.end
	}
}
