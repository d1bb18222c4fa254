package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"github.com/agentrt/agentrt/apitype"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/agentrt/agentrt/runtype"
)

// actionPrinter prints actions: as a table for people at a terminal,
// otherwise as JSON Lines of apitype.ActionRead.
type actionPrinter struct {
	w      io.Writer
	table  bool
	status bool  // the table has a STATUS column
	width  int   // the terminal's width
	header bool  // the table's header has been printed
	widths []int // the table's column widths so far
}

// newActionPrinter prints a table when w is a terminal and asJSON is
// false; withStatus adds a STATUS column to it.
func newActionPrinter(w io.Writer, asJSON, withStatus bool) *actionPrinter {
	p := &actionPrinter{w: w, status: withStatus}
	if f, ok := w.(*os.File); ok && !asJSON && isTerminal(f) {
		p.table, p.width = true, terminalWidth(f)
	}
	return p
}

func (p *actionPrinter) print(acts []apitype.ActionRead, now time.Time) error {
	if p.table {
		p.printTable(acts, now)
		return nil
	}
	enc := json.NewEncoder(p.w)
	enc.SetEscapeHTML(false)
	for i := range acts {
		if err := enc.Encode(&acts[i]); err != nil {
			return err
		}
	}
	return nil
}

// printTable prints one row per action, sized to the terminal: every
// column but INPUT at its full width (ids are meant to be copied), and
// INPUT cut to what is left. Without actions it says so.
func (p *actionPrinter) printTable(acts []apitype.ActionRead, now time.Time) {
	if len(acts) == 0 {
		if !p.header {
			fmt.Fprintln(p.w, "no actions")
		}
		return
	}
	cols := []string{"ACTION"}
	if p.status {
		cols = append(cols, "STATUS")
	}
	cols = append(cols, "TOOL", "SESSION", "TURN", "AGE", "EXPIRES", "REASON", "INPUT")
	rows := make([][]string, len(acts))
	for i, a := range acts {
		row := []string{a.ActionID}
		if p.status {
			row = append(row, string(a.Status))
		}
		row = append(row, a.ToolName, a.SessionID, a.TurnID, compactDuration(now.Sub(a.CreatedAt)), expires(&a, now), cmp.Or(a.ReasonCode, "-"), a.InputPreview)
		rows[i] = row
	}
	// A watch's later batches keep the columns of the earlier ones, unless
	// a cell needs more room.
	widths := p.widths
	if widths == nil {
		widths = make([]int, len(cols))
		for i, c := range cols {
			widths[i] = utf8.RuneCountInString(c)
		}
		p.widths = widths
	}
	for _, row := range rows {
		for i, cell := range row[:len(row)-1] {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	last := len(cols) - 1
	used := 0
	for _, w := range widths[:last] {
		used += w + 2
	}
	inputWidth := max(p.width-used, 20)
	line := func(cells []string) {
		var b strings.Builder
		for i, cell := range cells {
			if i == last {
				b.WriteString(oneLine(cell, inputWidth))
				break
			}
			b.WriteString(cell)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+2))
		}
		fmt.Fprintln(p.w, strings.TrimRight(b.String(), " "))
	}
	if !p.header {
		line(cols)
		p.header = true
	}
	for _, row := range rows {
		line(row)
	}
}

// expires says when a pending action expires; "-" for one resolved.
func expires(a *apitype.ActionRead, now time.Time) string {
	switch {
	case a.Status != runtype.ActionPending:
		return "-"
	case a.ExpiresAt == nil:
		return "never"
	case !now.Before(*a.ExpiresAt):
		return "now"
	}
	return "in " + compactDuration(a.ExpiresAt.Sub(now))
}

// compactDuration writes d in its two largest units: 45s, 12m, 3h05m, 2d4h.
func compactDuration(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// defaultWidth is the width assumed for a terminal that does not say.
const defaultWidth = 120

// terminalWidth returns $COLUMNS, or the terminal's width where the
// system says, or defaultWidth.
func terminalWidth(f *os.File) int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if n := windowWidth(f); n > 0 {
		return n
	}
	return defaultWidth
}
