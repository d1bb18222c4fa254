package agentrt

import (
	"context"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool/mcp"
)

// This file connects the runtime to its MCP servers (package tool/mcp):
// their tools join the agents that use them when the runtime starts, and
// every change of a capability session is recorded in the store with a
// session.updated event.

// startMCP lists the MCP servers' tools and adds them to the agents that
// use them. A server that cannot be reached is logged and offers no
// tools: the runtime runs without it.
func (rt *Runtime) startMCP(ctx context.Context) error {
	if len(rt.cfg.MCPServers) == 0 {
		return nil
	}
	rt.mcp = mcp.NewManager(mcp.Options{
		Servers: rt.cfg.MCPServers, RuntimeID: rt.runtimeID, IDs: rt.ids, Now: rt.cfg.Now, Logger: rt.cfg.Logger,
		Record: rt.recordCapability, Sandbox: rt.sandbox, Profile: rt.discoveryProfile(),
	})
	if err := rt.mcp.Discover(ctx); err != nil {
		rt.cfg.Logger.Warn("an MCP server could not be reached: its tools are not offered", "err", err)
	}
	for name, a := range rt.cfg.Agents {
		la := rt.agents[name]
		for _, use := range a.MCP {
			tools, err := rt.mcp.Tools(use.Server, use.Allow)
			if err != nil {
				return fmt.Errorf("agent %q: %w", name, err)
			}
			for _, t := range tools {
				// Agents that use one server share its tools' registration.
				reg, ok := rt.registry.Lookup(t.Spec().Name)
				switch {
				case !ok:
					if err := rt.registry.Register(t); err != nil {
						return fmt.Errorf("agent %q: MCP server %s: %w", name, use.Server, err)
					}
					reg = t
				case reg.Spec().Source != t.Spec().Source:
					return fmt.Errorf("agent %q: MCP server %s's tool %s has the name of another tool: set the server's tool_prefix", name, use.Server, t.Spec().Name)
				}
				la.Tools = append(la.Tools, reg)
			}
		}
	}
	return nil
}

// discoveryProfile is the sandbox profile stdio servers run under when
// their tools are listed: workspace_write with network none, as an
// agent without a sandbox key has.
func (rt *Runtime) discoveryProfile() *sandbox.Profile {
	p, _ := sandbox.Builtin(string(sandbox.WorkspaceWrite))
	return &p
}

// recordCapability stores a capability session's state with a
// session.updated event (and that runID used it).
func (rt *Runtime) recordCapability(ctx context.Context, rec *runtype.CapabilitySession, runID string, tools []string) {
	now := rt.cfg.Now().UTC()
	p := &event.CapabilitySessionPayload{
		CapabilitySessionID: rec.ID, Server: rec.Server, Transport: rec.Transport, Status: string(rec.Status),
		ProtocolVersion: rec.ProtocolVersion, MCPSessionID: rec.ServerSessionID, Generation: rec.Generation,
		ResumeCursor: rec.ResumeCursor, Error: rec.Error, RunID: runID, Tools: tools,
	}
	if !rec.ExpiresAt.IsZero() {
		p.ExpiresAt = &rec.ExpiresAt
	}
	b := &store.Batch{
		CapabilitySessions: []*runtype.CapabilitySession{rec},
		Events: []*event.Event{{
			Type: event.SessionUpdated, EventID: rt.ids.New(runtype.PrefixEvent), Timestamp: now, SchemaVersion: event.SchemaVersion,
			RuntimeID: rt.runtimeID, SessionID: rec.SessionID, TenantID: rec.TenantID, RunID: runID,
			Payload: &event.SessionPayload{CapabilitySession: p},
		}},
	}
	if runID != "" {
		b.CapabilityRuns = []*runtype.CapabilityRun{{Owner: rec.Owner, CapabilitySessionID: rec.ID, RunID: runID, At: now}}
	}
	if err := rt.writer.Write(context.WithoutCancel(ctx), b); err != nil {
		rt.cfg.Logger.Error("recording a capability session", "capabilitySessionId", rec.ID, "status", rec.Status, "err", err)
	}
}

// waitInput waits until act (pending in the store) is resolved by a
// person, through this process or another on the same store. Meanwhile
// its task holds no worker: another task may be claimed in its place.
func (rt *Runtime) waitInput(ctx context.Context, act *runtype.Action) (*runtype.Action, error) {
	rt.mu.Lock()
	rt.waiting++
	rt.mu.Unlock()
	rt.kick()
	defer func() {
		rt.mu.Lock()
		rt.waiting--
		rt.mu.Unlock()
	}()
	w := rt.bus.Subscribe(event.Filter{TenantID: act.TenantID, SessionID: act.SessionID, TurnID: act.TurnID})
	defer w.Close()
	poll := time.NewTicker(rt.cfg.PollInterval)
	defer poll.Stop()
	for {
		// Read after subscribing: no commit falls between.
		got, err := rt.store.ActionGet(ctx, &store.ActionGetParams{TenantID: act.TenantID, ID: act.ID})
		if err != nil {
			return nil, fmt.Errorf("reading action %s: %w", act.ID, err)
		}
		if got.Status != runtype.ActionPending {
			return got, nil
		}
		select {
		case <-w.C():
		case <-poll.C: // another process may have answered
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// mcpServerReads are the agent's MCP servers as the runtime found them
// when it started, for the tool inventory.
func (rt *Runtime) mcpServerReads(agent string) []apitype.MCPServerRead {
	a := rt.cfg.Agents[agent]
	if a == nil || len(a.MCP) == 0 {
		return nil
	}
	out := make([]apitype.MCPServerRead, 0, len(a.MCP))
	for _, use := range a.MCP {
		r := apitype.MCPServerRead{Name: use.Server, Status: "not_started"}
		for _, s := range rt.cfg.MCPServers {
			if s.Name == use.Server {
				r.Transport = s.Transport
			}
		}
		if rt.mcp != nil {
			tools, err := rt.mcp.Listed(use.Server)
			r.Status = "ready"
			if err != nil {
				r.Status, r.Error = "failed", rt.redactor.Text(err.Error())
			}
			for _, t := range tools {
				if use.Allow == nil || use.Allow(t.Name) {
					r.Tools = append(r.Tools, t.Name)
				}
			}
		}
		out = append(out, r)
	}
	return out
}
