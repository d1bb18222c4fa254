package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// listNow is the fixed clock of the list goldens.
var listNow = time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)

func listAgo(d time.Duration) *time.Time { t := listNow.Add(-d); return &t }

// lines splits output into its lines.
func lines(out string) []string { return strings.Split(strings.TrimSuffix(out, "\n"), "\n") }

// TestListTables renders the table each list command prints on a
// terminal, at a fixed width and clock: ids whole, the last column cut to
// the width, a word for an empty list.
func TestListTables(t *testing.T) {
	t.Parallel()
	clock := func() time.Time { return listNow }
	const width = 100
	long := "Where is order 1042? It was due last Tuesday and the tracking page has said in transit for nine days."
	for _, tt := range []struct {
		name  string
		print func(*bytes.Buffer) error
		want  []string
	}{{
		name: "requests list",
		print: func(w *bytes.Buffer) error {
			return newRequestLister(w, false, clock).tableOf(width).print([]apitype.RequestSummary{
				{TurnID: "turn_01M7Z6EQH1EH35X9M20WK8S11F", Status: runtype.StatusWaitingPermission, Agent: "support", SessionID: "ses_01M7Z6EQH1EH35X9M20WK8S11D", CreatedAt: listAgo(90 * time.Second), InputPreview: long},
				{TurnID: "turn_2", Status: runtype.StatusFailed, StatusReason: "model_error", Agent: "ops", SessionID: "ses-42", CreatedAt: listAgo(26 * time.Hour), InputPreview: "restart\nthe   queue"},
			})
		},
		want: []string{
			"REQUEST                          STATUS              AGENT    SESSION                         AGE   INPUT",
			"turn_01M7Z6EQH1EH35X9M20WK8S11F  waiting_permission  support  ses_01M7Z6EQH1EH35X9M20WK8S11D  1m    Where is order 1042…",
			"turn_2                           failed model_error  ops      ses-42                          1d2h  restart the queue",
		},
	}, {
		name:  "requests list, none",
		print: func(w *bytes.Buffer) error { return newRequestLister(w, false, clock).tableOf(width).print(nil) },
		want:  []string{"no requests"},
	}, {
		name: "sessions list",
		print: func(w *bytes.Buffer) error {
			return newSessionLister(w, false, clock).tableOf(width).print([]apitype.SessionSummary{
				{SessionID: "ses_01M7Z6EQH1EH35X9M20WK8S11D", Agent: "support", CreatedAt: listAgo(3 * time.Hour), UpdatedAt: listAgo(time.Minute), Title: "Order 1042"},
				{SessionID: "ses-42", Agent: "ops", CreatedAt: listAgo(50 * time.Hour)},
			})
		},
		want: []string{
			"SESSION                         AGENT    AGE    UPDATED  TITLE",
			"ses_01M7Z6EQH1EH35X9M20WK8S11D  support  3h00m  1m ago   Order 1042",
			"ses-42                          ops      2d2h   -        -",
		},
	}, {
		name: "tasks list",
		print: func(w *bytes.Buffer) error {
			return newTaskLister(w, false, clock).tableOf(width).print([]apitype.TaskRead{
				{TaskID: "task_01M7Z6EQH1EH35X9M20WK8S11J", Status: runtype.StatusCompleted, TurnID: "turn_1", SessionID: "ses-1", Attempts: make([]apitype.AttemptRead, 2), CreatedAt: listAgo(45 * time.Second), Objective: long},
			})
		},
		want: []string{
			"TASK                             STATUS     TURN    SESSION  ATTEMPTS  AGE  OBJECTIVE",
			"task_01M7Z6EQH1EH35X9M20WK8S11J  completed  turn_1  ses-1    2         45s  Where is order 1042? It…",
		},
	}, {
		name: "token list",
		print: func(w *bytes.Buffer) error {
			return newTokenLister(w, false).tableOf(width).print([]apitype.TokenRead{
				{TokenID: "tok_01M7Z6EQH1EH35X9M20WK8S11K", TenantID: "default", PrincipalID: "alice", Role: runtype.APIRoleOperator, Prefix: "art_e73a7ed7", CreatedAt: listNow, RevokedAt: listAgo(-time.Hour), Name: "alice's laptop"},
			})
		},
		want: []string{
			"ID                              TENANT   PRINCIPAL  ROLE      PREFIX         CREATED              LAST USED  REVOKED              NAME",
			"tok_01M7Z6EQH1EH35X9M20WK8S11K  default  alice      operator  art_e73a7ed7…  2026-11-21 13:00:00  -          2026-11-21 14:00:00  alice's laptop",
		},
	}, {
		name: "queue list",
		print: func(w *bytes.Buffer) error {
			return newQueueLister(w, false).tableOf(width).print([]event.QueuedTurn{
				{TurnID: "turn_a", TaskID: "task_a", QueuedAt: listNow}, {TurnID: "turn_b", TaskID: "task_b", QueuedAt: listNow.Add(time.Second)},
			})
		},
		want: []string{
			"#  TURN    TASK    QUEUED",
			"1  turn_a  task_a  2026-11-21 13:00:00",
			"2  turn_b  task_b  2026-11-21 13:00:01",
		},
	}, {
		name:  "queue list, none",
		print: func(w *bytes.Buffer) error { return newQueueLister(w, false).tableOf(width).print(nil) },
		want:  []string{"no queued turns"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			if err := tt.print(&out); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, lines(out.String())); diff != "" {
				t.Errorf("table (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTailTable: requests tail's table prints its header before any
// line (it follows), keeps its columns wide enough for ids as lines come
// one by one, and colours only the status word, after padding.
func TestTailTable(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	l := newTailLister(&out, false).tableOf(200)
	l.print(nil)
	at := time.Date(2026, 11, 21, 13, 4, 5, 0, time.UTC)
	for _, line := range []requestLine{
		{At: at, Event: "listed", RequestID: "turn_01M7Z6EQH1EH35X9M20WK8S11F", SessionID: "ses_01M7Z6EQH1EH35X9M20WK8S11D", Agent: "support", Status: runtype.StatusCompleted},
		{At: at.Add(time.Second), Event: "action.required", RequestID: "turn_01M7Z6EQH1EH35X9M20WK8S11G", SessionID: "ses_01M7Z6EQH1EH35X9M20WK8S11D", Agent: "support",
			Status: runtype.StatusWaitingPermission, Detail: "open_ticket act_01M7Z6E98T14HZ9P6EVS3DAV37"},
		{Event: "task.waiting", RequestID: "turn_01M7Z6EQH1EH35X9M20WK8S11G", SessionID: "ses_01M7Z6EQH1EH35X9M20WK8S11D", Agent: "a-very-long-agent-name",
			Status: runtype.StatusWaitingPermission, StatusReason: "waiting_permission"},
	} {
		if err := l.print([]requestLine{line}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"TIME      EVENT            STATUS              REQUEST                          AGENT         SESSION                         DETAIL",
		"13:04:05  listed           completed           turn_01M7Z6EQH1EH35X9M20WK8S11F  support       ses_01M7Z6EQH1EH35X9M20WK8S11D",
		"13:04:06  action.required  waiting_permission  turn_01M7Z6EQH1EH35X9M20WK8S11G  support       ses_01M7Z6EQH1EH35X9M20WK8S11D  open_ticket act_01M7Z6E98T14HZ9P6EVS3DAV37",
		"-         task.waiting     waiting_permission waiting_permission  turn_01M7Z6EQH1EH35X9M20WK8S11G  a-very-long-agent-name  ses_01M7Z6EQH1EH35X9M20WK8S11D",
	}
	if diff := cmp.Diff(want, lines(out.String())); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}

	out.Reset()
	l = newTailLister(&out, false).tableOf(120)
	l.st = style{on: true}
	l.print([]requestLine{{Event: "task.failed", RequestID: "turn_1", Status: runtype.StatusFailed, StatusReason: "model_error"}})
	got := lines(out.String())[1]
	if want := "-         task.failed      \x1b[31mfailed\x1b[0m model_error  turn_1"; !strings.HasPrefix(got, want) {
		t.Errorf("coloured line %q, want it to start %q", got, want)
	}
}

// TestListJSONLines: off a terminal, or with --json, a list prints one
// JSON object a line, each the item as the API answers it, and nothing
// for no items.
func TestListJSONLines(t *testing.T) {
	t.Parallel()
	reqs := []apitype.RequestSummary{{RequestID: "turn_1", TurnID: "turn_1", Status: runtype.StatusCompleted, InputPreview: "<b>&</b>"}, {RequestID: "turn_2", TurnID: "turn_2"}}
	for _, asJSON := range []bool{false, true} {
		var out bytes.Buffer
		if err := newRequestLister(&out, asJSON, time.Now).print(reqs); err != nil {
			t.Fatal(err)
		}
		var got []apitype.RequestSummary
		for _, line := range lines(out.String()) {
			var r apitype.RequestSummary
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			got = append(got, r)
		}
		if diff := cmp.Diff(reqs, got); diff != "" || !strings.Contains(out.String(), `"inputPreview":"<b>&</b>"`) {
			t.Errorf("--json=%v: JSON Lines (-want +got):\n%s\n%s", asJSON, diff, out.String())
		}
		out.Reset()
		newRequestLister(&out, asJSON, time.Now).print(nil)
		if out.Len() != 0 {
			t.Errorf("--json=%v: no requests printed %q, want nothing", asJSON, out.String())
		}
	}
}
