package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/client"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds the two things an operator command can work on: the
// runtime of a data directory, opened in this process, or a daemon
// (agentrt serve) over its HTTP API (--server). A command asks its
// storeFlags for a backend and uses only the backend's methods, so it
// works both ways with the same output.

// backend is what an operator command reads and controls. Its methods
// have the Runtime's signatures (a remote backend ignores the Owner of
// its arguments: the daemon acts as its own), so the local backend is
// the Runtime itself, with few additions.
type backend interface {
	// Where names what the backend works on, for messages: the data
	// directory, or the server's URL.
	Where() string
	// Remote reports whether the backend is a daemon over HTTP.
	Remote() bool

	Health(ctx context.Context) (*apitype.Health, error)
	// LastCursor is the cursor of the newest event, to follow from.
	LastCursor(ctx context.Context) (int64, error)
	// Events follows the events p selects after p.AfterCursor.
	Events(ctx context.Context, p *apitype.SubscribeParams) (eventStream, error)

	ListSessions(ctx context.Context, p *apitype.ListSessionsParams) ([]apitype.SessionSummary, error)
	GetSession(ctx context.Context, owner runtype.Owner, sessionID string) (*apitype.Snapshot, error)
	ListRequests(ctx context.Context, p *apitype.ListRequestsParams) ([]apitype.RequestSummary, error)
	GetRequest(ctx context.Context, owner runtype.Owner, turnID string) (*apitype.RequestSummary, error)
	// GetContext rebuilds the context of the request's model call at hop
	// (0: the last) and checks it against the call's fingerprint.
	GetContext(ctx context.Context, owner runtype.Owner, turnID string, hop int) (*apitype.ContextView, error)
	InterruptTurn(ctx context.Context, owner runtype.Owner, turnID string) (runtype.TaskStatus, error)
	// WaitTurn waits until the turn rests (ended, parked, paused) and
	// returns it. A remote backend watches the turn's events after the
	// cursor after (0: from now, returning at once if it rests), so a
	// caller that has just made the turn move passes the cursor from
	// before; the local one asks the runtime, which knows.
	WaitTurn(ctx context.Context, owner runtype.Owner, turnID string, after int64) (*runtype.Turn, error)

	ListActions(ctx context.Context, p *apitype.ListActionsParams) ([]apitype.ActionRead, error)
	GetAction(ctx context.Context, owner runtype.Owner, id string) (*apitype.ActionRead, error)
	RespondAction(ctx context.Context, p *apitype.RespondActionParams) (*apitype.RespondActionResult, error)

	GetTask(ctx context.Context, owner runtype.Owner, taskID string) (*apitype.TaskRead, error)
	ListTasks(ctx context.Context, p *apitype.ListTasksParams) (*apitype.TaskPage, error)
	CancelTask(ctx context.Context, p *apitype.TaskControlParams) (runtype.TaskStatus, error)
	PauseTask(ctx context.Context, p *apitype.TaskControlParams) (runtype.TaskStatus, error)
	ResumeTask(ctx context.Context, p *apitype.TaskControlParams) (runtype.TaskStatus, error)
	RetryTask(ctx context.Context, p *apitype.TaskControlParams) (runtype.TaskStatus, error)
	ListQueue(ctx context.Context, p *apitype.QueueParams) ([]event.QueuedTurn, error)
	RemoveQueuedTurn(ctx context.Context, owner runtype.Owner, turnID string) error
	PromoteQueuedTurn(ctx context.Context, owner runtype.Owner, turnID string) error

	RollbackThread(ctx context.Context, p *apitype.RollbackThreadParams) (*apitype.RollbackThreadResult, error)
	ForkThread(ctx context.Context, p *apitype.ForkThreadParams) (*apitype.ForkThreadResult, error)
	CompactThread(ctx context.Context, p *apitype.CompactThreadParams) (*apitype.SubmitTurnResult, error)
	ResetThread(ctx context.Context, p *apitype.CompactThreadParams) (*apitype.SubmitTurnResult, error)

	SpawnSubagent(ctx context.Context, p *apitype.SpawnSubagentParams) (*apitype.SubagentRead, error)
	SendSubagentInput(ctx context.Context, p *apitype.SendSubagentInputParams) (*apitype.SubagentRead, error)
	WaitSubagents(ctx context.Context, p *apitype.WaitSubagentsParams) (*apitype.WaitSubagentsResult, error)
	CloseSubagent(ctx context.Context, p *apitype.SubagentParams) (*apitype.SubagentRead, error)
	GetSubagent(ctx context.Context, p *apitype.SubagentParams) (*apitype.SubagentRead, error)
	ListSubagents(ctx context.Context, owner runtype.Owner, sessionID string) ([]apitype.SubagentRead, error)
	DelegationTree(ctx context.Context, owner runtype.Owner, taskID string) (*apitype.DelegationNode, error)
	CreateJob(ctx context.Context, p *apitype.CreateJobParams) (*apitype.JobRead, error)
	GetJob(ctx context.Context, p *apitype.JobParams) (*apitype.JobRead, error)
	ListJobItems(ctx context.Context, p *apitype.ListJobItemsParams) (*apitype.JobItemsPage, error)
	RetryJobItems(ctx context.Context, p *apitype.RetryJobItemsParams) (*apitype.RetryJobItemsResult, error)
	CancelJob(ctx context.Context, p *apitype.JobParams) (*apitype.JobRead, error)

	CreateSchedule(ctx context.Context, p *apitype.CreateScheduleParams) (*apitype.ScheduleRead, error)
	GetSchedule(ctx context.Context, p *apitype.ScheduleParams) (*apitype.ScheduleRead, error)
	ListSchedules(ctx context.Context, p *apitype.ListSchedulesParams) (*apitype.SchedulePage, error)
	PauseSchedule(ctx context.Context, p *apitype.PauseScheduleParams) (*apitype.ScheduleRead, error)
	ResumeSchedule(ctx context.Context, p *apitype.PauseScheduleParams) (*apitype.ScheduleRead, error)
	TriggerSchedule(ctx context.Context, p *apitype.TriggerScheduleParams) (*apitype.FireRead, error)
	DeleteSchedule(ctx context.Context, p *apitype.ScheduleParams) (*apitype.ScheduleRead, error)
	ListFires(ctx context.Context, p *apitype.ListFiresParams) (*apitype.FirePage, error)
	RetryDelivery(ctx context.Context, p *apitype.FireParams) (*apitype.FireRead, error)
	ScheduleOverview(ctx context.Context, p *apitype.ScheduleOverviewParams) (*apitype.ScheduleOverview, error)

	GetInstance(ctx context.Context, p *apitype.GetInstanceParams) (*apitype.InstanceRead, error)
	ListInstances(ctx context.Context, p *apitype.ListInstancesParams) (*apitype.InstanceList, error)
	GetInstanceState(ctx context.Context, p *apitype.GetInstanceParams) (*apitype.InstanceState, error)
	SetInstanceState(ctx context.Context, p *apitype.SetInstanceStateParams) (*apitype.InstanceState, error)
	SendInstanceEvent(ctx context.Context, p *apitype.SendInstanceEventParams) (*apitype.SendInstanceEventResult, error)

	StartWorkflow(ctx context.Context, p *apitype.StartWorkflowParams) (*apitype.WorkflowRead, error)
	GetWorkflow(ctx context.Context, p *apitype.WorkflowParams) (*apitype.WorkflowRead, error)
	ListWorkflows(ctx context.Context, p *apitype.ListWorkflowsParams) (*apitype.WorkflowsPage, error)
	CancelWorkflow(ctx context.Context, p *apitype.WorkflowParams) (*apitype.WorkflowRead, error)
	ResumeWorkflow(ctx context.Context, p *apitype.WorkflowParams) (*apitype.WorkflowRead, error)

	VerifySession(ctx context.Context, owner runtype.Owner, sessionID string) (*apitype.VerifyResult, error)
	// OpenOutput opens stored content (a tool's whole output, a raw model
	// response) by its ref; the caller closes it.
	OpenOutput(ctx context.Context, owner runtype.Owner, ref string) (*apitype.Output, error)
	// ExportBundle writes a request's evidence bundle to w.
	ExportBundle(ctx context.Context, w io.Writer, p *apitype.ExportEvidenceParams) error

	ListTokens(ctx context.Context, p *apitype.ListTokensParams) ([]apitype.TokenRead, error)
	CreateToken(ctx context.Context, p *apitype.CreateTokenParams) (*apitype.NewToken, error)
	RotateToken(ctx context.Context, tokenID string) (*apitype.NewToken, error)
	RevokeToken(ctx context.Context, tokenID string) (*apitype.TokenRead, error)
}

// eventStream is a stream of committed events in cursor order
// (*agentrt.Subscription is one).
type eventStream interface {
	// Next waits for the next event; it returns ctx's cause when ctx ends.
	Next(ctx context.Context) (*event.Event, error)
	// TryNext returns the next event already committed, or nil.
	TryNext(ctx context.Context) (*event.Event, error)
	Close()
}

// Environment variables of the global flags.
const (
	envServer = "AGENTRT_SERVER"
	envToken  = "AGENTRT_TOKEN"
	envCACert = "AGENTRT_CA_CERT"
)

// registerGlobalFlags adds --server, --token and --ca-cert to every
// command.
func registerGlobalFlags(root *cobra.Command) {
	root.PersistentFlags().String("server", "", "work on the agentrt daemon at this URL (http:// or https://) instead of a data directory (env "+envServer+")")
	root.PersistentFlags().String("token", "", "the daemon's API token (env "+envToken+"; default: the api-token file of --data-dir or the config's data_dir)")
	root.PersistentFlags().String("ca-cert", "", "trust the PEM certificates in this file, besides the system's, for an https:// --server (env "+envCACert+"; SSL_CERT_FILE replaces the system's)")
}

// localOnly marks a command (and its subcommands) that works only on a
// data directory: given --server, it exits 2.
func localOnly() map[string]string { return map[string]string{"agentrt/local": "true"} }

// refuseServer fails a local-only command given --server explicitly. An
// AGENTRT_SERVER in the environment does not stop it: it is meant for
// the commands that can use it.
func refuseServer(cmd *cobra.Command) error {
	f := cmd.Flag("server")
	if f == nil || !f.Changed {
		return nil
	}
	for c := cmd; c != nil; c = c.Parent() {
		if c.Annotations["agentrt/local"] == "true" {
			return usageErr("%s works on a data directory in this process; it cannot use --server (drop --server, or use agentrt serve's HTTP API)", cmd.CommandPath())
		}
	}
	return nil
}

// serverURL is --server, or $AGENTRT_SERVER.
func serverURL(cmd *cobra.Command) string {
	if f := cmd.Flag("server"); f != nil && f.Changed {
		return f.Value.String()
	}
	return os.Getenv(envServer)
}

// backend returns what the command works on: the daemon at --server, or
// the config's data directory opened in this process. work gives the
// local runtime workers, for a command that makes a turn run (approve,
// resume, retry) and follows it here; without, the runtime only reads
// and records. Call stop when done.
func (f *storeFlags) backend(cmd *cobra.Command, work bool) (b backend, stop func(), err error) {
	if url := serverURL(cmd); url != "" {
		token, err := f.token(cmd)
		if err != nil {
			return nil, nil, err
		}
		// A transport of its own, whose connections close with the command.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if tr.TLSClientConfig, err = tlsClientConfig(cmd, url); err != nil {
			return nil, nil, err
		}
		c, err := client.New(url, token, client.WithHTTPClient(&http.Client{Transport: tr}))
		if err != nil {
			return nil, nil, usageErr("%v", err)
		}
		return &remoteBackend{c: c}, tr.CloseIdleConnections, nil
	}
	rt, stop, err := f.open(cmd, !work)
	if err != nil {
		return nil, nil, err
	}
	where := f.dataDir
	if where == "" {
		where = "the data directory of " + f.config
	}
	return &localBackend{Runtime: rt, dir: where, poll: f.pollInterval()}, stop, nil
}

// caCert is --ca-cert, or $AGENTRT_CA_CERT.
func caCert(cmd *cobra.Command) string {
	if f := cmd.Flag("ca-cert"); f != nil && f.Changed {
		return f.Value.String()
	}
	return os.Getenv(envCACert)
}

// tlsClientConfig is the TLS configuration of a client of serverURL:
// nil (the system's roots) without --ca-cert, else the system's roots
// and the certificates of the --ca-cert file.
func tlsClientConfig(cmd *cobra.Command, serverURL string) (*tls.Config, error) {
	file := caCert(cmd)
	if file == "" {
		return nil, nil
	}
	if u, err := url.Parse(serverURL); err == nil && u.Scheme != "https" {
		return nil, usageErr("--ca-cert %s is for an https:// server; %s is plain HTTP", file, serverURL)
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, usageErr("reading --ca-cert: %v", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, usageErr("--ca-cert %s holds no PEM certificate", file)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// pollInterval is how often a local event stream reads the store for
// events other processes commit.
func (f *storeFlags) pollInterval() time.Duration {
	if f.poll > 0 {
		return f.poll
	}
	return time.Second
}

// token is --token, or $AGENTRT_TOKEN, or the api-token file of the data
// directory (--data-dir, or the config's data_dir when the config is
// there).
func (f *storeFlags) token(cmd *cobra.Command) (string, error) {
	if fl := cmd.Flag("token"); fl != nil && fl.Changed {
		return fl.Value.String(), nil
	}
	if t := os.Getenv(envToken); t != "" {
		return t, nil
	}
	dir := f.dataDir
	if dir == "" {
		if _, err := os.Stat(f.config); err == nil {
			file, err := config.Load(f.config, config.Options{Builtins: agentrt.BuiltinToolNames()})
			if err != nil {
				return "", configErr(err)
			}
			dir = file.DataDir
		}
	}
	if dir == "" {
		return "", usageErr("no API token for %s: give --token, set %s, or point --data-dir (or --config) at the daemon's data directory, whose %s file holds it", serverURL(cmd), envToken, httpapi.TokenFile)
	}
	path := filepath.Join(dir, httpapi.TokenFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", usageErr("no API token for %s: reading %s: %v (give --token or set %s)", serverURL(cmd), path, errors.Unwrap(err), envToken)
	}
	return string(trimSpace(b)), nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// again is the flags a follow-up command needs to reach the same
// backend.
func (f *storeFlags) again(cmd *cobra.Command) string {
	if url := serverURL(cmd); url != "" {
		if f := cmd.Flag("ca-cert"); f != nil && f.Changed {
			return "--server " + shellQuote(url) + " --ca-cert " + shellQuote(f.Value.String())
		}
		return "--server " + shellQuote(url)
	}
	return continueFlags(f.config, f.dataDir)
}

// localBackend is the runtime of a data directory in this process.
type localBackend struct {
	*agentrt.Runtime
	dir  string
	poll time.Duration
}

func (b *localBackend) Where() string { return b.dir }
func (b *localBackend) Remote() bool  { return false }

func (b *localBackend) ExportBundle(ctx context.Context, w io.Writer, p *apitype.ExportEvidenceParams) error {
	_, err := b.ExportEvidence(ctx, w, p)
	return err
}

func (b *localBackend) Health(ctx context.Context) (*apitype.Health, error) {
	return b.Runtime.Health(ctx), nil
}

func (b *localBackend) WaitTurn(ctx context.Context, owner runtype.Owner, turnID string, _ int64) (*runtype.Turn, error) {
	return b.Runtime.WaitTurn(ctx, owner, turnID)
}

func (b *localBackend) Events(ctx context.Context, p *apitype.SubscribeParams) (eventStream, error) {
	sub, err := b.Subscribe(ctx, p)
	if err != nil {
		return nil, err
	}
	return &pollingStream{Subscription: sub, poll: b.poll}, nil
}

// pollingStream is a subscription that also reads the store every poll:
// the runtime's bus wakes it for this process's commits, not for those
// of a daemon on the same data directory.
type pollingStream struct {
	*agentrt.Subscription
	poll time.Duration
}

func (s *pollingStream) Next(ctx context.Context) (*event.Event, error) {
	for {
		pctx, cancel := context.WithTimeout(ctx, s.poll)
		e, err := s.Subscription.Next(pctx)
		cancel()
		switch {
		case err == nil:
			return e, nil
		case ctx.Err() != nil:
			return nil, context.Cause(ctx)
		case !errors.Is(err, context.DeadlineExceeded):
			return nil, err
		}
	}
}

// remoteBackend is a daemon over its HTTP API.
type remoteBackend struct {
	c *client.Client
}

func (b *remoteBackend) Where() string { return b.c.URL() }
func (b *remoteBackend) Remote() bool  { return true }

func (b *remoteBackend) Health(ctx context.Context) (*apitype.Health, error) {
	return b.c.Health(ctx)
}

// LastCursor reads the cursor from the daemon's health. A daemon whose
// runtime is stopped, or whose store did not answer, does not know it:
// that is an error, not 0, which would follow from the log's start.
func (b *remoteBackend) LastCursor(ctx context.Context) (int64, error) {
	h, err := b.c.Health(ctx)
	switch {
	case err != nil:
		return 0, err
	case h.Status == apitype.HealthStopped:
		return 0, fmt.Errorf("reading the last event cursor: the runtime at %s is stopped", b.c.URL())
	case !h.Store.Reachable:
		reason := h.Store.Error
		if reason == "" {
			reason = "no reason given"
		}
		return 0, fmt.Errorf("reading the last event cursor: the store of %s did not answer: %s", b.c.URL(), reason)
	}
	return h.Store.LastCursor, nil
}

func (b *remoteBackend) Events(ctx context.Context, p *apitype.SubscribeParams) (eventStream, error) {
	f := client.EventFilter{SessionID: p.SessionID, TurnID: p.TurnID}
	s, err := b.c.Events(ctx, f, p.AfterCursor)
	if err != nil {
		return nil, err
	}
	return &remoteStream{c: b.c, filter: f, live: s, cursor: p.AfterCursor}, nil
}

// remoteStream follows the daemon's event stream. TryNext, which must
// not wait, reads a catch-up stream (follow=false) instead: once called,
// the live stream is closed.
type remoteStream struct {
	c       *client.Client
	filter  client.EventFilter
	live    *client.EventStream
	catchUp *client.EventStream
	cursor  int64
}

func (s *remoteStream) Next(ctx context.Context) (*event.Event, error) {
	if s.live == nil {
		live, err := s.c.Events(ctx, s.filter, s.cursor)
		if err != nil {
			return nil, err
		}
		s.live = live
	}
	e, err := s.live.Next(ctx)
	if err == nil {
		s.cursor = e.Cursor
	}
	return e, err
}

func (s *remoteStream) TryNext(ctx context.Context) (*event.Event, error) {
	if s.live != nil {
		s.live.Close()
		s.live = nil
	}
	if s.catchUp == nil {
		cu, err := s.c.EventsCatchUp(ctx, s.filter, s.cursor)
		if err != nil {
			return nil, err
		}
		s.catchUp = cu
	}
	e, err := s.catchUp.Next(ctx)
	switch {
	case errors.Is(err, io.EOF):
		s.catchUp.Close()
		s.catchUp = nil
		return nil, nil
	case err != nil:
		return nil, err
	}
	s.cursor = e.Cursor
	return e, nil
}

func (s *remoteStream) Close() {
	if s.live != nil {
		s.live.Close()
	}
	if s.catchUp != nil {
		s.catchUp.Close()
	}
}

func (b *remoteBackend) ListSessions(ctx context.Context, p *apitype.ListSessionsParams) ([]apitype.SessionSummary, error) {
	return b.c.ListSessions(ctx, p)
}

func (b *remoteBackend) GetSession(ctx context.Context, _ runtype.Owner, sessionID string) (*apitype.Snapshot, error) {
	return b.c.GetSession(ctx, sessionID)
}

func (b *remoteBackend) ListRequests(ctx context.Context, p *apitype.ListRequestsParams) ([]apitype.RequestSummary, error) {
	return b.c.ListRequests(ctx, p)
}

func (b *remoteBackend) GetContext(ctx context.Context, _ runtype.Owner, turnID string, hop int) (*apitype.ContextView, error) {
	return b.c.GetContext(ctx, turnID, hop)
}

func (b *remoteBackend) GetRequest(ctx context.Context, _ runtype.Owner, turnID string) (*apitype.RequestSummary, error) {
	return b.c.GetRequest(ctx, turnID)
}

func (b *remoteBackend) InterruptTurn(ctx context.Context, _ runtype.Owner, turnID string) (runtype.TaskStatus, error) {
	return b.c.InterruptTurn(ctx, turnID)
}

// settlingEvents are the events after which a turn may rest.
var settlingEvents = map[event.Type]bool{
	event.TurnCompleted: true, event.TurnFailed: true, event.TaskWaiting: true, event.TaskBlocked: true,
	event.TaskPaused: true, event.TaskCancelled: true, event.TaskFailed: true, event.TaskCompleted: true,
	event.TaskTimedOut: true, event.TaskLost: true,
}

// rests reports whether a turn in status s waits for nothing the runtime
// does by itself.
func rests(s runtype.TaskStatus) bool {
	return s.Terminal() || s.Parked() || s == runtype.StatusBlocked || s == runtype.StatusPaused
}

func (b *remoteBackend) WaitTurn(ctx context.Context, _ runtype.Owner, turnID string, after int64) (*runtype.Turn, error) {
	if after == 0 {
		cur, err := b.LastCursor(ctx)
		if err != nil {
			return nil, err
		}
		r, err := b.c.GetRequest(ctx, turnID)
		if err != nil {
			return nil, err
		}
		if rests(r.Status) {
			return turnOf(r), nil
		}
		after = cur
	}
	s, err := b.c.Events(ctx, client.EventFilter{TurnID: turnID}, after)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	for {
		e, err := s.Next(ctx)
		if err != nil {
			return nil, err
		}
		if !settlingEvents[e.Type] {
			continue
		}
		r, err := b.c.GetRequest(ctx, turnID)
		if err != nil {
			return nil, err
		}
		if rests(r.Status) {
			return turnOf(r), nil
		}
	}
}

// turnOf is the part of a turn's record a request summary carries.
func turnOf(r *apitype.RequestSummary) *runtype.Turn {
	return &runtype.Turn{ID: r.TurnID, SessionID: r.SessionID, ThreadID: r.ThreadID, Agent: r.Agent, Status: r.Status, StatusReason: runtype.Reason(r.StatusReason)}
}

func (b *remoteBackend) ListActions(ctx context.Context, p *apitype.ListActionsParams) ([]apitype.ActionRead, error) {
	return b.c.ListActions(ctx, p)
}

func (b *remoteBackend) GetAction(ctx context.Context, _ runtype.Owner, id string) (*apitype.ActionRead, error) {
	return b.c.GetAction(ctx, id)
}

func (b *remoteBackend) RespondAction(ctx context.Context, p *apitype.RespondActionParams) (*apitype.RespondActionResult, error) {
	return b.c.RespondAction(ctx, p)
}

func (b *remoteBackend) GetTask(ctx context.Context, _ runtype.Owner, taskID string) (*apitype.TaskRead, error) {
	return b.c.GetTask(ctx, taskID)
}

func (b *remoteBackend) ListTasks(ctx context.Context, p *apitype.ListTasksParams) (*apitype.TaskPage, error) {
	return b.c.ListTasks(ctx, p)
}

func (b *remoteBackend) CancelTask(ctx context.Context, p *apitype.TaskControlParams) (runtype.TaskStatus, error) {
	return b.c.ControlTask(ctx, p.TaskID, client.TaskCancel)
}

func (b *remoteBackend) PauseTask(ctx context.Context, p *apitype.TaskControlParams) (runtype.TaskStatus, error) {
	return b.c.ControlTask(ctx, p.TaskID, client.TaskPause)
}

func (b *remoteBackend) ResumeTask(ctx context.Context, p *apitype.TaskControlParams) (runtype.TaskStatus, error) {
	return b.c.ControlTask(ctx, p.TaskID, client.TaskResume)
}

func (b *remoteBackend) RetryTask(ctx context.Context, p *apitype.TaskControlParams) (runtype.TaskStatus, error) {
	return b.c.ControlTask(ctx, p.TaskID, client.TaskRetry)
}

func (b *remoteBackend) ListQueue(ctx context.Context, p *apitype.QueueParams) ([]event.QueuedTurn, error) {
	if p.SessionID == "" {
		return nil, &apitype.InvalidError{Field: "--session", Reason: "required with --server: the API lists a thread's queue by session and thread"}
	}
	return b.c.ListQueue(ctx, p.SessionID, p.ThreadID)
}

func (b *remoteBackend) RemoveQueuedTurn(ctx context.Context, _ runtype.Owner, turnID string) error {
	return b.c.RemoveQueuedTurn(ctx, turnID)
}

func (b *remoteBackend) PromoteQueuedTurn(ctx context.Context, _ runtype.Owner, turnID string) error {
	return b.c.PromoteQueuedTurn(ctx, turnID)
}

// errNeedSession: the thread commands' routes name the thread's session.
var errNeedSession = usageErr("--session is required with --server (the API addresses a thread within its session)")

func (b *remoteBackend) RollbackThread(ctx context.Context, p *apitype.RollbackThreadParams) (*apitype.RollbackThreadResult, error) {
	if p.SessionID == "" {
		return nil, errNeedSession
	}
	return b.c.RollbackThread(ctx, p.SessionID, p.ThreadID, &apitype.RollbackThreadRequest{ToTurnID: p.ToTurnID})
}

func (b *remoteBackend) ForkThread(ctx context.Context, p *apitype.ForkThreadParams) (*apitype.ForkThreadResult, error) {
	if p.SessionID == "" {
		return nil, errNeedSession
	}
	return b.c.ForkThread(ctx, p.SessionID, p.ThreadID, &apitype.ForkThreadRequest{FromTurnID: p.FromTurnID, NewSessionID: p.NewSessionID})
}

func (b *remoteBackend) CompactThread(ctx context.Context, p *apitype.CompactThreadParams) (*apitype.SubmitTurnResult, error) {
	if p.SessionID == "" {
		return nil, errNeedSession
	}
	return b.c.CompactThread(ctx, p.SessionID, p.ThreadID, &apitype.CompactThreadRequest{Strategy: p.Strategy, IdempotencyKey: p.IdempotencyKey})
}

func (b *remoteBackend) ResetThread(ctx context.Context, p *apitype.CompactThreadParams) (*apitype.SubmitTurnResult, error) {
	if p.SessionID == "" {
		return nil, errNeedSession
	}
	return b.c.ResetThread(ctx, p.SessionID, p.ThreadID, &apitype.CompactThreadRequest{Strategy: p.Strategy, IdempotencyKey: p.IdempotencyKey})
}

func (b *remoteBackend) SpawnSubagent(ctx context.Context, p *apitype.SpawnSubagentParams) (*apitype.SubagentRead, error) {
	return b.c.SpawnSubagent(ctx, p)
}

func (b *remoteBackend) SendSubagentInput(ctx context.Context, p *apitype.SendSubagentInputParams) (*apitype.SubagentRead, error) {
	return b.c.SendSubagentInput(ctx, p)
}

func (b *remoteBackend) WaitSubagents(ctx context.Context, p *apitype.WaitSubagentsParams) (*apitype.WaitSubagentsResult, error) {
	return b.c.WaitSubagents(ctx, p)
}

func (b *remoteBackend) CloseSubagent(ctx context.Context, p *apitype.SubagentParams) (*apitype.SubagentRead, error) {
	return b.c.CloseSubagent(ctx, p)
}

func (b *remoteBackend) GetSubagent(ctx context.Context, p *apitype.SubagentParams) (*apitype.SubagentRead, error) {
	return b.c.GetSubagent(ctx, p)
}

func (b *remoteBackend) ListSubagents(ctx context.Context, _ runtype.Owner, sessionID string) ([]apitype.SubagentRead, error) {
	return b.c.ListSubagents(ctx, sessionID)
}

func (b *remoteBackend) DelegationTree(ctx context.Context, _ runtype.Owner, taskID string) (*apitype.DelegationNode, error) {
	return b.c.DelegationTree(ctx, taskID)
}

func (b *remoteBackend) CreateJob(ctx context.Context, p *apitype.CreateJobParams) (*apitype.JobRead, error) {
	return b.c.CreateJob(ctx, p)
}

func (b *remoteBackend) GetJob(ctx context.Context, p *apitype.JobParams) (*apitype.JobRead, error) {
	return b.c.GetJob(ctx, p)
}

func (b *remoteBackend) ListJobItems(ctx context.Context, p *apitype.ListJobItemsParams) (*apitype.JobItemsPage, error) {
	return b.c.ListJobItems(ctx, p)
}

func (b *remoteBackend) RetryJobItems(ctx context.Context, p *apitype.RetryJobItemsParams) (*apitype.RetryJobItemsResult, error) {
	return b.c.RetryJobItems(ctx, p)
}

func (b *remoteBackend) CancelJob(ctx context.Context, p *apitype.JobParams) (*apitype.JobRead, error) {
	return b.c.CancelJob(ctx, p)
}

func (b *remoteBackend) CreateSchedule(ctx context.Context, p *apitype.CreateScheduleParams) (*apitype.ScheduleRead, error) {
	return b.c.CreateSchedule(ctx, p)
}

func (b *remoteBackend) GetSchedule(ctx context.Context, p *apitype.ScheduleParams) (*apitype.ScheduleRead, error) {
	return b.c.GetSchedule(ctx, p)
}

func (b *remoteBackend) ListSchedules(ctx context.Context, p *apitype.ListSchedulesParams) (*apitype.SchedulePage, error) {
	return b.c.ListSchedules(ctx, p)
}

func (b *remoteBackend) PauseSchedule(ctx context.Context, p *apitype.PauseScheduleParams) (*apitype.ScheduleRead, error) {
	return b.c.PauseSchedule(ctx, p)
}

func (b *remoteBackend) ResumeSchedule(ctx context.Context, p *apitype.PauseScheduleParams) (*apitype.ScheduleRead, error) {
	return b.c.ResumeSchedule(ctx, p)
}

func (b *remoteBackend) TriggerSchedule(ctx context.Context, p *apitype.TriggerScheduleParams) (*apitype.FireRead, error) {
	return b.c.TriggerSchedule(ctx, p)
}

func (b *remoteBackend) DeleteSchedule(ctx context.Context, p *apitype.ScheduleParams) (*apitype.ScheduleRead, error) {
	return b.c.DeleteSchedule(ctx, p)
}

func (b *remoteBackend) ListFires(ctx context.Context, p *apitype.ListFiresParams) (*apitype.FirePage, error) {
	return b.c.ListFires(ctx, p)
}

func (b *remoteBackend) RetryDelivery(ctx context.Context, p *apitype.FireParams) (*apitype.FireRead, error) {
	return b.c.RetryDelivery(ctx, p)
}

func (b *remoteBackend) ScheduleOverview(ctx context.Context, p *apitype.ScheduleOverviewParams) (*apitype.ScheduleOverview, error) {
	return b.c.ScheduleOverview(ctx, p)
}

func (b *remoteBackend) GetInstance(ctx context.Context, p *apitype.GetInstanceParams) (*apitype.InstanceRead, error) {
	return b.c.GetInstance(ctx, p)
}

func (b *remoteBackend) ListInstances(ctx context.Context, p *apitype.ListInstancesParams) (*apitype.InstanceList, error) {
	return b.c.ListInstances(ctx, p)
}

func (b *remoteBackend) GetInstanceState(ctx context.Context, p *apitype.GetInstanceParams) (*apitype.InstanceState, error) {
	return b.c.GetInstanceState(ctx, p)
}

func (b *remoteBackend) SetInstanceState(ctx context.Context, p *apitype.SetInstanceStateParams) (*apitype.InstanceState, error) {
	return b.c.SetInstanceState(ctx, p)
}

func (b *remoteBackend) SendInstanceEvent(ctx context.Context, p *apitype.SendInstanceEventParams) (*apitype.SendInstanceEventResult, error) {
	return b.c.SendInstanceEvent(ctx, p)
}

func (b *remoteBackend) StartWorkflow(ctx context.Context, p *apitype.StartWorkflowParams) (*apitype.WorkflowRead, error) {
	return b.c.StartWorkflow(ctx, p)
}

func (b *remoteBackend) GetWorkflow(ctx context.Context, p *apitype.WorkflowParams) (*apitype.WorkflowRead, error) {
	return b.c.GetWorkflow(ctx, p)
}

func (b *remoteBackend) ListWorkflows(ctx context.Context, p *apitype.ListWorkflowsParams) (*apitype.WorkflowsPage, error) {
	return b.c.ListWorkflows(ctx, p)
}

func (b *remoteBackend) CancelWorkflow(ctx context.Context, p *apitype.WorkflowParams) (*apitype.WorkflowRead, error) {
	return b.c.CancelWorkflow(ctx, p)
}

func (b *remoteBackend) ResumeWorkflow(ctx context.Context, p *apitype.WorkflowParams) (*apitype.WorkflowRead, error) {
	return b.c.ResumeWorkflow(ctx, p)
}

func (b *remoteBackend) ExportBundle(ctx context.Context, w io.Writer, p *apitype.ExportEvidenceParams) error {
	return b.c.ExportEvidence(ctx, w, p)
}

func (b *remoteBackend) VerifySession(ctx context.Context, _ runtype.Owner, sessionID string) (*apitype.VerifyResult, error) {
	return b.c.VerifySession(ctx, sessionID)
}

func (b *remoteBackend) OpenOutput(ctx context.Context, _ runtype.Owner, ref string) (*apitype.Output, error) {
	return b.c.OpenOutput(ctx, ref)
}

func (b *remoteBackend) ListTokens(ctx context.Context, p *apitype.ListTokensParams) ([]apitype.TokenRead, error) {
	return b.c.ListTokens(ctx, p)
}

func (b *remoteBackend) CreateToken(ctx context.Context, p *apitype.CreateTokenParams) (*apitype.NewToken, error) {
	return b.c.CreateToken(ctx, p)
}

func (b *remoteBackend) RotateToken(ctx context.Context, tokenID string) (*apitype.NewToken, error) {
	return b.c.RotateToken(ctx, tokenID)
}

func (b *remoteBackend) RevokeToken(ctx context.Context, tokenID string) (*apitype.TokenRead, error) {
	return b.c.RevokeToken(ctx, tokenID)
}

// remoteErr explains the errors only a remote backend has; nil for others.
func remoteErr(err error) error {
	var ce *client.Error
	var conn *client.ConnectError
	switch {
	case errors.Is(err, client.ErrUnauthorized):
		return &exitError{code: ExitFailed, err: fmt.Errorf("%w: give the daemon's token with --token or %s, or point --data-dir at its data directory", err, envToken)}
	case errors.As(err, &conn):
		return &exitError{code: ExitFailed, err: err}
	case errors.As(err, &ce) && ce.Invalid():
		return usageErr("%v", err)
	}
	return nil
}

var (
	_ backend = (*localBackend)(nil)
	_ backend = (*remoteBackend)(nil)
)
