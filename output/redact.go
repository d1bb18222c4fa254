package output

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
)

// Counts counts redactions by kind ("secret_env", "pattern", a token
// shape such as "openai_key", "github_token", "aws_access_key_id",
// "agentrt_token", "bearer_token", "private_key", "jwt", or an
// assignment's "generic_secret" or "aws_secret_key"). It never holds the
// secrets.
type Counts map[string]int

// Total is the sum of the counts.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// Add adds o's counts to c, which must not be nil unless o is empty.
func (c Counts) Add(o Counts) {
	for k, v := range o {
		c[k] += v
	}
}

// Redacted reports whether s holds a redaction marker ("[REDACTED:kind]",
// or "[REDACTED]" from a checker's findings): text that is not what it
// was.
func Redacted(s string) bool { return strings.Contains(s, "[REDACTED") }

// RedactorConfig says what a Redactor removes.
type RedactorConfig struct {
	// Secrets are literal values to remove wherever they occur (the
	// values of declared secret environment variables). Values shorter
	// than 4 bytes are ignored.
	Secrets []string
	// Patterns are extra regular expressions; each match is removed.
	// They match within a line (see the package documentation).
	Patterns []*regexp.Regexp
	// NoTokenShapes turns off the built-in token shapes (API keys,
	// bearer tokens, private keys, JWTs, …) and credential assignments.
	NoTokenShapes bool
}

// Redactor replaces secrets by "[REDACTED:kind]". It is safe for
// concurrent use.
type Redactor struct {
	literals *literalStage // nil without secrets
	shapes   bool
	patterns *patternStage // nil without patterns
	// minText is the length of the shortest text a pass may change:
	// shorter texts are returned at once.
	minText int
	// clean remembers long texts String found nothing in.
	clean cleanCache
}

// NewRedactor returns a Redactor for cfg.
func NewRedactor(cfg RedactorConfig) *Redactor {
	r := &Redactor{literals: newLiteralStage(cfg.Secrets), shapes: !cfg.NoTokenShapes}
	var pats []*regexp.Regexp
	for _, re := range cfg.Patterns {
		if re != nil {
			pats = append(pats, re)
		}
	}
	if len(pats) > 0 {
		r.patterns = &patternStage{patterns: pats}
	}
	r.minText = math.MaxInt
	if r.literals != nil {
		r.minText = r.literals.minLen
	}
	if r.shapes {
		r.minText = min(r.minText, minTokenWord) // every token shape, "Bearer" and assignment is longer
	}
	if r.patterns != nil {
		r.minText = 1
	}
	return r
}

// stages returns the passes of one text or stream, in order: secret
// values, token shapes, patterns.
func (r *Redactor) stages() []stage {
	var st []stage
	if r.literals != nil {
		st = append(st, r.literals)
	}
	if r.shapes {
		st = append(st, &shapeScanner{})
	}
	if r.patterns != nil {
		st = append(st, r.patterns)
	}
	return st
}

// String returns s with every secret replaced, and what it replaced
// (nil when nothing). Text that holds nothing to replace, the common
// case, is returned as it is, without allocating.
func (r *Redactor) String(s string) (string, Counts) {
	if len(s) < r.minText || r.clean.has(s) {
		return s, nil
	}
	var c Counts
	if r.literals != nil && r.literals.in(s) {
		c = Counts{}
		s = r.apply(r.literals, s, c)
	}
	if r.shapes && mayFind(s) {
		if c == nil {
			c = Counts{}
		}
		s = r.apply(&shapeScanner{}, s, c)
	}
	if r.patterns != nil {
		if c == nil {
			c = Counts{}
		}
		s = r.apply(r.patterns, s, c)
	}
	if len(c) == 0 {
		c = nil
		r.clean.add(s)
	}
	return s, c
}

// apply runs one stage on the whole text s.
func (r *Redactor) apply(st stage, s string, c Counts) string {
	out, tail, end := st.redact(nil, s, true, c)
	if len(out) == 0 && tail == 0 {
		return s // nothing replaced
	}
	return string(append(out, s[tail:end]...))
}

// Text returns s with every secret replaced: String without the counts.
func (r *Redactor) Text(s string) string {
	s, _ = r.String(s)
	return s
}

// JSON returns the JSON text s with every secret replaced, still valid
// JSON when s was. The passes read JSON text as they read any text (JSON
// escapes separate words, and nothing they replace spans a quote), so
// the replacement is normally made in place; should it ever break the
// document (a configured pattern that matches across a quote, a secret
// value that ends inside an escape), each string of the decoded document
// is redacted instead and the document encoded again.
func (r *Redactor) JSON(s string) string {
	red, c := r.String(s)
	if c == nil || json.Valid([]byte(red)) || !json.Valid([]byte(s)) {
		return red
	}
	var v any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return red
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r.jsonValue(v)); err != nil {
		return red
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// jsonValue redacts the strings (keys included) of a decoded JSON value.
func (r *Redactor) jsonValue(v any) any {
	switch x := v.(type) {
	case string:
		return r.Text(x)
	case []any:
		for i := range x {
			x[i] = r.jsonValue(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[r.Text(k)] = r.jsonValue(e)
		}
		return out
	}
	return v
}

// Writer returns a writer that redacts what passes through it into dst.
// It holds back at most a bounded tail (enough for the longest secret or
// token shape) to catch secrets split across writes; Close flushes it.
func (r *Redactor) Writer(dst io.Writer) *RedactWriter {
	w := &RedactWriter{dst: dst, counts: Counts{}}
	for _, st := range r.stages() {
		w.stages = append(w.stages, &streamStage{stage: st})
	}
	return w
}

// RedactWriter is a streaming redactor: what it writes to its
// destination, over all its writes and Close, is exactly what
// Redactor.String returns for all it was given. It holds back the
// undecided tail of what it was given, at most a few KiB plus the longest
// configured secret plus maxPatternLine with patterns, whatever the size
// of the stream. It is safe for concurrent use, but concurrent writes
// interleave in no set order.
type RedactWriter struct {
	dst    io.Writer
	stages []*streamStage

	mu     sync.Mutex
	counts Counts // guarded by mu
	err    error  // guarded by mu; sticky
	closed bool   // guarded by mu
}

// streamStage is a stage with the tail it held back.
type streamStage struct {
	stage
	pending []byte // the undecided tail
	out     []byte // scratch for the stage's output
}

// feed runs the stage on pending+p and returns its output, valid until the
// next feed.
func (s *streamStage) feed(p []byte, eof bool, c Counts) []byte {
	s.pending = append(s.pending, p...)
	text := string(s.pending)
	out, tail, end := s.redact(s.out[:0], text, eof, c)
	out = append(out, text[tail:end]...)
	s.out = out
	s.pending = s.pending[:copy(s.pending, s.pending[end:])]
	return out
}

// Write redacts p and writes what it can decide to the destination. It
// returns len(p) unless the destination failed; an error from the
// destination is returned by every later call too.
func (w *RedactWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, fmt.Errorf("%w: writing to a closed redacting writer", fs.ErrClosed)
	}
	if w.err != nil {
		return 0, w.err
	}
	if err := w.push(p, false); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *RedactWriter) push(p []byte, eof bool) error {
	for _, s := range w.stages {
		p = s.feed(p, eof, w.counts)
	}
	if len(p) == 0 {
		return nil
	}
	if _, err := w.dst.Write(p); err != nil {
		w.err = fmt.Errorf("writing redacted output: %w", err)
		return w.err
	}
	return nil
}

// Close flushes what is held back; it does not close dst. Closing again
// does nothing.
func (w *RedactWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	err := w.push(nil, true)
	for _, s := range w.stages {
		s.pending, s.out = nil, nil
	}
	return err
}

// Counts is what was redacted so far (complete after Close), a copy.
func (w *RedactWriter) Counts() Counts {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.counts)
}

// cleanCache remembers the last texts String found nothing in, by
// content: a runtime redacts one text several times on its way to the
// store (a tool's input when it is hashed, in the model's message, in the
// call's record and events; its output before the model sees it, in the
// message and the record; a turn's input in its records and events), and
// comparing it with a remembered text costs far less than reading it
// again. A Redactor's configuration never changes, so a text found clean
// once stays clean. Lookups take no lock.
type cleanCache struct {
	shards [16]cleanShard
}

// cleanCache remembers texts of minClean to maxClean bytes: shorter ones
// cost little to read again, and longer ones are not kept alive.
const (
	minClean = 16
	maxClean = 64 << 10
)

type cleanShard struct {
	texts [8]atomic.Pointer[string]
	next  atomic.Uint32
	_     [60]byte // keeps shards off each other's cache lines
}

// shard picks s's shard by its length and a few of its bytes, so that
// texts of one length (the same tool's input in many sessions) spread.
func (c *cleanCache) shard(s string) *cleanShard {
	n := uint(len(s))
	h := n*31 + uint(s[n/4])
	h = h*31 + uint(s[n/2])
	h = h*31 + uint(s[n/8])
	h = h*31 + uint(s[n-1])
	return &c.shards[h%uint(len(c.shards))]
}

func (c *cleanCache) has(s string) bool {
	if len(s) < minClean || len(s) > maxClean {
		return false
	}
	sh := c.shard(s)
	for i := range sh.texts {
		if t := sh.texts[i].Load(); t != nil && len(*t) == len(s) && *t == s {
			return true
		}
	}
	return false
}

func (c *cleanCache) add(s string) {
	if len(s) < minClean || len(s) > maxClean {
		return
	}
	sh := c.shard(s)
	// A copy: s may be a cut of a much longer text, which the cache must
	// not keep alive.
	t := strings.Clone(s)
	sh.texts[sh.next.Add(1)%uint32(len(sh.texts))].Store(&t)
}
