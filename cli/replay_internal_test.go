package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/replaycase"
)

// TestPrintDiffColour: on a terminal, changed steps and differences are
// red and nothing else is coloured.
func TestPrintDiffColour(t *testing.T) {
	t.Parallel()
	out := func(o replaycase.Outcome) *replaycase.Outcome { return &o }
	d := &replaycase.Diff{
		TurnID: "turn_1", SessionID: "ses_1", Agent: "a",
		Steps: []replaycase.StepDiff{
			{Index: 1, Tool: "lookup", Recorded: out(replaycase.Outcome{Decision: "allow"}), Replayed: out(replaycase.Outcome{Decision: "allow"}), Changed: []string{}},
			{Index: 2, Tool: "open", Recorded: out(replaycase.Outcome{Decision: "allow"}), Replayed: out(replaycase.Outcome{Decision: "deny"}), Changed: []string{"decision"}},
		},
		Differences: []replaycase.Difference{{Kind: "status", Message: "the request ended completed, the replay failed"}},
		Summary:     replaycase.Summary{StepsCompared: 2, Changed: 1, Differs: true, ResultsCompared: true},
	}
	for _, colour := range []bool{false, true} {
		var buf bytes.Buffer
		printDiff(&buf, d, colour)
		var red []string
		for line := range strings.Lines(buf.String()) {
			if strings.HasPrefix(line, ansiChanged) {
				if !strings.HasSuffix(line, ansiReset+"\n") {
					t.Errorf("colour not reset: %q", line)
				}
				red = append(red, strings.TrimSpace(strings.TrimPrefix(line, ansiChanged))[:3])
			} else if strings.Contains(line, "\x1b[") {
				t.Errorf("stray colour: %q", line)
			}
		}
		want := []string{}
		if colour {
			want = []string{"*  ", "* t"}
		}
		if strings.Join(red, "|") != strings.Join(want, "|") {
			t.Errorf("colour %v: red lines %q, want %q\n%s", colour, red, want, buf.String())
		}
		if !strings.HasSuffix(buf.String(), "2 steps compared; 0/0 model outputs used; 1 step changed, 1 other difference\n") {
			t.Errorf("summary line:\n%s", buf.String())
		}
	}
}
