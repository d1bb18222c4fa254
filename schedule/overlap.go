package schedule

import "fmt"

// Overlap is what a schedule does with a fire that comes while an earlier
// fire still runs. The policies are Temporal's.
type Overlap string

// The overlap policies.
const (
	// OverlapSkip starts a fire only when none runs; otherwise it is
	// skipped. The default.
	OverlapSkip Overlap = "skip"
	// OverlapBufferOne keeps one fire waiting while another runs; a
	// further fire is skipped.
	OverlapBufferOne Overlap = "buffer_one"
	// OverlapBufferAll keeps every fire waiting, to start one after
	// another.
	OverlapBufferAll Overlap = "buffer_all"
	// OverlapCancelOther cancels the running fire and starts the new one
	// when it has ended; a further fire while one waits is skipped.
	OverlapCancelOther Overlap = "cancel_other"
	// OverlapAllowAll starts every fire at once.
	OverlapAllowAll Overlap = "allow_all"
)

var overlaps = []Overlap{OverlapSkip, OverlapBufferOne, OverlapBufferAll, OverlapCancelOther, OverlapAllowAll}

// ParseOverlap returns the policy named s; empty means OverlapSkip.
func ParseOverlap(s string) (Overlap, error) {
	if s == "" {
		return OverlapSkip, nil
	}
	for _, o := range overlaps {
		if string(o) == s {
			return o, nil
		}
	}
	return "", fmt.Errorf("overlap: unknown policy %q (want skip, buffer_one, buffer_all, cancel_other or allow_all)", s)
}

// Action is what happens to a fire.
type Action string

// The actions Decide returns.
const (
	// ActionStart starts the fire's run now.
	ActionStart Action = "start"
	// ActionSkip records the fire as skipped; it never runs.
	ActionSkip Action = "skip"
	// ActionBuffer keeps the fire waiting until StartBuffered allows it.
	ActionBuffer Action = "buffer"
	// ActionCancelAndBuffer cancels the running fires and keeps this one
	// waiting until they have ended.
	ActionCancelAndBuffer Action = "cancel_and_buffer"
)

// Decide returns what policy p does with a new fire while running fires
// run and buffered fires wait. An unknown policy acts as OverlapSkip.
func Decide(p Overlap, running, buffered int) Action {
	switch p {
	case OverlapAllowAll:
		return ActionStart
	case OverlapBufferAll:
		if running == 0 && buffered == 0 {
			return ActionStart
		}
		return ActionBuffer
	case OverlapBufferOne:
		switch {
		case running == 0:
			return ActionStart
		case buffered == 0:
			return ActionBuffer
		}
		return ActionSkip
	case OverlapCancelOther:
		switch {
		case running == 0:
			return ActionStart
		case buffered == 0:
			return ActionCancelAndBuffer
		}
		return ActionSkip
	}
	if running == 0 {
		return ActionStart
	}
	return ActionSkip
}

// StartBuffered reports whether policy p starts the oldest buffered fire
// now: when nothing runs, or always under OverlapAllowAll.
func StartBuffered(p Overlap, running, buffered int) bool {
	if buffered == 0 {
		return false
	}
	return running == 0 || p == OverlapAllowAll
}
