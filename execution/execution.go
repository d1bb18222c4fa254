// Package execution runs the tool calls of one model hop according to
// their concurrency classes. A tool declares (tool.Spec.Concurrency):
//
//   - parallel: the call may overlap with any other call of the hop but
//     an exclusive one (read-only tools, by default);
//   - exclusive: the call runs alone within its session: no other call of
//     the session, in this hop or another thread's, runs meanwhile (tools
//     that are not read-only, by default);
//   - a resource key template such as "file:{path}": calls whose keys come
//     out the same never overlap, across every run of the runtime, while
//     calls with other keys run in parallel.
//
// A Scheduler holds the locks that make this true for a whole runtime and
// bounds how many calls of one hop run at once. Results are the caller's:
// each call writes its own slot, so the hop reads them in call order.
package execution

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/agentrt/agentrt/tool"
)

// DefaultMaxParallel bounds the calls of one hop running at once when
// New gets zero.
const DefaultMaxParallel = 8

// sessionWeight is a session lock's capacity: a parallel or keyed call
// takes 1, an exclusive call takes all of it.
const sessionWeight = 1 << 30

// Scheduler runs hops' calls. It is safe for concurrent use; one
// Scheduler serves a whole runtime, so that resource keys and sessions
// are serialized across runs.
type Scheduler struct {
	maxParallel int

	mu       sync.Mutex
	sessions map[string]*counted // guarded by mu
	keys     map[string]*counted // guarded by mu
}

// counted is a semaphore shared by the calls that use it; it is dropped
// from its map when the last one lets go.
type counted struct {
	sem  *semaphore.Weighted
	refs int // guarded by Scheduler.mu
}

// New returns a scheduler that runs at most maxParallel calls of one hop
// at once (DefaultMaxParallel when maxParallel ≤ 0).
func New(maxParallel int) *Scheduler {
	if maxParallel <= 0 {
		maxParallel = DefaultMaxParallel
	}
	return &Scheduler{maxParallel: maxParallel, sessions: make(map[string]*counted), keys: make(map[string]*counted)}
}

// Call is one call of a hop.
type Call struct {
	// Class is tool.Parallel, tool.Exclusive or a resource key (already
	// expanded by Key).
	Class string
	// Run runs the call. It is called at most once, on its own
	// goroutine, with the locks its class needs held.
	Run func(ctx context.Context)
}

// Run runs calls, the calls of one hop of a session, and returns when
// every one has run or given up. A call whose turn comes after ctx is done
// does not run: its slot in the returned slice holds ctx's error (nil for
// the calls that ran).
//
// Calls run in call order as far as their classes allow: a run of
// consecutive non-exclusive calls starts together (at most maxParallel at
// once, keyed calls waiting for their key); an exclusive call waits for
// every call before it and holds back every call after it.
func (s *Scheduler) Run(ctx context.Context, session string, calls []Call) []error {
	errs := make([]error, len(calls))
	for i := 0; i < len(calls); {
		if calls[i].Class == tool.Exclusive {
			errs[i] = s.runOne(ctx, session, calls[i], sessionWeight)
			i++
			continue
		}
		j := i
		for j < len(calls) && calls[j].Class != tool.Exclusive {
			j++
		}
		s.runGroup(ctx, session, calls[i:j], errs[i:j])
		i = j
	}
	return errs
}

// runGroup runs non-exclusive calls together, bounded by maxParallel.
func (s *Scheduler) runGroup(ctx context.Context, session string, calls []Call, errs []error) {
	if len(calls) == 1 {
		errs[0] = s.runOne(ctx, session, calls[0], 1)
		return
	}
	slots := make(chan struct{}, s.maxParallel)
	var wg sync.WaitGroup
	for i := range calls {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			errs[i] = ctx.Err()
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			errs[i] = s.runOne(ctx, session, calls[i], 1)
		})
	}
	wg.Wait()
}

// runOne takes the call's locks (weight of its session's lock, and its
// key's), runs it and lets go.
func (s *Scheduler) runOne(ctx context.Context, session string, c Call, weight int64) error {
	sl := s.acquireRef(s.sessions, session, sessionWeight)
	defer s.releaseRef(s.sessions, session)
	if err := sl.sem.Acquire(ctx, weight); err != nil {
		return err
	}
	defer sl.sem.Release(weight)
	if c.Class != tool.Parallel && c.Class != tool.Exclusive {
		kl := s.acquireRef(s.keys, c.Class, 1)
		defer s.releaseRef(s.keys, c.Class)
		if err := kl.sem.Acquire(ctx, 1); err != nil {
			return err
		}
		defer kl.sem.Release(1)
	}
	c.Run(ctx)
	return nil
}

func (s *Scheduler) acquireRef(m map[string]*counted, key string, capacity int64) *counted {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := m[key]
	if c == nil {
		c = &counted{sem: semaphore.NewWeighted(capacity)}
		m[key] = c
	}
	c.refs++
	return c
}

func (s *Scheduler) releaseRef(m map[string]*counted, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := m[key]; c != nil {
		if c.refs--; c.refs == 0 {
			delete(m, key)
		}
	}
}

// held reports how many sessions and keys have locks in use (for tests).
func (s *Scheduler) held() (sessions, keys int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions), len(s.keys)
}

// Class returns the class a call of the tool spec describes with input
// runs in: tool.Parallel, tool.Exclusive, or the resource key its
// template gives for input. A template names top-level input fields in
// braces ("file:{path}"); a string field stands for itself, another value
// for its JSON text, a missing field for nothing. The key is prefixed
// with "key:" so that it never equals a class name.
func Class(spec tool.Spec, input json.RawMessage) string {
	c := spec.CallConcurrency()
	if c == tool.Parallel || c == tool.Exclusive {
		return c
	}
	if !strings.Contains(c, "{") {
		return "key:" + c
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(input, &fields)
	var b strings.Builder
	b.WriteString("key:")
	for {
		open := strings.IndexByte(c, '{')
		if open < 0 {
			b.WriteString(c)
			break
		}
		end := strings.IndexByte(c[open:], '}')
		if end < 0 {
			b.WriteString(c)
			break
		}
		b.WriteString(c[:open])
		raw := fields[c[open+1:open+end]]
		var str string
		if json.Unmarshal(raw, &str) == nil {
			b.WriteString(str)
		} else {
			b.Write(raw)
		}
		c = c[open+end+1:]
	}
	return b.String()
}
