package runtype

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sync"
	"time"
)

// Prefixes of the identifiers agentrt generates. They follow the Agent
// Runtime standard's identity model; the suffix is a 26-character ULID, so
// identifiers of one kind sort by creation time.
const (
	PrefixSession  = "ses_"
	PrefixThread   = "thr_"
	PrefixTurn     = "turn_"
	PrefixTask     = "task_"
	PrefixRun      = "run_"
	PrefixStep     = "step_"
	PrefixToolCall = "call_"
	PrefixAction   = "act_"
	PrefixGrant    = "grant_"
	PrefixEvent    = "evt_"
	PrefixRuntime  = "rt_"
	PrefixToken    = "tok_"
	PrefixContext  = "ctx_" // a compaction or reset of a thread's context
)

// crockford is the ULID alphabet (Crockford's base32, no I, L, O, U).
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// IDGen generates time-sortable, prefixed identifiers. Within one
// generator, identifiers created in the same millisecond still increase
// monotonically. It is safe for concurrent use.
type IDGen struct {
	now func() time.Time

	mu     sync.Mutex
	rng    *rand.ChaCha8 // guarded by mu
	lastMS uint64        // guarded by mu
	hi     uint16        // guarded by mu: top 16 of the 80 random bits
	lo     uint64        // guarded by mu: low 64 of the 80 random bits
}

// NewIDGen returns a generator seeded from the operating system's secure
// random source. now may be nil to use time.Now.
func NewIDGen(now func() time.Time) *IDGen {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		panic(fmt.Sprintf("runtype: reading random seed: %v", err)) // crypto/rand never fails on supported platforms
	}
	if now == nil {
		now = time.Now
	}
	return &IDGen{now: now, rng: rand.NewChaCha8(seed)}
}

// New returns prefix followed by a fresh ULID.
func (g *IDGen) New(prefix string) string {
	ms := uint64(g.now().UnixMilli())
	g.mu.Lock()
	if ms <= g.lastMS {
		// Same (or earlier, if the clock stepped back) millisecond: keep the
		// previous timestamp and increment the random part so identifiers stay
		// strictly increasing.
		ms = g.lastMS
		g.lo++
		if g.lo == 0 {
			g.hi++
		}
	} else {
		g.lastMS = ms
		g.lo = g.rng.Uint64()
		g.hi = uint16(g.rng.Uint64())
	}
	hi, lo := g.hi, g.lo
	g.mu.Unlock()

	// 128 bits: 48 bits of milliseconds then 80 random bits, written as 26
	// base32 characters (the first carries only 3 bits).
	var b [16]byte
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	binary.BigEndian.PutUint16(b[6:8], hi)
	binary.BigEndian.PutUint64(b[8:16], lo)
	out := make([]byte, len(prefix)+26)
	copy(out, prefix)
	encodeULID(out[len(prefix):], b)
	return string(out)
}

func encodeULID(dst []byte, b [16]byte) {
	hi := binary.BigEndian.Uint64(b[0:8])
	lo := binary.BigEndian.Uint64(b[8:16])
	for i := 25; i >= 0; i-- {
		dst[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
}

// callerIDPattern is what agentrt accepts for identifiers a caller supplies
// (session ids, idempotency keys): printable, no spaces, bounded.
var callerIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$`)

// ValidateCallerID reports whether s may be used as a caller-supplied
// identifier. what names the field in the error.
func ValidateCallerID(what, s string) error {
	if !callerIDPattern.MatchString(s) {
		return fmt.Errorf("invalid %s %q: want 1-128 characters of A-Z a-z 0-9 _ . : - starting with a letter or digit", what, s)
	}
	return nil
}

// PrincipalPattern is what a principal's name must match: an identifier
// such as "local", "ci:deploy" or an e-mail address.
var PrincipalPattern = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,128}$`)

// TraceID returns a W3C trace id: 32 lowercase hex digits, not all zero.
func (g *IDGen) TraceID() string { return g.hex(16) }

// SpanID returns a W3C span id: 16 lowercase hex digits, not all zero.
func (g *IDGen) SpanID() string { return g.hex(8) }

func (g *IDGen) hex(n int) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	g.mu.Lock()
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], g.rng.Uint64()|1) // |1: never all zero
	}
	g.mu.Unlock()
	out := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		out[2*i] = digits[b[i]>>4]
		out[2*i+1] = digits[b[i]&15]
	}
	return string(out)
}
