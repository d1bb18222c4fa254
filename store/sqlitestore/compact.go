package sqlitestore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentrt/agentrt/event"
)

// The compact event body (schema version 12).
//
// An event's stored body is its envelope's JSON with the fields its run
// shares with every other event of the run left out: each such field,
// written "key":value, with the comma after it, is replaced by one control
// byte naming it, and the values come back from the event's scope row
// (event_scopes) and its sequence column. A compacted body starts with
// bodyCompact; any other body (the events recorded before version 12 start
// with '{') is the JSON itself. JSON never holds a raw byte below 0x20
// (strings escape them, and an encoder writes no whitespace besides tab,
// line feed and carriage return, which the codes skip), and a JSON that
// does is stored as it is, so putting each field back where its byte is
// gives the JSON byte for byte: the wire and the event stream send what
// they sent before. The down migration of 012 does the same in SQL.
//
// The codes are fixed forever: a body written once is read by every later
// version.
const (
	bodyCompact = 0x01

	codeSchemaVersion = 0x02 // "schemaVersion":"agentruntime-0.4.0",
	codeRuntime       = 0x03 // "runtimeId":"<scope runtime_id>",
	codeSequence      = 0x04 // "sequence":<events.sequence>,
	codeSession       = 0x05 // "sessionId":"<scope session_id>",
	codeThread        = 0x06 // "threadId":"<scope thread_id>",
	codeTurn          = 0x07 // "turnId":"<scope turn_id>",
	codeTask          = 0x08 // "taskId":"<scope task_id>",
	codeRun           = 0x0b // "runId":"<scope run_id>",
	codeAttempt       = 0x0c // "attemptId":"<scope run_id>",
	codeTrace         = 0x0e // "traceId":"<scope trace_id>",
)

// schemaVersion012 is the schema version codeSchemaVersion stands for:
// the standard's version when the codes were fixed, whatever
// event.SchemaVersion says later.
const schemaVersion012 = "agentruntime-0.4.0"

// eventScope is an event_scopes row: the correlation ids a run's events
// share. Its fields are the events' own, unescaped.
type eventScope struct {
	tenant, session, thread, turn, task, run, trace, runtime string
}

// scopeOf returns the scope e belongs to.
func scopeOf(e *event.Event) eventScope {
	return eventScope{
		tenant: e.TenantID, session: e.SessionID, thread: e.ThreadID, turn: e.TurnID, task: e.TaskID,
		run: e.RunID, trace: e.TraceID, runtime: e.RuntimeID,
	}
}

// field returns the text code stands for in an event of scope sc and
// sequence seq, appended to b; ok is false for a byte that is no code.
func (sc *eventScope) field(b []byte, code byte, seq int64) (_ []byte, ok bool) {
	str := func(key, v string) []byte {
		b = append(b, key...)
		b = append(b, v...)
		return append(b, '"', ',')
	}
	switch code {
	case codeSchemaVersion:
		return str(`"schemaVersion":"`, schemaVersion012), true
	case codeRuntime:
		return str(`"runtimeId":"`, sc.runtime), true
	case codeSequence:
		b = append(b, `"sequence":`...)
		b = strconv.AppendInt(b, seq, 10)
		return append(b, ','), true
	case codeSession:
		return str(`"sessionId":"`, sc.session), true
	case codeThread:
		return str(`"threadId":"`, sc.thread), true
	case codeTurn:
		return str(`"turnId":"`, sc.turn), true
	case codeTask:
		return str(`"taskId":"`, sc.task), true
	case codeRun:
		return str(`"runId":"`, sc.run), true
	case codeAttempt:
		return str(`"attemptId":"`, sc.run), true
	case codeTrace:
		return str(`"traceId":"`, sc.trace), true
	}
	return b, false
}

// compactCodes are the codes in the order an envelope has their fields.
var compactCodes = [...]byte{
	codeSchemaVersion, codeRuntime, codeSequence, codeSession, codeThread, codeTurn, codeTask, codeRun,
	codeAttempt, codeTrace,
}

// compactBody appends to dst the stored body of an event of scope sc and
// sequence seq whose JSON is data. Fields are looked for in envelope
// order, each after the one before; one not found (or empty: the
// envelope leaves it out) stays in the JSON.
func compactBody(dst, data []byte, sc *eventScope, seq int64) []byte {
	for _, c := range data {
		if c < 0x20 {
			return append(dst, data...) // not an encoder's JSON; keep it whole
		}
	}
	dst = append(dst, bodyCompact)
	var patBuf [128]byte
	at := 0 // data[:at] is in dst
	for _, code := range compactCodes {
		pat, _ := sc.field(patBuf[:0], code, seq)
		i := bytes.Index(data[at:], pat)
		if i < 0 {
			continue
		}
		dst = append(dst, data[at:at+i]...)
		dst = append(dst, code)
		at += i + len(pat)
	}
	return append(dst, data[at:]...)
}

// expandBody appends to dst the JSON of an event whose stored body is body,
// of scope sc and sequence seq.
func expandBody(dst, body []byte, sc *eventScope, seq int64) ([]byte, error) {
	if len(body) == 0 || body[0] != bodyCompact {
		return append(dst, body...), nil
	}
	body = body[1:]
	for len(body) > 0 {
		i := 0
		for i < len(body) && body[i] >= 0x20 {
			i++
		}
		dst = append(dst, body[:i]...)
		if i == len(body) {
			break
		}
		var ok bool
		if dst, ok = sc.field(dst, body[i], seq); !ok {
			return nil, fmt.Errorf("decoding stored event: unknown code %#x", body[i])
		}
		body = body[i+1:]
	}
	return dst, nil
}

// decodeEvent returns the event stored as body, with its cursor and
// tenant.
func decodeEvent(cursor int64, body []byte, sc *eventScope, seq int64) (*event.Event, error) {
	data, err := expandBody(make([]byte, 0, len(body)+360), body, sc, seq)
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", cursor, err)
	}
	e, err := event.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", cursor, err)
	}
	e.Cursor, e.TenantID = cursor, sc.tenant
	return e, nil
}

// eventIdentity reads an event's id and type from its JSON (receipts name
// their event by both).
func eventIdentity(data []byte) (id, typ string, err error) {
	var w struct {
		Type    string `json:"type"`
		EventID string `json:"eventId"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return "", "", fmt.Errorf("reading the sealed event's id: %w", err)
	}
	return w.EventID, w.Type, nil
}
