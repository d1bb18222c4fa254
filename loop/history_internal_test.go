package loop

import (
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/runtype"
)

// TestHistoryCacheIsBounded: the kept conversations never exceed the
// cache's thread and message bounds, and what it counts is what it holds.
func TestHistoryCacheIsBounded(t *testing.T) {
	t.Parallel()
	var h historyCache
	entry := func(n int) *cachedThread {
		return &cachedThread{msgs: make([]runtype.Message, n), ids: map[string]idAt{}}
	}
	for i := range maxCachedThreads + 50 {
		h.put(fmt.Sprintf("thr_%d", i), entry(1))
	}
	if n := len(h.threads); n > maxCachedThreads {
		t.Errorf("%d threads kept, want at most %d", n, maxCachedThreads)
	}
	for i := range 3 {
		h.put(fmt.Sprintf("big_%d", i), entry(maxCachedMessages/2-10))
	}
	h.put("too_big", entry(maxCachedMessages/2+1)) // not kept: it would crowd out the rest
	held := 0
	for _, e := range h.threads {
		held += len(e.msgs)
	}
	if held != h.total || h.total > maxCachedMessages || h.threads["too_big"] != nil {
		t.Errorf("cache holds %d messages in %d threads, counts %d (bound %d); too_big kept: %v",
			held, len(h.threads), h.total, maxCachedMessages, h.threads["too_big"] != nil)
	}
}
