package proc

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// CappedBuffer is an io.Writer that keeps the first bytes written to it,
// up to a limit, for a program's stdout or stderr.
//
// What happens to a write past the limit depends on the onOverflow
// function given to NewCappedBuffer. Without one, or when it returns nil,
// the excess is counted and discarded and the write succeeds, so the
// program's output keeps being read. With one that returns an error, that
// write and every later one fail with the error, so exec.Cmd stops
// reading the output; the function typically also cancels the program.
//
// A CappedBuffer is not safe for concurrent use: exec.Cmd calls Write
// from one goroutine, and the buffer is read only after Wait returns.
type CappedBuffer struct {
	limit      int
	onOverflow func() error
	buf        bytes.Buffer
	overflowed bool
	dropped    int64
	err        error // from onOverflow; fails every write past the limit
}

// NewCappedBuffer returns a buffer that keeps the first limit bytes
// written to it. onOverflow, which may be nil, is called once, by the
// first write that goes past the limit; a non-nil error it returns fails
// that write and every later one.
func NewCappedBuffer(limit int, onOverflow func() error) *CappedBuffer {
	return &CappedBuffer{limit: limit, onOverflow: onOverflow}
}

// Write implements io.Writer.
func (b *CappedBuffer) Write(p []byte) (int, error) {
	room := max(b.limit-b.buf.Len(), 0)
	if len(p) <= room {
		return b.buf.Write(p)
	}
	b.buf.Write(p[:room])
	b.dropped += int64(len(p) - room)
	if !b.overflowed {
		b.overflowed = true
		if b.onOverflow != nil {
			b.err = b.onOverflow()
		}
	}
	if b.err != nil {
		return room, b.err
	}
	return len(p), nil
}

// Bytes returns the bytes kept, at most the limit. The slice aliases the
// buffer's contents.
func (b *CappedBuffer) Bytes() []byte { return b.buf.Bytes() }

// Overflowed reports whether anything was written past the limit.
func (b *CappedBuffer) Overflowed() bool { return b.overflowed }

// Dropped returns how many bytes written past the limit were not kept.
func (b *CappedBuffer) Dropped() int64 { return b.dropped }

// Excerpt returns the start of b, at most n bytes cut at a rune boundary,
// as valid UTF-8 (invalid bytes become U+FFFD). When that leaves out part
// of total, the length of the output b was taken from, it says how many
// bytes: " … (N more bytes)".
func Excerpt(b []byte, n, total int) string {
	if len(b) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		b = b[:cut]
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if left := total - len(b); left > 0 {
		s += fmt.Sprintf(" … (%d more bytes)", left)
	}
	return s
}
