package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// fakeActions is the store a watch reads: each poll's list takes the
// next state from states, so that the test decides what each poll sees.
type fakeActions struct {
	states chan map[string]apitype.ActionRead
	status runtype.ActionStatus // the watch's filter
	cur    map[string]apitype.ActionRead
}

func (f *fakeActions) list(ctx context.Context) ([]apitype.ActionRead, error) {
	select {
	case f.cur = <-f.states:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var out []apitype.ActionRead
	for _, id := range sortedKeys(f.cur) {
		if a := f.cur[id]; f.status == "" || a.Status == f.status {
			out = append(out, a)
		}
	}
	return out, nil
}

func (f *fakeActions) get(_ context.Context, id string) (*apitype.ActionRead, error) {
	a, ok := f.cur[id]
	if !ok {
		return nil, apitype.ErrNotFound
	}
	return &a, nil
}

// TestActionWatch drives a watch of pending actions with a fake ticker:
// each poll prints only the actions that appeared or changed, including
// one that left the watched status.
func TestActionWatch(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)
	act := func(id string, minute int, status runtype.ActionStatus, decision string) apitype.ActionRead {
		return apitype.ActionRead{ActionID: id, Status: status, Decision: decision, ToolName: "open_ticket",
			CreatedAt: t0.Add(time.Duration(minute) * time.Minute)}
	}
	a, b, c := act("act_a", 1, runtype.ActionPending, ""), act("act_b", 2, runtype.ActionPending, ""), act("act_c", 3, runtype.ActionPending, "")
	approvedA := act("act_a", 1, runtype.ActionApproved, "approve")
	polls := []map[string]apitype.ActionRead{
		{"act_b": b, "act_a": a},             // both printed, oldest first
		{"act_a": a, "act_b": b, "act_c": c}, // act_c is new
		{"act_a": a, "act_b": b, "act_c": c}, // nothing changed
		{"act_a": approvedA, "act_c": c},     // act_a left pending; act_b is gone
		{"act_c": c},                         // act_a is no longer followed
	}
	store := &fakeActions{states: make(chan map[string]apitype.ActionRead), status: runtype.ActionPending}
	var out bytes.Buffer
	w := &actionWatch{list: store.list, get: store.get, printer: newActionLister(&out, true, true, func() time.Time { return t0 })}

	ctx, cancel := context.WithCancel(context.Background())
	tick := make(chan time.Time)
	done := make(chan error)
	go func() { done <- w.run(ctx, tick) }()
	for _, state := range polls {
		store.states <- state
		tick <- t0 // taken once the poll has printed
	}
	cancel() // the next poll waits for a state it never gets
	if err := <-done; err != nil {
		t.Fatalf("watch ended with %v, want nil once its context ends", err)
	}
	var got []string
	for _, a := range actions(t, out.String()) {
		got = append(got, a.ActionID+" "+string(a.Status))
	}
	want := []string{"act_a pending", "act_b pending", "act_c pending", "act_a approved"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("printed actions (-want +got):\n%s", diff)
	}
}

// TestActionWatchOnce: without a ticker, the watch prints once.
func TestActionWatchOnce(t *testing.T) {
	t.Parallel()
	store := &fakeActions{states: make(chan map[string]apitype.ActionRead, 1)}
	store.states <- map[string]apitype.ActionRead{"act_a": {ActionID: "act_a", Status: runtype.ActionPending}}
	var out bytes.Buffer
	w := &actionWatch{list: store.list, get: store.get, printer: newActionLister(&out, true, true, time.Now)}
	if err := w.run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got := actions(t, out.String()); len(got) != 1 || got[0].ActionID != "act_a" {
		t.Errorf("printed %v, want act_a", got)
	}
}

// TestActionTable renders the table a terminal gets.
func TestActionTable(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	in := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	acts := []apitype.ActionRead{
		{ActionID: "act_01M7Z6E98T14HZ9P6EVS3DAV37", Status: runtype.ActionPending, ToolName: "open_ticket", SessionID: "ses-42", TurnID: "turn_1",
			CreatedAt: ago(90 * time.Second), ExpiresAt: in(23*time.Hour + 58*time.Minute + 30*time.Second), ReasonCode: "ticket_review",
			InputPreview: `{"order_id":"1042","priority":"high","summary":"Order 1042 is 9 days late"}`},
		{ActionID: "act_2", Status: runtype.ActionPending, ToolName: "write_file", SessionID: "ses-43", TurnID: "turn_2",
			CreatedAt: ago(26 * time.Hour), ExpiresAt: nil, InputPreview: `{"path":"a.md"}`},
		{ActionID: "act_3", Status: runtype.ActionPending, ToolName: "write_file", SessionID: "ses-43", TurnID: "turn_3",
			CreatedAt: ago(3 * time.Hour), ExpiresAt: in(-time.Minute), ReasonCode: "x", InputPreview: "{}"},
	}
	var out bytes.Buffer
	clock := func() time.Time { return now }
	p := newActionLister(&out, false, false, clock).tableOf(defaultWidth)
	if err := p.print(acts); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ACTION                          TOOL         SESSION  TURN    AGE    EXPIRES    REASON         INPUT",
		`act_01M7Z6E98T14HZ9P6EVS3DAV37  open_ticket  ses-42   turn_1  1m     in 23h58m  ticket_review  {"order_id":"1042","prio…`,
		`act_2                           write_file   ses-43   turn_2  1d2h   never      -              {"path":"a.md"}`,
		`act_3                           write_file   ses-43   turn_3  3h00m  now        x              {}`,
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}

	// With a STATUS column, resolved actions have no expiry; a later batch
	// of a watch has no header, and widens a column that is too narrow for
	// it; no actions at all say so.
	out.Reset()
	p = newActionLister(&out, false, true, clock).tableOf(80)
	p.print(nil)
	resolved := acts[1]
	resolved.Status = runtype.ActionDenied
	p.print([]apitype.ActionRead{resolved})
	p.print([]apitype.ActionRead{acts[2]})
	want = []string{
		"no actions",
		"ACTION  STATUS  TOOL        SESSION  TURN    AGE   EXPIRES  REASON  INPUT",
		`act_2   denied  write_file  ses-43   turn_2  1d2h  -        -       {"path":"a.md"}`,
		`act_3   pending  write_file  ses-43   turn_3  3h00m  now      x       {}`,
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

// actions decodes JSON Lines of actions.
func actions(t *testing.T, out string) []apitype.ActionRead {
	t.Helper()
	var acts []apitype.ActionRead
	for line := range strings.Lines(out) {
		var a apitype.ActionRead
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("decoding %q: %v", line, err)
		}
		acts = append(acts, a)
	}
	return acts
}

// TestElicitationRow: a watch's or list's row of an elicitation shows
// what the server asks and the fields it wants, in the schema's order,
// required ones starred, choices for an enum.
func TestElicitationRow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)
	a := apitype.ActionRead{
		ActionID: "act_4", Type: runtype.ActionElicitation, Status: runtype.ActionPending, ToolName: "everything__signup",
		SessionID: "ses-44", TurnID: "turn_4", CreatedAt: now.Add(-time.Minute), Prompt: "Who are you?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"plan":{"type":"string","enum":["basic","pro"]},"age":{"type":"integer"},"note":{}},"required":["plan","name"]}`),
	}
	var out bytes.Buffer
	if err := newActionLister(&out, false, false, func() time.Time { return now }).tableOf(160).print([]apitype.ActionRead{a}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ACTION  TOOL                SESSION  TURN    AGE  EXPIRES  REASON  INPUT",
		`act_4   everything__signup  ses-44   turn_4  1m   never    -       "Who are you?" {name*: string, plan*: basic|pro, age: integer, note: any}`,
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	for schema, want := range map[string]string{`{}`: "{}", `not json`: "{}", `{"properties":{"a":{"type":"boolean"}}}`: "{a: boolean}"} {
		if got := elicitationFields(json.RawMessage(schema)); got != want {
			t.Errorf("elicitationFields(%s) = %q, want %q", schema, got, want)
		}
	}
}
