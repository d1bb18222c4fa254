package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// exerciseReadModel covers what the read models page and filter with:
// messages newest first and counted, lists filtered by agent, status and
// creation time before their limit, tasks across sessions, task counts by
// status, tool calls of a set of turns and usage of a thread.
func exerciseReadModel(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("MessagesNewestAndBefore", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		th := tb.thread(tb.session(tenantA))
		b := &store.Batch{Sessions: []*runtype.Session{}, Threads: []*runtype.Thread{}}
		for seq := int64(1); seq <= 10; seq++ {
			b.Messages = append(b.Messages, tb.message(th, seq))
		}
		tb.apply(t, b)
		m := b.Messages // m[i] has Seq i+1
		tests := []struct {
			name string
			p    store.MessageListParams
			want []*runtype.Message
		}{
			{"newest 3", store.MessageListParams{Newest: true, Limit: 3}, []*runtype.Message{m[9], m[8], m[7]}},
			{"newest 3 before 8", store.MessageListParams{Newest: true, BeforeSeq: 8, Limit: 3}, []*runtype.Message{m[6], m[5], m[4]}},
			{"newest before 3", store.MessageListParams{Newest: true, BeforeSeq: 3}, []*runtype.Message{m[1], m[0]}},
			{"oldest first before 3", store.MessageListParams{BeforeSeq: 3}, []*runtype.Message{m[0], m[1]}},
			{"between 2 and 5", store.MessageListParams{AfterSeq: 2, BeforeSeq: 5}, []*runtype.Message{m[2], m[3]}},
			{"newest before 1", store.MessageListParams{Newest: true, BeforeSeq: 1, Limit: 5}, nil},
			{"newest after 8", store.MessageListParams{Newest: true, AfterSeq: 8}, []*runtype.Message{m[9], m[8]}},
		}
		for _, tt := range tests {
			p := tt.p
			p.TenantID, p.ThreadID = tenantA, th.ID
			got, err := tb.store.MessageList(ctx, &p)
			if err != nil {
				t.Fatalf("MessageList(%s): %v", tt.name, err)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("MessageList(%s) (-want +got):\n%s", tt.name, d)
			}
		}
		// Another tenant sees none.
		got, err := tb.store.MessageList(ctx, &store.MessageListParams{TenantID: tenantB, ThreadID: th.ID, Newest: true, Limit: 3})
		if err != nil || len(got) != 0 {
			t.Errorf("MessageList(tenant B) = %d messages, %v; want none", len(got), err)
		}
	})

	t.Run("MessageCount", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		th, empty := tb.thread(s), tb.thread(s)
		b := &store.Batch{Sessions: []*runtype.Session{s}, Threads: []*runtype.Thread{th, empty}}
		for seq := int64(1); seq <= 7; seq++ {
			b.Messages = append(b.Messages, tb.message(th, seq))
		}
		tb.apply(t, b)
		for _, tt := range []struct {
			tenant, thread string
			want           int64
		}{
			{tenantA, th.ID, 7},
			{tenantA, empty.ID, 0},
			{tenantB, th.ID, 0},
			{tenantA, "thr_missing", 0},
		} {
			got, err := tb.store.MessageCount(ctx, &store.MessageCountParams{TenantID: tt.tenant, ThreadID: tt.thread})
			if err != nil {
				t.Fatalf("MessageCount(%s, %s): %v", tt.tenant, tt.thread, err)
			}
			if got != tt.want {
				t.Errorf("MessageCount(%s, %s) = %d, want %d", tt.tenant, tt.thread, got, tt.want)
			}
		}
	})

	// Four turns of one session: agents a, b, a, b; statuses completed,
	// failed, waiting_permission, completed; created in that order.
	type fixture struct {
		tb       *testBundle
		s        *runtype.Session
		th       *runtype.Thread
		turns    []*runtype.Turn
		tasks    []*runtype.Task
		runs     []*runtype.Run
		at       []time.Time // the turns' CreatedAt
		sessions []*runtype.Session
	}
	build := func(t *testing.T) *fixture {
		tb := setup(ctx, t, newStore)
		f := &fixture{tb: tb}
		f.s = tb.session(tenantA)
		f.s.Agent = "a"
		s2 := tb.session(tenantA)
		s2.Agent, s2.PrincipalID = "b", "bob"
		sB := tb.session(tenantB)
		sB.PrincipalID = "bob"
		f.sessions = []*runtype.Session{f.s, s2, sB}
		f.th = tb.thread(f.s)
		b := &store.Batch{Sessions: f.sessions, Threads: []*runtype.Thread{f.th}}
		for i, st := range []runtype.TaskStatus{runtype.StatusCompleted, runtype.StatusFailed, runtype.StatusWaitingPermission, runtype.StatusCompleted} {
			u := tb.turn(f.th)
			u.Agent, u.Status = []string{"a", "b"}[i%2], st
			if i%2 == 1 {
				u.PrincipalID = "bob" // who submitted it: another than the session's
			}
			k := tb.task(u)
			k.Status = st
			u.TaskID = k.ID
			r := tb.run(k)
			f.turns, f.tasks, f.runs = append(f.turns, u), append(f.tasks, k), append(f.runs, r)
			f.at = append(f.at, u.CreatedAt)
			b.Turns, b.Tasks, b.Runs = append(b.Turns, u), append(b.Tasks, k), append(b.Runs, r)
		}
		// A task of the other tenant that would match every filter.
		thB := tb.thread(sB)
		uB := tb.turn(thB)
		uB.Agent, uB.PrincipalID = "a", "bob"
		kB := tb.task(uB)
		kB.Status = runtype.StatusCompleted
		b.Threads, b.Turns, b.Tasks = append(b.Threads, thB), append(b.Turns, uB), append(b.Tasks, kB)
		tb.apply(t, b)
		return f
	}

	t.Run("TurnListFilters", func(t *testing.T) {
		t.Parallel()
		f := build(t)
		u := f.turns
		tests := []struct {
			name string
			p    store.TurnListParams
			want []*runtype.Turn
		}{
			{"agent a", store.TurnListParams{Agent: "a"}, []*runtype.Turn{u[2], u[0]}},
			{"statuses", store.TurnListParams{Statuses: []runtype.TaskStatus{runtype.StatusFailed, runtype.StatusWaitingPermission}}, []*runtype.Turn{u[2], u[1]}},
			{"status and statuses", store.TurnListParams{Status: runtype.StatusFailed, Statuses: []runtype.TaskStatus{runtype.StatusWaitingPermission}}, nil},
			{"since", store.TurnListParams{Since: f.at[2]}, []*runtype.Turn{u[3], u[2]}},
			{"until", store.TurnListParams{Until: f.at[1]}, []*runtype.Turn{u[0]}},
			{"since and until", store.TurnListParams{Since: f.at[1], Until: f.at[3]}, []*runtype.Turn{u[2], u[1]}},
			// The filter applies before the limit: the newest match, not
			// the newest turn filtered.
			{"agent a, limit 1", store.TurnListParams{Agent: "a", Limit: 1}, []*runtype.Turn{u[2]}},
			{"agent a, before", store.TurnListParams{Agent: "a", BeforeID: u[2].ID, Limit: 1}, []*runtype.Turn{u[0]}},
			{"agent b, session, thread", store.TurnListParams{Agent: "b", SessionID: f.s.ID, ThreadID: f.th.ID}, []*runtype.Turn{u[3], u[1]}},
			{"unknown agent", store.TurnListParams{Agent: "z"}, nil},
			{"principal", store.TurnListParams{PrincipalID: "bob"}, []*runtype.Turn{u[3], u[1]}},
			{"principal, limit 1", store.TurnListParams{PrincipalID: "bob", Limit: 1}, []*runtype.Turn{u[3]}},
			{"principal and agent", store.TurnListParams{PrincipalID: "bob", Agent: "a"}, nil},
			{"principal, session", store.TurnListParams{PrincipalID: f.s.PrincipalID, SessionID: f.s.ID}, []*runtype.Turn{u[2], u[0]}},
			{"unknown principal", store.TurnListParams{PrincipalID: "eve"}, nil},
		}
		for _, tt := range tests {
			p := tt.p
			p.TenantID = tenantA
			got, err := f.tb.store.TurnList(ctx, &p)
			if err != nil {
				t.Fatalf("TurnList(%s): %v", tt.name, err)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("TurnList(%s) (-want +got):\n%s", tt.name, d)
			}
		}
	})

	t.Run("SessionListFilters", func(t *testing.T) {
		t.Parallel()
		f := build(t)
		s1, s2 := f.sessions[0], f.sessions[1]
		tests := []struct {
			name string
			p    store.SessionListParams
			want []*runtype.Session
		}{
			{"all", store.SessionListParams{}, []*runtype.Session{s2, s1}},
			{"agent a", store.SessionListParams{Agent: "a"}, []*runtype.Session{s1}},
			{"agent b, limit 1", store.SessionListParams{Agent: "b", Limit: 1}, []*runtype.Session{s2}},
			{"since s2", store.SessionListParams{Since: s2.CreatedAt}, []*runtype.Session{s2}},
			{"until s2", store.SessionListParams{Until: s2.CreatedAt}, []*runtype.Session{s1}},
			{"agent a, before s1", store.SessionListParams{Agent: "a", BeforeID: s1.ID}, nil},
			{"principal", store.SessionListParams{PrincipalID: "bob"}, []*runtype.Session{s2}},
			{"principal, before s2", store.SessionListParams{PrincipalID: "bob", BeforeID: s2.ID}, nil},
			{"unknown principal", store.SessionListParams{PrincipalID: "eve"}, nil},
		}
		for _, tt := range tests {
			p := tt.p
			p.TenantID = tenantA
			got, err := f.tb.store.SessionList(ctx, &p)
			if err != nil {
				t.Fatalf("SessionList(%s): %v", tt.name, err)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("SessionList(%s) (-want +got):\n%s", tt.name, d)
			}
		}
	})

	t.Run("TaskSearch", func(t *testing.T) {
		t.Parallel()
		f := build(t)
		k := f.tasks
		tests := []struct {
			name string
			p    store.TaskSearchParams
			want []*runtype.Task
		}{
			{"all of the tenant", store.TaskSearchParams{}, []*runtype.Task{k[3], k[2], k[1], k[0]}},
			{"of the session", store.TaskSearchParams{SessionID: f.s.ID}, []*runtype.Task{k[3], k[2], k[1], k[0]}},
			{"of another session", store.TaskSearchParams{SessionID: f.sessions[1].ID}, nil},
			{"completed", store.TaskSearchParams{Statuses: []runtype.TaskStatus{runtype.StatusCompleted}}, []*runtype.Task{k[3], k[0]}},
			{"agent b", store.TaskSearchParams{Agent: "b"}, []*runtype.Task{k[3], k[1]}},
			{"since", store.TaskSearchParams{Since: k[2].CreatedAt}, []*runtype.Task{k[3], k[2]}},
			{"until", store.TaskSearchParams{Until: k[1].CreatedAt}, []*runtype.Task{k[0]}},
			{"limit 2", store.TaskSearchParams{Limit: 2}, []*runtype.Task{k[3], k[2]}},
			{"before, limit 2", store.TaskSearchParams{BeforeID: k[2].ID, Limit: 2}, []*runtype.Task{k[1], k[0]}},
			{"agent a, limit 1", store.TaskSearchParams{Agent: "a", Limit: 1}, []*runtype.Task{k[2]}},
			{"session, completed, before", store.TaskSearchParams{SessionID: f.s.ID, Statuses: []runtype.TaskStatus{runtype.StatusCompleted}, BeforeID: k[3].ID}, []*runtype.Task{k[0]}},
			{"principal", store.TaskSearchParams{PrincipalID: "bob"}, []*runtype.Task{k[3], k[1]}},
			{"principal, session, limit 1", store.TaskSearchParams{PrincipalID: "bob", SessionID: f.s.ID, Limit: 1}, []*runtype.Task{k[3]}},
			{"unknown principal", store.TaskSearchParams{PrincipalID: "eve"}, nil},
		}
		for _, tt := range tests {
			p := tt.p
			p.TenantID = tenantA
			got, err := f.tb.store.TaskSearch(ctx, &p)
			if err != nil {
				t.Fatalf("TaskSearch(%s): %v", tt.name, err)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("TaskSearch(%s) (-want +got):\n%s", tt.name, d)
			}
		}
	})

	t.Run("TurnTally", func(t *testing.T) {
		t.Parallel()
		f := build(t)
		other := f.tb.thread(f.s)
		u := f.tb.turn(other) // failed, in another thread
		f.tb.apply(t, &store.Batch{Threads: []*runtype.Thread{other}, Turns: []*runtype.Turn{u}})
		for _, tt := range []struct {
			name string
			p    store.TurnTallyParams
			want *store.TurnTally
		}{
			{"thread", store.TurnTallyParams{TenantID: tenantA, SessionID: f.s.ID, ThreadID: f.th.ID}, &store.TurnTally{
				Counts: map[runtype.TaskStatus]int{runtype.StatusCompleted: 2, runtype.StatusFailed: 1, runtype.StatusWaitingPermission: 1},
				Open:   []string{f.turns[1].ID, f.turns[2].ID},
			}},
			{"other thread", store.TurnTallyParams{TenantID: tenantA, SessionID: f.s.ID, ThreadID: other.ID}, &store.TurnTally{
				Counts: map[runtype.TaskStatus]int{runtype.StatusFailed: 1}, Open: []string{u.ID},
			}},
			{"other tenant", store.TurnTallyParams{TenantID: tenantB, SessionID: f.s.ID, ThreadID: f.th.ID}, &store.TurnTally{}},
			{"wrong session", store.TurnTallyParams{TenantID: tenantA, SessionID: f.sessions[1].ID, ThreadID: f.th.ID}, &store.TurnTally{}},
		} {
			got, err := f.tb.store.TurnTally(ctx, &tt.p)
			if err != nil {
				t.Fatalf("TurnTally(%s): %v", tt.name, err)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("TurnTally(%s) (-want +got):\n%s", tt.name, d)
			}
		}
	})

	t.Run("ToolCallsOfTurns", func(t *testing.T) {
		t.Parallel()
		f := build(t)
		var calls []*runtype.ToolCall
		for i, r := range f.runs {
			calls = append(calls, f.tb.toolCall(r, "toolu_"+string(rune('a'+i))))
		}
		f.tb.apply(t, &store.Batch{ToolCalls: calls})
		got, err := f.tb.store.ToolCallList(ctx, &store.ToolCallListParams{
			TenantID: tenantA, SessionID: f.s.ID, TurnIDs: []string{f.turns[3].ID, f.turns[1].ID, "turn_missing"},
		})
		if err != nil {
			t.Fatalf("ToolCallList(TurnIDs): %v", err)
		}
		if d := diff([]*runtype.ToolCall{calls[1], calls[3]}, got); d != "" {
			t.Errorf("ToolCallList(TurnIDs) (-want +got):\n%s", d)
		}
		got, err = f.tb.store.ToolCallList(ctx, &store.ToolCallListParams{TenantID: tenantB, SessionID: f.s.ID, TurnIDs: []string{f.turns[1].ID}})
		if err != nil || len(got) != 0 {
			t.Errorf("ToolCallList(TurnIDs, tenant B) = %d calls, %v; want none", len(got), err)
		}
	})

	t.Run("UsageOfThread", func(t *testing.T) {
		t.Parallel()
		f := build(t)
		other := f.tb.thread(f.s)
		u := f.tb.turn(other)
		r := f.tb.run(f.tb.task(u))
		r.Usage = runtype.Usage{InputTokens: 5, CostUSD: 1}
		f.tb.apply(t, &store.Batch{Threads: []*runtype.Thread{other}, Runs: []*runtype.Run{r}})
		got, err := f.tb.store.UsageTotal(ctx, &store.UsageTotalParams{TenantID: tenantA, SessionID: f.s.ID, ThreadID: other.ID})
		if err != nil {
			t.Fatalf("UsageTotal(thread): %v", err)
		}
		if got.InputTokens != 5 || got.CostUSD != 1 {
			t.Errorf("UsageTotal(thread) = %+v, want the one run's usage", got)
		}
		got, err = f.tb.store.UsageTotal(ctx, &store.UsageTotalParams{TenantID: tenantA, SessionID: f.s.ID, ThreadID: f.th.ID})
		if err != nil {
			t.Fatalf("UsageTotal(thread): %v", err)
		}
		if want := int64(len(f.runs)) * f.runs[0].Usage.InputTokens; got.InputTokens != want {
			t.Errorf("UsageTotal(first thread).InputTokens = %d, want %d", got.InputTokens, want)
		}
	})

	t.Run("ActionFilters", func(t *testing.T) {
		t.Parallel()
		f := build(t)
		var acts []*runtype.Action
		for _, r := range f.runs {
			acts = append(acts, f.tb.action(r))
		}
		f.tb.apply(t, &store.Batch{Actions: acts})
		tests := []struct {
			name string
			p    store.ActionListParams
			want []*runtype.Action
		}{
			{"agent a", store.ActionListParams{Agent: "a"}, []*runtype.Action{acts[2], acts[0]}},
			{"agent b, limit 1", store.ActionListParams{Agent: "b", Limit: 1}, []*runtype.Action{acts[3]}},
			{"since", store.ActionListParams{Since: acts[2].CreatedAt}, []*runtype.Action{acts[3], acts[2]}},
			{"until", store.ActionListParams{Until: acts[1].CreatedAt}, []*runtype.Action{acts[0]}},
			{"pending, agent a, before", store.ActionListParams{Status: runtype.ActionPending, Agent: "a", BeforeID: acts[2].ID}, []*runtype.Action{acts[0]}},
		}
		for _, tt := range tests {
			p := tt.p
			p.TenantID = tenantA
			got, err := f.tb.store.ActionList(ctx, &p)
			if err != nil {
				t.Fatalf("ActionList(%s): %v", tt.name, err)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("ActionList(%s) (-want +got):\n%s", tt.name, d)
			}
		}
	})
}
