package sqlitestore

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// translate turns SQLite errors callers branch on into the store's
// sentinels, keeping the original in the chain.
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

func encodeUsage(u runtype.Usage) string {
	b := make([]byte, 0, 80)
	b = append(b, `{"inputTokens":`...)
	b = strconv.AppendInt(b, u.InputTokens, 10)
	if u.CachedInputTokens != 0 {
		b = append(b, `,"cachedInputTokens":`...)
		b = strconv.AppendInt(b, u.CachedInputTokens, 10)
	}
	b = append(b, `,"outputTokens":`...)
	b = strconv.AppendInt(b, u.OutputTokens, 10)
	b = append(b, '}')
	return string(b)
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

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

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
