package pgstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// TestGroupCommit: the batches a node's Writer commits in one
// transaction go to the server in two pipelines however many they are,
// even after another node wrote (the sessions it wrote are learnt in the
// first), and tell the other nodes; a batch of a group that fails fails
// alone, the others committing with their chains intact; and a group
// that finds another node wrote to one of its sessions commits too.
func TestGroupCommit(t *testing.T) {
	ctx := testCtx(t)
	url := testenv.Postgres(t)
	a, b := node(t, url), node(t, url)
	wa, wb := store.NewWriter(a, store.WriterConfig{}), store.NewWriter(b, store.WriterConfig{})
	defer wa.Stop(ctx)
	defer wb.Stop(ctx)
	owner := runtype.Owner{TenantID: "t", PrincipalID: "p"}
	n := 0
	batch := func(session string, fence *store.Fence) *store.Batch {
		n++
		return &store.Batch{Fence: fence, Events: []*event.Event{permitted(fmt.Sprintf("evt_group_%d", n), session)}}
	}
	const sessions = 6
	for i := range sessions {
		bt := batch(fmt.Sprintf("ses_g%d", i), nil)
		bt.Sessions = []*runtype.Session{{ID: fmt.Sprintf("ses_g%d", i), Owner: owner, Agent: "a"}}
		if err := wa.Write(ctx, bt); err != nil {
			t.Fatal(err)
		}
	}

	// grouped writes, with the write lock held, a batch to lead on A
	// (its transaction waits for the lock), one on B, and then bs on A,
	// which queue behind A's leader. Once the lock is let go, the lock's
	// waiters take it in turn: A's leader, B, and A's group, which so
	// finds that B wrote since A's last commit.
	lock, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	grouped := func(lead *store.Batch, between string, bs ...*store.Batch) []error {
		t.Helper()
		conn, err := lock.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, writeLock); err != nil {
			t.Fatal(err)
		}
		errs := make([]error, len(bs)+1)
		done := make(chan int)
		write := func(i int, bt *store.Batch) {
			errs[i] = wa.Write(ctx, bt)
			done <- i
		}
		go write(0, lead)
		waitForLockWaiters(ctx, t, conn, 1)
		other := make(chan error)
		betweenBatch := batch(between, nil)
		go func() { other <- wb.Write(ctx, betweenBatch) }()
		waitForLockWaiters(ctx, t, conn, 2)
		for i, bt := range bs {
			go write(i+1, bt)
		}
		for wa.Queued() < len(bs) {
			runtime.Gosched()
		}
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, writeLock); err != nil {
			t.Fatal(err)
		}
		for range errs {
			<-done
		}
		if err := <-other; err != nil {
			t.Fatalf("B's write: %v", err)
		}
		return errs
	}

	var bs []*store.Batch
	for i := range sessions {
		bs = append(bs, batch(fmt.Sprintf("ses_g%d", i), nil))
	}
	// A leader without events uses nothing A held, so learns with its
	// only pipeline what others wrote.
	lead := &store.Batch{Sessions: []*runtype.Session{{ID: "ses_lead", Owner: owner, Agent: "a"}}}
	pipes, held := a.RoundTrips(), a.HeldMisses()
	notes := make(chan *store.Notification, 16)
	go b.Listen(ctx, func(n *store.Notification) { notes <- n })
	if n := <-notes; !n.All {
		t.Fatalf("B's listener first heard %+v, want All", n)
	}
	for i, err := range grouped(lead, "ses_other", bs...) {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	// The leader's transaction: one pipeline; the group's: two.
	if got := a.RoundTrips() - pipes; got != 3 {
		t.Errorf("the leader and a group of %d sent %d round trips, want 3", len(bs), got)
	}
	if got := a.HeldMisses() - held; got != 0 {
		t.Errorf("A read %d sequences or chain ends again after B wrote another session, want none", got)
	}
	// The group told the other nodes (the leader had nothing to tell).
	if n := <-notes; !n.Events || n.All {
		t.Errorf("B heard %+v from A's group, want events", n)
	}

	// One batch of a group writes under a lease nobody holds: it fails
	// alone.
	bs = bs[:0]
	for i := range sessions {
		bs = append(bs, batch(fmt.Sprintf("ses_g%d", i), nil))
	}
	bs[2].Fence = &store.Fence{TenantID: "t", TaskID: "task_none", Epoch: 3}
	for i, err := range grouped(batch("ses_g1", nil), "ses_other", bs...)[1:] {
		if i == 2 {
			if !errors.Is(err, store.ErrLeaseLost) {
				t.Errorf("the batch under a lease nobody holds: %v, want ErrLeaseLost", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("batch %d of the group: %v", i, err)
		}
	}

	// B writes to a session of A's next group, which holds a new
	// session too: what A held of it is stale, so the group fails and
	// its batches are applied again one by one, all of them.
	fresh := batch("ses_new", nil)
	fresh.Sessions = []*runtype.Session{{ID: "ses_new", Owner: owner, Agent: "a"}}
	bs = []*store.Batch{batch("ses_g3", nil), fresh, batch("ses_g4", nil)}
	for i, err := range grouped(batch("ses_g1", nil), "ses_g3", bs...) {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}

	for i, want := range []int{
		3, // set-up, first group, second group
		5, // and two leaders
		2, // the batch that failed
		5, // and B's and the third group
		4, // and the third group
		3,
		1, // ses_new
	} {
		s := fmt.Sprintf("ses_g%d", i)
		if i == sessions {
			s = "ses_new"
		}
		rs, err := b.ReceiptList(ctx, &store.ReceiptListParams{TenantID: "t", SessionID: s, Limit: store.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.VerifyReceipts(rs); err != nil {
			t.Errorf("session %s's chain: %v", s, err)
		}
		if len(rs) != want {
			t.Errorf("session %s has %d receipts, want %d", s, len(rs), want)
		}
	}
}

// writeLock is pgstore's write lock's key.
const writeLock = 0x6167656e747274_01

// waitForLockWaiters returns once n other connections wait for the
// write lock conn holds.
func waitForLockWaiters(ctx context.Context, t *testing.T, conn *sql.Conn, n int) {
	t.Helper()
	for {
		var waiting int
		err := conn.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND datname = current_database()`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
	}
}
