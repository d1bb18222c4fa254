package agentrt_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// contextScript makes three model calls in one turn: two read_file
// hops, then an answer.
const contextScript = `
responses:
  - text: "Looking."
    tool_calls: [{name: read_file, input: {path: "missing.md"}}]
  - tool_calls: [{name: read_file, input: {path: "other.md"}}]
  - text: "done"
  - text: "again"
`

// roles lists the seq and role of each message of a context view.
func roles(v *apitype.ContextView) []string {
	var out []string
	for _, m := range v.Messages {
		out = append(out, string(m.Role))
	}
	return out
}

// TestContextRebuildsEveryModelCall: every model call of a multi-hop turn
// with tools has a fingerprint that the log verifies, and the rebuilt
// context is the one each call saw.
func TestContextRebuildsEveryModelCall(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: contextScript, sqlite: true})
	res, turn := b.submit(t, &apitype.SubmitTurnParams{Input: "find it"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn %s (%s)", turn.Status, turn.StatusReason)
	}
	ctx := context.Background()
	want := map[int][]string{
		1: {"user"},
		2: {"user", "assistant", "tool"},
		3: {"user", "assistant", "tool", "assistant", "tool"},
	}
	for hop, roleWant := range want {
		v, err := b.rt.GetContext(ctx, runtype.Owner{}, res.TurnID, hop)
		if err != nil {
			t.Fatalf("hop %d: %v", hop, err)
		}
		if !v.Verified || v.Reason != "" || v.Hash != v.Fingerprint.Hash {
			t.Errorf("hop %d: verified %v (%s), hash %s, recorded %s", hop, v.Verified, v.Reason, v.Hash, v.Fingerprint.Hash)
		}
		if diff := cmp.Diff(roleWant, roles(v)); diff != "" {
			t.Errorf("hop %d roles (-want +got):\n%s", hop, diff)
		}
		if got := v.Fingerprint.Messages; len(got) != 1 || got[0] != [2]int64{1, int64(len(roleWant))} {
			t.Errorf("hop %d ranges %v, want [[1 %d]]", hop, got, len(roleWant))
		}
		if v.Hop != hop || v.Attempt != 1 || v.Instructions != "help" || v.ThreadID != turn.ThreadID {
			t.Errorf("hop %d: view hop %d attempt %d instructions %q thread %s", hop, v.Hop, v.Attempt, v.Instructions, v.ThreadID)
		}
		if len(v.Tools) != 1 || v.Tools[0].Name != "read_file" || len(v.Tools[0].InputSchema) == 0 {
			t.Errorf("hop %d tools %+v, want read_file with its schema", hop, v.Tools)
		}
		if diff := cmp.Diff([]int{1, 2, 3}, v.Hops); diff != "" {
			t.Errorf("hops (-want +got):\n%s", diff)
		}
		if v.Messages[0].Content != "find it" {
			t.Errorf("hop %d first message %+v", hop, v.Messages[0])
		}
	}
	// Hop 0 is the last; a second turn's first call sees the whole thread.
	last, err := b.rt.GetContext(ctx, runtype.Owner{}, res.TurnID, 0)
	if err != nil || last.Hop != 3 {
		t.Fatalf("hop 0 = hop %v, %v; want the last, 3", last, err)
	}
	res2, _ := b.submit(t, &apitype.SubmitTurnParams{SessionID: res.SessionID, Input: "more"})
	v, err := b.rt.GetContext(ctx, runtype.Owner{}, res2.TurnID, 1)
	if err != nil || !v.Verified || len(v.Messages) != 7 || v.Messages[6].Content != "more" {
		t.Fatalf("second turn hop 1 = %+v, %v; want 7 verified messages ending with its input", v, err)
	}
}

// TestContextRejects: another tenant's request is not found, nor is an
// unknown one; a hop the request made no call at is invalid.
func TestContextRejects(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: contextScript, sqlite: true})
	res, _ := b.submit(t, &apitype.SubmitTurnParams{Input: "find it"})
	ctx := context.Background()
	if _, err := b.rt.GetContext(ctx, runtype.Owner{TenantID: "other"}, res.TurnID, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant: %v, want not found", err)
	}
	if _, err := b.rt.GetContext(ctx, runtype.Owner{}, "turn_missing", 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown request: %v, want not found", err)
	}
	for _, hop := range []int{-1, 4} {
		var inv *apitype.InvalidError
		if _, err := b.rt.GetContext(ctx, runtype.Owner{}, res.TurnID, hop); !errors.As(err, &inv) || inv.Field != "hop" {
			t.Errorf("hop %d: %v, want an invalid hop", hop, err)
		}
	}
}

// TestContextDetectsTampering: a message changed in the SQLite file after
// the call makes the context fail verification, saying so.
func TestContextDetectsTampering(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: contextScript, sqlite: true})
	res, _ := b.submit(t, &apitype.SubmitTurnParams{Input: "find it"})
	db, err := sql.Open("sqlite", filepath.Join(b.dir, "agentrt.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := db.Exec(`UPDATE messages SET content = 'find something else' WHERE seq = 1`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := r.RowsAffected(); n != 1 {
		t.Fatalf("tampering changed %d rows", n)
	}
	v, err := b.rt.GetContext(context.Background(), runtype.Owner{}, res.TurnID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if v.Verified || !strings.Contains(v.Reason, "changed after the call") || v.Messages[0].Content != "find something else" {
		t.Errorf("tampered context: verified %v, reason %q, first message %q", v.Verified, v.Reason, v.Messages[0].Content)
	}
	// A deleted message and a changed system prompt are named too.
	if _, err := db.Exec(`DELETE FROM messages WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE blobs SET data = CAST('be evil' AS BLOB) WHERE ref = ?`, v.Fingerprint.InstructionsRef); err != nil {
		t.Fatal(err)
	}
	v, err = b.rt.GetContext(context.Background(), runtype.Owner{}, res.TurnID, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"messages 1–3 of thread", "holds 2 of the 3", "system prompt blob", "changed after the call"} {
		if v.Verified || !strings.Contains(v.Reason, want) {
			t.Errorf("reason %q lacks %q", v.Reason, want)
		}
	}
}

// TestContextAcrossRuntimes: a turn another runtime on the same SQLite
// file ran can be inspected from this one.
func TestContextAcrossRuntimes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: contextScript, sqlite: true})
	other := setup(t, setupOpts{script: contextScript, sqlite: true, dir: b.dir})
	res, turn := other.submit(t, &apitype.SubmitTurnParams{Input: "find it"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn %s", turn.Status)
	}
	v, err := b.rt.GetContext(context.Background(), runtype.Owner{}, res.TurnID, 2)
	if err != nil || !v.Verified || len(v.Messages) != 3 {
		t.Fatalf("context from the other runtime = %+v, %v; want 3 verified messages", v, err)
	}
}
