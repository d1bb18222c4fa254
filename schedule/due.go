package schedule

import "time"

// DefaultCatchupWindow is the catch-up window Due uses when it is given
// none: a fire at most a minute late still runs.
const DefaultCatchupWindow = time.Minute

// Plan is what to do with the fires that came due. Its times are in UTC,
// oldest first.
type Plan struct {
	// Run holds the due fires at most the catch-up window old. All of them:
	// the overlap policy decides whether each starts, waits or is skipped.
	Run []time.Time
	// Missed holds listed due fires older than the window: they are
	// recorded as missed, not run.
	Missed []time.Time
	// MissedMore counts the due fires older than those listed, which Due
	// does not enumerate. When more than max fires fall inside the window,
	// the newest max run and the older ones are counted here too.
	MissedMore int
	// Next is the first fire after now, to store as the next fire time;
	// zero when the schedule fires no more.
	Next time.Time
}

// Due plans the fires f with next <= f <= now, next being the stored next
// fire time (the earliest fire not yet handled; zero when none is pending).
// A fire at most window old (now-f <= window) runs, an older one is missed;
// window <= 0 means DefaultCatchupWindow. Due lists the newest max fires
// (at least one) in Missed then Run and counts the older ones in
// MissedMore. Its work grows with max, not with the number of fires: a
// minute cron after a year of downtime costs about as much as after a day.
func (s *Schedule) Due(next, now time.Time, window time.Duration, max int) Plan {
	p, _ := s.due(next, now, window, max)
	return p
}

func (s *Schedule) due(next, now time.Time, window time.Duration, max int) (Plan, int) {
	if window <= 0 {
		window = DefaultCatchupWindow
	}
	if max < 1 {
		max = 1
	}
	var w work
	p := Plan{Next: s.Next(now)}
	if next.IsZero() || next.After(now) {
		return p, w.steps
	}
	first := s.Next(next.Add(-time.Nanosecond))
	if first.IsZero() || first.After(now) {
		return p, w.steps
	}
	listed := make([]time.Time, 0, min(max, 16))
	f := first
	for ; !f.IsZero() && !f.After(now) && len(listed) < max; f = s.Next(f) {
		w.step()
		listed = append(listed, f)
	}
	if !f.IsZero() && !f.After(now) {
		// More than max fires: count them, list the newest max.
		p.MissedMore = s.src.count(first, now, &w) - max
		listed = listed[:0]
		for f := s.src.skip(first, p.MissedMore, &w).UTC(); len(listed) < max; f = s.Next(f) {
			w.step()
			listed = append(listed, f)
		}
	}
	cut := now.Add(-window)
	for _, f := range listed {
		if f.Before(cut) {
			p.Missed = append(p.Missed, f)
		} else {
			p.Run = append(p.Run, f)
		}
	}
	return p, w.steps
}
