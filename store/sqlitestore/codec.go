package sqlitestore

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/jsonwrite"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// translate turns SQLite errors callers branch on into the store's
// sentinels, keeping the original in the chain; other errors go to the
// foreign dialect's Translate (see NewDialect).
func translate(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %w", store.ErrConflict, err)
		}
		// Failures of the file rather than of the request.
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%w: %w", store.ErrCorrupt, err)
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
			return fmt.Errorf("%w: %w", store.ErrStorage, err)
		}
		return err
	}
	if f := foreignTranslate.Load(); f != nil && err != nil {
		return (*f)(err)
	}
	return err
}

// Times are unix nanoseconds; the zero time is 0.

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// JSON columns are encoded by hand: the shapes are small and fixed, and
// the write path should not pay for reflection. Decoding uses
// encoding/json; the encodings match the types' JSON tags.

// encodeUsage encodes u, whose CostUSD checkCost has accepted.
func encodeUsage(u runtype.Usage) string {
	b := make([]byte, 0, 128)
	b = append(b, `{"inputTokens":`...)
	b = strconv.AppendInt(b, u.InputTokens, 10)
	if u.CachedInputTokens != 0 {
		b = append(b, `,"cachedInputTokens":`...)
		b = strconv.AppendInt(b, u.CachedInputTokens, 10)
	}
	b = append(b, `,"outputTokens":`...)
	b = strconv.AppendInt(b, u.OutputTokens, 10)
	if u.ReasoningTokens != 0 {
		b = append(b, `,"reasoningTokens":`...)
		b = strconv.AppendInt(b, u.ReasoningTokens, 10)
	}
	if u.CostUSD != 0 {
		b = append(b, `,"costUsd":`...)
		b = appendJSONFloat(b, u.CostUSD)
	}
	b = append(b, '}')
	return string(b)
}

// checkCost refuses a cost JSON cannot hold (and a REAL column would turn
// into NULL): NaN and the infinities.
func checkCost(what string, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%s cost is %v, not a finite number", what, f)
	}
	return nil
}

// appendJSONFloat appends a finite f as encoding/json does: the shortest
// decimal that reads back as f, with an exponent only for very small or
// large magnitudes.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// encodeFailure returns nil (NULL) for no failure.
func encodeFailure(f *runtype.Failure) any {
	if f == nil {
		return nil
	}
	b := make([]byte, 0, 32+len(f.Kind)+len(f.Message))
	b = append(b, `{"kind":`...)
	b = appendJSONString(b, string(f.Kind))
	b = append(b, `,"message":`...)
	b = appendJSONString(b, f.Message)
	if f.Retryable {
		b = append(b, `,"retryable":true`...)
	}
	b = append(b, '}')
	return string(b)
}

// encodeToolCalls returns nil (NULL) for no tool calls.
func encodeToolCalls(calls []runtype.MessageToolCall) any {
	if len(calls) == 0 {
		return nil
	}
	n := 2
	for _, c := range calls {
		n += 40 + len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, c := range calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendJSONString(b, c.ID)
		b = append(b, `,"name":`...)
		b = appendJSONString(b, c.Name)
		b = append(b, `,"arguments":`...)
		b = appendJSONString(b, c.Arguments)
		b = append(b, '}')
	}
	b = append(b, ']')
	return string(b)
}

// encodeReasoning returns nil (NULL) for no reasoning.
func encodeReasoning(blocks []runtype.Reasoning) any {
	if len(blocks) == 0 {
		return nil
	}
	n := 2
	for _, r := range blocks {
		n += 80 + len(r.Provider) + len(r.ID) + len(r.Text) + len(r.Signature) + len(r.Redacted) + len(r.Encrypted)
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, r := range blocks {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"provider":`...)
		b = appendJSONString(b, r.Provider)
		b = appendOptString(b, `,"id":`, r.ID)
		b = appendOptString(b, `,"text":`, r.Text)
		b = appendOptString(b, `,"signature":`, r.Signature)
		b = appendOptString(b, `,"redacted":`, r.Redacted)
		b = appendOptString(b, `,"encrypted":`, r.Encrypted)
		b = append(b, '}')
	}
	b = append(b, ']')
	return string(b)
}

// encodeRouting returns nil (NULL) for no routing.
func encodeRouting(r *runtype.Routing) any {
	if r == nil {
		return nil
	}
	b := make([]byte, 0, 96+len(r.Mode)+len(r.Candidate)+len(r.Provider)+len(r.Model)+len(r.Reason))
	b = append(b, `{"mode":`...)
	b = appendJSONString(b, r.Mode)
	b = append(b, `,"candidate":`...)
	b = appendJSONString(b, r.Candidate)
	b = append(b, `,"provider":`...)
	b = appendJSONString(b, r.Provider)
	b = appendOptString(b, `,"model":`, r.Model)
	b = append(b, `,"candidateCount":`...)
	b = strconv.AppendInt(b, int64(r.CandidateCount), 10)
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, r.Reason)
	if r.Fallbacks != 0 {
		b = append(b, `,"fallbacks":`...)
		b = strconv.AppendInt(b, int64(r.Fallbacks), 10)
	}
	b = append(b, '}')
	return string(b)
}

// appendOptString appends key and s, a field tagged omitempty, unless s is
// empty.
func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

// appendJSONString appends s as a JSON string, as encoding/json does
// without HTML escaping.
func appendJSONString(b []byte, s string) []byte { return jsonwrite.AppendString(b, s, false) }

func decodeUsage(s string) (runtype.Usage, error) {
	var u runtype.Usage
	if err := json.Unmarshal([]byte(s), &u); err != nil {
		return u, fmt.Errorf("decoding usage: %w", err)
	}
	return u, nil
}

func decodeFailure(s sql.NullString) (*runtype.Failure, error) {
	if !s.Valid {
		return nil, nil
	}
	f := &runtype.Failure{}
	if err := json.Unmarshal([]byte(s.String), f); err != nil {
		return nil, fmt.Errorf("decoding failure: %w", err)
	}
	return f, nil
}

func decodeToolCalls(s sql.NullString) ([]runtype.MessageToolCall, error) {
	if !s.Valid {
		return nil, nil
	}
	var calls []runtype.MessageToolCall
	if err := json.Unmarshal([]byte(s.String), &calls); err != nil {
		return nil, fmt.Errorf("decoding tool calls: %w", err)
	}
	return calls, nil
}

func decodeReasoning(s sql.NullString) ([]runtype.Reasoning, error) {
	if !s.Valid {
		return nil, nil
	}
	var blocks []runtype.Reasoning
	if err := json.Unmarshal([]byte(s.String), &blocks); err != nil {
		return nil, fmt.Errorf("decoding reasoning: %w", err)
	}
	return blocks, nil
}

func decodeRouting(s sql.NullString) (*runtype.Routing, error) {
	if !s.Valid {
		return nil, nil
	}
	r := &runtype.Routing{}
	if err := json.Unmarshal([]byte(s.String), r); err != nil {
		return nil, fmt.Errorf("decoding routing: %w", err)
	}
	return r, nil
}

// eventData returns the bytes to store for e: its envelope encoding, which
// must carry the Sequence e has now. An event encoded before (JSON caches)
// and given a different sequence since would be stored with a wrong
// sequence; that is refused rather than written.
func eventData(e *event.Event) ([]byte, error) {
	data, err := e.JSON()
	if err != nil {
		return nil, err
	}
	const key = `"sequence":`
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return nil, fmt.Errorf("encoding %s event: no sequence in its encoding", e.Type)
	}
	rest := data[i+len(key):]
	j := 0
	for j < len(rest) && (rest[j] == '-' || rest[j] >= '0' && rest[j] <= '9') {
		j++
	}
	if seq, err := strconv.ParseInt(string(rest[:j]), 10, 64); err != nil || seq != e.Sequence {
		return nil, fmt.Errorf("encoding %s event: it was encoded with sequence %s and now has %d; events must not change after their first JSON call", e.Type, rest[:j], e.Sequence)
	}
	return data, nil
}

// encodeStrings encodes a list of strings as a JSON array, "[]" for none.
func encodeStrings(ss []string) string {
	n := 2
	for _, s := range ss {
		n += 3 + len(s)
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return string(append(b, ']'))
}

// decodeStrings decodes encodeStrings' encoding; none is nil.
func decodeStrings(s string) ([]string, error) {
	if s == "[]" || s == "" {
		return nil, nil
	}
	var ss []string
	if err := json.Unmarshal([]byte(s), &ss); err != nil {
		return nil, fmt.Errorf("decoding string list: %w", err)
	}
	return ss, nil
}

// resolutionJSON is the stored form of an action's resolution. Resolutions
// are written once per action, so encoding/json is cheap enough.
type resolutionJSON struct {
	Decision     string `json:"decision"`
	Message      string `json:"message,omitempty"`
	UpdatedInput []byte `json:"updatedInput,omitempty"`
	By           string `json:"by"`
	At           int64  `json:"at"` // unix nanoseconds, 0 for the zero time
}

// encodeResolution returns nil (NULL) for no resolution.
func encodeResolution(r *runtype.ActionResolution) (any, error) {
	if r == nil {
		return nil, nil
	}
	b, err := json.Marshal(resolutionJSON{
		Decision: r.Decision, Message: r.Message, UpdatedInput: r.UpdatedInput, By: r.By, At: nanos(r.At),
	})
	if err != nil {
		return nil, fmt.Errorf("encoding resolution: %w", err)
	}
	return string(b), nil
}

func decodeResolution(s sql.NullString) (*runtype.ActionResolution, error) {
	if !s.Valid {
		return nil, nil
	}
	var j resolutionJSON
	if err := json.Unmarshal([]byte(s.String), &j); err != nil {
		return nil, fmt.Errorf("decoding resolution: %w", err)
	}
	return &runtype.ActionResolution{
		Decision: j.Decision, Message: j.Message, UpdatedInput: j.UpdatedInput, By: j.By, At: fromNanos(j.At),
	}, nil
}

// encodeJSON returns v as JSON, or nil (NULL) when v is a nil pointer.
// It is for the rare optional records (a message's boundary, a thread's
// lineage) whose encoding is not on the step path.
func encodeJSON[T any](v *T) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs of strings and numbers always encode
	}
	return string(b)
}

// decodeJSON decodes s into a new *T at *dst; NULL leaves *dst nil.
func decodeJSON[T any](s sql.NullString, dst **T) error {
	if !s.Valid {
		return nil
	}
	v := new(T)
	if err := json.Unmarshal([]byte(s.String), v); err != nil {
		return err
	}
	*dst = v
	return nil
}

// lineageSource is the thread a lineage continues, "" for none.
func lineageSource(l *runtype.Lineage) string {
	if l == nil {
		return ""
	}
	return l.ThreadID
}

// boolInt is b as the 0 or 1 a boolean column holds: PostgreSQL's BIGINT
// takes no Go bool (SQLite converts it alike).
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
