package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
)

// TestDelegationUsageErrors: the subagents and jobs commands refuse bad
// arguments, flags and items files with exit 2 and a message saying
// what is wrong (for a file: its name and line), before asking the
// runtime anything.
func TestDelegationUsageErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.makeStore(t)
	bad := b.write(t, "bad.jsonl", "{\"n\":1}\n\n{\"n\":\n")
	empty := b.write(t, "empty.jsonl", "\n  \n")
	var many strings.Builder
	for i := range apitype.MaxJobItems + 1 {
		fmt.Fprintf(&many, "%d\n", i)
	}
	tooMany := b.write(t, "many.jsonl", many.String())
	big := b.write(t, "big.jsonl", "1\n\""+strings.Repeat("x", apitype.MaxJobItemBytes)+"\"\n")
	ids := make([]string, apitype.MaxWaitSubagents+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("sub_%d", i)
	}
	create := []string{"jobs", "create", "--session", "ses_x", "--agent", "support", "--items"}
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  string // in stderr
	}{
		{"list without a session", []string{"subagents", "list"}, "", "list takes one SESSION_ID, got 0 arguments"},
		{"show two ids", []string{"subagents", "show", "sub_a", "sub_b"}, "", "show takes one SUBAGENT_ID, got 2 arguments"},
		{"spawn without flags", []string{"subagents", "spawn", "hello"}, "", "--session and --agent are required"},
		{"spawn without input", []string{"subagents", "spawn", "--session", "ses_x", "--agent", "support"}, "", "spawn takes one INPUT, got 0 arguments"},
		{"input without text", []string{"subagents", "input", "sub_a"}, "", "input takes a SUBAGENT_ID and a TEXT, got 1 arguments"},
		{"input of nothing", []string{"subagents", "input", "sub_a", ""}, "", "TEXT is empty"},
		{"wait for none", []string{"subagents", "wait"}, "", "wait takes at least one SUBAGENT_ID"},
		{"wait for too many", append([]string{"subagents", "wait"}, ids...), "", "at most 100 SUBAGENT_IDs, got 101"},
		{"wait a negative time", []string{"subagents", "wait", "sub_a", "--timeout", "-1s"}, "", "--timeout -1s is negative"},
		{"close without an id", []string{"subagents", "close"}, "", "close takes one SUBAGENT_ID, got 0 arguments"},
		{"create without items", []string{"jobs", "create", "--session", "ses_x", "--agent", "support"}, "", "--session, --agent and --items are required"},
		{"create from a missing file", append(create, "nope.jsonl"), "", "reading --items: open nope.jsonl"},
		{"create from a bad line", append(create, bad), "", bad + ":3: not a JSON value"},
		{"create from no items", append(create, empty), "", empty + " holds no items"},
		{"create from too many", append(create, tooMany), "", tooMany + ":10001: more than 10000 items"},
		{"create from a big item", append(create, big), "", big + ":2: the item is more than 65536 bytes"},
		{"create from bad standard input", append(create, "-"), "[1,\n", "standard input:1: not a JSON value"},
		{"items of a bad status", []string{"jobs", "items", "job_x", "--status", "broken"}, "", `--status "broken" is not an item status`},
		{"items from a negative index", []string{"jobs", "items", "job_x", "--from", "-1"}, "", "--from and --limit may not be negative"},
		{"retry without a job", []string{"jobs", "retry"}, "", "retry takes a JOB_ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, tt.stdin, append(tt.args, "--config", b.config)...)
			if r.code != cli.ExitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, cli.ExitUsage, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}
