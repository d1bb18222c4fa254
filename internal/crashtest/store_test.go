package crashtest_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlitestore"
)

// tenant is the tenant of every request made with the API token.
const tenant = apitype.DefaultTenant

// openStore opens the data directory's SQLite store, which no daemon is
// writing any more; cleanup closes it.
func openStore(t *testing.T, ws *workspace) store.Store {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), filepath.Join(ws.dataDir, "agentrt.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// evt is the part of an event the checks read, decoded from the stored
// envelope.
type evt struct {
	Type         string    `json:"type"`
	EventID      string    `json:"eventId"`
	Timestamp    time.Time `json:"timestamp"`
	Sequence     int64     `json:"sequence"`
	SessionID    string    `json:"sessionId"`
	ThreadID     string    `json:"threadId"`
	TurnID       string    `json:"turnId"`
	TaskID       string    `json:"taskId"`
	SubagentID   string    `json:"subagentId"`
	RunID        string    `json:"runId"`
	ToolCallID   string    `json:"toolCallId"`
	ActionID     string    `json:"actionId"`
	Status       string    `json:"status"`
	StatusReason string    `json:"statusReason"`
	Payload      struct {
		AssistantMessage string `json:"assistantMessage"`
		Name             string `json:"name"`
		IdempotencyKey   string `json:"idempotencyKey"`
		IsError          bool   `json:"isError"`
		ActionType       string `json:"actionType"`
		ToolName         string `json:"toolName"`
		Worker           string `json:"worker"`
		Attempt          int    `json:"attempt"`
		Status           string `json:"status"`
		Reason           string `json:"reason"`
		Preview          string `json:"preview"`
		ChildTaskID      string `json:"childTaskId"`
	} `json:"payload"`

	raw []byte
}

// sessionData is what the store holds about one session.
type sessionData struct {
	id       string
	turns    []*runtype.Turn
	events   []*evt
	stored   []*event.Event
	receipts []*runtype.Receipt
	actions  []*runtype.Action
}

// loadSession reads a session's turns, events, receipts and actions.
func loadSession(t *testing.T, st store.Reader, id string) *sessionData {
	t.Helper()
	ctx := t.Context()
	sd := &sessionData{id: id}
	var err error
	sd.turns, err = st.TurnList(ctx, &store.TurnListParams{TenantID: tenant, SessionID: id, Limit: store.MaxListLimit})
	if err != nil {
		t.Fatalf("listing session %s's turns: %v", id, err)
	}
	for after := int64(0); ; {
		page, err := st.EventListAfter(ctx, &store.EventListAfterParams{Filter: event.Filter{TenantID: tenant, SessionID: id}, AfterCursor: after, Limit: store.MaxListLimit})
		if err != nil {
			t.Fatalf("reading session %s's events: %v", id, err)
		}
		for _, e := range page {
			raw, err := e.JSON()
			if err != nil {
				t.Fatalf("encoding event %s: %v", e.EventID, err)
			}
			var v evt
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("decoding event %s: %v", raw, err)
			}
			v.raw = raw
			sd.events = append(sd.events, &v)
			sd.stored = append(sd.stored, e)
		}
		if len(page) < store.MaxListLimit {
			break
		}
		after = page[len(page)-1].Cursor
	}
	for after := int64(0); ; {
		page, err := st.ReceiptList(ctx, &store.ReceiptListParams{TenantID: tenant, SessionID: id, AfterSeq: after, Limit: store.MaxListLimit})
		if err != nil {
			t.Fatalf("reading session %s's receipts: %v", id, err)
		}
		sd.receipts = append(sd.receipts, page...)
		if len(page) < store.MaxListLimit {
			break
		}
		after = page[len(page)-1].Seq
	}
	sd.actions, err = st.ActionList(ctx, &store.ActionListParams{TenantID: tenant, SessionID: id, Limit: store.MaxListLimit})
	if err != nil {
		t.Fatalf("listing session %s's actions: %v", id, err)
	}
	return sd
}

// workerPID is the process id in a worker id (<runtime>/<pid>-<hex>), or
// -1.
func workerPID(worker string) int {
	m := workerRE.FindStringSubmatch(worker)
	if m == nil {
		return -1
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return pid
}

var workerRE = regexp.MustCompile(`/(\d+)-[0-9a-f]+$`)

// trail is a session's event log, one line per event: the sequence, type,
// status and reason, and what the event is about. It is what a failure
// shows, to tell what happened.
func trail(events []*evt) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "%3d %s %-22s", e.Sequence, e.Timestamp.Format("15:04:05.000"), e.Type)
		if e.Status != "" || e.StatusReason != "" {
			fmt.Fprintf(&b, " %s/%s", e.Status, e.StatusReason)
		}
		p := e.Payload
		for _, kv := range [][2]string{
			{"run", e.RunID}, {"call", e.ToolCallID}, {"tool", cmpOr(p.Name, p.ToolName)},
			{"key", p.IdempotencyKey}, {"text", p.AssistantMessage}, {"action", p.ActionType},
			{"worker", p.Worker}, {"reason", p.Reason},
		} {
			if kv[1] != "" {
				fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
			}
		}
		if p.Attempt != 0 {
			fmt.Fprintf(&b, " attempt=%d", p.Attempt)
		}
		if p.IsError {
			b.WriteString(" isError")
		}
		b.WriteByte('\n')
	}
	return b.String()
}
