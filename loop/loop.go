package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/execution"
	"github.com/agentrt/agentrt/hook"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
	"github.com/agentrt/agentrt/tool"
)

// Cancellation causes. Cancel a run's context with one of them (through
// context.WithCancelCause) to end it cancelled with a matching reason.
var (
	// ErrInterrupted: a caller asked to interrupt the turn.
	ErrInterrupted = errors.New("turn interrupted")
	// ErrStop: the runtime is shutting down and cancelled running work.
	ErrStop = errors.New("runtime stopping")
	// ErrTimedOut: the turn ran past its wall-clock limit; it ends
	// timed_out.
	ErrTimedOut = errors.New("turn timed out")
	// ErrInactive: the turn made no progress for its inactivity limit; it
	// ends timed_out.
	ErrInactive = errors.New("turn inactive")
	// ErrLeaseLost: the worker no longer holds the task's lease; the run
	// stops without writing anything more (it could not).
	ErrLeaseLost = errors.New("task lease lost")
	// ErrRolledBack: a newer turn rolled the turn back; it ends cancelled
	// with reason rolled_back, and its messages leave the conversation
	// the model sees.
	ErrRolledBack = errors.New("turn rolled back")
)

// DefaultMaxToolHops applies when an Agent's MaxToolHops is zero.
const DefaultMaxToolHops = 8

// Agent is everything a run needs to know about who acts. The coordinator
// derives per-agent data once, keyed by the *Agent: do not modify an Agent
// after its first run.
type Agent struct {
	Name         string
	Instructions string
	// Candidates are the models the agent may use, in declared order;
	// routing picks one per turn by Profile and falls back along the rest.
	Candidates []*model.Candidate
	Profile    model.Profile
	// Tools is the agent's inventory. The coordinator adds complete_task
	// from the registry when RequireCompletion is set and it is missing.
	Tools             []tool.Tool
	RequireCompletion bool
	MaxToolHops       int
	// Workspace is the agent's workspace root for file tools; WorkspaceDir
	// its path. Both are empty when the agent has none.
	Workspace    *os.Root
	WorkspaceDir string
	// Sandbox is the profile the agent's tools run processes under; nil
	// lets no tool run a process (process tools fail closed).
	Sandbox *sandbox.Profile
	// Context manages the agent's context window; nil compacts only
	// when asked (compact_thread) and never resets on its own.
	Context *ContextPolicy
	// Delegates says the agent may start child tasks (subagents, jobs):
	// when its turn ends, children it leaves open are cancelled.
	Delegates bool
}

// Config holds a Coordinator's dependencies.
type Config struct {
	RuntimeID string
	Writer    *store.Writer
	// Registry validates tool input against the tools' schemas.
	Registry *tool.Registry
	Policy   policy.Evaluator
	IDs      *runtype.IDGen
	Logger   *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
	// Sleep waits between model retries; it returns early with ctx's
	// cause. Defaults to a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// ModelRetries is how many times a retryable model failure is retried
	// on one candidate in one hop. Default 2; negative means none.
	ModelRetries int
	// ModelStepTimeout bounds one hop's model step: every attempt, retry
	// wait and fallback. Default 10 minutes.
	ModelStepTimeout time.Duration
	// Ledger tracks budgets; nil means no budgets apply.
	Ledger *Ledger
	// DefaultOutputTokens is the response size cost estimates assume for
	// a candidate that declares no MaxOutputTokens. Default 1024.
	DefaultOutputTokens int
	// ActionTTL is how long an approval waits for an answer before it
	// expires (and denies). Default DefaultActionTTL; negative means
	// never.
	ActionTTL time.Duration
	// OutputCheck looks at tool output before the model sees it; nil
	// checks nothing.
	OutputCheck OutputChecker
	// PolicySnapshot describes the policy in force for a session (the
	// rules' digest, the session's mode and grants) as JSON, which a
	// compaction stores and names; nil records none.
	PolicySnapshot func(ctx context.Context, owner runtype.Owner, sessionID string) ([]byte, error)
	// Reader, when set, lets a run that ends mid-hop see which of its
	// actions a person answered meanwhile.
	Reader store.Reader
	// Scheduler runs a hop's calls by concurrency class; nil gives the
	// coordinator its own (execution.New(0)). Share one across
	// coordinators of a runtime so that resource keys hold across them.
	Scheduler *execution.Scheduler
	// Hooks run at the hook points; nil runs none.
	Hooks *hook.Runner
	// Sandbox runs tools' processes under their agent's profile.
	Sandbox *sandbox.Sandbox
	// Outputs keeps tool output over the inline limit; nil keeps it in
	// blobs. Redactor removes secrets from tool output before anything
	// keeps or shows it, from streamed model text and from blobs, and
	// argument hashes are over what it leaves (see secret.go); it should
	// be the Writer's. nil redacts nothing. OutputLimits are the
	// runtime's limits, which a tool's own override.
	Outputs      *output.Store
	Redactor     *output.Redactor
	OutputLimits output.Limits
	// Retry is how failed attempts are retried.
	Retry RetryPolicy
	// Tracer makes the spans of runs, model calls and tool calls (and a
	// turn's span when it ends), whose ids the run's events carry, and
	// feeds its metrics. nil exports and records nothing; the events
	// still get span ids by the same rules.
	Tracer *telemetry.Tracer
	// WaitInput waits until a person resolved act, which the run just
	// recorded pending (an MCP server's elicitation, or a sampling
	// request the policy asked about, during a tool call), and returns
	// it resolved. While it waits the run's task holds no worker. Nil
	// means nobody can answer: elicitation is declined, and sampling a
	// person must approve is refused.
	WaitInput func(ctx context.Context, act *runtype.Action) (*runtype.Action, error)
	// Recall finds the memories a turn's input matches; they precede the
	// turn's message as one system message (see recallMemories). Nil
	// recalls none.
	Recall RecallFunc
}

// RetryPolicy says when a failed attempt gets another: its failure is
// retryable, its kind is not in NonRetryable, and the task has had fewer
// than MaxAttempts attempts. The n-th retry waits Backoff·2ⁿ⁻¹, at most
// MaxBackoff. The zero policy (MaxAttempts 0 or 1) retries nothing.
type RetryPolicy struct {
	MaxAttempts  int
	Backoff      time.Duration
	MaxBackoff   time.Duration
	NonRetryable []runtype.FailureKind
}

// retryAt returns when the task's next attempt is due after an attempt
// failed with f, and false when the policy retries no more.
func (p RetryPolicy) retryAt(f *runtype.Failure, attempts int, now time.Time) (time.Time, bool) {
	if f == nil || !f.Retryable || attempts >= p.MaxAttempts || slices.Contains(p.NonRetryable, f.Kind) {
		return time.Time{}, false
	}
	d := p.Backoff
	for i := 1; i < attempts; i++ {
		d *= 2
		if p.MaxBackoff > 0 && d >= p.MaxBackoff {
			break
		}
	}
	if p.MaxBackoff > 0 && d > p.MaxBackoff {
		d = p.MaxBackoff
	}
	return now.Add(d), true
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Policy == nil {
		c.Policy = policy.DefaultEvaluator{}
	}
	if c.IDs == nil {
		c.IDs = runtype.NewIDGen(c.Now)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Sleep == nil {
		c.Sleep = sleep
	}
	if c.ModelRetries == 0 {
		c.ModelRetries = 2
	}
	if c.ModelStepTimeout <= 0 {
		c.ModelStepTimeout = 10 * time.Minute
	}
	if c.ActionTTL == 0 {
		c.ActionTTL = DefaultActionTTL
	}
	if c.Scheduler == nil {
		c.Scheduler = execution.New(0)
	}
	if c.DefaultOutputTokens <= 0 {
		c.DefaultOutputTokens = 1024
	}
	return c
}

func (c Config) validate() error {
	if c.Writer == nil {
		return errors.New("loop config: Writer is required")
	}
	if c.Registry == nil {
		return errors.New("loop config: Registry is required")
	}
	return nil
}

// Coordinator runs turns. It is safe for concurrent use by many runs.
type Coordinator struct {
	cfg   Config
	sched *execution.Scheduler
	plans sync.Map // *Agent → *plan
	held  heldInputs
	convs historyCache // the conversations of threads run lately
}

// New returns a Coordinator.
func New(cfg Config) (*Coordinator, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Coordinator{cfg: cfg, sched: cfg.Scheduler}, nil
}

// Prelude is work a turn needs before its first model call: a schedule's
// pre-run script. It runs in the turn's first attempt before anything of
// the attempt is written, so a crash before the attempt's start is
// recorded runs it again (it runs at least once), and once the start is
// recorded it never runs again: its context is part of the turn's first
// message. An error ends the attempt without writing (the task is tried
// again after a lease's time).
type Prelude func(ctx context.Context) (*PreludeResult, error)

// PreludeResult is what a Prelude gave.
type PreludeResult struct {
	// Name names the prelude in its facts (the pre-run tool).
	Name string
	// Context follows the turn's input in its first message.
	Context string
	// Skip ends the turn cancelled (reason pre_run_skip) with Skip as its
	// result, without a model call; Failure ends it failed (reason
	// pre_run_failed).
	Skip    string
	Failure *runtype.Failure
	// Duration is how long it ran.
	Duration time.Duration
}

// Job is one turn to run: RunAttempt takes the turn and task as read
// after the claim, with the claim's fence, worker and hooks, and reads
// the rest (History, LastSeq, Run, Actions) itself. The coordinator
// copies Turn and Task and never modifies them; the Outcome says how the
// run ended.
type Job struct {
	Agent *Agent
	Turn  *runtype.Turn
	Task  *runtype.Task
	// History is the thread's conversation before this turn, in order.
	History []runtype.Message
	// LastSeq is the thread's last message sequence when History leaves
	// messages out (those of turns a rollback took back); new messages
	// follow it.
	LastSeq int64
	// Run is the run to continue (a parked one); nil starts a new run.
	Run *runtype.Run
	// Actions are the parked run's actions (a run waiting for permission).
	Actions []*runtype.Action

	// Fence, when set, makes every write of the run conditional on the
	// worker's lease of the task (store.Batch.Fence).
	Fence *store.Fence
	// Worker names the worker running the attempt, for the run record.
	Worker string
	// Pause, when set, is asked before every model call; true parks the
	// run paused (task.paused) until it is resumed.
	Pause func() bool
	// Yield, when set, is asked before every model call; true ends the
	// attempt and leaves the task queued (reason runtime_stopped) for a
	// worker to continue: the runtime is shutting down.
	Yield func() bool
	// Progress, when set, is called after each of the run's writes.
	Progress func()
	// Start, when set, is called when the turn's first attempt is about
	// to start: its history is read and nothing is written yet.
	Start func()
	// Release makes the run's last write (it ends, parks, pauses, yields
	// or is to be retried) also release the lease Fence names, saying
	// when the task is due next; Outcome.Released reports it did.
	Release bool
	// Prelude, when set, runs in the turn's first attempt before anything
	// of it is recorded (see Prelude).
	Prelude Prelude

	// prelude is what Prelude gave, recorded with the run's start.
	prelude *PreludeResult

	// conv is where History came from when the coordinator read it: the
	// cache entry that answers which tool call ids it holds, and whether
	// the run may append to History in place.
	conv *convView
	// window is the compaction boundary History starts from (its first
	// message); nil when History is the whole conversation.
	window *runtype.Boundary
}

// Outcome is how a run ended.
type Outcome struct {
	Status  runtype.TaskStatus
	Reason  runtype.Reason
	Result  string
	Failure *runtype.Failure
	Run     runtype.Run
	// RetryAt is when a retrying task's next attempt is due.
	RetryAt time.Time
	// Released: the run's last write released the task's lease (see
	// Job.Release).
	Released bool
}

// runNew runs job's turn, which has not run before, to its end (terminal
// or parked) and returns the outcome. It returns an error only when facts
// could not be made durable; the turn's state is then whatever the store
// last committed.
func (c *Coordinator) runNew(ctx context.Context, job *Job) (*Outcome, error) {
	if v := job.conv; v != nil && v.unfiltered {
		// Borrow the cache's conversation rather than copy it (newRun
		// takes it as it is); release below gives it back.
		if msgs, ok := c.convs.lend(job.Turn.ThreadID, v); ok {
			job.History = msgs
		}
	}
	r, err := c.newRun(job)
	if err != nil {
		if job.conv != nil {
			c.convs.giveBack(job.conv)
		}
		return nil, err
	}
	out, err := r.execute(ctx)
	r.release()
	if err != nil && !errors.Is(err, store.ErrLeaseLost) { // a lost lease is another worker's to record
		c.cfg.Logger.LogAttrs(r.span.Context(context.WithoutCancel(ctx)), slog.LevelError, "run ended without durable outcome",
			slog.String("sessionId", job.Turn.SessionID), slog.String("turnId", job.Turn.ID), slog.Any("err", err))
	}
	return out, err
}

// fail ends job's turn failed without running it, for a turn that cannot
// start (its history could not be read, say). The facts say why.
func (c *Coordinator) fail(ctx context.Context, job *Job, f *runtype.Failure) (*Outcome, error) {
	r, err := c.newRun(job)
	if err != nil {
		return nil, err
	}
	r.noRecall = true // the turn never reaches a model
	b := r.startBatch(ctx)
	// The thread's history is unknown here, so the turn's input is not
	// appended to it: the turn never reached the model.
	b.Messages = b.Messages[:0]
	r.hold(b)
	return r.finish(ctx, r.batch(), runtype.StatusFailed, runtype.Reason(f.Kind), "", f)
}

// resume continues a parked run from its last recorded step: a run
// parked waiting_resource, after its budget was raised, or waiting_permission,
// once every action of its hop is resolved (job.Actions). job.History must
// hold the thread's conversation including the turn's own messages, and
// job.Run the parked run. A resumed permission wait first runs the hop's
// waiting calls as they were decided (approved ones run, with the edited
// input of an edit; denied and expired ones get the denial as their
// result). The run routes again (the candidates' state may have changed)
// and checks its budgets before its next model call, so it may park again.
func (c *Coordinator) resume(ctx context.Context, job *Job, reason runtype.Reason) (*Outcome, error) {
	status := job.Turn.Status
	if job.Run == nil || (status != runtype.StatusWaitingResource && status != runtype.StatusWaitingPermission && status != runtype.StatusPaused) {
		return nil, fmt.Errorf("resuming turn %s: it is not waiting for a resource or a permission, nor paused", job.Turn.ID)
	}
	r, err := c.newRun(job)
	if err != nil {
		return nil, err
	}
	calls := r.unanswered()
	var resolved map[string]*runtype.Action
	if status == runtype.StatusWaitingPermission {
		if resolved, err = resolvedActions(job.Turn.ID, job.Actions); err != nil {
			return nil, err
		}
	} else if len(calls) > 0 && job.Turn.StatusReason != runtype.ReasonWaitingChildren {
		return nil, fmt.Errorf("resuming turn %s: %d tool calls have no result", job.Turn.ID, len(calls))
	}
	r.toolHops = r.rec.ToolHops
	b := r.resumeBatch(reason)
	if len(calls) > 0 {
		r.hold(b)
		out, err := r.runTools(ctx, calls, resolved, true)
		if err != nil {
			out, err = r.storeFailed(ctx, err)
		}
		if out != nil || err != nil {
			r.release()
			return out, err
		}
		b = r.batch()
	}
	out, err := r.drive(ctx, b)
	r.release()
	return out, err
}

// cancelParked ends cancelled a turn that no worker runs (parked, paused,
// blocked, retrying, or whose worker was lost): its unanswered tool calls
// get not-executed results, so the thread's conversation stays valid, and
// the run records how it ended. job.History must hold the thread's
// conversation including the turn's own messages, and job.Run its latest
// run.
//
// reason is the turn's status reason: interrupted, or rolled_back.
func (c *Coordinator) cancelParked(ctx context.Context, job *Job, reason runtype.Reason) (*Outcome, error) {
	if job.Run == nil || job.Turn.Status.Terminal() {
		return nil, fmt.Errorf("cancelling turn %s: it has no attempt, or has ended", job.Turn.ID)
	}
	r, err := c.newRun(job)
	if err != nil {
		return nil, err
	}
	why := "the turn was cancelled while it waited for a decision"
	switch job.Turn.Status {
	case runtype.StatusWaitingResource:
		why = "the turn was cancelled while it waited for a budget"
		if job.Turn.StatusReason == runtype.ReasonWaitingChildren {
			why = "the turn was cancelled while it waited for the subagents or job it started"
		}
	case runtype.StatusBlocked:
		why = "the turn was cancelled while it was blocked"
		r.attemptEnded = true
	case runtype.StatusPaused:
		why = "the turn was cancelled while it was paused"
	case runtype.StatusRetrying:
		why = "the turn was cancelled while it waited to be retried"
		r.attemptEnded = true
	}
	b := r.batch()
	for _, a := range job.Actions {
		if a.Status == runtype.ActionPending {
			b.Merge(c.ResolutionFacts(resolve(a, runtype.ActionCancelled, runtype.DecisionDeny, why, "runtime", c.cfg.Now()), job.Turn.TraceID))
		}
	}
	r.skip(b, r.unanswered(), why)
	if reason == "" {
		reason = runtype.ReasonInterrupted
	}
	return r.finish(ctx, b, runtype.StatusCancelled, reason, "", failuref(runtype.FailureInterrupted, "%s", why))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// retryDelay is capped exponential backoff with jitter, or the provider's
// Retry-After when it gave one.
func retryDelay(attempt int, retryAfter time.Duration) time.Duration {
	const (
		base     = 500 * time.Millisecond
		maxDelay = 10 * time.Second
		maxAfter = 60 * time.Second
	)
	if retryAfter > 0 {
		return min(retryAfter, maxAfter)
	}
	d := min(base<<(attempt-1), maxDelay)
	return d/2 + rand.N(d/2+1)
}

// cancelReason maps a cancelled context's cause to a status reason.
func cancelReason(ctx context.Context) runtype.Reason {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrStop):
		return runtype.ReasonRuntimeStopped
	case errors.Is(cause, ErrTimedOut):
		return runtype.ReasonWallClockTimeout
	case errors.Is(cause, ErrInactive):
		return runtype.ReasonInactivityTimeout
	case errors.Is(cause, ErrRolledBack):
		return runtype.ReasonRolledBack
	}
	return runtype.ReasonInterrupted
}

// failuref builds a persisted failure.
// Its message is bounded like a preview: failures go into events.
func failuref(kind runtype.FailureKind, format string, args ...any) *runtype.Failure {
	msg, cut := event.Preview(fmt.Sprintf(format, args...), event.PreviewBytes)
	if cut {
		msg += " …"
	}
	return &runtype.Failure{Kind: kind, Message: msg}
}

// summarize lists an inventory for tool.catalog.resolved.
func summarize(tools []tool.Tool) []event.ToolSummary {
	out := make([]event.ToolSummary, len(tools))
	for i, t := range tools {
		s := t.Spec()
		out[i] = event.ToolSummary{
			Name:        s.Name,
			Source:      s.Source,
			ReadOnly:    s.Annotations.ReadOnly,
			Destructive: s.Annotations.Destructive,
			Idempotent:  s.Annotations.Idempotent,
		}
	}
	return out
}
