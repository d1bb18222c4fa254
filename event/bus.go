package event

import "sync"

// Bus wakes subscribers when events they care about have committed. It
// carries no events: a woken subscriber reads from the store after its last
// cursor (see the package doc). Notify never blocks. The zero Bus is ready
// to use.
type Bus struct {
	mu   sync.RWMutex
	subs map[*Waiter]struct{} // guarded by mu
}

// Waiter is one subscription to a Bus.
type Waiter struct {
	bus    *Bus
	filter Filter
	c      chan struct{}
}

// Subscribe registers a waiter for events matching f. Close it when done.
func (b *Bus) Subscribe(f Filter) *Waiter {
	w := &Waiter{bus: b, filter: f, c: make(chan struct{}, 1)}
	b.mu.Lock()
	if b.subs == nil {
		b.subs = make(map[*Waiter]struct{})
	}
	b.subs[w] = struct{}{}
	b.mu.Unlock()
	return w
}

// C receives a value after events matching the waiter's filter commit.
// Several commits may coalesce into one value.
func (w *Waiter) C() <-chan struct{} { return w.c }

// Close unregisters the waiter. It is safe to call more than once.
func (w *Waiter) Close() {
	w.bus.mu.Lock()
	delete(w.bus.subs, w)
	w.bus.mu.Unlock()
}

// WakeAll wakes every waiter: events may have committed that this Bus
// was not told of (another process's, on the same store).
func (b *Bus) WakeAll() {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for w := range b.subs {
		select {
		case w.c <- struct{}{}:
		default:
		}
	}
}

// Notify wakes every waiter whose filter matches at least one of events.
// It is called after the events have committed.
func (b *Bus) Notify(events []*Event) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for w := range b.subs {
		for _, e := range events {
			if w.filter.Match(e) {
				select {
				case w.c <- struct{}{}:
				default: // a wake-up is already pending
				}
				break
			}
		}
	}
}
