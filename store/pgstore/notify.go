package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/store"
)

// How nodes hear each other's commits: every write transaction that
// changes something another node may cache or wait for sends, last before
// COMMIT, one pg_notify on channel agentrt, which PostgreSQL delivers at
// commit (never for a rolled-back transaction) to every connection that
// listens. Its payload is "<origin> <json>": the origin names the store
// handle that committed (its write connection's agentrt.origin setting),
// so that a handle skips its own commits, and the JSON is a
// store.Notification in short keys. A description that does not fit
// PostgreSQL's 8000-byte payload becomes "everything changed".
//
// Each handle listens on a connection of its own (not one of the pool's),
// which it reconnects with backoff when it breaks; after a reconnection it
// reports everything changed, as it may have missed notifications.

// notifyChannel is the channel every node listens on.
const notifyChannel = "agentrt"

// originSetting is the custom setting that carries a store handle's origin
// on its write connection: Open sets it as a run-time parameter of that
// connection (pgx.ConnConfig.RuntimeParams).
const originSetting = "agentrt.origin"

// maxNotifyJSON bounds the JSON part of a payload: PostgreSQL refuses
// payloads of 8000 bytes or more, and the origin goes before it.
const maxNotifyJSON = 7800

// wireNotification is store.Notification as sent: short keys, nothing
// empty.
type wireNotification struct {
	All       bool     `json:"a,omitempty"`
	Events    bool     `json:"e,omitempty"`
	Tasks     bool     `json:"t,omitempty"`
	Rested    []string `json:"r,omitempty"`
	AnyRested bool     `json:"ar,omitempty"`
	Controls  []string `json:"c,omitempty"`
	Policy    bool     `json:"p,omitempty"`
	Limits    bool     `json:"l,omitempty"`
	Tokens    bool     `json:"k,omitempty"`
	Schedules bool     `json:"s,omitempty"`
}

// everything is the payload that says anything may have changed.
const everything = `{"a":true}`

// notifyPayload is the JSON that describes n; when that does not fit,
// the same without the turns at rest named, or else everything.
func notifyPayload(n *store.Notification) string {
	b, err := json.Marshal(wireNotification(*n))
	if err == nil && len(b) > maxNotifyJSON && len(n.Rested) > 0 {
		// Without naming the turns at rest: any may be.
		w := wireNotification(*n)
		w.Rested, w.AnyRested = nil, true
		b, err = json.Marshal(w)
	}
	if err != nil || len(b) > maxNotifyJSON {
		return everything
	}
	return string(b)
}

// notifyCommit is the commit's note (sqlitestore.Dialect.CommitNote):
// one pg_notify telling the other nodes what the applied batches changed
// (it is delivered at commit, and never for a transaction that rolls
// back). A transaction that changed nothing another node keeps or waits
// for (a lease renewal) sends nothing.
func notifyCommit(applied []*store.Batch) (string, []any) {
	n := store.NotificationOf(applied)
	if n.Empty() {
		return "", nil
	}
	return `SELECT pg_notify($1, coalesce(current_setting($2, true), '') || ' ' || $3)`,
		[]any{notifyChannel, originSetting, notifyPayload(n)}
}

var _ store.Notifier = (*listener)(nil)

// newOrigin returns a new store handle's origin: random, so that every
// Open (every node, every restart) is another.
func newOrigin() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// listener is a store.Notifier: it hears the commits of other handles on
// the database at url, skipping those of origin (its own handle).
type listener struct {
	url    string
	origin string
	// minWait and maxWait bound the backoff between connection attempts.
	minWait, maxWait time.Duration
}

// newListener returns the Notifier of the store handle whose write
// connection carries origin (see originSetting); it connects only when
// Listen is called.
func newListener(url, origin string) *listener {
	return &listener{url: url, origin: origin, minWait: 100 * time.Millisecond, maxWait: 5 * time.Second}
}

// Listen implements store.Notifier: it listens on a connection of its own,
// reconnecting with backoff while ctx lasts, and reports All on each
// (re)connection.
func (l *listener) Listen(ctx context.Context, fn func(*store.Notification)) error {
	wait := l.minWait
	for {
		if l.session(ctx, fn) {
			wait = l.minWait // it was listening: try again at once-ish
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		wait = min(2*wait, l.maxWait)
	}
}

// session connects, listens and reports notifications until the
// connection breaks or ctx ends; it reports whether it got to listen.
func (l *listener) session(ctx context.Context, fn func(*store.Notification)) bool {
	cfg, err := pgx.ParseConfig(l.url)
	if err != nil {
		return false
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second // as Open's default
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return false
	}
	// Whatever committed while nobody listened is unknown.
	fn(&store.Notification{All: true})
	for {
		nt, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true
		}
		if n, ok := l.decode(nt.Payload); ok {
			fn(n)
		}
	}
}

// decode reads a payload; ok is false for one of l's own handle. A
// payload it cannot read says everything changed.
func (l *listener) decode(payload string) (n *store.Notification, ok bool) {
	origin, body, _ := strings.Cut(payload, " ")
	if origin != "" && origin == l.origin {
		return nil, false
	}
	var w wireNotification
	if err := json.Unmarshal([]byte(body), &w); err != nil {
		return &store.Notification{All: true}, true
	}
	n = (*store.Notification)(&w)
	return n, true
}

var _ store.Notifier = (*Store)(nil)

// Listen calls fn with what each transaction of another handle on the
// database (another node, or another Store of this process) committed,
// until ctx ends; see store.Notifier. It reports everything changed first
// and after each reconnection.
func (s *Store) Listen(ctx context.Context, fn func(*store.Notification)) error {
	return s.notes.Listen(ctx, fn)
}
