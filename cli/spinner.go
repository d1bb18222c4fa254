package cli

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// clock is the time a live timeline's spinner shows and the ticks that
// redraw it. Tests give a fake one, so that what the spinner draws is
// the same on every run.
type clock interface {
	Now() time.Time
	// Tick returns a channel that receives a time every d, and a function
	// that stops it.
	Tick(d time.Duration) (ticks <-chan time.Time, stop func())
}

// wallClock is the system's clock.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Tick(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// spinnerEvery is how often the spinner is redrawn.
const spinnerEvery = 100 * time.Millisecond

var spinnerFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// spinner is the line a live timeline draws on a terminal while a model
// or tool works: a turning frame, what works and for how long. It is
// redrawn in place with \r and erased before the timeline's next line,
// so that it never stays in the output.
type spinner struct {
	what  string // what works; "" draws nothing
	since time.Time
	frame int
	drawn int // runes of the line on the terminal; 0 when none is
}

// text is the spinner's line at now, at most width runes (0: any).
func (s *spinner) text(now time.Time, width int) string {
	spans := []span{
		plain(string(spinnerFrames[s.frame%len(spinnerFrames)]) + " "),
		flexible(1, s.what),
		plain(" · " + elapsed(now.Sub(s.since))),
	}
	if width > 0 {
		// One column short: writing the last one makes some terminals
		// wrap, and \r would then return to the wrong line.
		fit(spans, width-1)
	}
	return spans[0].text + spans[1].text + spans[2].text
}

// draw draws line over the one drawn before.
func (s *spinner) draw(w io.Writer, line string, st style) {
	n := utf8.RuneCountInString(line)
	fmt.Fprintf(w, "\r%s%s", st.dim(line), strings.Repeat(" ", max(s.drawn-n, 0)))
	s.drawn = max(n, s.drawn)
}

// erase blanks the line the spinner drew and returns to its start.
func (s *spinner) erase(w io.Writer) {
	if s.drawn == 0 {
		return
	}
	fmt.Fprintf(w, "\r%s\r", strings.Repeat(" ", s.drawn))
	s.drawn = 0
}

// elapsed writes a duration for the spinner: "0.4s", "12.0s", "2m05s".
func elapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", max(d, 0).Seconds())
	}
	return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
}
