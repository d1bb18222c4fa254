package storetest

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

func exerciseSession(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("InsertAndGet", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		zero := tb.session(tenantA)
		zero.Title, zero.Agent, zero.PrincipalID = "", "", ""
		zero.CreatedAt, zero.UpdatedAt = time.Time{}, time.Time{}
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s, zero}})

		for _, want := range []*runtype.Session{s, zero} {
			got, err := tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: want.ID})
			if err != nil {
				t.Fatalf("SessionGet: %v", err)
			}
			if d := diff(want, got); d != "" {
				t.Errorf("SessionGet mismatch (-want +got):\n%s", d)
			}
		}
		_, err := tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: "ses_missing"})
		wantNotFound(t, "SessionGet(missing)", err)
	})

	t.Run("DuplicateIDConflicts", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s}})

		again := *s
		again.Title = "replacement"
		tb.wantConflict(t, &store.Batch{Sessions: []*runtype.Session{&again}})
		fresh := tb.session(tenantA)
		tb.wantConflict(t, &store.Batch{Sessions: []*runtype.Session{fresh, fresh}})

		got, err := tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: s.ID})
		if err != nil {
			t.Fatalf("SessionGet: %v", err)
		}
		if d := diff(s, got); d != "" {
			t.Errorf("session changed by a conflicting insert (-want +got):\n%s", d)
		}
		_, err = tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: fresh.ID})
		wantNotFound(t, "SessionGet(duplicated in its batch)", err)
	})

	t.Run("ListNewestFirstWithPaging", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		var sessions []*runtype.Session
		for range 5 {
			sessions = append(sessions, tb.session(tenantA))
		}
		shuffled := slices.Clone(sessions)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, s := range shuffled {
			tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s}})
		}
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{tb.session(tenantB)}})

		all, err := tb.store.SessionList(ctx, &store.SessionListParams{TenantID: tenantA})
		if err != nil {
			t.Fatalf("SessionList: %v", err)
		}
		want := slices.Clone(sessions)
		slices.Reverse(want)
		if d := diff(want, all); d != "" {
			t.Errorf("SessionList (-want +got):\n%s", d)
		}

		var pages [][]string
		before := ""
		for range 4 {
			page, err := tb.store.SessionList(ctx, &store.SessionListParams{TenantID: tenantA, BeforeID: before, Limit: 2})
			if err != nil {
				t.Fatalf("SessionList(BeforeID %q): %v", before, err)
			}
			pages = append(pages, ids(page, sessionID))
			if len(page) == 0 {
				break
			}
			before = page[len(page)-1].ID
		}
		wantIDs := ids(want, sessionID)
		wantPages := [][]string{wantIDs[0:2], wantIDs[2:4], wantIDs[4:5], {}}
		if d := diff(wantPages, pages); d != "" {
			t.Errorf("SessionList pages (-want +got):\n%s", d)
		}
	})

	t.Run("ListByCreationWhateverTheIDs", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		// Caller-named sessions whose IDs sort against their creation
		// order, two of them created at the same time.
		named := func(tenant, id string, at time.Time) *runtype.Session {
			s := tb.session(tenant)
			s.ID, s.CreatedAt, s.UpdatedAt = id, at, at
			return s
		}
		t0 := tb.now()
		sessions := []*runtype.Session{ // oldest first
			named(tenantA, "zulu", t0),
			tb.session(tenantA),
			named(tenantA, "customer-42", t0.Add(time.Hour)),
			named(tenantA, "b-tie", t0.Add(2*time.Hour)),
			named(tenantA, "a-tie", t0.Add(2*time.Hour)),
			named(tenantA, "0-newest", t0.Add(3*time.Hour)),
		}
		sessions[1].CreatedAt = t0.Add(time.Minute)
		shuffled := slices.Clone(sessions)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, s := range shuffled {
			tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s}})
		}
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{named(tenantB, "other-tenant", t0.Add(time.Second))}})
		want := ids(sessions, sessionID)
		slices.Reverse(want)
		want[1], want[2] = want[2], want[1] // a tie: the higher ID first

		all, err := tb.store.SessionList(ctx, &store.SessionListParams{TenantID: tenantA})
		if err != nil {
			t.Fatalf("SessionList: %v", err)
		}
		if d := diff(want, ids(all, sessionID)); d != "" {
			t.Errorf("SessionList (-want +got):\n%s", d)
		}
		var paged []string
		for before := ""; ; {
			page, err := tb.store.SessionList(ctx, &store.SessionListParams{TenantID: tenantA, BeforeID: before, Limit: 2})
			if err != nil {
				t.Fatalf("SessionList(BeforeID %q): %v", before, err)
			}
			if len(page) == 0 {
				break
			}
			paged = append(paged, ids(page, sessionID)...)
			before = page[len(page)-1].ID
		}
		if d := diff(want, paged); d != "" {
			t.Errorf("SessionList in pages of 2 (-want +got):\n%s", d)
		}
		since, err := tb.store.SessionList(ctx, &store.SessionListParams{TenantID: tenantA, Since: t0.Add(time.Hour), BeforeID: "b-tie"})
		if err != nil {
			t.Fatalf("SessionList(Since, BeforeID): %v", err)
		}
		if d := diff([]string{"a-tie", "customer-42"}, ids(since, sessionID)); d != "" {
			t.Errorf("SessionList(Since, BeforeID b-tie) (-want +got):\n%s", d)
		}
		for _, before := range []string{"ses_missing", "other-tenant"} {
			_, err := tb.store.SessionList(ctx, &store.SessionListParams{TenantID: tenantA, BeforeID: before})
			wantNotFound(t, "SessionList(BeforeID "+before+")", err)
		}
	})

	t.Run("ListLimit", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		b := &store.Batch{}
		for range store.MaxListLimit + 1 {
			b.Sessions = append(b.Sessions, tb.session(tenantA))
		}
		tb.apply(t, b)
		newest := ids(b.Sessions, sessionID)
		slices.Reverse(newest)
		for _, limit := range []int{0, -1, 1, 7, store.MaxListLimit, store.MaxListLimit + 1, 5000} {
			got, err := tb.store.SessionList(ctx, &store.SessionListParams{TenantID: tenantA, Limit: limit})
			if err != nil {
				t.Fatalf("SessionList(Limit %d): %v", limit, err)
			}
			if d := diff(newest[:store.ClampLimit(limit)], ids(got, sessionID)); d != "" {
				t.Errorf("SessionList(Limit %d) (-want +got):\n%s", limit, d)
			}
		}
	})
}

// exerciseSessionActivity: writing a turn moves its session's UpdatedAt
// to the turn's submission or end (store.SessionActivity), never back,
// and only when the batch commits.
func exerciseSessionActivity(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("UpdatedAtFollowsTurns", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		s.UpdatedAt = s.CreatedAt
		th := tb.thread(s)
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s}, Threads: []*runtype.Thread{th}})
		want := s.CreatedAt
		check := func(step string) {
			t.Helper()
			got, err := tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: s.ID})
			if err != nil {
				t.Fatalf("SessionGet after %s: %v", step, err)
			}
			if !got.UpdatedAt.Equal(want) {
				t.Errorf("UpdatedAt after %s = %v, want %v", step, got.UpdatedAt, want)
			}
			list, err := tb.store.SessionList(ctx, &store.SessionListParams{TenantID: tenantA})
			if err != nil || len(list) != 1 || !list[0].UpdatedAt.Equal(want) {
				t.Errorf("SessionList after %s = %v, %v; want UpdatedAt %v", step, list, err, want)
			}
		}

		u := tb.turn(th)
		u.Status, u.StartedAt, u.EndedAt = runtype.StatusQueued, time.Time{}, time.Time{}
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{u}})
		want = u.CreatedAt
		check("a turn submitted")

		running := *u
		running.Status, running.StartedAt = runtype.StatusRunning, tb.now()
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{&running}})
		check("the turn started")

		ended := running
		ended.Status, ended.EndedAt = runtype.StatusCompleted, tb.now()
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{&ended}})
		want = ended.EndedAt
		check("the turn ended")

		older := tb.turn(th)
		older.CreatedAt, older.StartedAt, older.EndedAt = s.CreatedAt, time.Time{}, time.Time{}
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{older}})
		check("a turn submitted earlier written later")

		failed := tb.turn(th)
		failed.StartedAt, failed.EndedAt = time.Time{}, time.Time{}
		if err := tb.applyErr(t, &store.Batch{Turns: []*runtype.Turn{failed}, Sessions: []*runtype.Session{s}}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("Apply(a duplicate session) = %v, want ErrConflict", err)
		}
		check("a batch that failed")

		other := tb.turn(th)
		other.TenantID, other.StartedAt, other.EndedAt = tenantB, time.Time{}, time.Time{}
		tb.apply(t, &store.Batch{Turns: []*runtype.Turn{other}})
		check("another tenant's turn naming the session")
	})

	t.Run("NewSessionWithItsTurn", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		s.UpdatedAt = s.CreatedAt
		th := tb.thread(s)
		u := tb.turn(th)
		u.Status, u.StartedAt, u.EndedAt = runtype.StatusQueued, time.Time{}, time.Time{}
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s}, Threads: []*runtype.Thread{th}, Turns: []*runtype.Turn{u}})
		got, err := tb.store.SessionGet(ctx, &store.SessionGetParams{TenantID: tenantA, ID: s.ID})
		if err != nil || !got.UpdatedAt.Equal(u.CreatedAt) {
			t.Errorf("SessionGet = %v, %v; want UpdatedAt %v, the turn's submission", got, err, u.CreatedAt)
		}
	})
}

func exerciseThread(ctx context.Context, t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("InsertGetList", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s, other := tb.session(tenantA), tb.session(tenantA)
		t1, t2, t3 := tb.thread(s), tb.thread(s), tb.thread(s)
		tx := tb.thread(other)
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s, other}, Threads: []*runtype.Thread{t1, tx}})
		tb.apply(t, &store.Batch{Threads: []*runtype.Thread{t2, t3}})

		got, err := tb.store.ThreadGet(ctx, &store.ThreadGetParams{TenantID: tenantA, ID: t2.ID})
		if err != nil {
			t.Fatalf("ThreadGet: %v", err)
		}
		if d := diff(t2, got); d != "" {
			t.Errorf("ThreadGet (-want +got):\n%s", d)
		}
		_, err = tb.store.ThreadGet(ctx, &store.ThreadGetParams{TenantID: tenantA, ID: "thr_missing"})
		wantNotFound(t, "ThreadGet(missing)", err)

		list, err := tb.store.ThreadList(ctx, &store.ThreadListParams{TenantID: tenantA, SessionID: s.ID})
		if err != nil {
			t.Fatalf("ThreadList: %v", err)
		}
		if d := diff([]*runtype.Thread{t1, t2, t3}, list); d != "" {
			t.Errorf("ThreadList, oldest first (-want +got):\n%s", d)
		}
		empty, err := tb.store.ThreadList(ctx, &store.ThreadListParams{TenantID: tenantA, SessionID: "ses_missing"})
		if err != nil || len(empty) != 0 {
			t.Errorf("ThreadList(unknown session) = %v, %v; want none", empty, err)
		}
	})

	t.Run("DuplicateIDConflicts", func(t *testing.T) {
		t.Parallel()
		tb := setup(ctx, t, newStore)
		s := tb.session(tenantA)
		th := tb.thread(s)
		tb.apply(t, &store.Batch{Sessions: []*runtype.Session{s}, Threads: []*runtype.Thread{th}})
		tb.wantConflict(t, &store.Batch{Threads: []*runtype.Thread{th}})
		fresh := tb.thread(s)
		tb.wantConflict(t, &store.Batch{Threads: []*runtype.Thread{fresh, fresh}})
		list, err := tb.store.ThreadList(ctx, &store.ThreadListParams{TenantID: tenantA, SessionID: s.ID})
		if err != nil {
			t.Fatalf("ThreadList: %v", err)
		}
		if d := diff([]*runtype.Thread{th}, list); d != "" {
			t.Errorf("ThreadList after conflicts (-want +got):\n%s", d)
		}
	})
}

func sessionID(s *runtype.Session) string { return s.ID }
