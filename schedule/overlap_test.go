package schedule

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseOverlap(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Overlap{
		"": OverlapSkip, "skip": OverlapSkip, "buffer_one": OverlapBufferOne, "buffer_all": OverlapBufferAll,
		"cancel_other": OverlapCancelOther, "allow_all": OverlapAllowAll,
	} {
		got, err := ParseOverlap(in)
		if err != nil || got != want {
			t.Errorf("ParseOverlap(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
	_, err := ParseOverlap("buffer")
	want := `overlap: unknown policy "buffer" (want skip, buffer_one, buffer_all, cancel_other or allow_all)`
	if err == nil || err.Error() != want {
		t.Errorf("ParseOverlap(\"buffer\") error = %v, want %q", err, want)
	}
}

// TestDecide pins every policy in every state: nothing running, one running,
// one running with one buffered, two running with two buffered, and the
// odd state of none running with one buffered.
func TestDecide(t *testing.T) {
	t.Parallel()
	type state struct{ running, buffered int }
	states := []state{{0, 0}, {1, 0}, {1, 1}, {2, 2}, {0, 1}}
	want := map[Overlap][]Action{
		OverlapSkip:        {ActionStart, ActionSkip, ActionSkip, ActionSkip, ActionStart},
		OverlapBufferOne:   {ActionStart, ActionBuffer, ActionSkip, ActionSkip, ActionStart},
		OverlapBufferAll:   {ActionStart, ActionBuffer, ActionBuffer, ActionBuffer, ActionBuffer},
		OverlapCancelOther: {ActionStart, ActionCancelAndBuffer, ActionSkip, ActionSkip, ActionStart},
		OverlapAllowAll:    {ActionStart, ActionStart, ActionStart, ActionStart, ActionStart},
		"unknown":          {ActionStart, ActionSkip, ActionSkip, ActionSkip, ActionStart},
	}
	for p, actions := range want {
		var got []Action
		for _, s := range states {
			got = append(got, Decide(p, s.running, s.buffered))
		}
		if diff := cmp.Diff(actions, got); diff != "" {
			t.Errorf("Decide(%s, running/buffered %v) (-want +got):\n%s", p, states, diff)
		}
	}
}

func TestStartBuffered(t *testing.T) {
	t.Parallel()
	type state struct{ running, buffered int }
	states := []state{{0, 0}, {0, 1}, {1, 1}, {0, 3}, {2, 3}}
	want := map[Overlap][]bool{
		OverlapSkip:        {false, true, false, true, false},
		OverlapBufferOne:   {false, true, false, true, false},
		OverlapBufferAll:   {false, true, false, true, false},
		OverlapCancelOther: {false, true, false, true, false},
		OverlapAllowAll:    {false, true, true, true, true},
	}
	for p, bools := range want {
		var got []bool
		for _, s := range states {
			got = append(got, StartBuffered(p, s.running, s.buffered))
		}
		if diff := cmp.Diff(bools, got); diff != "" {
			t.Errorf("StartBuffered(%s, running/buffered %v) (-want +got):\n%s", p, states, diff)
		}
	}
}

// TestBufferAllDrains plays buffer_all through Decide and StartBuffered: three
// fires during one long run start one after another, none skipped.
func TestBufferAllDrains(t *testing.T) {
	t.Parallel()
	running, buffered := 0, 0
	var log []string
	fire := func() {
		switch a := Decide(OverlapBufferAll, running, buffered); a {
		case ActionStart:
			running++
		case ActionBuffer:
			buffered++
		}
		log = append(log, fmt.Sprintf("fire r%d b%d", running, buffered))
	}
	end := func() {
		running--
		for StartBuffered(OverlapBufferAll, running, buffered) {
			buffered--
			running++
		}
		log = append(log, fmt.Sprintf("end r%d b%d", running, buffered))
	}
	fire()
	fire()
	fire()
	end()
	end()
	end()
	want := []string{"fire r1 b0", "fire r1 b1", "fire r1 b2", "end r1 b1", "end r1 b0", "end r0 b0"}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("buffer_all (-want +got):\n%s", diff)
	}
}
