package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
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

// completesScript is a replay script of n answers that complete the
// task: every turn of a session, its children's included, gets one.
func completesScript(n int) string {
	r := make([]string, n)
	for i := range r {
		r[i] = fmt.Sprintf("{tool_calls: [{name: complete_task, input: {result: done %d}}]}", i)
	}
	return "responses: [" + strings.Join(r, ", ") + "]"
}

// runJSON runs a turn that completes and returns its ids.
func (b *testBundle) runJSON(t *testing.T) apitype.SubmitTurnResult {
	t.Helper()
	evs := jsonLines(t, runOK(t, "", "run", "--config", b.config, "--json", "hello").stdout)
	e := evs[len(evs)-1]
	return apitype.SubmitTurnResult{SessionID: e.SessionID, ThreadID: e.ThreadID, TurnID: e.TurnID, TaskID: e.TaskID}
}

// TestSubagentsCommands: a subagent spawned under a request's task runs
// while subagents wait waits for it; show, list, input and close work on
// the data directory and on a daemon alike; requests show prints the
// request's delegation tree, the same both ways.
func TestSubagentsCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.useScript(t, completesScript(10))
	p := b.runJSON(t)

	r := runOK(t, "", "subagents", "spawn", "--config", b.config, "--session", p.SessionID, "--agent", "support",
		"--parent-task", p.TaskID, "--name", "helper", "--json", "look it up")
	var sub apitype.SubagentRead
	if err := json.Unmarshal([]byte(r.stdout), &sub); err != nil || sub.ParentTaskID != p.TaskID || sub.Name != "helper" {
		t.Fatalf("spawn --json = %q (%v), want the subagent under task %s", r.stdout, err, p.TaskID)
	}
	r = runOK(t, "", "subagents", "wait", sub.SubagentID, "--timeout", "1m", "--config", b.config)
	var waited apitype.SubagentRead
	if err := json.Unmarshal([]byte(r.stdout), &waited); err != nil || waited.Status != runtype.StatusCompleted || waited.Result == "" {
		t.Fatalf("wait = %q (%v), want one JSON line of the completed subagent", r.stdout, err)
	}

	d := b.serve(t)
	for name, flags := range b.modes(d) {
		t.Run(name, func(t *testing.T) {
			show := runOK(t, "", append([]string{"subagents", "show", sub.SubagentID}, flags...)...)
			for _, want := range []string{
				"subagent " + sub.SubagentID + "  agent support (helper)  session " + p.SessionID,
				"status     completed\n",
				"parent     task " + p.TaskID,
				"root       task " + p.TaskID + "  depth 1\n",
				"inputs     1 input; latest turn turn_",
				"pending    0 approvals\n",
			} {
				if !strings.Contains(show.stdout, want) {
					t.Errorf("show does not say %q:\n%s", want, show.stdout)
				}
			}
			list := runOK(t, "", append([]string{"subagents", "list", p.SessionID, "--json"}, flags...)...)
			if n := strings.Count(list.stdout, "\n"); n != 1 || !strings.Contains(list.stdout, sub.SubagentID) {
				t.Errorf("list --json = %q, want one line of the subagent", list.stdout)
			}
			tree := runOK(t, "", append([]string{"requests", "show", p.TurnID}, flags...)...)
			_, after, ok := strings.Cut(tree.stdout, "delegation  1 delegated task\n")
			if !ok || !strings.Contains(after, "request") || !strings.Contains(after, "  subagent  support  completed") || !strings.Contains(after, p.TaskID) {
				t.Errorf("requests show prints no tree with the subagent:\n%s", tree.stdout)
			}
		})
	}
	local := runOK(t, "", "requests", "show", p.TurnID, "--config", b.config)
	remote := runOK(t, "", "requests", "show", p.TurnID, "--server", d.url, "--token", d.token)
	if local.stdout != remote.stdout {
		t.Errorf("requests show: --server differs from the data directory:\n%s\n---\n%s", local.stdout, remote.stdout)
	}

	r = runOK(t, "", "subagents", "input", sub.SubagentID, "and this", "--server", d.url, "--token", d.token, "--json")
	var more apitype.SubagentRead
	if err := json.Unmarshal([]byte(r.stdout), &more); err != nil || more.Inputs != 2 {
		t.Errorf("input --json = %q, want a second input", r.stdout)
	}
	runOK(t, "", "subagents", "wait", sub.SubagentID, "--server", d.url, "--token", d.token)
	r = runOK(t, "", "subagents", "close", sub.SubagentID, "--server", d.url, "--token", d.token)
	if !strings.Contains(r.stdout, "status     completed closed\n") {
		t.Errorf("close = %q, want the subagent closed", r.stdout)
	}
	r = run(t, "", "subagents", "input", sub.SubagentID, "again", "--config", b.config)
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "closed") {
		t.Errorf("input to a closed subagent: exit %d, %q; want 1 saying it is closed", r.code, r.stderr)
	}
	r = run(t, "", "subagents", "wait", sub.SubagentID, "--config", b.config)
	if r.code != cli.ExitFailed || !strings.Contains(r.stderr, "closed") {
		t.Errorf("wait for a closed subagent: exit %d, %q; want 1 saying it is closed", r.code, r.stderr)
	}
	for _, flags := range b.modes(d) {
		r = run(t, "", append([]string{"subagents", "show", "sub_nope"}, flags...)...)
		if r.code != cli.ExitFailed || r.stderr != "agentrt: no subagent sub_nope\n" {
			t.Errorf("show of no subagent: exit %d, %q", r.code, r.stderr)
		}
	}
}

// TestJobsCommands: a job created from a JSON Lines file runs on a
// daemon; show, items and retry read and act on it from the data
// directory and the daemon alike.
func TestJobsCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.useScript(t, completesScript(10))
	p := b.runJSON(t)
	d := b.serve(t)
	items := b.write(t, "tickets.jsonl", "{\"ticket\":1}\n\n\"two\"\n3\n")

	ctx := t.Context()
	sub, err := d.rt.Subscribe(ctx, &apitype.SubscribeParams{SessionID: p.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	r := runOK(t, "", "jobs", "create", "--server", d.url, "--token", d.token, "--session", p.SessionID, "--agent", "support",
		"--items", items, "--concurrency", "2", "--json")
	var job apitype.JobRead
	if err := json.Unmarshal([]byte(r.stdout), &job); err != nil || job.Items != 3 || job.Concurrency != 2 {
		t.Fatalf("create --json = %q (%v), want a job of 3 items", r.stdout, err)
	}
	// The dispatcher's turn ends with the job.
	var dispatcher string
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e.TaskID == job.TaskID && dispatcher == "" {
			dispatcher = e.TurnID
		}
		if dispatcher != "" && e.TurnID == dispatcher && (e.Type == event.TurnCompleted || e.Type == event.TurnFailed) {
			break
		}
	}

	for name, flags := range b.modes(d) {
		t.Run(name, func(t *testing.T) {
			show := runOK(t, "", append([]string{"jobs", "show", job.JobID}, flags...)...)
			for _, want := range []string{"job " + job.JobID + "  agent support", "status     completed\n", "items      3: 3 completed, 0 failed"} {
				if !strings.Contains(show.stdout, want) {
					t.Errorf("show does not say %q:\n%s", want, show.stdout)
				}
			}
			lines := runOK(t, "", append([]string{"jobs", "items", job.JobID}, flags...)...)
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(lines.stdout), "\n") {
				var it apitype.JobItemRead
				if err := json.Unmarshal([]byte(l), &it); err != nil {
					t.Fatalf("items line %q: %v", l, err)
				}
				got = append(got, fmt.Sprintf("%d %s %s", it.Index, it.Input, it.Status))
			}
			if want := []string{`0 {"ticket":1} completed`, `1 "two" completed`, `2 3 completed`}; strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("items = %q, want %q", got, want)
			}
			limited := runOK(t, "", append([]string{"jobs", "items", job.JobID, "--from", "1", "--limit", "1"}, flags...)...)
			if strings.Count(limited.stdout, "\n") != 1 || !strings.Contains(limited.stdout, `"index":1`) {
				t.Errorf("items --from 1 --limit 1 = %q, want item 1 alone", limited.stdout)
			}
			failed := runOK(t, "", append([]string{"jobs", "items", job.JobID, "--status", "failed"}, flags...)...)
			if failed.stdout != "" {
				t.Errorf("failed items = %q, want none", failed.stdout)
			}
			retry := runOK(t, "", append([]string{"jobs", "retry", job.JobID}, flags...)...)
			if !strings.HasPrefix(retry.stdout, "no failed items to retry\njob "+job.JobID) {
				t.Errorf("retry = %q", retry.stdout)
			}
		})
	}
	r = run(t, "", "jobs", "show", "job_nope", "--config", b.config)
	if r.code != cli.ExitFailed || r.stderr != "agentrt: no job job_nope\n" {
		t.Errorf("show of no job: exit %d, %q", r.code, r.stderr)
	}
	r = runOK(t, "", "jobs", "cancel", job.JobID, "--server", d.url, "--token", d.token)
	if !strings.Contains(r.stdout, "status     completed\n") {
		t.Errorf("cancel of an ended job = %q, want it completed still", r.stdout)
	}
}
