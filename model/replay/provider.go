package replay

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/runtype"
)

// Kind is the provider kind a Provider reports in its Info.
const Kind = "replay"

// Provider plays a Script: each session's model calls get the script's
// responses in order, from the first. It implements model.Provider and is
// safe for concurrent use.
//
// Positions are kept in memory only: a new Provider, for example after a
// process restart, starts every session at the first response again. A
// Provider remembers one position per session it has seen, for its whole
// life.
type Provider struct {
	script *Script
	info   model.Info

	mu   sync.Mutex
	next map[string]int // guarded by mu; session id → index of its next response
}

var _ model.Provider = (*Provider)(nil)

// New returns a Provider that plays s, which must come from Parse or Load.
func New(s *Script) *Provider {
	return &Provider{
		script: s,
		info:   model.Info{Kind: Kind, Model: s.model},
		next:   make(map[string]int),
	}
}

// Info returns the kind "replay" and the script's model name.
func (p *Provider) Info() model.Info { return p.info }

// Generate returns the next response of req.SessionID's script position and
// moves the position on. An error entry is returned as a *model.Error and
// consumes its entry like any other. When the script has no response left
// for the session, Generate returns a *model.Error of kind
// model.ErrScriptExhausted and the position stays where it is.
//
// A response with a delay waits first. If ctx ends before Generate
// answers, it returns ctx's error and the response is not consumed: the
// session's next call gets it again.
func (p *Provider) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	session := req.SessionID

	p.mu.Lock()
	i, seen := p.next[session]
	if !seen {
		// A session this provider has not served yet may be mid-turn: a
		// turn another process began, resumed after a restart. Go on after
		// the answers the turn already holds (those after its input).
		for _, m := range req.Messages {
			switch m.Role {
			case runtype.RoleUser:
				i = 0
			case runtype.RoleAssistant:
				i++
			}
		}
	}
	if i >= len(p.script.responses) {
		p.mu.Unlock()
		return nil, &model.Error{
			Kind: model.ErrScriptExhausted,
			Message: fmt.Sprintf("replay script %q has no response %d for this session (it holds %d)",
				p.script.name, i+1, len(p.script.responses)),
		}
	}
	p.next[session] = i + 1
	p.mu.Unlock()

	r := &p.script.responses[i]
	if r.delay > 0 {
		if err := wait(ctx, r.delay); err != nil {
			p.giveBack(session, i)
			return nil, err
		}
	}
	if r.err != nil {
		e := *r.err
		return nil, &e
	}
	return &model.Response{
		Text:         r.text,
		ToolCalls:    slices.Clone(r.toolCalls),
		FinishReason: r.finish,
		Usage:        r.usage,
		Raw:          slices.Clone(r.raw),
	}, nil
}

// giveBack un-consumes response i of session, unless another call of the
// same session has moved the position on since.
func (p *Provider) giveBack(session string, i int) {
	p.mu.Lock()
	if p.next[session] == i+1 {
		p.next[session] = i
	}
	p.mu.Unlock()
}

// wait blocks for d or until ctx ends, whichever comes first.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
