package cli_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/event"
)

const question = "Where is order 1042?"

// TestRunExample runs the support-triage example as its README says and
// checks the whole timeline: every hop, policy decision and tool call, and
// the result; and that the run's data landed next to the config.
func TestRunExample(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := runOK(t, "", "run", "--config", b.config, "--agent", "support", question)
	if r.stderr != "" {
		t.Errorf("stderr = %q, want nothing", r.stderr)
	}
	matchLines(t, r.stdout, []string{
		"request turn_{ID}  agent support  session ses_{ID}",
		"hop 1   model   replay/support-triage-v1 → tool_request: lookup_order · 412 in / 31 out tokens",
		`                "Let me look up order 1042."`,
		"        policy  allow lookup_order (default: no_policy_configured)",
		"        sandbox workspace_write, network none ({ANY})",
		`        tool    lookup_order {"order_id":"1042"} → {"order_id":"1042","status":"in_transit",{ANY}… · {DUR}`,
		"hop 2   model   replay/support-triage-v1 → tool_request: read_file · 538 in / 42 out tokens",
		`                "The order is 9 days past its promised date. Checking the support policy before deciding."`,
		"        policy  allow read_file (default: no_policy_configured)",
		`        tool    read_file {"path":"policy.md"} → # Support policy{ANY}… · {DUR}`,
		"hop 3   model   replay/support-triage-v1 → tool_request: open_ticket · 801 in / 64 out tokens",
		`                "Policy: orders more than 7 days late get a high-priority ticket. Opening one."`,
		"        policy  allow open_ticket (default: no_policy_configured)",
		"        sandbox workspace_write, network none ({ANY})",
		`        tool    open_ticket {"order_id":"1042","priority":"high","summary":"Order 1042 … → {"ticket_id":"T-{ANY} · {DUR}`,
		"hop 4   model   replay/support-triage-v1 → complete: complete_task · 902 in / 58 out tokens",
		"        policy  allow complete_task (default: no_policy_configured)",
		`        tool    complete_task {"result":"Order 1042 is delayed: {ANY}… → task completed · {DUR}`,
		"✔ completed in {DUR} · 4 hops · 4 tool calls · 2653 in / 195 out tokens",
		"  result: Order 1042 is delayed: it is 9 days past its promised date, last scanned by Parcelo in Lyon. " +
			"A high-priority ticket is open and the logistics team will contact you within 24 hours.",
	})
	if _, err := os.Stat(filepath.Join(b.dir, ".agentrt", "agentrt.db")); err != nil {
		t.Errorf("no database in the config's data_dir: %v", err)
	}
	tickets, err := filepath.Glob(filepath.Join(b.dir, "workspace", "tickets", "T-*.json"))
	if err != nil || len(tickets) != 1 {
		t.Errorf("tickets in the workspace = %v (%v), want one", tickets, err)
	}
}

// TestRunJSON: --json prints the session's events as JSON Lines, every
// one valid against the standard's schema, with sequences 1..n.
func TestRunJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := runOK(t, "", "run", "--config", b.config, "--json", question)
	evs := jsonLines(t, r.stdout)
	counts := map[event.Type]int{}
	for i, e := range evs {
		if e.Sequence != int64(i+1) {
			t.Errorf("line %d (%s) has sequence %d, want %d", i+1, e.Type, e.Sequence, i+1)
		}
		if e.SessionID != evs[0].SessionID {
			t.Errorf("line %d is of session %s, want %s", i+1, e.SessionID, evs[0].SessionID)
		}
		counts[e.Type]++
	}
	if first, last := evs[0].Type, evs[len(evs)-1].Type; first != event.SessionCreated || last != event.TurnCompleted {
		t.Errorf("stream runs from %s to %s, want %s to %s", first, last, event.SessionCreated, event.TurnCompleted)
	}
	want := map[event.Type]int{
		event.SessionCreated: 1, event.ThreadStarted: 1, event.TurnSubmitted: 1, event.TurnStarted: 1,
		event.ModelRequested: 4, event.ModelCompleted: 4, event.PermissionEvaluated: 4,
		event.ToolStarted: 4, event.ToolResult: 4, event.TurnCompleted: 1,
	}
	for typ, n := range want {
		if counts[typ] != n {
			t.Errorf("%d %s events, want %d", counts[typ], typ, n)
		}
	}
}

// TestRunFails: a model that keeps replying when the agent requires
// complete_task fails the turn, and the command exits 1.
func TestRunFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.useScript(t, "responses: [{text: hi}, {text: again}]\n")
	r := run(t, "", "run", "--config", b.config, question)
	if r.code != cli.ExitFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, cli.ExitFailed, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	want := "✘ failed (no_completion): the model replied twice without calling complete_task · 2 hops · 0 tool calls"
	if got := lines[len(lines)-1]; got != want {
		t.Errorf("last line = %q, want %q", got, want)
	}
}

// TestRunRejectsBadConfig: mistakes in agentrt.yaml or in the replay
// script it names exit 2 and point at file:line:column.
func TestRunRejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		old, new  string
		script    string // replaces the replay script when set
		wantLine  string // the line of the file the error points at
		wantCol   int
		wantFile  string // default agentrt.yaml
		wantError string
	}{
		{
			name: "unknown key", old: "    max_tool_hops: 8\n", new: "    max_tool_hops: 8\n    max_hops: 8\n",
			wantLine: "    max_hops: 8", wantCol: 5, wantError: `unknown key "max_hops" in agent "support"; did you mean max_tool_hops?`,
		},
		{
			name: "bad value", old: "max_tool_hops: 8", new: "max_tool_hops: 0",
			wantLine: "    max_tool_hops: 0", wantCol: 20, wantError: `max_tool_hops in agent "support" must be between 1 and 1000, got 0`,
		},
		{
			name: "bad duration", old: "timeout: 10s\n    annotations: {read_only", new: "timeout: soon\n    annotations: {read_only",
			wantLine: "    timeout: soon", wantCol: 14, wantError: `timeout in tool "lookup_order" must be a duration such as 10s or 1m30s, got string "soon"`,
		},
		{
			name: "bad replay script", script: "responses:\n  - txt: hi\n",
			wantFile: "test.replay.yaml", wantLine: "  - txt: hi", wantCol: 5, wantError: `response 1: unknown key "txt" (did you mean "text"?)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			file := b.config
			if tt.script != "" {
				b.useScript(t, tt.script)
				file = filepath.Join(b.dir, tt.wantFile)
			} else {
				b.edit(t, tt.old, tt.new)
			}
			r := run(t, "", "run", "--config", b.config, question)
			if r.code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", r.code, cli.ExitUsage, r.stderr)
			}
			want := fmt.Sprintf("%s:%d:%d: %s", file, lineOf(t, file, tt.wantLine), tt.wantCol, tt.wantError)
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr does not contain\n  %s\nstderr:\n%s", want, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

// TestRunFileLimits: a config or replay script past the limits every YAML
// file is held to exits 2 with an error naming it, before it is parsed
// and before anything runs (200 KB of nesting once took 15 GB).
func TestRunFileLimits(t *testing.T) {
	t.Parallel()
	nestedConfig := "agents: " + strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000) + "\n"
	tests := []struct {
		name           string
		config, script string // replace the example's
		want           string // in stderr, after the folder
	}{
		{name: "NestedConfig", config: nestedConfig, want: "agentrt.yaml:1:264: nested more than 256 levels deep"},
		{name: "LargeConfig", config: nestedConfig + strings.Repeat("# padding\n", 11<<20/10),
			want: "agentrt.yaml: the file is larger than 10 MiB, the most agentrt reads"},
		{name: "NestedScript", script: "responses: " + strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000) + "\n",
			want: "test.replay.yaml:1:267: nested more than 256 levels deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if tt.script != "" {
				b.useScript(t, tt.script)
			}
			if tt.config != "" {
				b.write(t, "agentrt.yaml", tt.config)
			}
			r := run(t, "", "run", "--config", b.config, question)
			if r.code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", r.code, cli.ExitUsage, r.stderr)
			}
			if want := filepath.Join(b.dir, tt.want); !strings.Contains(r.stderr, want) {
				t.Errorf("stderr does not contain\n  %s\nstderr:\n%s", want, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(b.dir, ".agentrt")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused config made the data directory: %v", err)
			}
		})
	}
}

// lineOf returns the 1-based number of the line of file equal to line.
func lineOf(t *testing.T, file, line string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if l == line {
			return i + 1
		}
	}
	t.Fatalf("%s has no line %q", file, line)
	return 0
}

// TestRunUsageErrors: every mistake on the command line exits 2 with a
// message saying what is wrong, before anything runs.
func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"missing INPUT", []string{"run", "--config", b.config}, "missing INPUT"},
		{"empty INPUT", []string{"run", "--config", b.config, "  "}, "invalid input: must not be empty"},
		{"unknown agent", []string{"run", "--config", b.config, "--agent", "nobody", question}, `unknown agent "nobody"`},
		{"missing config", []string{"run", "--config", filepath.Join(b.dir, "nope.yaml"), question}, "nope.yaml"},
		{"unknown flag", []string{"run", "--config", b.config, "--bogus", question}, "unknown flag: --bogus"},
		{"unknown command", []string{"runn"}, `unknown command "runn"`},
		{"version with arguments", []string{"version", "extra"}, `"extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, "", tt.args...)
			if r.code != cli.ExitUsage {
				t.Errorf("exit %d, want %d", r.code, cli.ExitUsage)
			}
			if !strings.HasPrefix(r.stderr, "agentrt: ") || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr = %q, want an agentrt: message containing %q", r.stderr, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(b.dir, ".agentrt", "agentrt.db")); err == nil {
		t.Error("a rejected command opened the store")
	}
}

// TestRunReadsStdin: INPUT "-" is the whole of standard input.
func TestRunReadsStdin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	input := "Where is order 1042?\nIt was due last week."
	r := runOK(t, input, "run", "--config", b.config, "--json", "-")
	for _, e := range jsonLines(t, r.stdout) {
		if e.Type == event.TurnSubmitted {
			if got := e.Payload.(*event.TurnPayload).InputPreview; got != input {
				t.Errorf("input = %q, want %q", got, input)
			}
			return
		}
	}
	t.Errorf("no %s event", event.TurnSubmitted)
}

// TestRunDataDir: --data-dir replaces the config's data_dir.
func TestRunDataDir(t *testing.T) {
	t.Parallel()
	b := setup(t)
	data := filepath.Join(t.TempDir(), "elsewhere")
	runOK(t, "", "run", "--config", b.config, "--data-dir", data, question)
	if _, err := os.Stat(filepath.Join(data, "agentrt.db")); err != nil {
		t.Errorf("no database in --data-dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(b.dir, ".agentrt")); !os.IsNotExist(err) {
		t.Errorf("the config's data_dir was created anyway (stat: %v)", err)
	}
}

// TestRunContinuesSession: a second run with --session continues the
// first run's session in the same store: its stream goes on where the first
// ended, and the model sees the conversation so far. (The replay provider
// restarts its script in every process, so both runs get the first
// response; what proves the history is the message count.)
func TestRunContinuesSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.edit(t, "require_completion: true", "require_completion: false")
	b.useScript(t, "responses: [{text: first answer}, {text: second answer}]\n")
	args := []string{"run", "--config", b.config, "--json", "--session", "ses-cli-test"}

	first := jsonLines(t, runOK(t, "", append(args, "hello")...).stdout)
	second := jsonLines(t, runOK(t, "", append(args, "and again")...).stdout)

	all := append(first, second...)
	for i, e := range all {
		if e.SessionID != "ses-cli-test" {
			t.Errorf("event %d (%s) is of session %q", i+1, e.Type, e.SessionID)
		}
		if e.Sequence != int64(i+1) {
			t.Errorf("event %d (%s) has sequence %d, want %d", i+1, e.Type, e.Sequence, i+1)
		}
	}
	if first[0].Type != event.SessionCreated {
		t.Errorf("first run starts with %s, want %s", first[0].Type, event.SessionCreated)
	}
	if second[0].Type != event.TurnSubmitted {
		t.Errorf("second run starts with %s, want %s", second[0].Type, event.TurnSubmitted)
	}
	if first[0].ThreadID != second[0].ThreadID {
		t.Errorf("second run is on thread %s, want the first's %s", second[0].ThreadID, first[0].ThreadID)
	}
	// First run: the user's message. Second: that, the reply, the new message.
	if diff := cmp.Diff([]int{1, 3}, append(messageCounts(first), messageCounts(second)...)); diff != "" {
		t.Errorf("messages the model saw per request (-want +got):\n%s", diff)
	}
}

func messageCounts(evs []*event.Event) []int {
	var n []int
	for _, e := range evs {
		if p, ok := e.Payload.(*event.ModelRequestedPayload); ok {
			n = append(n, p.MessageCount)
		}
	}
	return n
}
