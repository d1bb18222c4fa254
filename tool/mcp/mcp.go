// Package mcp connects agentrt to Model Context Protocol servers, over
// stdio and streamable HTTP, with the official Go SDK.
//
// A Manager holds the configured servers. Discover lists each server's
// tools once, at start, so that agents can offer them to the model (as
// PREFIX+name, PREFIX being "server__" unless configured); Tools adapts
// them to tool.Tool. A call does not use the discovery connection: it
// runs in the capability session of its agentrt session and server,
// opened on first use and closed when idle. A capability session is
// runtime state of its own (runtype.CapabilitySession), distinct from any
// run: every change of its status is recorded through Options.Record.
//
// What the package promises, each shown by a test in this package or the
// root package's MCP tests:
//   - A server that forgot the session (HTTP 404 for a request that
//     carried its Mcp-Session-Id) gets a new initialize, its tools are
//     listed again, and the call is sent once more: a 404 proves the call
//     never ran. The record goes expired → reinitializing → ready.
//   - A connection lost while a call ran leaves unknown whether it took
//     effect: the call is sent again only when the tool is read-only or
//     idempotent; otherwise its Result says EffectUnknown and the runtime
//     asks an operator (side_effect_unknown).
//   - A stdio server that exits is started again with capped backoff; its
//     record says reinitializing meanwhile, failed when it gives up.
//   - Progress notifications reach Call.Progress; a cancelled call sends
//     notifications/cancelled (the SDK does, when the call's context
//     ends); elicitation reaches Call.Ask and sampling Call.Sample, of
//     the call in flight that asked.
package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
)

// Server is one MCP server as the runtime reaches it.
type Server struct {
	Name string
	// Transport is runtype.TransportStdio or
	// runtype.TransportStreamableHTTP.
	Transport string
	// Command is the stdio server's program and arguments; Env its whole
	// environment (KEY=value: nothing of the runtime's own environment
	// reaches it but what is listed); Cwd its working directory ("" for
	// the agent's workspace).
	Command []string
	Env     []string
	Cwd     string
	// URL is the streamable HTTP endpoint; Header is sent with every
	// request (with Authorization when a bearer token is configured).
	URL    string
	Header http.Header
	// ToolPrefix goes before each tool's name as the model sees it.
	ToolPrefix string
	// ConnectTimeout bounds connecting and initialize; CallTimeout one
	// call; IdleTimeout how long an unused capability session stays open.
	ConnectTimeout time.Duration
	CallTimeout    time.Duration
	IdleTimeout    time.Duration
}

// Defaults of Server's durations.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultCallTimeout    = 5 * time.Minute
	DefaultIdleTimeout    = 10 * time.Minute
)

// Options configure a Manager.
type Options struct {
	Servers   []*Server
	RuntimeID string
	IDs       *runtype.IDGen
	Now       func() time.Time
	Logger    *slog.Logger
	// Record keeps a capability session's new state: the runtime stores
	// it with a session.updated event. Tools lists the server's tools
	// when they were (re)listed, nil otherwise. runID, when set, is a
	// run that used the session. Nil keeps nothing.
	Record func(ctx context.Context, rec *runtype.CapabilitySession, runID string, tools []string)
	// Sandbox runs stdio servers; Profile is the profile of discovery
	// connections (calls use the calling agent's). A stdio server
	// without a sandbox is refused (fail closed).
	Sandbox *sandbox.Sandbox
	Profile *sandbox.Profile
	// Backoff is how long to wait before the attempt-th restart of a
	// stdio server (attempt ≥ 1); nil means 250 ms doubling, capped at
	// 30 s. MaxRestarts is how many restarts in a row it tries before the
	// session is failed (0: 5).
	Backoff     func(attempt int) time.Duration
	MaxRestarts int
	// HTTPClient reaches streamable HTTP servers; nil uses a client of
	// its own.
	HTTPClient *http.Client
}

// Manager holds the MCP servers of a runtime and their capability
// sessions. It is safe for concurrent use.
type Manager struct {
	opts    Options
	servers map[string]*server
	order   []string

	ctx    context.Context // ends at Close: stdio servers die with it
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	sessions map[sessionKey]*capSession // guarded by mu
	closed   bool                       // guarded by mu
}

type sessionKey struct{ session, server string }

// server is one configured server and what discovery found.
type server struct {
	cfg *Server
	mu  sync.Mutex
	// tools are the server's tools as last listed; err why the last
	// listing failed.
	tools []*sdk.Tool
	err   error
}

// NewManager returns a manager of opts.Servers. It connects to nothing
// until Discover or a call.
func NewManager(opts Options) *Manager {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.IDs == nil {
		opts.IDs = runtype.NewIDGen(opts.Now)
	}
	if opts.Backoff == nil {
		opts.Backoff = defaultBackoff
	}
	if opts.MaxRestarts <= 0 {
		opts.MaxRestarts = 5
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	m := &Manager{opts: opts, servers: make(map[string]*server), sessions: make(map[sessionKey]*capSession)}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	for _, s := range opts.Servers {
		c := *s
		c.ConnectTimeout = cmpOr(c.ConnectTimeout, DefaultConnectTimeout)
		c.CallTimeout = cmpOr(c.CallTimeout, DefaultCallTimeout)
		c.IdleTimeout = cmpOr(c.IdleTimeout, DefaultIdleTimeout)
		m.servers[s.Name] = &server{cfg: &c}
		m.order = append(m.order, s.Name)
	}
	return m
}

func defaultBackoff(attempt int) time.Duration {
	d := 250 * time.Millisecond << min(attempt-1, 7)
	return min(d, 30*time.Second)
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Servers returns the servers' names in configured order.
func (m *Manager) Servers() []string { return slices.Clone(m.order) }

// Server returns the named server's configuration.
func (m *Manager) Server(name string) (*Server, bool) {
	s, ok := m.servers[name]
	if !ok {
		return nil, false
	}
	return s.cfg, true
}

// Discover lists every server's tools over a connection of its own,
// closed after. Servers are reached in parallel; the error joins those
// that failed, each naming its server, and their tools stay unknown.
func (m *Manager) Discover(ctx context.Context) error {
	errs := make([]error, len(m.order))
	var wg sync.WaitGroup
	for i, name := range m.order {
		wg.Go(func() { errs[i] = m.discover(ctx, m.servers[name]) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (m *Manager) discover(ctx context.Context, s *server) error {
	c := &capSession{m: m, srv: s, profile: m.opts.Profile, sandbox: m.opts.Sandbox, discovery: true}
	c.rec = runtype.CapabilitySession{Server: s.cfg.Name, Transport: s.cfg.Transport}
	err := c.connect(ctx)
	if err == nil {
		c.close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
		return fmt.Errorf("MCP server %s: %w", s.cfg.Name, err)
	}
	s.err = nil
	return nil
}

// Ping connects to the named server over a connection of its own, sends
// a ping and lists its tools; it returns the negotiated protocol version
// and the tools.
func (m *Manager) Ping(ctx context.Context, name string) (string, []*sdk.Tool, error) {
	s, ok := m.servers[name]
	if !ok {
		return "", nil, fmt.Errorf("no MCP server %q", name)
	}
	c := &capSession{m: m, srv: s, profile: m.opts.Profile, sandbox: m.opts.Sandbox, discovery: true}
	c.rec = runtype.CapabilitySession{Server: name, Transport: s.cfg.Transport}
	if err := c.connect(ctx); err != nil {
		return "", nil, err
	}
	defer c.close()
	c.mu.Lock()
	cs := c.cs
	c.mu.Unlock()
	if err := cs.Ping(ctx, nil); err != nil {
		return "", nil, fmt.Errorf("ping: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.rec.ProtocolVersion, slices.Clone(s.tools), nil
}

// Listed returns the named server's tools as last listed, and why the
// last listing failed.
func (m *Manager) Listed(name string) ([]*sdk.Tool, error) {
	s, ok := m.servers[name]
	if !ok {
		return nil, fmt.Errorf("no MCP server %q", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tools), s.err
}

// Tools adapts the named server's listed tools that allow accepts (by the
// server's own name; nil accepts all) to tool.Tool.
func (m *Manager) Tools(name string, allow func(string) bool) ([]tool.Tool, error) {
	s, ok := m.servers[name]
	if !ok {
		return nil, fmt.Errorf("no MCP server %q", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []tool.Tool
	for _, t := range s.tools {
		if allow != nil && !allow(t.Name) {
			continue
		}
		mt, err := newTool(m, s, t)
		if err != nil {
			return nil, err
		}
		out = append(out, mt)
	}
	return out, nil
}

// Sessions returns the capability sessions this manager holds open.
func (m *Manager) Sessions() []runtype.CapabilitySession {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]runtype.CapabilitySession, 0, len(m.sessions))
	for _, c := range m.sessions {
		c.mu.Lock()
		out = append(out, c.rec)
		c.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b runtype.CapabilitySession) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Close closes every capability session (recorded closed) and stops
// every stdio server.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	sessions := make([]*capSession, 0, len(m.sessions))
	for _, c := range m.sessions {
		sessions = append(sessions, c)
	}
	m.sessions = map[sessionKey]*capSession{}
	m.mu.Unlock()
	for _, c := range sessions {
		c.shut(context.Background(), runtype.CapabilityClosed, "")
	}
	m.cancel()
	m.wg.Wait()
}

// session returns the capability session of call's agentrt session and
// s, connecting it when it is new or was closed.
func (m *Manager) session(ctx context.Context, s *server, call *tool.Call) (*capSession, error) {
	key := sessionKey{call.SessionID, s.cfg.Name}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("the runtime's MCP connections are closed")
	}
	c := m.sessions[key]
	if c == nil {
		c = &capSession{m: m, srv: s, key: key, sandbox: call.Sandbox, profile: call.Profile, workspace: call.WorkspaceDir,
			inflight: make(map[string]*tool.Call), ready: make(chan struct{})}
		c.rec = runtype.CapabilitySession{
			ID: m.opts.IDs.New("cap_"), Owner: runtype.Owner{TenantID: call.TenantID}, SessionID: call.SessionID,
			Server: s.cfg.Name, Transport: s.cfg.Transport, RuntimeID: m.opts.RuntimeID,
			Status: runtype.CapabilityConnecting, CreatedAt: m.opts.Now().UTC(),
		}
		m.sessions[key] = c
		m.mu.Unlock()
		c.start(ctx)
	} else {
		m.mu.Unlock()
	}
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	for {
		c.mu.Lock()
		if c.cs != nil {
			c.lastUsed = m.opts.Now()
			c.mu.Unlock()
			return c, nil
		}
		status, gen, err := c.rec.Status, c.rec.Generation, c.lastErr
		c.mu.Unlock()
		if status == runtype.CapabilityFailed || status == runtype.CapabilityClosed {
			// Forget it: the next call starts afresh.
			m.mu.Lock()
			if m.sessions[key] == c {
				delete(m.sessions, key)
			}
			m.mu.Unlock()
			return nil, fmt.Errorf("MCP server %s: %w", s.cfg.Name, cmp.Or[error](err, errors.New("not connected")))
		}
		// Restarting: wait for it.
		if err := c.awaitGeneration(ctx, gen); err != nil {
			return nil, fmt.Errorf("MCP server %s: %w", s.cfg.Name, err)
		}
	}
}
