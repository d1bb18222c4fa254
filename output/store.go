package output

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Limits bound an output.
type Limits struct {
	// Inline is the most bytes shown inline (to the model and in the
	// result); a larger output is spilled to the store and shown as a
	// head/tail preview of Inline bytes in all. Zero (or less) means
	// DefaultInline.
	Inline int
	// Max is the most bytes stored; the rest is counted and dropped
	// (output.truncated). Zero (or less) means DefaultMax; a Max below
	// Inline counts as Inline.
	Max int64
}

// Defaults.
const (
	DefaultInline = 32 << 10
	DefaultMax    = 1 << 30
)

func (l Limits) withDefaults() Limits {
	if l.Inline <= 0 {
		l.Inline = DefaultInline
	}
	if l.Max <= 0 {
		l.Max = DefaultMax
	}
	l.Max = max(l.Max, int64(l.Inline))
	return l
}

// Store keeps spilled outputs as files named by their SHA-256 in a
// directory: <dir>/sha256-<hex>, with their content. Outputs being
// written live in temporary files (tmp-*) in the same directory until
// they are complete. It is safe for concurrent use.
type Store struct {
	dir string
}

// NewStore returns a store in dir, creating it (0700).
func NewStore(dir string) (*Store, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: creating output store: no directory", fs.ErrInvalid)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating output store: %w", err)
	}
	return &Store{dir: dir}, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Sink returns a writer for one output under lim. Memory use is bounded
// by the preview size whatever is written.
func (s *Store) Sink(lim Limits) *Sink {
	lim = lim.withDefaults()
	head := lim.Inline / 2
	return &Sink{
		store:   s,
		inline:  lim.Inline,
		max:     lim.Max,
		headCap: head,
		tail:    ring{size: lim.Inline - head},
	}
}

// Put stores data if it exceeds lim.Inline, as Sink would.
func (s *Store) Put(data []byte, lim Limits) (*Spill, error) {
	k := s.Sink(lim)
	if _, err := k.Write(data); err != nil {
		k.Discard()
		return nil, err
	}
	return k.Close()
}

// refPrefix starts every ref; filePrefix every stored file's name.
const (
	refPrefix  = "sha256:"
	filePrefix = "sha256-"
)

// Open opens the output ref ("sha256:…"). A ref that is not "sha256:"
// and 64 lowercase hex digits is an error wrapping fs.ErrInvalid; one the
// store does not hold, an error wrapping fs.ErrNotExist.
func (s *Store) Open(ref string) (io.ReadCloser, error) {
	sum, ok := strings.CutPrefix(ref, refPrefix)
	if !ok || !isHexSum(sum) {
		return nil, fmt.Errorf("%w: opening output %q: not a sha256 ref", fs.ErrInvalid, ref)
	}
	f, err := os.Open(filepath.Join(s.dir, filePrefix+sum))
	if err != nil {
		return nil, fmt.Errorf("opening output %s: %w", ref, err)
	}
	return f, nil
}

// isHexSum reports whether s is a SHA-256 in lowercase hex.
func isHexSum(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Sink collects one output: the head and tail in memory and, once the
// output outgrows the inline limit, everything (up to Max) in a file.
// A Sink is used by one goroutine at a time. It must be closed or
// discarded, or its temporary file stays in the store's directory.
type Sink struct {
	store   *Store
	inline  int
	max     int64
	headCap int

	head  []byte // the first headCap bytes
	tail  ring   // the last inline-headCap bytes
	total int64

	// Set once the output outgrows inline.
	file   *os.File
	buf    *bufio.Writer
	sum    hash.Hash
	stored int64

	err  error // sticky
	done bool  // closed or discarded
}

// Write adds p to the output.
func (k *Sink) Write(p []byte) (int, error) {
	if k.done {
		return 0, fmt.Errorf("%w: writing to a finished output", fs.ErrClosed)
	}
	if k.err != nil {
		return 0, k.err
	}
	if k.file == nil && k.total+int64(len(p)) > int64(k.inline) {
		if err := k.spill(); err != nil {
			k.err = err
			return 0, err
		}
	}
	if k.file != nil {
		if err := k.keep(p); err != nil {
			k.err = err
			return 0, err
		}
	}
	if n := k.headCap - len(k.head); n > 0 {
		k.head = append(k.head, p[:min(n, len(p))]...)
	}
	k.tail.write(p)
	k.total += int64(len(p))
	return len(p), nil
}

// spill starts the file with what the sink holds: everything so far,
// since that is at most inline bytes.
func (k *Sink) spill() error {
	f, err := os.CreateTemp(k.store.dir, "tmp-*")
	if err != nil {
		return fmt.Errorf("spilling output: %w", err)
	}
	k.file = f
	k.buf = bufio.NewWriterSize(f, 64<<10)
	k.sum = sha256.New()
	if err := k.keep(k.head); err != nil {
		return err
	}
	return k.keep(k.tail.last(int(k.total) - len(k.head)))
}

// keep writes p to the file, up to max.
func (k *Sink) keep(p []byte) error {
	p = p[:min(int64(len(p)), k.max-k.stored)]
	if len(p) == 0 {
		return nil
	}
	if _, err := k.buf.Write(p); err != nil {
		return fmt.Errorf("writing spilled output: %w", err)
	}
	k.sum.Write(p)
	k.stored += int64(len(p))
	return nil
}

// Close finishes the output: a spilled one gets its content-addressed
// name (an output the store already holds is kept as it was). Writes
// after Close fail, and so does closing again.
func (k *Sink) Close() (*Spill, error) {
	if k.done {
		return nil, fmt.Errorf("%w: closing a finished output", fs.ErrClosed)
	}
	if k.err != nil {
		k.Discard()
		return nil, k.err
	}
	if k.file == nil {
		k.done = true
		whole := append(k.head, k.tail.last(int(k.total)-len(k.head))...)
		return &Spill{Bytes: k.total, Stored: k.total, Preview: string(whole), Inline: k.inline}, nil
	}
	sum, err := k.finish()
	if err != nil {
		k.Discard()
		return nil, err
	}
	k.done = true
	ref := refPrefix + sum
	sp := &Spill{
		Bytes:     k.total,
		Stored:    k.stored,
		Truncated: k.total > k.stored,
		Spilled:   true,
		Ref:       ref,
		Inline:    k.inline,
	}
	sp.Preview = preview(k.head, k.tail.last(k.tail.size), sp)
	k.head, k.tail.buf = nil, nil
	return sp, nil
}

// finish flushes and syncs the file and gives it its name; it returns the
// content's SHA-256 in hex.
func (k *Sink) finish() (string, error) {
	if err := k.buf.Flush(); err != nil {
		return "", fmt.Errorf("writing spilled output: %w", err)
	}
	if err := k.file.Sync(); err != nil {
		return "", fmt.Errorf("syncing spilled output: %w", err)
	}
	tmp := k.file.Name()
	err := k.file.Close()
	k.file = nil
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("closing spilled output: %w", err)
	}
	sum := hex.EncodeToString(k.sum.Sum(nil))
	name := filepath.Join(k.store.dir, filePrefix+sum)
	if _, err := os.Lstat(name); err == nil {
		// The same content is stored already.
		os.Remove(tmp)
		return sum, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		os.Remove(tmp)
		return "", fmt.Errorf("storing spilled output: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("storing spilled output: %w", err)
	}
	return sum, nil
}

// Discard removes whatever the sink wrote (a call that is abandoned).
// After Close it does nothing: the stored output may be shared.
func (k *Sink) Discard() {
	if k.done {
		return
	}
	k.done = true
	if k.file != nil {
		k.file.Close()
		os.Remove(k.file.Name())
		k.file = nil
	}
	k.head, k.tail.buf = nil, nil
}

// preview returns head and tail cut at rune boundaries, with the line
// that names the stored output between them.
func preview(head, tail []byte, sp *Spill) string {
	head = head[:runeStart(head)]
	for i := 0; i < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	omitted := sp.Bytes - int64(len(head)) - int64(len(tail))
	var where string
	if sp.Truncated {
		where = fmt.Sprintf("its first %d bytes are stored as %s", sp.Stored, sp.Ref)
	} else {
		where = "the full output is stored as " + sp.Ref
	}
	var b strings.Builder
	b.Grow(len(head) + len(tail) + 160)
	b.Write(head)
	fmt.Fprintf(&b, "\n[… %d bytes omitted; %s …]\n", omitted, where)
	b.Write(tail)
	return b.String()
}

// runeStart returns where the incomplete rune that ends p starts, or
// len(p) when p ends with a complete rune (or invalid bytes).
func runeStart(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if utf8.FullRune(p[i:]) {
				return len(p)
			}
			return i
		}
	}
	return len(p)
}

// ring keeps the last size bytes written to it.
type ring struct {
	size int
	buf  []byte // allocated on the first write
	pos  int    // where the next byte goes
}

func (r *ring) write(p []byte) {
	if r.size == 0 || len(p) == 0 {
		return
	}
	if r.buf == nil {
		r.buf = make([]byte, r.size)
	}
	if len(p) >= r.size {
		copy(r.buf, p[len(p)-r.size:])
		r.pos = 0
		return
	}
	n := copy(r.buf[r.pos:], p)
	copy(r.buf, p[n:])
	r.pos = (r.pos + len(p)) % r.size
}

// last returns a copy of the last n bytes written, n at most what the
// ring holds.
func (r *ring) last(n int) []byte {
	if n <= 0 {
		return nil
	}
	out := make([]byte, 0, n)
	start := r.pos - n
	if start >= 0 {
		return append(out, r.buf[start:r.pos]...)
	}
	out = append(out, r.buf[r.size+start:]...)
	return append(out, r.buf[:r.pos]...)
}

// Spill describes a finished output.
type Spill struct {
	// Bytes is the output's whole size; Stored what Ref holds (less when
	// Max was reached: Truncated).
	Bytes     int64
	Stored    int64
	Truncated bool
	// Spilled says the output exceeded the inline limit: Ref names the
	// stored output and Preview is its head and tail with a marker line
	// between them naming the ref. Otherwise Preview is the whole output
	// and Ref is "".
	Spilled bool
	Ref     string
	Preview string
	// Inline is the inline limit that applied.
	Inline int
}
