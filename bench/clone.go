package bench

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// The store benchmark fills a large store fast: the real runtime runs one
// template session of each kind (finished, waiting for an approval,
// failed) on a recording store, and every other session is a copy of a
// template's batches, with fresh identifiers and times, applied through
// the store's batch API many sessions to a transaction. The records are
// the runtime's own, so they are as large and as indexed as real ones;
// only the per-step commits are saved.

// recStore is a store that records every batch it commits, in commit
// order.
type recStore struct {
	store.Store

	mu      sync.Mutex
	batches []*store.Batch // guarded by mu
}

func (s *recStore) Begin(ctx context.Context) (store.Tx, error) {
	tx, err := s.Store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &recTx{Tx: tx, s: s}, nil
}

// recTx keeps the batches it applied until it commits.
type recTx struct {
	store.Tx
	s       *recStore
	pending []*store.Batch
}

func (tx *recTx) Apply(ctx context.Context, b *store.Batch) error {
	if err := tx.Tx.Apply(ctx, b); err != nil {
		return err
	}
	// The caller may reuse b and its slices, not the records they point
	// to: copy the batch and its slices.
	cp := reflect.New(reflect.TypeFor[store.Batch]()).Elem()
	cp.Set(reflect.ValueOf(b).Elem())
	for i := range cp.NumField() {
		if f := cp.Field(i); f.Kind() == reflect.Slice && !f.IsNil() {
			c := reflect.MakeSlice(f.Type(), f.Len(), f.Len())
			reflect.Copy(c, f)
			f.Set(c)
		}
	}
	tx.pending = append(tx.pending, cp.Addr().Interface().(*store.Batch))
	return nil
}

func (tx *recTx) Commit() error {
	if err := tx.Tx.Commit(); err != nil {
		return err
	}
	tx.s.mu.Lock()
	tx.s.batches = append(tx.s.batches, tx.pending...)
	tx.s.mu.Unlock()
	return nil
}

// take returns the batches committed so far and forgets them.
func (s *recStore) take() []*store.Batch {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.batches
	s.batches = nil
	return b
}

// template is one recorded session: its batches, the caller-supplied
// session id and the ULIDs (identifier suffixes) its records carry.
type template struct {
	sessionID string
	batches   []*store.Batch
	ulids     []string // in creation order
	// at is when each ULID was made (its time part).
	at []time.Time
}

// newTemplate keeps the batches that name sessionID or its tasks (lease
// changes name only the task) and collects the ULIDs in them.
func newTemplate(sessionID string, all []*store.Batch) *template {
	t := &template{sessionID: sessionID}
	names := []string{sessionID}
	for _, b := range all {
		for _, k := range b.Tasks {
			if k.SessionID == sessionID {
				names = append(names, k.ID)
			}
		}
	}
	seen := map[string]bool{}
	for _, b := range all {
		found := false
		walkStrings(reflect.ValueOf(b).Elem(), func(s string) {
			for _, n := range names {
				found = found || strings.Contains(s, n)
			}
		})
		if !found {
			continue
		}
		t.batches = append(t.batches, b)
		walkStrings(reflect.ValueOf(b).Elem(), func(s string) {
			for _, u := range ulidsIn(s) {
				if !seen[u] {
					seen[u] = true
					t.ulids = append(t.ulids, u)
				}
			}
		})
	}
	slices.Sort(t.ulids) // ULIDs sort by creation
	for _, u := range t.ulids {
		t.at = append(t.at, ulidTime(u))
	}
	return t
}

// clone returns the template's batches for session sessionID: every
// template ULID replaced by one made by gen at the same moment shifted
// by shift, every time moved by shift.
func (t *template) clone(sessionID string, gen *runtype.IDGen, clock *time.Time, shift time.Duration) []*store.Batch {
	pairs := make([]string, 0, 2*len(t.ulids)+2)
	pairs = append(pairs, t.sessionID, sessionID)
	for i, u := range t.ulids {
		*clock = t.at[i].Add(shift)
		pairs = append(pairs, u, gen.New(""))
	}
	c := &cloner{r: strings.NewReplacer(pairs...), shift: shift}
	out := make([]*store.Batch, len(t.batches))
	for i, b := range t.batches {
		out[i] = c.copy(reflect.ValueOf(b)).Interface().(*store.Batch)
	}
	return out
}

// ulidsIn returns the identifier suffixes in s: 26 characters of the
// ULID alphabet after a prefix's underscore, but the runtime's.
func ulidsIn(s string) []string {
	var out []string
	for i := 0; i+27 <= len(s); i++ {
		if s[i] != '_' {
			continue
		}
		u := s[i+1 : i+27]
		if strings.HasSuffix(s[:i], "rt") { // the runtime's id is the same in every session
			continue
		}
		if isULID(u) && (i+27 == len(s) || !isULIDChar(s[i+27])) {
			out = append(out, u)
			i += 26
		}
	}
	return out
}

func isULID(u string) bool {
	if u[0] > '7' { // 128 bits: the first character carries 3
		return false
	}
	for i := range len(u) {
		if !isULIDChar(u[i]) {
			return false
		}
	}
	return true
}

func isULIDChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' && c != 'I' && c != 'L' && c != 'O' && c != 'U'
}

// ulidTime is the moment a ULID was made: its first 48 bits, in
// milliseconds.
func ulidTime(u string) time.Time {
	var ms int64
	for i := range 10 {
		ms = ms<<5 | int64(strings.IndexByte(crockfordAlphabet, u[i]))
	}
	return time.UnixMilli(ms)
}

const crockfordAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// walkStrings calls f with every string in v (and every []byte, as a
// string).
func walkStrings(v reflect.Value, f func(string)) {
	switch v.Kind() {
	case reflect.String:
		f(v.String())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkStrings(v.Elem(), f)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walkStrings(v.Field(i), f)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			f(string(v.Bytes()))
			return
		}
		for i := range v.Len() {
			walkStrings(v.Index(i), f)
		}
	case reflect.Array:
		for i := range v.Len() {
			walkStrings(v.Index(i), f)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			walkStrings(it.Key(), f)
			walkStrings(it.Value(), f)
		}
	}
}

// cloner deep-copies records, rewriting their strings and times. It
// copies exported fields only: an unexported one (an event's cached
// encoding) starts empty in the copy.
type cloner struct {
	r     *strings.Replacer
	shift time.Duration
}

var timeType = reflect.TypeFor[time.Time]()

func (c *cloner) copy(v reflect.Value) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	switch v.Kind() {
	case reflect.String:
		out.SetString(c.r.Replace(v.String()))
	case reflect.Pointer:
		if !v.IsNil() {
			out.Set(c.copy(v.Elem()).Addr())
		}
	case reflect.Interface:
		if !v.IsNil() {
			out.Set(c.copy(v.Elem()))
		}
	case reflect.Struct:
		if v.Type() == timeType {
			if t := v.Interface().(time.Time); !t.IsZero() {
				out.Set(reflect.ValueOf(t.Add(c.shift)))
			}
			return out
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out.Field(i).Set(c.copy(v.Field(i)))
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			return out
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			out.SetBytes([]byte(c.r.Replace(string(v.Bytes()))))
			return out
		}
		out.Set(reflect.MakeSlice(v.Type(), v.Len(), v.Len()))
		for i := range v.Len() {
			out.Index(i).Set(c.copy(v.Index(i)))
		}
	case reflect.Array:
		for i := range v.Len() {
			out.Index(i).Set(c.copy(v.Index(i)))
		}
	case reflect.Map:
		if v.IsNil() {
			return out
		}
		out.Set(reflect.MakeMapWithSize(v.Type(), v.Len()))
		it := v.MapRange()
		for it.Next() {
			out.SetMapIndex(c.copy(it.Key()), c.copy(it.Value()))
		}
	default:
		out.Set(v)
	}
	return out
}
