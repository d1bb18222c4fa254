// Roots and sampling are deprecated as of MCP 2026-07-28 (SEP-2577) but
// remain in the protocol, and servers of earlier versions use them:
// agentrt offers both, governed.
//
//lint:file-ignore SA1019 roots and sampling are offered on purpose (see above)

package mcp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
)

// capSession is one capability session: the connection to a server for
// one agentrt session (or, with discovery set, for listing its tools).
type capSession struct {
	m         *Manager
	srv       *server
	key       sessionKey
	sandbox   *sandbox.Sandbox
	profile   *sandbox.Profile
	workspace string
	discovery bool

	// connMu serialises connects and reinitialisations; ready is closed
	// when the first connect has ended, well or not.
	connMu    sync.Mutex
	ready     chan struct{}
	readyOnce sync.Once
	// recMu orders Record calls as the states they record.
	recMu sync.Mutex

	mu       sync.Mutex // guards what follows
	rec      runtype.CapabilitySession
	cs       *sdk.ClientSession
	cmd      *proc
	stderr   *tailBuffer
	lastErr  error
	lastUsed time.Time
	// changed is closed (and replaced) whenever the connection changes.
	changed chan struct{}
	// inflight are the calls running, by progress token; latest is the
	// one that started last.
	inflight map[string]*tool.Call
	latest   *tool.Call
	runs     map[string]bool // runs already recorded as users
	closing  bool
	idle     *time.Timer
}

// start makes the first connect, on the first caller's goroutine.
func (c *capSession) start(ctx context.Context) {
	defer c.readyOnce.Do(func() { close(c.ready) })
	c.connMu.Lock()
	defer c.connMu.Unlock()
	c.record(ctx, "", nil) // connecting
	if err := c.connect(ctx); err != nil {
		c.fail(ctx, err)
	}
}

// fail records the session failed with err.
func (c *capSession) fail(ctx context.Context, err error) {
	c.mu.Lock()
	c.lastErr = err
	c.rec.Status = runtype.CapabilityFailed
	c.rec.Error = err.Error()
	c.rec.UpdatedAt = c.m.opts.Now().UTC()
	c.mu.Unlock()
	c.record(context.WithoutCancel(ctx), "", nil)
}

// connect starts (stdio) or reaches (HTTP) the server, initializes and
// lists its tools. The caller holds connMu (or owns c alone).
func (c *capSession) connect(ctx context.Context) error {
	cfg := c.srv.cfg
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "agentrt", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler:          c.elicit,
		CreateMessageHandler:        c.sample,
		ProgressNotificationHandler: c.progress,
	})
	client.AddRoots(c.roots()...)
	var (
		transport sdk.Transport
		cmd       *proc
		stderr    *tailBuffer
	)
	switch cfg.Transport {
	case runtype.TransportStdio:
		var err error
		cmd, stderr, transport, err = c.startProcess()
		if err != nil {
			return err
		}
	case runtype.TransportStreamableHTTP:
		hc := *c.m.opts.HTTPClient
		hc.Transport = &headerTransport{next: hc.Transport, header: cfg.Header}
		transport = &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: &hc, MaxRetries: 2}
	default:
		return fmt.Errorf("unknown transport %q", cfg.Transport)
	}
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		if cmd != nil {
			cmd.cancel()
			cmd.Wait()
			err = withStderr(err, stderr)
		}
		return fmt.Errorf("connecting: %w", err)
	}
	tools, err := listTools(ctx, cs)
	if err != nil {
		cs.Close()
		if cmd != nil {
			cmd.stop()
		}
		return fmt.Errorf("listing tools: %w", withStderr(err, stderr))
	}
	c.srv.mu.Lock()
	c.srv.tools, c.srv.err = tools, nil
	c.srv.mu.Unlock()

	c.mu.Lock()
	if c.closing {
		// Closed while it connected (a restart racing Close): it ends here.
		c.mu.Unlock()
		cs.Close()
		if cmd != nil {
			cmd.stop()
		}
		return errors.New("the session is closed")
	}
	c.cs, c.cmd, c.stderr, c.lastErr = cs, cmd, stderr, nil
	if ir := cs.InitializeResult(); ir != nil {
		c.rec.ProtocolVersion = ir.ProtocolVersion
	}
	c.rec.ServerSessionID = cs.ID()
	c.rec.Generation++
	c.rec.Status = runtype.CapabilityReady
	c.rec.Error = ""
	c.rec.UpdatedAt = c.m.opts.Now().UTC()
	gen := c.rec.Generation
	c.signal()
	c.mu.Unlock()
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	c.record(context.WithoutCancel(ctx), "", names)
	if !c.discovery {
		c.m.wg.Add(1)
		go c.watch(cs, gen)
	}
	return nil
}

// startProcess starts the stdio server under the sandbox and returns
// its transport.
func (c *capSession) startProcess() (*proc, *tailBuffer, sdk.Transport, error) {
	cfg := c.srv.cfg
	if c.sandbox == nil || c.profile == nil {
		return nil, nil, nil, errors.New("a stdio server runs only under a sandbox, and this runtime has none for it")
	}
	prof := *c.profile
	prof.ReadRoots = append(append([]string(nil), prof.ReadRoots...), programRoots(cfg.Command, cfg.Cwd)...)
	dir := cmp.Or(cfg.Cwd, c.workspace)
	ctx, cancel := context.WithCancel(c.m.ctx)
	cmd, err := c.sandbox.Command(ctx, prof, sandbox.Spec{Argv: cfg.Command, Dir: dir, Workspace: c.workspace, Env: cfg.Env})
	if err != nil {
		cancel()
		return nil, nil, nil, fmt.Errorf("sandboxing %s: %w", cfg.Command[0], err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	stderr := &tailBuffer{max: 4 << 10}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, nil, nil, fmt.Errorf("starting %s: %w", cfg.Command[0], err)
	}
	return &proc{Cmd: cmd, cancel: cancel}, stderr, &sdk.IOTransport{Reader: stdout, Writer: stdin}, nil
}

// proc is a stdio server's process; cancel kills it (and what it
// started).
type proc struct {
	*sandbox.Cmd
	cancel context.CancelFunc
}

// stopGrace is how long a stdio server whose input was closed may take
// to exit before it is killed.
const stopGrace = time.Second

// stop waits for the process to exit, killing it after stopGrace: its
// input is closed already.
func (p *proc) stop() {
	done := make(chan struct{})
	go func() {
		p.Wait()
		close(done)
	}()
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		p.cancel()
		<-done
	}
	p.cancel()
}

// programRoots are the paths a stdio server must read beyond the
// profile's: its working directory, and the folders of the absolute
// paths on its command line (for a script under node_modules, that
// node_modules folder: the script's dependencies live there).
func programRoots(argv []string, cwd string) []string {
	var out []string
	if cwd != "" {
		out = append(out, cwd)
	}
	for _, a := range argv {
		if !filepath.IsAbs(a) {
			continue
		}
		dir := filepath.Dir(a)
		if i := strings.LastIndex(dir, string(filepath.Separator)+"node_modules"); i >= 0 {
			dir = dir[:i+len("/node_modules")]
		}
		out = append(out, dir)
	}
	return out
}

// roots are the agent's workspace and its write roots, as file URIs.
func (c *capSession) roots() []*sdk.Root {
	var out []*sdk.Root
	if c.workspace != "" {
		out = append(out, &sdk.Root{URI: fileURI(c.workspace), Name: "workspace"})
	}
	if c.profile != nil && c.profile.Mode == sandbox.WorkspaceWrite {
		for _, r := range c.profile.WriteRoots {
			out = append(out, &sdk.Root{URI: fileURI(r), Name: filepath.Base(r)})
		}
	}
	return out
}

func fileURI(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

// listTools lists every page of the server's tools.
func listTools(ctx context.Context, cs *sdk.ClientSession) ([]*sdk.Tool, error) {
	var out []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// watch waits for the connection of generation gen to end. An end
// nobody asked for (a stdio server that exited or broke its pipe, an
// HTTP server's stream that broke for good) connects again with backoff.
func (c *capSession) watch(cs *sdk.ClientSession, gen int) {
	defer c.m.wg.Done()
	err := cs.Wait()
	c.mu.Lock()
	if c.closing || c.rec.Generation != gen || c.cs != cs {
		c.mu.Unlock()
		return // closed, or replaced by a reinitialisation
	}
	cmd := c.cmd
	c.mu.Unlock()
	why := "the connection ended"
	if cmd != nil {
		cmd.stop()
		why = "the server exited"
		if cmd.ProcessState != nil {
			why = "the server exited (" + cmd.ProcessState.String() + ")"
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		why += ": " + err.Error()
	}
	c.mu.Lock()
	if c.closing || c.rec.Generation != gen || c.cs != cs {
		c.mu.Unlock()
		return
	}
	why = withStderr(errors.New(why), c.stderr).Error()
	c.cs, c.cmd = nil, nil
	c.lastErr = errors.New(why)
	if errors.Is(err, sdk.ErrSessionMissing) {
		// The server forgot the session (its event stream got a 404).
		c.rec.Status, c.rec.Error, c.rec.UpdatedAt = runtype.CapabilityExpired, "the server no longer knows session "+c.rec.ServerSessionID, c.m.opts.Now().UTC()
		c.mu.Unlock()
		c.record(c.m.ctx, "", nil)
		c.mu.Lock()
	}
	c.rec.Status, c.rec.Error, c.rec.UpdatedAt = runtype.CapabilityReinitializing, why, c.m.opts.Now().UTC()
	c.signal()
	c.mu.Unlock()
	c.record(c.m.ctx, "", nil)
	c.restart()
}

// restart starts a stdio server that exited again, or reaches an HTTP
// server whose connection broke again, with backoff.
func (c *capSession) restart() {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	var err error
	for attempt := 1; attempt <= c.m.opts.MaxRestarts; attempt++ {
		t := time.NewTimer(c.m.opts.Backoff(attempt))
		select {
		case <-c.m.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		c.mu.Lock()
		closing, connected := c.closing, c.cs != nil
		c.mu.Unlock()
		if closing || connected {
			return // closed, or a call reconnected it meanwhile
		}
		if err = c.connect(c.m.ctx); err == nil {
			return
		}
		c.m.opts.Logger.Warn("restarting MCP server", "server", c.srv.cfg.Name, "attempt", attempt, "err", err)
	}
	c.fail(c.m.ctx, fmt.Errorf("gave up after %d restarts: %w", c.m.opts.MaxRestarts, err))
}

// reinit replaces the connection of generation gen, which the server
// forgot (expired) or which broke, by a new one, unless another caller
// did so already.
func (c *capSession) reinit(ctx context.Context, gen int, cause error) error {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	c.mu.Lock()
	if c.rec.Generation != gen && c.cs != nil {
		c.mu.Unlock()
		return nil // already done
	}
	old, oldCmd := c.cs, c.cmd
	c.cs, c.cmd = nil, nil
	now := c.m.opts.Now().UTC()
	if errors.Is(cause, sdk.ErrSessionMissing) {
		c.rec.Status, c.rec.Error, c.rec.UpdatedAt = runtype.CapabilityExpired, "the server no longer knows session "+c.rec.ServerSessionID, now
		c.mu.Unlock()
		c.record(ctx, "", nil)
		c.mu.Lock()
	}
	c.rec.Status, c.rec.UpdatedAt = runtype.CapabilityReinitializing, now
	c.signal()
	c.mu.Unlock()
	c.record(ctx, "", nil)
	if old != nil {
		old.Close()
	}
	if oldCmd != nil {
		oldCmd.stop()
	}
	if err := c.connect(ctx); err != nil {
		c.fail(ctx, err)
		return fmt.Errorf("reinitializing: %w", err)
	}
	return nil
}

// awaitGeneration waits until the session is connected at a generation
// after gen, or failed.
func (c *capSession) awaitGeneration(ctx context.Context, gen int) error {
	for {
		c.mu.Lock()
		ok, failed, ch := c.cs != nil && c.rec.Generation > gen, c.rec.Status == runtype.CapabilityFailed || c.closing, c.changed
		err := c.lastErr
		c.mu.Unlock()
		switch {
		case ok:
			return nil
		case failed:
			return cmp.Or[error](err, errors.New("the session is closed"))
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// signal wakes those waiting for the connection to change. The caller
// holds mu.
func (c *capSession) signal() {
	if c.changed != nil {
		close(c.changed)
	}
	c.changed = make(chan struct{})
}

// shut closes the session for good and records status.
func (c *capSession) shut(ctx context.Context, status runtype.CapabilitySessionStatus, why string) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	c.closing = true
	cs, cmd := c.cs, c.cmd
	c.cs, c.cmd = nil, nil
	if c.idle != nil {
		c.idle.Stop()
	}
	c.rec.Status, c.rec.Error, c.rec.UpdatedAt = status, why, c.m.opts.Now().UTC()
	c.signal()
	c.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
	if cmd != nil {
		cmd.stop()
	}
	c.record(ctx, "", nil)
}

// close ends a discovery connection (nothing is recorded).
func (c *capSession) close() {
	c.mu.Lock()
	c.closing = true
	cs, cmd := c.cs, c.cmd
	c.cs, c.cmd = nil, nil
	c.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
	if cmd != nil {
		cmd.stop()
	}
}

// record hands the session's state to Options.Record.
func (c *capSession) record(ctx context.Context, runID string, tools []string) {
	if c.discovery || c.m.opts.Record == nil {
		return
	}
	c.recMu.Lock()
	defer c.recMu.Unlock()
	c.mu.Lock()
	rec := c.rec
	if rec.UpdatedAt.IsZero() {
		rec.UpdatedAt = rec.CreatedAt
	}
	c.mu.Unlock()
	c.m.opts.Record(ctx, &rec, runID, tools)
}

// used notes that run used the session, recording it the first time.
func (c *capSession) used(ctx context.Context, runID string) {
	if runID == "" {
		return
	}
	c.mu.Lock()
	if c.runs == nil || len(c.runs) > 1024 {
		c.runs = make(map[string]bool)
	}
	seen := c.runs[runID]
	c.runs[runID] = true
	c.mu.Unlock()
	if !seen {
		c.record(ctx, runID, nil)
	}
}

// armIdle closes the session after the server's idle timeout without
// calls.
func (c *capSession) armIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing || len(c.inflight) > 0 {
		return
	}
	d := c.srv.cfg.IdleTimeout
	if c.idle == nil {
		c.idle = time.AfterFunc(d, c.idleClose)
		return
	}
	c.idle.Reset(d)
}

func (c *capSession) idleClose() {
	c.mu.Lock()
	busy := len(c.inflight) > 0
	c.mu.Unlock()
	if busy {
		return
	}
	m := c.m
	m.mu.Lock()
	if m.sessions[c.key] == c {
		delete(m.sessions, c.key)
	}
	m.mu.Unlock()
	c.shut(m.ctx, runtype.CapabilityClosed, "idle")
}

// progress routes a progress notification to the call it is about.
func (c *capSession) progress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	tok, _ := req.Params.ProgressToken.(string)
	c.mu.Lock()
	call := c.inflight[tok]
	c.mu.Unlock()
	if call != nil && call.Progress != nil {
		call.Progress(req.Params.Progress, req.Params.Total, req.Params.Message)
	}
}

// asker is the call in flight a server request is about: MCP does not
// say which call a server's elicitation or sampling request belongs to
// over stdio, so it is the call that started last.
func (c *capSession) asker() *tool.Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.latest != nil && c.inflight != nil {
		for _, call := range c.inflight {
			if call == c.latest {
				return call
			}
		}
	}
	for _, call := range c.inflight {
		return call
	}
	return nil
}

// elicit asks a person, through the call that is running, for what the
// server requests.
func (c *capSession) elicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	call := c.asker()
	if call == nil || call.Ask == nil || (req.Params.Mode != "" && req.Params.Mode != "form") {
		return &sdk.ElicitResult{Action: "decline"}, nil
	}
	schema, err := json.Marshal(req.Params.RequestedSchema)
	if err != nil || req.Params.RequestedSchema == nil {
		schema = []byte(`{"type":"object"}`)
	}
	ans, err := call.Ask(ctx, &tool.Question{Server: c.srv.cfg.Name, Message: req.Params.Message, Schema: schema})
	if err != nil {
		return nil, err
	}
	res := &sdk.ElicitResult{Action: ans.Decision}
	if ans.Decision == runtype.DecisionAccept && len(ans.Content) > 0 {
		if err := json.Unmarshal(ans.Content, &res.Content); err != nil {
			return nil, fmt.Errorf("the answer's content: %w", err)
		}
	}
	return res, nil
}

// sample has the agent's model answer the server's prompt, through the
// call that is running.
func (c *capSession) sample(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	call := c.asker()
	if call == nil || call.Sample == nil {
		return nil, errors.New("sampling is not available outside a tool call of an agent")
	}
	sr := &tool.SampleRequest{Server: c.srv.cfg.Name, SystemPrompt: req.Params.SystemPrompt, MaxTokens: int(req.Params.MaxTokens)}
	for _, m := range req.Params.Messages {
		t, ok := m.Content.(*sdk.TextContent)
		if !ok {
			return nil, fmt.Errorf("sampling supports text messages only, not %T", m.Content)
		}
		sr.Messages = append(sr.Messages, tool.SampleMessage{Role: string(m.Role), Text: t.Text})
	}
	res, err := call.Sample(ctx, sr)
	if err != nil {
		return nil, err
	}
	return &sdk.CreateMessageResult{Content: &sdk.TextContent{Text: res.Text}, Model: res.Model, Role: "assistant", StopReason: res.StopReason}, nil
}

// headerTransport adds the server's configured headers to each request.
type headerTransport struct {
	next   http.RoundTripper
	header http.Header
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.header) > 0 {
		r = r.Clone(r.Context())
		for k, vs := range t.header {
			r.Header[k] = vs
		}
	}
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}

// tailBuffer keeps the last max bytes written to it: a server's stderr,
// for errors.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(bytes.TrimSpace(b.buf))
}

func withStderr(err error, stderr *tailBuffer) error {
	if stderr == nil {
		return err
	}
	if s := stderr.String(); s != "" {
		return fmt.Errorf("%w (stderr: %s)", err, s)
	}
	return err
}
