package cli_test

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/spectest"
)

// exampleDir is the support-triage example every end-to-end test runs.
const exampleDir = "../examples/support"

// testBundle is a private copy of the example: its data_dir (.agentrt)
// and the tickets its tools write land in dir, not in the repository.
type testBundle struct {
	dir    string
	config string   // dir/agentrt.yaml
	env    []string // added to the environment of processes started with startServe
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir(exampleDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(exampleDir, path)
		if err != nil {
			return err
		}
		// Leftovers of running the example in place are not part of it.
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".agentrt") || d.Name() == "tickets") {
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, info.Mode().Perm()) // keeps the tools executable
	})
	if err != nil {
		t.Fatalf("copying the example: %v", err)
	}
	return &testBundle{dir: dir, config: filepath.Join(dir, "agentrt.yaml")}
}

// edit replaces old with new in the copied agentrt.yaml, failing when the
// example no longer contains old.
func (b *testBundle) edit(t *testing.T, old, new string) {
	t.Helper()
	src, err := os.ReadFile(b.config)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte(old)) {
		t.Fatalf("the example's agentrt.yaml no longer contains %q", old)
	}
	if err := os.WriteFile(b.config, bytes.Replace(src, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// useScript makes the agent play a replay script with the given contents.
func (b *testBundle) useScript(t *testing.T, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(b.dir, "test.replay.yaml"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	b.edit(t, "script: support.replay.yaml", "script: test.replay.yaml")
}

type result struct {
	code           int
	stdout, stderr string
}

// run calls cli.Main as the binary would.
func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	var in io.Reader = strings.NewReader(stdin)
	code := cli.Main(args, in, &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// runOK is run that fails the test unless the command exits 0.
func runOK(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := run(t, stdin, args...)
	if r.code != cli.ExitOK {
		t.Fatalf("agentrt %s: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// jsonLines decodes `run --json` output, checking that every line is an
// event of the standard's schema.
func jsonLines(t *testing.T, out string) []*event.Event {
	t.Helper()
	var evs []*event.Event
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		spectest.Event(t, []byte(line))
		e, err := event.Decode([]byte(line))
		if err != nil {
			t.Fatalf("line %d: %v\n%s", i+1, err, line)
		}
		evs = append(evs, e)
	}
	return evs
}

// matchLines checks out line by line against patterns, where each pattern
// is literal text except for the placeholders below.
func matchLines(t *testing.T, out string, patterns []string) {
	t.Helper()
	placeholders := strings.NewReplacer(
		regexp.QuoteMeta("{ID}"), `[0-9A-Z]{26}`,
		regexp.QuoteMeta("{DUR}"), `(<1ms|[0-9.]+(µs|ms|s))`,
		regexp.QuoteMeta("{ANY}"), `.*`,
	)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(patterns) {
		t.Errorf("got %d lines, want %d", len(lines), len(patterns))
	}
	for i := range min(len(lines), len(patterns)) {
		re := regexp.MustCompile("^" + placeholders.Replace(regexp.QuoteMeta(patterns[i])) + "$")
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d:\n got: %s\nwant: %s", i+1, lines[i], patterns[i])
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// governedScript looks an order up (the policy allows it), then opens a
// ticket (the policy asks) and completes in the same hop, so that an
// approved turn completes without asking the model again. After a denial
// the model is asked again (it must see the refusal before it finishes)
// and gets the third answer: a replay script resumes a turn begun in
// another process after its recorded answers.
const governedScript = `model: governed-v1
responses:
  - text: "Let me look up order 1042."
    tool_calls: [{name: lookup_order, input: {order_id: "1042"}}]
  - text: "Opening a ticket."
    tool_calls:
      - {name: open_ticket, input: {order_id: "1042", priority: high, summary: "Order 1042 is late"}}
      - {name: complete_task, input: {result: "Ticket opened for order 1042."}}
  - tool_calls:
      - {name: complete_task, input: {result: "No ticket was opened for order 1042."}}
`

// ticketRules deny low-priority tickets, ask about the others and allow
// every other call.
const ticketRules = `tier: workspace
rules:
  - id: refuse-low-tickets
    tools: [open_ticket]
    when: input.priority == 'low'
    decision: deny
    reason_code: low_priority_ticket
    message: low-priority tickets go to the forum
  - id: review-tickets
    tools: [open_ticket]
    decision: ask
    reason_code: ticket_review
    message: tickets are reviewed by a person
  - id: allow-rest
    tools: ["*"]
    priority: -1
    decision: allow
    reason_code: allowed
`

// governedPolicy is the policy section setupGoverned appends: the rules,
// and a principal without the operator role.
const governedPolicy = `
policy:
  rules: [rules.yaml]
  principals:
    viewer: {roles: [viewer]}
`

// setupGoverned is setup with governedScript, ticketRules and
// governedPolicy.
func setupGoverned(t *testing.T) *testBundle {
	t.Helper()
	b := setup(t)
	b.useScript(t, governedScript)
	b.write(t, "rules.yaml", ticketRules)
	f, err := os.OpenFile(b.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(governedPolicy); err != nil {
		t.Fatal(err)
	}
	return b
}

// makeStore makes the store of the config's data directory, as agentrt
// run or serve do on first use: the commands that read a data directory
// refuse one without a store.
func (b *testBundle) makeStore(t *testing.T) {
	t.Helper()
	b.withRuntime(t, func(context.Context, *agentrt.Runtime) {})
}

// write writes a file into the bundle's folder and returns its path.
func (b *testBundle) write(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(b.dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// park runs the governed turn, which parks waiting for the open_ticket
// call to be decided, and returns the pending action's id.
func (b *testBundle) park(t *testing.T) (actionID string, r result) {
	t.Helper()
	r = run(t, "", "run", "--config", b.config, question)
	if r.code != cli.ExitParked {
		t.Fatalf("run: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, cli.ExitParked, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`(?m)^  pending (act_[0-9A-Z]{26}): `).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("run printed no pending action:\n%s", r.stdout)
	}
	return m[1], r
}
