package pgstore

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// writeHandle opens a database/sql handle on url whose connections carry
// origin, as Open's write handle does.
func writeHandle(t *testing.T, url, origin string) *sql.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams[originSetting] = origin
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	return db
}

// listen runs a listener for url (skipping origin) until the test ends
// and returns its notifications, after the first (All, on connecting).
func listen(t *testing.T, l *listener) <-chan *store.Notification {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan *store.Notification, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Listen(ctx, func(n *store.Notification) { ch <- n })
	}()
	t.Cleanup(func() { cancel(); <-done })
	if n := next(t, ch); !n.All {
		t.Fatalf("first notification %+v, want All on connecting", n)
	}
	return ch
}

func next(t *testing.T, ch <-chan *store.Notification) *store.Notification {
	t.Helper()
	select {
	case n := <-ch:
		return n
	case <-time.After(30 * time.Second):
		t.Fatal("no notification")
		return nil
	}
}

// commit applies batches' notification in one transaction, committed or
// rolled back.
func commit(t *testing.T, db *sql.DB, rollback bool, bs ...*store.Batch) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q, args := notifyCommit(bs); q != "" {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	if rollback {
		err = tx.Rollback()
	} else {
		err = tx.Commit()
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestNotifyReachesOtherHandles(t *testing.T) {
	url := testenv.Postgres(t)
	other := writeHandle(t, url, "other")
	own := writeHandle(t, url, "own")
	ch := listen(t, newListener(url, "own"))

	pause := runtype.ControlPause
	now := time.Now()
	// Rolled back: never delivered. Own: skipped. A lease renewal:
	// nothing to say, nothing sent.
	commit(t, other, true, &store.Batch{Limits: []*runtype.Limit{{}}})
	commit(t, own, false, &store.Batch{Limits: []*runtype.Limit{{}}})
	commit(t, other, false, &store.Batch{Leases: []*store.LeaseChange{{TaskID: "t0", Owner: "w", ExpiresAt: now}}})
	commit(t, other, false,
		&store.Batch{TaskUpdates: []*store.TaskUpdate{{TaskID: "t1", Control: &pause}, {TaskID: "t2", DueAt: &now}}},
		&store.Batch{Grants: []*runtype.PolicyGrant{{}}, Schedules: []*runtype.Schedule{{}}},
		&store.Batch{Turns: []*runtype.Turn{{ID: "u1", TaskID: "t3", Status: runtype.StatusCompleted}}, Leases: []*store.LeaseChange{{TaskID: "t3"}}},
		&store.Batch{Leases: []*store.LeaseChange{{TaskID: "t4"}}},
	)
	got := next(t, ch)
	want := &store.Notification{Tasks: true, Rested: []string{"u1"}, AnyRested: true, Controls: []string{"t1"}, Policy: true, Schedules: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notification (-want +got):\n%s", diff)
	}
	select {
	case n := <-ch:
		t.Errorf("unexpected notification %+v", n)
	default:
	}
}

// TestNotifyManyRested: a commit that names too many turns at rest to
// fit says that any turn may have come to rest, and the rest as it is.
func TestNotifyManyRested(t *testing.T) {
	b := &store.Batch{Limits: []*runtype.Limit{{}}}
	for i := range 1000 {
		b.Turns = append(b.Turns, &runtype.Turn{ID: fmt.Sprintf("turn_%06d", i), Status: runtype.StatusCompleted})
	}
	p := notifyPayload(store.NotificationOf([]*store.Batch{b}))
	n, ok := newListener("", "own").decode("other " + p)
	if want := (&store.Notification{AnyRested: true, Limits: true}); !ok || !cmp.Equal(n, want) {
		t.Errorf("payload %s reads %+v, want %+v", p, n, want)
	}
}

func TestNotifyTooBigSaysEverything(t *testing.T) {
	url := testenv.Postgres(t)
	other := writeHandle(t, url, "other")
	ch := listen(t, newListener(url, "own"))
	b := &store.Batch{}
	pause := runtype.ControlPause
	for i := range 1000 {
		b.TaskUpdates = append(b.TaskUpdates, &store.TaskUpdate{TaskID: fmt.Sprintf("task_%06d", i), Control: &pause})
	}
	if p := notifyPayload(store.NotificationOf([]*store.Batch{b})); p != everything {
		t.Fatalf("payload of %d bytes, want %s", len(p), everything)
	}
	commit(t, other, false, b)
	if n := next(t, ch); !cmp.Equal(n, &store.Notification{All: true}) {
		t.Errorf("notification %+v, want All", n)
	}
}

func TestNotifyListenerReconnects(t *testing.T) {
	url := testenv.Postgres(t)
	other := writeHandle(t, url, "other")
	l := newListener(url, "own")
	l.minWait = time.Millisecond
	ch := listen(t, l)

	// Terminate every other connection to the test database: the
	// listener's.
	if err := other.PingContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	var killed int
	err := other.QueryRowContext(context.Background(),
		`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminating the listener's connection: %d terminated, %v", killed, err)
	}
	if n := next(t, ch); !n.All {
		t.Fatalf("after a reconnection: %+v, want All", n)
	}
	commit(t, other, false, &store.Batch{Limits: []*runtype.Limit{{}}})
	if n := next(t, ch); !cmp.Equal(n, &store.Notification{Limits: true}) {
		t.Errorf("after a reconnection: %+v, want Limits", n)
	}
}
