package agentrt

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/execution"
	"github.com/agentrt/agentrt/hook"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memstore"
	"github.com/agentrt/agentrt/store/sqlitestore"
	"github.com/agentrt/agentrt/telemetry"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/mcp"
	"github.com/agentrt/agentrt/tool/process"
)

// Errors of the runtime's lifecycle and storage.
var (
	// ErrNoStore: Config.ExistingStore was set and the data directory
	// holds no store (New's error says "no agentrt store at DIR"), or
	// Config.Store is a database no agentrt has migrated.
	ErrNoStore = errors.New("no agentrt store")
	// ErrInterrupted is the cancellation cause of interrupted turns.
	ErrInterrupted = loop.ErrInterrupted
	// ErrStop is the cancellation cause of turns cut off by StopAndCancel.
	ErrStop = loop.ErrStop
	// ErrStorage: the store's medium failed (a full disk, an I/O error, a
	// damaged file); ErrCorrupt, which wraps it: the database is damaged,
	// and Start refuses it.
	ErrStorage = store.ErrStorage
	ErrCorrupt = store.ErrCorrupt
)

func invalid(field, format string, args ...any) error {
	return &apitype.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Agent configures one agent.
type Agent struct {
	Instructions string
	// Provider is the agent's one model: shorthand for Models holding one
	// candidate named "default" with no declared price or capabilities.
	// Set Provider or Models, not both.
	Provider model.Provider
	// Models are the agent's candidate models, routed per turn by Profile
	// with fallback along the rest.
	Models  []*model.Candidate
	Profile model.Profile
	// Tools names the tools the agent may call: built-ins (read_file,
	// list_dir, write_file, complete_task) and Config.Tools.
	Tools []string
	// RequireCompletion makes complete_task the only way to complete; it is
	// added to the agent's tools automatically.
	RequireCompletion bool
	// MaxToolHops bounds model hops that run tools; default 8.
	MaxToolHops int
	// Workspace is a directory the file tools are confined to and command
	// tools run in. Empty means none.
	Workspace string
	// Sandbox is the profile the agent's processes (the shell and exec
	// tools) run under; nil means workspace_write with network none.
	Sandbox *sandbox.Profile
	// MCP are the MCP servers (Config.MCPServers) whose tools the agent
	// offers, found when the runtime starts.
	MCP []MCPUse
	// Context manages the agent's context window (compaction, reset);
	// nil compacts only when asked (CompactThread). See docs/context.md.
	Context *ContextPolicy
	// Memory configures the agent's long-term memory.
	Memory AgentMemory
	// Subagents are the agents this one may delegate to: each appears to
	// its model as a tool (see docs/subagents.md).
	Subagents []SubagentUse
	// State, when set, gives the agent's named instances a durable state
	// (docs/instances.md) and the agent the instance_state tool.
	State *StateSchema
}

// SubagentUse declares a child an agent may delegate to.
type SubagentUse struct {
	// Agent is the child agent (a key of Config.Agents).
	Agent string
	// AsTool is the tool the parent's model calls to delegate; default
	// "delegate_<agent>". Tools of one name are one tool across agents:
	// they must name the same child with the same schema.
	AsTool string
	// Description tells the parent's model what the child is for.
	Description string
	// InputSchema is the JSON Schema the delegation's input must match
	// before anything starts; default {"task": string}, whose task is
	// the child's input (any other input reaches the child as JSON).
	InputSchema json.RawMessage
	// MaxParallel bounds how many children of this declaration one
	// parent task has running at once (default 4); calls past it fail
	// and the model may call again once some settled.
	MaxParallel int
	// Workspace is what the child works on: "own" (default: its agent's
	// workspace) or "parent_readonly" (the parent's workspace, with
	// only the child's read-only tools).
	Workspace string
	// Context is what the child sees of the parent's conversation:
	// "none" (default: its input alone) or "parent" (the parent's recent
	// messages, as text, precede its input; see parentContext).
	Context string
	// AsJob makes the tool start a job (docs/subagents.md, "Jobs"): a
	// call passes items (default schema {"items": [...], "instruction":
	// string}), each worked on by the child in a task of its own, at
	// most MaxParallel at once (default DefaultJobConcurrency); the call
	// answers with a summary once every item settled. Not with
	// Workspace parent_readonly.
	AsJob bool
}

// MaxMemoryInject bounds AgentMemory.Inject.
const MaxMemoryInject = 50

// AgentMemory configures an agent's long-term memory (package memory).
// Its memory tools (memory_save, memory_search, memory_forget) are listed
// in Agent.Tools like any tool.
type AgentMemory struct {
	// Inject is how many of the agent's memories that match a turn's
	// input precede it, as one system message recorded with
	// context.resolved; 0 injects none.
	Inject int
}

// ContextPolicy is an agent's context management: when and how a run
// compacts its thread's context. See docs/context.md.
type ContextPolicy = loop.ContextPolicy

// MCPUse is an MCP server an agent uses: Allow says which of its tools
// (by the server's own names; nil allows all).
type MCPUse struct {
	Server string
	Allow  func(tool string) bool
}

// Config configures a Runtime.
type Config struct {
	// DataDir holds the SQLite database (agentrt.db) and the runtime id.
	// When both DataDir and Store are empty the runtime keeps everything in
	// memory.
	DataDir string
	// Store, when set, is used instead of opening one in DataDir. The
	// runtime does not close a store it did not open.
	Store store.Store
	// StoreLocation names Store in health (Health.Store.Location) and
	// what describes the runtime: where the store is, never a password
	// (for PostgreSQL, its URL without user, password and query). Empty
	// with Store: "" is shown; without Store the SQLite file of DataDir
	// is.
	StoreLocation string
	// ExistingStore makes New refuse, with ErrNoStore, a DataDir that
	// holds no store yet, creating nothing there (by default New creates
	// the directory and the database): for a process that only looks at
	// or answers what other processes recorded. It has no effect with
	// Store.
	ExistingStore bool
	// Agents by name.
	Agents map[string]*Agent
	// MaxDelegationDepth bounds how deep a delegation tree grows (a root
	// request is at depth 0, its subagents at 1); default
	// runtype.DefaultMaxDepth. A delegation past it fails and the
	// parent's model is told why.
	MaxDelegationDepth int
	// Webhooks are the endpoints schedules may deliver results to, by
	// name (docs/schedules.md, "Delivery"): a schedule names one, never a
	// URL, so which endpoints receive results is the operator's choice.
	Webhooks map[string]Webhook
	// Schedules are declared schedules (agentrt.yaml's schedules): Start
	// creates each of the default tenant's that does not exist yet, by
	// its Name (which must be set and unique), and brings one whose spec
	// changed up to date. Schedules made through the API are not
	// touched.
	Schedules []apitype.ScheduleSpec
	// Workflows are workflow definitions by name (agentrt.yaml's
	// workflows; docs/workflows.md): start_workflow runs one.
	Workflows map[string]*Workflow
	// WebhookClient makes deliveries; default an http.Client that
	// refuses private addresses (checked when it connects) unless a
	// webhook allows them. A client given here is used as it is: its
	// transport decides what it may reach (build it on
	// webhook.NewTransport to keep the check).
	WebhookClient *http.Client
	// Tools are registered besides the built-ins.
	Tools []tool.Tool
	// MCPServers are the MCP servers agents may use (Agent.MCP): their
	// tools are listed when the runtime starts.
	MCPServers []*mcp.Server
	// Policy decides every tool call; default policy.DefaultEvaluator
	// (allow all, "no_policy_configured"). A *policy.Kernel applies rules,
	// modes, scopes and checkers; the runtime adds to each request the
	// session's mode, the principal's roles (Principals) and the rules
	// people added by approving.
	Policy policy.Evaluator
	// Principals are the roles and scopes of principals. A principal
	// needs the operator role to respond to actions and switch modes; the
	// built-in principals (DefaultPrincipal, APIPrincipal) have it unless
	// listed here without it.
	Principals map[string]Principal
	// OutputChecks look at every tool output before the model sees it (a
	// prompt-injection gate, say), in order.
	OutputChecks []OutputCheck
	// ActionTTL is how long an approval waits before it expires and
	// denies; default 24h, negative never.
	ActionTTL time.Duration
	// ForbidSelfApproval refuses, with a *SelfApprovalError, any answer
	// but deny or fail to an action from the principal who submitted its
	// turn (policy.self_approval: forbid).
	ForbidSelfApproval bool
	// ForkGrants copies a session's standing approvals (approve_for_session
	// grants) into the sessions forked from it (policy.fork_grants: copy).
	// By default a fork starts without them: a person approved the tool
	// for that session, not for its copies.
	ForkGrants bool
	// ActionSweepInterval is how often expired actions are resolved;
	// default 30s.
	ActionSweepInterval time.Duration
	// Logger receives structured logs; default discards. The runtime
	// wraps its handler (telemetry.LogHandler) so that lines about a turn
	// carry its traceId, spanId, sessionId, turnId and the other ids.
	Logger *slog.Logger
	// TracerProvider exports the spans of turns, runs, model calls and
	// tool calls (docs/telemetry.md); nil exports none, and events still
	// carry span ids. otlp.NewTracerProvider (package telemetry/otlp)
	// builds one from the OTEL_* environment; one you build yourself
	// should use telemetry.NewIDGenerator so that turn spans have the ids
	// their children and events name. The runtime does not shut it down.
	TracerProvider trace.TracerProvider
	// EagerStart lets a submission to an idle thread claim its task in
	// its own commit and start the turn here at once, without the
	// dispatcher's claim (docs/durability.md, "Eager start"). Off by
	// default: under load a run started this way can miss the loss of
	// its lease (its running tool is then not cancelled when another
	// worker takes the turn over), which is not fixed yet.
	EagerStart bool
	// MaxConcurrentRuns bounds runs executing at once (the worker pool);
	// more wait queued. Default 64.
	MaxConcurrentRuns int
	// NoWorkers starts the runtime without its worker pool: it claims no
	// work on its own (a command that only reads or answers, next to a
	// daemon). Cancelling or pausing a task no worker holds still ends or
	// pauses it at once.
	NoWorkers bool
	// MaxQueued bounds the turns queued in the whole runtime and
	// MaxQueuedPerTenant those of one tenant; a submission above either
	// is refused with an *OverloadedError (HTTP 429 with Retry-After).
	// Defaults 10000 and 1000.
	MaxQueued          int
	MaxQueuedPerTenant int
	// Multitask is how a submission to a busy thread is handled when it
	// does not say; default MultitaskEnqueue.
	Multitask apitype.Multitask
	// LeaseTTL is how long a worker's claim on a task lasts unrenewed;
	// workers renew it every third of that. Work a dead worker held is
	// taken up again within LeaseTTL and PollInterval. Default 10s.
	LeaseTTL time.Duration
	// PollInterval is how often workers look for due work that no event
	// in this process announced (another process's, an expired lease, a
	// retry's backoff). Default LeaseTTL/4, at most 500ms.
	PollInterval time.Duration
	// Retry is how failed attempts are retried; the zero policy retries
	// none (an operator can, with RetryTask).
	Retry RetryPolicy
	// TurnTimeout bounds a turn's wall-clock time from its first start
	// (a delegated turn's from its root request's: a tree shares it),
	// across attempts; InactivityTimeout the time a run goes without
	// recording a step. A turn past either ends timed_out. Zero: no limit.
	TurnTimeout       time.Duration
	InactivityTimeout time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// ModelRetries overrides how often a retryable model failure is retried
	// within a hop (default 2; negative: never).
	ModelRetries int
	// RetrySleep overrides the wait between model retries (tests).
	RetrySleep func(ctx context.Context, d time.Duration) error
	// ModelStepTimeout bounds one model step with its retries and
	// fallbacks; default 10 minutes.
	ModelStepTimeout time.Duration
	// Budgets are the default token and cost budgets of sessions and
	// tenants; SetLimit overrides them per session or tenant.
	Budgets Budgets
	// Hooks run at the hook points, speaking Claude Code's hook contract.
	Hooks []hook.Config
	// MaxParallelTools bounds the calls of one hop running at once;
	// default 8.
	MaxParallelTools int
	// Output bounds what a tool call shows inline (more is spilled to the
	// output store, DataDir/outputs) and what it stores.
	Output output.Limits
	// Redact configures the runtime's one redactor, which removes secrets
	// from everything the runtime writes — events, messages, tool calls,
	// blobs, tool output, logs — and everything it shows. The built-in
	// token shapes apply unless Redact.NoTokenShapes; Redact.Secrets are
	// the literal values to remove (configure.Load adds the values of
	// secret_env and the configured models' API keys; a server adds its
	// API token).
	Redact output.RedactorConfig
	// Sandbox configures how sandbox profiles are enforced. The runtime
	// adds its data directory and output store to Sandbox.Hidden, whose
	// paths must be absolute: no sandboxed process sees them short of
	// full_access, and the file tools refuse them.
	Sandbox sandbox.Options
	// ProcessEnvAllow names daemon environment variables the shell and
	// exec tools pass to processes.
	ProcessEnvAllow []string
	// Health sets when Health's checks warn or fail.
	Health HealthThresholds
	// IntegrityCheck bounds the check of the store's structure that Start
	// runs before it migrates the store, when the runtime has workers and
	// the store can check itself (SQLite's quick_check, about 3 s per GB
	// from a warm cache): a damaged store is refused, and a check that
	// runs out of time is logged and the start goes on. Default
	// DefaultIntegrityCheck; negative skips the check.
	IntegrityCheck time.Duration
}

// DefaultIntegrityCheck is Config.IntegrityCheck's default.
const DefaultIntegrityCheck = 10 * time.Second

// Budgets are default limits on model spend; see loop.Budgets.
type Budgets = loop.Budgets

// MinLeaseTTL is the shortest lease a runtime accepts: workers renew
// every third of it.
const MinLeaseTTL = 30 * time.Millisecond

// RetryPolicy says when a failed attempt gets another; see
// loop.RetryPolicy.
type RetryPolicy = loop.RetryPolicy

// Budget is one scope's token and cost maxima; zero means no limit.
type Budget = loop.Budget

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Policy == nil {
		c.Policy = policy.DefaultEvaluator{}
	}
	if c.ActionSweepInterval <= 0 {
		c.ActionSweepInterval = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxConcurrentRuns <= 0 {
		c.MaxConcurrentRuns = 64
	}
	if c.MaxQueued <= 0 {
		c.MaxQueued = 10000
	}
	if c.MaxQueuedPerTenant <= 0 {
		c.MaxQueuedPerTenant = 1000
	}
	if c.Multitask == "" {
		c.Multitask = apitype.MultitaskEnqueue
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 10 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = min(c.LeaseTTL/4, 500*time.Millisecond)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Health = c.Health.withDefaults()
	if c.IntegrityCheck == 0 {
		c.IntegrityCheck = DefaultIntegrityCheck
	}
	return c
}

func (c Config) validate() error {
	if len(c.Agents) == 0 {
		return errors.New("config: no agents")
	}
	if err := checkBudgets(&c.Budgets); err != nil {
		return fmt.Errorf("config: budgets: %w", err)
	}
	if !c.Multitask.Valid() {
		return fmt.Errorf("config: unknown multitask policy %q: use enqueue, reject, interrupt or rollback", c.Multitask)
	}
	if c.Retry.MaxAttempts < 0 || c.Retry.Backoff < 0 || c.Retry.MaxBackoff < 0 || c.TurnTimeout < 0 || c.InactivityTimeout < 0 {
		return errors.New("config: retry attempts, backoffs and timeouts must not be negative")
	}
	if c.Health.StuckAfter < 0 || c.Health.QueueAgeWarn < 0 || c.Health.ApprovalAgeWarn < 0 {
		return errors.New("config: health thresholds must not be negative")
	}
	for _, p := range c.Sandbox.Hidden {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("config: hidden path %q is not absolute", p)
		}
	}
	if c.MaxDelegationDepth < 0 || c.MaxDelegationDepth > 10 {
		return fmt.Errorf("config: max delegation depth %d is out of range: use 1 to 10 (0 for the default, %d)", c.MaxDelegationDepth, runtype.DefaultMaxDepth)
	}
	if err := validateWebhooks(c.Webhooks); err != nil {
		return err
	}
	names := make(map[string]bool, len(c.Schedules))
	for _, s := range c.Schedules {
		switch {
		case s.Name == "":
			return errors.New("config: a declared schedule needs a name")
		case names[s.Name]:
			return fmt.Errorf("config: two schedules are named %q", s.Name)
		}
		names[s.Name] = true
	}
	if _, err := compileWorkflows(c.Workflows, c.Agents); err != nil {
		return err
	}
	if c.LeaseTTL > 0 && c.LeaseTTL < MinLeaseTTL {
		return fmt.Errorf("config: lease TTL %s is shorter than the minimum of %s", c.LeaseTTL, MinLeaseTTL)
	}
	for name, a := range c.Agents {
		if !tool.ValidName(name) {
			return fmt.Errorf("config: invalid agent name %q: use 1 to 64 letters, digits, '_' or '-'", name)
		}
		if a == nil || (a.Provider == nil && len(a.Models) == 0) {
			return fmt.Errorf("config: agent %q has no model provider", name)
		}
		if a.Provider != nil && len(a.Models) > 0 {
			return fmt.Errorf("config: agent %q sets both Provider and Models", name)
		}
		if a.Memory.Inject < 0 || a.Memory.Inject > MaxMemoryInject {
			return fmt.Errorf("config: agent %q: memory inject %d is out of range: use 0 to %d", name, a.Memory.Inject, MaxMemoryInject)
		}
		names := make(map[string]bool, len(a.Models))
		for i, c := range a.Models {
			switch {
			case c == nil || c.Provider == nil:
				return fmt.Errorf("config: agent %q: model %d has no provider", name, i)
			case c.Name == "":
				return fmt.Errorf("config: agent %q: model %d has no name", name, i)
			case names[c.Name]:
				return fmt.Errorf("config: agent %q: model %q is listed twice", name, c.Name)
			}
			names[c.Name] = true
			if err := checkCandidate(c); err != nil {
				return fmt.Errorf("config: agent %q: model %q: %w", name, c.Name, err)
			}
		}
		if err := checkProfile(&a.Profile); err != nil {
			return fmt.Errorf("config: agent %q: %w", name, err)
		}
		if a.MaxToolHops < 0 {
			return fmt.Errorf("config: agent %q: max tool hops must not be negative", name)
		}
		if err := checkState(a.State); err != nil {
			return fmt.Errorf("config: agent %q: %w", name, err)
		}
		if a.State != nil && a.State.Migrate != "" && !slices.Contains(a.Tools, a.State.Migrate) {
			return fmt.Errorf("config: agent %q: state migrate tool %q is not one of its tools", name, a.State.Migrate)
		}
	}
	return nil
}

// checkCandidate checks what routing and pricing rely on.
func checkCandidate(c *model.Candidate) error {
	for _, v := range []float64{c.Price.InputPerMTok, c.Price.CachedInputPerMTok, c.Price.OutputPerMTok} {
		if !finiteNonNegative(v) {
			return fmt.Errorf("prices must be finite and not negative, got %+v", c.Price)
		}
	}
	switch {
	case c.ContextWindow < 0:
		return errors.New("context window must not be negative")
	case c.MaxOutputTokens < 0:
		return errors.New("max output tokens must not be negative")
	case c.TypicalLatency < 0:
		return errors.New("typical latency must not be negative")
	}
	for _, k := range c.Capabilities {
		if !slices.Contains(model.Capabilities, k) {
			return fmt.Errorf("unknown capability %q", k)
		}
	}
	return nil
}

func checkProfile(p *model.Profile) error {
	switch p.Prefer {
	case "", model.PreferOrder, model.PreferCost, model.PreferLatency:
	default:
		return fmt.Errorf("profile: unknown preference %q (order, cost or latency)", p.Prefer)
	}
	if p.MinContextWindow < 0 {
		return errors.New("profile: min context window must not be negative")
	}
	for _, k := range p.Requires {
		if !slices.Contains(model.Capabilities, k) {
			return fmt.Errorf("profile: unknown capability %q", k)
		}
	}
	return nil
}

func checkBudgets(b *Budgets) error {
	for _, bud := range []Budget{b.Session, b.Tenant} {
		if bud.MaxTokens < 0 || !finiteNonNegative(bud.MaxCostUSD) {
			return fmt.Errorf("maxima must not be negative, got %+v", bud)
		}
	}
	switch b.TenantWindow {
	case "", "total", "day", "month":
	default:
		return fmt.Errorf("unknown tenant window %q (total, day or month)", b.TenantWindow)
	}
	if !finiteNonNegative(b.LowThreshold) || b.LowThreshold > 1 {
		return fmt.Errorf("low threshold must be a fraction from 0 to 1, got %g", b.LowThreshold)
	}
	return nil
}

func finiteNonNegative(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// Runtime runs agents: it accepts turns, executes them on the coordinator
// and serves their durable facts. Create it with New, then Start; Stop
// when done. All methods are safe for concurrent use.
type Runtime struct {
	cfg       Config
	store     store.Store
	ownsStore bool
	writer    *store.Writer
	bus       *event.Bus
	// settles wakes WaitTurn when a worker lets go of a turn's task; its
	// events are only filter keys, never stored.
	settles   *event.Bus
	registry  *tool.Registry
	ledger    *loop.Ledger
	coord     *loop.Coordinator
	gov       *governor // nil without a configured policy
	stopSweep context.CancelFunc
	sweepDone chan struct{} // closed when the action sweeper has returned
	watchDone chan struct{} // closed when the log watcher has returned (subscribe.go)
	// listenDone is closed when the listener for other processes'
	// commits has returned (notify.go).
	listenDone chan struct{}
	// ownCursor is the newest cursor this process committed.
	ownCursor atomic.Int64
	agents    map[string]*loop.Agent
	// workflows are Config.Workflows, compiled.
	workflows map[string]*workflowDef
	ids       *runtype.IDGen
	runtimeID string
	startedAt time.Time
	// metrics counts what this process did; tracer feeds it (see
	// telemetry.go).
	metrics *telemetry.Metrics
	tracer  *telemetry.Tracer

	// The worker pool: see worker.go.
	workerID     string
	wake         chan struct{} // kicks the dispatcher
	dispatchDone chan struct{} // closed when the dispatcher has returned
	// outputCheck is the coordinator's output checker (nil: none), which
	// a schedule's pre-run output passes too.
	outputCheck loop.OutputChecker
	// The scheduler: see schedule.go.
	schedWake     chan struct{} // kicks the scheduler
	schedulerDone chan struct{} // closed when the scheduler has returned
	stopClaiming  context.CancelFunc
	avgRun        atomic.Int64 // recent mean run time (ns), for Retry-After

	// The execution layer: see execution.go.
	sandbox   *sandbox.Sandbox
	outputs   *output.Store
	outputTmp string // the output store's directory when it is temporary
	// redactor is the runtime's one redactor: the store's writer, the
	// loop, previews and logs all use it.
	redactor *output.Redactor
	hooks    *hook.Runner
	procs    *process.Manager
	tenants  sync.Map // session id → tenant id, for background process events
	// mcp holds the MCP servers' capability sessions (mcp.go); nil
	// without servers.
	mcp *mcp.Manager

	baseCtx   context.Context
	cancelAll context.CancelCauseFunc
	wg        sync.WaitGroup // worker goroutines

	mu     sync.Mutex
	state  lifecycle         // guarded by mu
	claims map[string]*claim // guarded by mu: the tasks this runtime's workers hold, by id
	// heartbeatTicks makes the ticks a worker renews its lease on: a
	// time.Ticker's, or a test's own.
	heartbeatTicks func(every time.Duration) (ticks <-chan time.Time, stop func())
	// eagerSlots counts the worker slots that submissions in flight have
	// reserved to start their turns at once (eager start, submit.go).
	// Guarded by mu.
	eagerSlots int
	// waiting counts the claims whose runs wait for a person's answer
	// during a tool call (waitInput): they hold no worker. Guarded by mu.
	waiting int
	// tokenUses is when this process last recorded each token's use
	// (token.go): it only spares the store a write per request, the
	// store's LastUsedAt is the truth. Guarded by mu.
	tokenUses map[string]time.Time
}

type lifecycle int

const (
	stateNew lifecycle = iota
	stateRunning
	stateStopping
	stateStopped
)

// New builds a Runtime from cfg. It opens (but does not migrate) the store.
func New(cfg Config) (*Runtime, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.ExistingStore {
		if err := storeExists(cfg.DataDir, cfg.Store, cfg.StoreLocation); err != nil {
			return nil, err
		}
	}
	cfg.Redact.Secrets = append(slices.Clone(cfg.Redact.Secrets), webhookSecrets(cfg.Webhooks)...)
	redactor := output.NewRedactor(cfg.Redact)
	cfg.Logger = slog.New(telemetry.RedactHandler(telemetry.LogHandler(cfg.Logger.Handler()), redactor.Text))
	metrics := telemetry.NewMetrics()
	rt := &Runtime{
		redactor:  redactor,
		metrics:   metrics,
		tracer:    telemetry.NewTracer(cfg.TracerProvider, metrics),
		cfg:       cfg,
		bus:       &event.Bus{},
		ids:       runtype.NewIDGen(cfg.Now),
		wake:      make(chan struct{}, 1),
		schedWake: make(chan struct{}, 1),
		settles:   &event.Bus{},
		claims:    make(map[string]*claim),

		heartbeatTicks: tickerTicks,
	}
	if err := rt.setUpExecution(); err != nil {
		rt.closeExecution()
		return nil, err
	}
	reg, err := newToolRegistry(rt.procs, rt.memories, cfg.Now, cfg.Tools)
	if err != nil {
		rt.closeExecution()
		return nil, err
	}
	for _, a := range cfg.Agents {
		if a.State != nil {
			if err := reg.Register(rt.instanceStateTool()); err != nil {
				rt.closeExecution()
				return nil, fmt.Errorf("registering %s: %w", InstanceStateTool, err)
			}
			break
		}
	}
	rt.registry = reg
	if rt.workflows, err = compileWorkflows(cfg.Workflows, cfg.Agents); err != nil {
		rt.closeExecution()
		return nil, err
	}
	rt.agents = make(map[string]*loop.Agent, len(cfg.Agents))
	for name, a := range cfg.Agents {
		la, err := rt.agent(name, a)
		if err != nil {
			rt.closeAgents()
			return nil, err
		}
		rt.agents[name] = la
	}
	if err := rt.wireSubagents(); err != nil {
		rt.closeAgents()
		return nil, err
	}
	if err := rt.openStore(); err != nil {
		rt.closeAgents()
		return nil, err
	}
	recall, err := rt.recaller()
	if err != nil {
		rt.closeAgents()
		return nil, err
	}
	rt.writer = store.NewWriter(rt.store, store.WriterConfig{Notify: rt.notify, Now: cfg.Now, Redactor: rt.redactor})
	rt.ledger = loop.NewLedger(rt.store, cfg.Budgets, cfg.Now)
	evaluator := cfg.Policy
	if _, none := cfg.Policy.(policy.DefaultEvaluator); !none {
		rt.gov = &governor{next: cfg.Policy, store: rt.store, principals: cfg.Principals,
			modes: make(map[string]policy.Mode), grants: make(map[string][]*runtype.PolicyGrant)}
		evaluator = rt.gov
	}
	var outputCheck loop.OutputChecker
	if len(cfg.OutputChecks) > 0 {
		outputCheck = outputChecks(cfg.OutputChecks)
	}
	coord, err := loop.New(loop.Config{
		RuntimeID:        rt.runtimeID,
		Writer:           rt.writer,
		Registry:         rt.registry,
		Policy:           evaluator,
		ActionTTL:        cfg.ActionTTL,
		Reader:           rt.store,
		OutputCheck:      outputCheck,
		IDs:              rt.ids,
		Logger:           cfg.Logger,
		Now:              cfg.Now,
		Sleep:            cfg.RetrySleep,
		ModelRetries:     cfg.ModelRetries,
		ModelStepTimeout: cfg.ModelStepTimeout,
		Ledger:           rt.ledger,
		Scheduler:        execution.New(cfg.MaxParallelTools),
		Hooks:            rt.hooks,
		Sandbox:          rt.sandbox,
		Outputs:          rt.outputs,
		Redactor:         rt.redactor,
		OutputLimits:     cfg.Output,
		Retry:            cfg.Retry,
		Tracer:           rt.tracer,
		WaitInput:        rt.waitInput,
		PolicySnapshot:   rt.policySnapshot,
		Recall:           recall,
	})
	if err != nil {
		rt.closeAgents()
		return nil, err
	}
	rt.coord = coord
	rt.outputCheck = outputCheck
	return rt, nil
}

func (rt *Runtime) agent(name string, a *Agent) (*loop.Agent, error) {
	names := a.Tools
	if a.State != nil && !slices.Contains(names, InstanceStateTool) {
		names = append(slices.Clip(names), InstanceStateTool)
	}
	tools, err := rt.registry.Inventory(names)
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", name, err)
	}
	candidates := a.Models
	if a.Provider != nil {
		candidates = []*model.Candidate{{Name: "default", Provider: a.Provider}}
	}
	la := &loop.Agent{
		Name:              name,
		Instructions:      a.Instructions,
		Candidates:        candidates,
		Profile:           a.Profile,
		Tools:             tools,
		RequireCompletion: a.RequireCompletion,
		MaxToolHops:       a.MaxToolHops,
		Sandbox:           a.Sandbox,
		Context:           a.Context,
	}
	if la.Sandbox == nil {
		p, _ := sandbox.Builtin(string(sandbox.WorkspaceWrite))
		la.Sandbox = &p
	}
	if a.Workspace != "" {
		dir, err := filepath.Abs(a.Workspace)
		if err != nil {
			return nil, fmt.Errorf("agent %q: resolving workspace: %w", name, err)
		}
		if err := rt.checkNotHidden(dir); err != nil {
			return nil, fmt.Errorf("agent %q: %w", name, err)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, fmt.Errorf("agent %q: opening workspace: %w", name, err)
		}
		la.Workspace, la.WorkspaceDir = root, dir
	}
	return la, nil
}

// checkNotHidden refuses a workspace inside a path hidden from tools (the
// data directory, the config, a key file): no tool could use it.
func (rt *Runtime) checkNotHidden(workspace string) error {
	hidden, err := rt.sandbox.HiddenPaths()
	if err != nil {
		return fmt.Errorf("resolving the paths hidden from tools: %w", err)
	}
	real, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return nil // opening it says why
	}
	for _, h := range hidden {
		if real == h || strings.HasPrefix(real, h+string(filepath.Separator)) {
			return fmt.Errorf("workspace %s lies in %s, which tools never see (the data dir, the config or a key file)", workspace, h)
		}
	}
	return nil
}

func (rt *Runtime) closeAgents() {
	if rt.mcp != nil {
		rt.mcp.Close()
	}
	rt.closeExecution()
	for _, a := range rt.agents {
		if a.Workspace != nil {
			a.Workspace.Close()
		}
	}
}

// openStore opens the configured store and settles the runtime id: stable
// across restarts when there is a data directory.
func (rt *Runtime) openStore() error {
	switch {
	case rt.cfg.Store != nil:
		rt.store = rt.cfg.Store
	case rt.cfg.DataDir != "":
		if err := privateDir(rt.cfg.DataDir, rt.cfg.Logger); err != nil {
			return err
		}
		s, err := sqlitestore.Open(context.Background(), rt.dbPath(), sqlitestore.Options{})
		if errors.Is(err, store.ErrCorrupt) {
			return refuseDamaged("store "+rt.dbPath(), err)
		}
		if err != nil {
			return fmt.Errorf("opening store: %w", err)
		}
		rt.store, rt.ownsStore = s, true
	default:
		rt.store, rt.ownsStore = memstore.New(), true
	}
	rt.runtimeID = rt.ids.New(runtype.PrefixRuntime)
	if rt.cfg.DataDir != "" {
		id, err := stableRuntimeID(rt.cfg.DataDir, rt.runtimeID)
		if err != nil {
			if rt.ownsStore {
				rt.store.Close()
			}
			return err
		}
		rt.runtimeID = id
	}
	return nil
}

// dbPath is the SQLite file of the data directory.
func (rt *Runtime) dbPath() string { return filepath.Join(rt.cfg.DataDir, storeFile) }

// checkIntegrity checks the store's structure within Config.IntegrityCheck
// before it is migrated and served; see there. Only a runtime with
// workers checks: a command that only reads, next to a daemon, need not
// pay for it each time.
func (rt *Runtime) checkIntegrity(ctx context.Context) error {
	c, ok := rt.store.(store.IntegrityChecker)
	if !ok || rt.cfg.NoWorkers || rt.cfg.IntegrityCheck < 0 {
		return nil
	}
	what := "store"
	if rt.cfg.Store == nil && rt.cfg.DataDir != "" {
		what = "store " + rt.dbPath()
	}
	cctx, cancel := context.WithTimeout(ctx, rt.cfg.IntegrityCheck)
	defer cancel()
	start := time.Now()
	err := c.CheckIntegrity(cctx)
	switch {
	case err == nil:
		rt.cfg.Logger.Debug("checked the store's integrity", "took", time.Since(start))
		return nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		rt.cfg.Logger.Warn("the integrity check of the "+what+" did not finish in time; starting without it",
			"limit", rt.cfg.IntegrityCheck)
		return nil
	case errors.Is(err, store.ErrCorrupt):
		return refuseDamaged(what, err)
	}
	return fmt.Errorf("checking the integrity of %s: %w", what, err)
}

// refuseDamaged is the error of a start on a damaged store.
func refuseDamaged(what string, err error) error {
	return fmt.Errorf("refusing the damaged %s (restore it from a backup; see docs/durability.md): %w", what, err)
}

// privateDir makes dir, or an existing dir open to others, readable by
// its owner only (0700): the data directory holds the API token and every
// conversation. A directory it cannot tighten is logged.
func privateDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating data dir: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("reading data dir: %w", err)
	}
	if mode := fi.Mode().Perm(); mode&0o077 != 0 {
		if err := os.Chmod(dir, mode&0o700); err != nil {
			log.Warn("the data dir is open to other users and cannot be made private", "dir", dir, "mode", mode.String(), "error", err)
		} else {
			log.Warn("made the data dir private: it was open to other users", "dir", dir, "was", mode.String())
		}
	}
	return nil
}

// storeFile is the SQLite database in a data directory.
const storeFile = "agentrt.db"

// storeExists returns ErrNoStore unless st, or else the SQLite file of
// dir, holds a store.
func storeExists(dir string, st store.Store, location string) error {
	if st != nil {
		// A database no agentrt migrated holds no store: commands that
		// read one must not make one there.
		if info := st.Info(); info.SchemaLatest > 0 && info.SchemaVersion == 0 {
			return fmt.Errorf("%w in %s", ErrNoStore, cmp.Or(location, "the "+info.Driver+" database"))
		}
		return nil
	}
	if dir == "" {
		return fmt.Errorf("%w: no data directory", ErrNoStore)
	}
	fi, err := os.Stat(filepath.Join(dir, storeFile))
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%w at %s", ErrNoStore, dir)
	case err != nil:
		return fmt.Errorf("looking for the store: %w", err)
	}
	return nil
}

func stableRuntimeID(dir, fresh string) (string, error) {
	path := filepath.Join(dir, "runtime-id")
	b, err := os.ReadFile(path)
	if err == nil && len(b) > 0 {
		return string(b), nil
	}
	if err := os.WriteFile(path, []byte(fresh), 0o600); err != nil {
		return "", fmt.Errorf("writing runtime id: %w", err)
	}
	return fresh, nil
}

// Start migrates the store and starts accepting turns.
func (rt *Runtime) Start(ctx context.Context) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.state != stateNew {
		return errors.New("runtime already started")
	}
	if err := rt.checkIntegrity(ctx); err != nil {
		return err
	}
	if err := rt.store.Migrate(ctx); err != nil {
		return fmt.Errorf("migrating store: %w", err)
	}
	if !rt.cfg.NoWorkers {
		// (Before the runtime counts as started: a refused declaration
		// leaves it new, and Stop closes it.)
		if err := rt.declareSchedules(ctx); err != nil {
			return err
		}
	}
	rt.baseCtx, rt.cancelAll = context.WithCancelCause(context.Background())
	if err := rt.startMCP(ctx); err != nil {
		return err
	}
	rt.startedAt = rt.cfg.Now()
	rt.state = stateRunning
	var sweepCtx context.Context
	sweepCtx, rt.stopSweep = context.WithCancel(rt.baseCtx)
	rt.sweepDone = make(chan struct{})
	go rt.sweepActions(sweepCtx, rt.cfg.ActionSweepInterval)
	rt.watchDone = make(chan struct{})
	go rt.watchLog(sweepCtx)
	rt.listenDone = make(chan struct{})
	go rt.listen(sweepCtx)
	// Work left in the store by an earlier process (queued turns, tasks
	// whose worker died, retries) is due: the dispatcher's first look
	// finds it.
	rt.workerID = newWorkerID(rt.runtimeID)
	var claimCtx context.Context
	claimCtx, rt.stopClaiming = context.WithCancel(rt.baseCtx)
	rt.dispatchDone = make(chan struct{})
	rt.schedulerDone = make(chan struct{})
	if rt.cfg.NoWorkers {
		close(rt.dispatchDone)
		close(rt.schedulerDone)
		return nil
	}
	go rt.dispatch(claimCtx)
	go rt.runScheduler(claimCtx)
	return nil
}

// Stop shuts the runtime down gracefully: it stops accepting turns and
// claiming work, and lets running attempts finish the step they are in;
// at their next step they end and leave their task queued
// (runtime_stopped) for the next start to go on from. Queued and parked
// work stays in the store. If ctx ends first, the attempts still running
// are abandoned as a crash would leave them: their leases are ended so
// that they write nothing more, and the next start recovers them from
// their last recorded step (DESIGN.md §5). Then the writer flushes and
// the store closes.
func (rt *Runtime) Stop(ctx context.Context) error {
	return rt.stop(ctx, false)
}

// StopAndCancel is Stop that cancels running turns at once: they end
// cancelled with reason runtime_stopped.
func (rt *Runtime) StopAndCancel(ctx context.Context) error {
	return rt.stop(ctx, true)
}

func (rt *Runtime) stop(ctx context.Context, cancelNow bool) error {
	rt.mu.Lock()
	switch rt.state {
	case stateNew:
		rt.state = stateStopped
		rt.mu.Unlock()
		rt.closeAgents()
		if rt.ownsStore {
			return rt.store.Close()
		}
		return nil
	case stateStopping, stateStopped:
		rt.mu.Unlock()
		return nil
	}
	rt.state = stateStopping
	rt.mu.Unlock()
	rt.stopSweep()
	<-rt.sweepDone
	<-rt.watchDone
	<-rt.listenDone
	rt.stopClaiming()
	<-rt.dispatchDone
	<-rt.schedulerDone

	if cancelNow {
		rt.cancelAll(ErrStop)
	}
	done := make(chan struct{})
	go func() { rt.wg.Wait(); close(done) }()
	var stuck error
	select {
	case <-done:
	case <-ctx.Done():
		rt.abandon()
		// Abandoned runs stop promptly, unless a tool ignores its
		// cancellation; do not wait for such a tool forever.
		grace := time.NewTimer(stopGrace)
		select {
		case <-done:
		case <-grace.C:
			rt.mu.Lock()
			stuck = fmt.Errorf("stopping: %d attempts did not stop within %s of being abandoned", len(rt.claims), stopGrace)
			rt.mu.Unlock()
		}
		grace.Stop()
	}
	rt.cancelAll(ErrStop)
	rt.procs.Close() // background processes end, and say so, before the writer stops
	if rt.mcp != nil {
		rt.mcp.Close() // capability sessions are recorded closed
	}
	werr := rt.writer.Stop(context.WithoutCancel(ctx))
	rt.closeAgents()
	var cerr error
	if rt.ownsStore {
		cerr = rt.store.Close()
	}
	rt.mu.Lock()
	rt.state = stateStopped
	rt.mu.Unlock()
	return errors.Join(stuck, werr, cerr)
}

// stopGrace bounds how long Stop waits for cancelled runs to end.
const stopGrace = 5 * time.Second

// abandon ends the leases of the attempts still running and cancels them:
// they write nothing more (their fence fails), and the next start finds
// their tasks due at once and recovers them like a crash's.
func (rt *Runtime) abandon() {
	rt.mu.Lock()
	claims := make([]*claim, 0, len(rt.claims))
	for _, c := range rt.claims {
		claims = append(claims, c)
	}
	rt.mu.Unlock()
	now := rt.cfg.Now().UTC()
	for _, c := range claims {
		// A claim by nobody: the epoch moves on, and the task is due now.
		err := rt.writer.Lease(context.Background(), &store.LeaseChange{
			TenantID: c.task.TenantID, TaskID: c.task.ID, Epoch: c.epoch, Claim: true, ExpiresAt: now,
		})
		if err != nil && !errors.Is(err, store.ErrLeaseLost) {
			rt.cfg.Logger.Error("abandoning task", "taskId", c.task.ID, "err", err)
		}
		c.cancel(loop.ErrLeaseLost)
	}
}

// RuntimeID identifies this runtime installation in events.
func (rt *Runtime) RuntimeID() string { return rt.runtimeID }

// Logger returns the runtime's logger: Config.Logger with the runtime's
// correlation ids added and its secrets redacted. Components built around
// the runtime (an HTTP server) log through it.
func (rt *Runtime) Logger() *slog.Logger { return rt.cfg.Logger }

// AgentNames returns the configured agents' names.
func (rt *Runtime) AgentNames() []string {
	names := make([]string, 0, len(rt.agents))
	for n := range rt.agents {
		names = append(names, n)
	}
	return names
}

// Version is the module version agentrt was built from.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
