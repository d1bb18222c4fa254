package agentrt

import (
	"fmt"

	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/memory"
	"github.com/agentrt/agentrt/store"
)

// memories is the runtime's store as store.Memories, or nil when it keeps
// none (a store of the embedder's that does not implement it). The memory
// tools call it when they run, after the store is open.
func (rt *Runtime) memories() store.Memories {
	m, _ := rt.store.(store.Memories)
	return m
}

// recaller returns the coordinator's Recall: the agents' memories that a
// turn's input matches, for agents with Memory.Inject; nil when no agent
// injects any. An agent that injects memories needs a store that keeps
// them.
func (rt *Runtime) recaller() (loop.RecallFunc, error) {
	r := &memory.Recaller{Store: rt.memories(), Inject: map[string]int{}}
	for name, a := range rt.cfg.Agents {
		if a.Memory.Inject == 0 {
			continue
		}
		if r.Store == nil {
			return nil, fmt.Errorf("config: agent %q injects memories, but the store (%s) keeps none", name, rt.store.Info().Driver)
		}
		r.Inject[name] = a.Memory.Inject
	}
	if len(r.Inject) == 0 {
		return nil, nil
	}
	return r.Recall, nil
}
