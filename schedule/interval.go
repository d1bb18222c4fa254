package schedule

import "time"

// interval fires at anchor + k*every, k >= 1.
type interval struct {
	anchor time.Time
	every  time.Duration
}

// index returns the number of fires in (anchor, t].
func (iv interval) index(t time.Time) int64 {
	if !t.After(iv.anchor) {
		return 0
	}
	return int64(t.Sub(iv.anchor) / iv.every)
}

func (iv interval) fire(k int64) time.Time {
	return iv.anchor.Add(time.Duration(k) * iv.every)
}

func (iv interval) next(after time.Time) time.Time {
	return iv.fire(iv.index(after) + 1)
}

func (iv interval) count(a, b time.Time, _ *work) int {
	if b.Before(a) {
		return 0
	}
	return int(iv.index(b) - iv.index(a.Add(-time.Nanosecond)))
}

func (iv interval) skip(a time.Time, n int, _ *work) time.Time {
	return a.Add(time.Duration(n) * iv.every)
}

// once fires at at.
type once struct{ at time.Time }

func (o once) next(after time.Time) time.Time {
	if o.at.After(after) {
		return o.at
	}
	return time.Time{}
}

func (o once) count(a, b time.Time, _ *work) int {
	if o.at.Before(a) || o.at.After(b) {
		return 0
	}
	return 1
}

func (o once) skip(a time.Time, n int, _ *work) time.Time {
	if n == 0 {
		return a
	}
	return time.Time{}
}
