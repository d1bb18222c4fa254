package cli

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"golang.org/x/term"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// newActionLister prints actions, as GET /v1/actions/{id} answers them,
// newest first as listed: a table on a terminal (withStatus adds a
// STATUS column), JSON Lines otherwise. Ages and expiries are relative
// to now().
func newActionLister(w io.Writer, asJSON, withStatus bool, now func() time.Time) *lister[apitype.ActionRead] {
	header := []string{"ACTION"}
	if withStatus {
		header = append(header, "STATUS")
	}
	header = append(header, "TOOL", "SESSION", "TURN", "AGE", "EXPIRES", "REASON", "INPUT")
	l := newLister(w, asJSON, header, func(a *apitype.ActionRead) []string {
		t := now()
		row := []string{a.ActionID}
		if withStatus {
			row = append(row, string(a.Status))
		}
		return append(row, a.ToolName, a.SessionID, a.TurnID, compactDuration(t.Sub(a.CreatedAt)), expires(a, t), cmp.Or(a.ReasonCode, "-"), actionInput(a))
	})
	l.none = "no actions"
	if withStatus {
		l.paint[1] = paintStatus
	}
	return l
}

// actionInput is what an action's row shows of what it decides: the
// call's input, or what an elicitation asks and the fields it wants.
func actionInput(a *apitype.ActionRead) string {
	if a.Type == runtype.ActionElicitation {
		return fmt.Sprintf("%q %s", oneLine(a.Prompt, 80), elicitationFields(a.RequestedSchema))
	}
	return a.InputPreview
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
