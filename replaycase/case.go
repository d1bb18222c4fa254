// Package replaycase describes one recorded request for replay and compares
// a replay with the recording.
//
// A Case holds what a replay needs and what it is compared with: the
// request's agent and input, the model's outputs in order (text and tool
// calls with their exact arguments), and its steps — every tool call in
// call order, with the permission decision it got (allow, deny or ask,
// with the deciding source and rules), a person's answer to an ask, and
// the result the model saw (status and SHA-256). agentrt builds a Case
// from a stored request (Runtime.ReplayCase), evidence bundles carry one
// as replay-case.json, and `agentrt replay` re-runs it under the current
// configuration and compares the two with Compare.
//
// The JSON encoding of Case and Diff is a public, versioned format
// (docs/replay.md): fields are only ever added.
package replaycase

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/runtype"
)

// FormatVersion is the version of the Case format this package writes
// and reads.
const FormatVersion = 1

// Case is one recorded request (turn), ready to replay.
//
// Persisted: written as JSON (replay-case.json in evidence bundles, or a
// file of its own); fields are only ever added.
type Case struct {
	// Version is FormatVersion.
	Version int `json:"version"`
	// RuntimeID names the runtime installation that recorded it.
	RuntimeID string `json:"runtimeId,omitempty"`
	// TenantID and PrincipalID are who submitted the request; the replay
	// runs as the same owner, so role-based rules decide the same way.
	TenantID    string `json:"tenantId"`
	PrincipalID string `json:"principalId"`
	SessionID   string `json:"sessionId"`
	ThreadID    string `json:"threadId"`
	TurnID      string `json:"turnId"`
	// Agent is the agent that ran the request; Input the user's message.
	Agent string `json:"agent"`
	Input string `json:"input"`
	// PolicyMode is the session's permission mode when the case was made
	// (empty: the agent's default).
	PolicyMode string `json:"policyMode,omitempty"`
	// Status is the request's status when the case was made, with its
	// Failure when it failed.
	Status  string           `json:"status"`
	Failure *runtype.Failure `json:"failure,omitempty"`
	// ModelOutputs are the model's answers, in order: one per model call
	// that answered.
	ModelOutputs []ModelOutput `json:"modelOutputs"`
	// Steps are the request's tool calls, in call order.
	Steps []Step `json:"steps"`
	// Contexts are the fingerprints of the contexts the request's model
	// calls sent, one a hop in order (the last attempt of each), as their
	// model.requested events recorded them. Empty in a case made before
	// agentrt recorded them.
	Contexts []Context `json:"contexts,omitempty"`
	// HistoryMessages counts the thread's messages from before the
	// request that its first model call saw: a replay, which starts a
	// fresh thread, cannot send the same contexts when there are some.
	HistoryMessages int `json:"historyMessages,omitempty"`
	// History is the context the request's run started from: the
	// thread's messages before the request as its model saw them (after
	// a compaction, the boundary message and the messages after the ones
	// it covers), in Seq order. A replay seeds its thread with them, so
	// that its first call sends the same context. Empty for a request
	// that started its thread, and in a case made before agentrt kept it.
	History []HistoryMessage `json:"history,omitempty"`
	// ContextWindow is the context window, in tokens, of the model the
	// request ran on (0: it declared none): an agent's context policy
	// without a window of its own keeps within it.
	ContextWindow int `json:"contextWindow,omitempty"`
	// Compactions are the compactions of the context the request's run
	// made, in order (context.compaction.completed and failed). A replay
	// plays their recorded summaries as the summary model's answers.
	Compactions []Compaction `json:"compactions,omitempty"`
}

// HistoryMessage is one message of a request's starting context.
type HistoryMessage struct {
	Seq    int64  `json:"seq"`
	TurnID string `json:"turnId"`
	// PrincipalID is who the message's turn ran for.
	PrincipalID string              `json:"principalId,omitempty"`
	Role        runtype.Role        `json:"role"`
	Content     string              `json:"content"`
	ToolCalls   []ToolCall          `json:"toolCalls,omitempty"`
	ToolCallID  string              `json:"toolCallId,omitempty"`
	IsError     bool                `json:"isError,omitempty"`
	Reasoning   []runtype.Reasoning `json:"reasoning,omitempty"`
	// Boundary marks a compaction's summary (or a reset's handoff) that
	// stands in for the messages it covers.
	Boundary *runtype.Boundary `json:"boundary,omitempty"`
}

// Compaction is one compaction of a request's context.
type Compaction struct {
	// Hop is the model call it came before; 0 when no call followed.
	Hop      int    `json:"hop"`
	Trigger  string `json:"trigger"`
	Strategy string `json:"strategy"`
	// Fallback is the strategy that stood in when Strategy failed.
	Fallback string `json:"fallback,omitempty"`
	// FromSeq and ThroughSeq are the thread's messages it covered.
	FromSeq    int64 `json:"fromSeq"`
	ThroughSeq int64 `json:"throughSeq"`
	// Summary is the text it wrote: the summary model's answer, the
	// digest of drop_tool_outputs, or a reset's handoff document. Empty
	// when it failed.
	Summary string `json:"summary,omitempty"`
	// Failure says why it failed, or why Strategy did when Fallback
	// stood in.
	Failure string `json:"failure,omitempty"`
}

// Called reports whether the compaction asked the summary model: its
// strategy is not drop_tool_outputs, which makes no model call.
func (k *Compaction) Called() bool {
	return k.Strategy != runtype.StrategyDropToolOutputs
}

// Context is the fingerprint of one model call's context
// (event.ContextFingerprint): its hash, and the parts it covers.
type Context struct {
	Hop             int    `json:"hop"`
	Hash            string `json:"hash"`
	MessageCount    int    `json:"messageCount"`
	InstructionsRef string `json:"instructionsRef"`
	ToolsRef        string `json:"toolsRef"`
}

// ModelOutput is one answer of the model.
type ModelOutput struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// Usage is the token usage the provider reported for the call; a
	// replay reports it again, as a run measures its context by it
	// (when to compact).
	Usage *runtype.Usage `json:"usage,omitempty"`
}

// ToolCall is a tool call as the model requested it.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments are the exact argument text the model produced.
	Arguments string `json:"arguments"`
}

// Step is one tool call of a request and what became of it.
type Step struct {
	// Index counts the request's tool calls from 1, in call order.
	Index int `json:"index"`
	// Output is the (1-based) model output that requested the call.
	Output     int    `json:"output"`
	ToolCallID string `json:"toolCallId"`
	Tool       string `json:"tool"`
	// ArgumentsSHA256 is the hex SHA-256 of the call's canonical JSON
	// arguments (as in permission.evaluated).
	ArgumentsSHA256 string `json:"argumentsSha256"`
	Outcome
}

// Outcome is what was decided about a call and what it returned.
type Outcome struct {
	// Decision is the policy's first decision on the call: allow, deny or
	// ask; empty when the call never reached the policy (an unknown tool,
	// invalid arguments).
	Decision string `json:"decision,omitempty"`
	// Source says what decided: rule, mode, hook, checker, human, host or
	// default. RuleIDs are the rules that took part, the deciding one
	// first.
	Source     string   `json:"source,omitempty"`
	RuleIDs    []string `json:"ruleIds,omitempty"`
	ReasonCode string   `json:"reasonCode,omitempty"`
	// Human is a person's answer to an ask (approve, approve_for_session,
	// approve_always, deny, edit), or how the ask ended without one
	// (expired, cancelled). Empty when the call was not asked about or
	// the ask is still pending. EditedInput is the input of an edit.
	Human       string `json:"human,omitempty"`
	EditedInput string `json:"editedInput,omitempty"`
	// HumanBy is the principal who answered; HumanMessage what they said.
	HumanBy      string `json:"humanBy,omitempty"`
	HumanMessage string `json:"humanMessage,omitempty"`
	// Escalation is a person's answer to a request to rerun the call
	// under a wider sandbox profile, when there was one.
	Escalation string `json:"escalation,omitempty"`
	// ResultStatus is the call's status: completed or failed (a denied
	// call fails); empty when it has no result. FailureKind says why it
	// failed.
	ResultStatus string `json:"resultStatus,omitempty"`
	FailureKind  string `json:"failureKind,omitempty"`
	// ResultSHA256 is the hex SHA-256 of the result the model saw;
	// ResultPreview its beginning.
	ResultSHA256  string `json:"resultSha256,omitempty"`
	ResultPreview string `json:"resultPreview,omitempty"`
}

// ContentSHA256 is the hex SHA-256 of a result's text, as ResultSHA256
// holds it.
func ContentSHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// ErrInvalid is wrapped by the errors of Parse and Validate.
var ErrInvalid = errors.New("invalid replay case")

// Parse decodes and validates a Case from its JSON. Unknown fields are
// ignored (a newer agentrt may add some); a newer format version is an
// error.
func Parse(data []byte) (*Case, error) {
	var c Case
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%w: decoding JSON: %v", ErrInvalid, err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks what a replay relies on: the version, the agent, the
// model outputs and that the steps are the outputs' tool calls.
func (c *Case) Validate() error {
	var probs []string
	switch {
	case c.Version == 0:
		probs = append(probs, "version is missing")
	case c.Version > FormatVersion:
		probs = append(probs, fmt.Sprintf("version %d is newer than this agentrt reads (%d)", c.Version, FormatVersion))
	}
	if c.Agent == "" {
		probs = append(probs, "agent is missing")
	}
	if c.Input == "" {
		probs = append(probs, "input is missing")
	}
	calls := 0
	for i, o := range c.ModelOutputs {
		for j, tc := range o.ToolCalls {
			if tc.Name == "" {
				probs = append(probs, fmt.Sprintf("model output %d, tool call %d: name is missing", i+1, j+1))
			}
			calls++
		}
	}
	if len(c.Steps) > calls {
		probs = append(probs, fmt.Sprintf("%d steps, but the model outputs request only %d tool calls", len(c.Steps), calls))
	}
	for i, s := range c.Steps {
		if s.Index != i+1 {
			probs = append(probs, fmt.Sprintf("step %d has index %d", i+1, s.Index))
		}
	}
	var last int64
	for i, m := range c.History {
		switch {
		case m.Seq <= last:
			probs = append(probs, fmt.Sprintf("history message %d has seq %d, not after %d", i+1, m.Seq, last))
		case m.Role != runtype.RoleUser && m.Role != runtype.RoleAssistant && m.Role != runtype.RoleTool && m.Role != runtype.RoleSystem:
			probs = append(probs, fmt.Sprintf("history message %d (seq %d) has role %q, not user, assistant, tool or system", i+1, m.Seq, m.Role))
		}
		last = max(last, m.Seq)
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(probs, "; "))
	}
	return nil
}

// Diff is what a replay found different from the recording.
type Diff struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
	Agent     string `json:"agent"`
	// Steps are every step of the recording and of the replay, paired by
	// position; Changed says which differ.
	Steps []StepDiff `json:"steps"`
	// Differences are the differences that are not one step's: the number
	// of model outputs used, the request's status.
	Differences []Difference `json:"differences"`
	Summary     Summary      `json:"summary"`
}

// What a StepDiff's Changed can hold.
const (
	// ChangedDecision: the policy decided the call differently.
	ChangedDecision = "decision"
	// ChangedResult: the call's result status or content differs.
	ChangedResult = "result"
	// ChangedCall: the replay made another call at this position (another
	// tool or other arguments).
	ChangedCall = "call"
	// ChangedMissing: the replay made no call at this position.
	ChangedMissing = "missing"
	// ChangedExtra: the recording has no call at this position.
	ChangedExtra = "extra"
)

// StepDiff pairs a recorded step with the replay's step at the same
// position.
type StepDiff struct {
	Index           int    `json:"index"`
	Tool            string `json:"tool"`
	ArgumentsSHA256 string `json:"argumentsSha256"`
	// Recorded and Replayed are what became of the call; nil when that
	// side has no call at this position.
	Recorded *Outcome `json:"recorded,omitempty"`
	Replayed *Outcome `json:"replayed,omitempty"`
	// Changed lists what differs (the Changed* constants); empty when
	// nothing does.
	Changed []string `json:"changed"`
	// Notes explain the replay's side: how it answered an ask.
	Notes []string `json:"notes,omitempty"`
}

// Difference is a difference that is not one step's.
type Difference struct {
	// Kind is model_outputs, compaction, context or status.
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Summary counts what was compared.
type Summary struct {
	StepsRecorded int `json:"stepsRecorded"`
	StepsReplayed int `json:"stepsReplayed"`
	// StepsCompared are the positions both have a call at.
	StepsCompared int `json:"stepsCompared"`
	// Changed counts the steps with a change.
	Changed              int    `json:"changed"`
	ModelOutputsRecorded int    `json:"modelOutputsRecorded"`
	ModelOutputsReplayed int    `json:"modelOutputsReplayed"`
	RecordedStatus       string `json:"recordedStatus"`
	ReplayedStatus       string `json:"replayedStatus"`
	// ResultsCompared is false when the replay did not run tools
	// (--no-tools): only decisions were compared.
	ResultsCompared bool `json:"resultsCompared"`
	// Differs: a step changed or there is a Difference.
	Differs bool `json:"differs"`
}

// CompareOptions say what Compare compares.
type CompareOptions struct {
	// NoResults compares decisions only: the replay did not run tools.
	NoResults bool
}

// Compare pairs the recorded steps with the replayed ones by position and
// reports, for each, what differs: the call itself (tool or argument
// hash), the policy's decision, or (unless o.NoResults) the result's
// status or hash. It also reports a different number of model outputs
// and a different final status.
func Compare(recorded, replayed *Case, o CompareOptions) *Diff {
	d := &Diff{
		SessionID: recorded.SessionID, TurnID: recorded.TurnID, Agent: recorded.Agent,
		Steps: []StepDiff{}, Differences: []Difference{},
		Summary: Summary{
			StepsRecorded: len(recorded.Steps), StepsReplayed: len(replayed.Steps),
			ModelOutputsRecorded: len(recorded.ModelOutputs), ModelOutputsReplayed: len(replayed.ModelOutputs),
			RecordedStatus: recorded.Status, ReplayedStatus: replayed.Status, ResultsCompared: !o.NoResults,
		},
	}
	for i := range max(len(recorded.Steps), len(replayed.Steps)) {
		sd := StepDiff{Index: i + 1, Changed: []string{}}
		var rec, rep *Step
		if i < len(recorded.Steps) {
			rec = &recorded.Steps[i]
			out := rec.Outcome
			sd.Recorded, sd.Tool, sd.ArgumentsSHA256 = &out, rec.Tool, rec.ArgumentsSHA256
		}
		if i < len(replayed.Steps) {
			rep = &replayed.Steps[i]
			out := rep.Outcome
			if o.NoResults {
				out.ResultStatus, out.FailureKind, out.ResultSHA256, out.ResultPreview = "", "", "", ""
			}
			sd.Replayed = &out
			if rec == nil {
				sd.Tool, sd.ArgumentsSHA256 = rep.Tool, rep.ArgumentsSHA256
			}
		}
		switch {
		case rep == nil:
			sd.Changed = append(sd.Changed, ChangedMissing)
		case rec == nil:
			sd.Changed = append(sd.Changed, ChangedExtra)
		default:
			d.Summary.StepsCompared++
			if rec.Tool != rep.Tool || rec.ArgumentsSHA256 != rep.ArgumentsSHA256 {
				sd.Changed = append(sd.Changed, ChangedCall)
				sd.Notes = append(sd.Notes, fmt.Sprintf("the replay called %s (arguments %s)", rep.Tool, short(rep.ArgumentsSHA256)))
				break
			}
			if rec.Decision != rep.Decision && !standingApproval(rec, rep) {
				sd.Changed = append(sd.Changed, ChangedDecision)
			}
			if !o.NoResults && (rec.ResultStatus != rep.ResultStatus || rec.ResultSHA256 != rep.ResultSHA256) {
				sd.Changed = append(sd.Changed, ChangedResult)
			}
		}
		if len(sd.Changed) > 0 {
			d.Summary.Changed++
		}
		d.Steps = append(d.Steps, sd)
	}
	switch rec, rep := len(recorded.ModelOutputs), len(replayed.ModelOutputs); {
	case replayed.Failure != nil && replayed.Failure.Kind == runtype.FailureScriptExhausted:
		d.Differences = append(d.Differences, Difference{Kind: "model_outputs",
			Message: fmt.Sprintf("the replay asked for more model outputs than the %d recorded", rec)})
	case rec != rep:
		d.Differences = append(d.Differences, Difference{Kind: "model_outputs",
			Message: fmt.Sprintf("the replay used %d of the %d recorded model outputs", rep, rec)})
	}
	d.Differences = append(d.Differences, compareContexts(recorded, replayed, d, o)...)
	if recorded.Status != replayed.Status {
		msg := fmt.Sprintf("the request ended %s, the replay %s", recorded.Status, replayed.Status)
		if f := replayed.Failure; f != nil {
			msg += fmt.Sprintf(" (%s: %s)", f.Kind, f.Message)
		}
		d.Differences = append(d.Differences, Difference{Kind: "status", Message: msg})
	}
	d.Summary.Differs = d.Summary.Changed > 0 || len(d.Differences) > 0
	return d
}

// compareContexts reports the first model call whose replayed context
// differs from the recorded one, saying which part differs: the system
// prompt, the tool list or the messages. Only the calls before a changed
// step's result reached the model are compared (d's steps say which): a
// changed step changes every later context, and is reported already;
// without results (o.NoResults) only the first call, as later ones see
// placeholder results. The compactions before those calls are compared
// too (compareCompactions), and reported first. Nothing is compared when
// the recording has no contexts, or continued a thread without keeping
// its starting context (History: a case made before agentrt kept it).
func compareContexts(recorded, replayed *Case, d *Diff, o CompareOptions) []Difference {
	if len(recorded.Contexts) == 0 || recorded.HistoryMessages > 0 && len(recorded.History) == 0 {
		return nil
	}
	n := min(len(recorded.Contexts), len(replayed.Contexts))
	if o.NoResults {
		n = min(n, 1)
	}
	for i, sd := range d.Steps {
		if len(sd.Changed) > 0 && i < len(recorded.Steps) {
			n = min(n, recorded.Steps[i].Output) // the call that asked for it saw the same context
			break
		}
	}
	var out []Difference
	if msg := compareCompactions(recorded, replayed, n, n == len(recorded.Contexts)); msg != "" {
		out = append(out, Difference{Kind: "compaction", Message: msg})
	}
	for i := range n {
		rec, rep := &recorded.Contexts[i], &replayed.Contexts[i]
		if rec.Hash == rep.Hash {
			continue
		}
		var parts []string
		if rec.InstructionsRef != rep.InstructionsRef {
			parts = append(parts, "the system prompt differs")
		}
		if rec.ToolsRef != rep.ToolsRef {
			parts = append(parts, "the tool list differs")
		}
		if rec.MessageCount != rep.MessageCount {
			parts = append(parts, fmt.Sprintf("it sent %d messages, the recording %d", rep.MessageCount, rec.MessageCount))
		} else if len(parts) == 0 {
			parts = append(parts, "a message differs ("+suspects(recorded, rec.Hop)+")")
		}
		return append(out, Difference{Kind: "context", Message: fmt.Sprintf(
			"the replay's model call at hop %d sent another context than the recording's: %s (recorded %s, replayed %s)",
			rec.Hop, strings.Join(parts, ", "), short(strings.TrimPrefix(rec.Hash, "sha256:")), short(strings.TrimPrefix(rep.Hash, "sha256:")))})
	}
	return out
}

// compareCompactions describes the first compaction the replay made
// otherwise than the recording, among those before the first n calls
// (and, with all, those after the last call); "" when they agree.
func compareCompactions(recorded, replayed *Case, n int, all bool) string {
	pick := func(ks []Compaction) []Compaction {
		var out []Compaction
		for _, k := range ks {
			if k.Hop > 0 && k.Hop <= n || k.Hop == 0 && all {
				out = append(out, k)
			}
		}
		return out
	}
	before := func(k *Compaction) string {
		if k.Hop == 0 {
			return "after the last model call"
		}
		return fmt.Sprintf("before the model call at hop %d", k.Hop)
	}
	recs, reps := pick(recorded.Compactions), pick(replayed.Compactions)
	for i := range max(len(recs), len(reps)) {
		if i >= len(reps) {
			k := &recs[i]
			return fmt.Sprintf("the recording compacted the context %s (%s, messages %d to %d); the replay did not", before(k), k.Strategy, k.FromSeq, k.ThroughSeq)
		}
		if i >= len(recs) {
			k := &reps[i]
			return fmt.Sprintf("the replay compacted the context %s (%s, messages %d to %d); the recording did not", before(k), k.Strategy, k.FromSeq, k.ThroughSeq)
		}
		rec, rep := &recs[i], &reps[i]
		var parts []string
		if rec.Hop != rep.Hop {
			parts = append(parts, fmt.Sprintf("it came %s, the recording's %s", before(rep), before(rec)))
		}
		if rec.Strategy != rep.Strategy || rec.Fallback != rep.Fallback {
			parts = append(parts, fmt.Sprintf("it used %s, the recording %s", strategyOf(rep), strategyOf(rec)))
		}
		if rec.FromSeq != rep.FromSeq || rec.ThroughSeq != rep.ThroughSeq {
			parts = append(parts, fmt.Sprintf("it covered messages %d to %d, the recording %d to %d", rep.FromSeq, rep.ThroughSeq, rec.FromSeq, rec.ThroughSeq))
		}
		switch {
		case (rec.Summary == "") != (rep.Summary == ""):
			parts = append(parts, fmt.Sprintf("it %s, the recording's %s", outcomeOf(rep), outcomeOf(rec)))
		case rec.Summary != rep.Summary:
			parts = append(parts, fmt.Sprintf("it wrote another summary (recorded %s, replayed %s)",
				short(ContentSHA256(rec.Summary)), short(ContentSHA256(rep.Summary))))
		}
		if len(parts) > 0 {
			return fmt.Sprintf("the replay's compaction %d (%s) differs from the recording's: %s", i+1, before(rec), strings.Join(parts, "; "))
		}
	}
	return ""
}

// suspects names what may make a message of the context of the call at
// hop differ from the recording's.
func suspects(c *Case, hop int) string {
	for i, k := range c.Compactions {
		if k.Hop == hop && k.Summary != "" {
			return fmt.Sprintf("the summary of compaction %d, which the call follows, a tool result, or reasoning a case does not keep", i+1)
		}
	}
	if hop == 1 && len(c.History) > 0 {
		return "a message of the starting context (history), or reasoning a case does not keep"
	}
	return "a tool result, or reasoning a case does not keep"
}

func strategyOf(k *Compaction) string {
	if k.Fallback != "" {
		return k.Strategy + " (then " + k.Fallback + ")"
	}
	return k.Strategy
}

func outcomeOf(k *Compaction) string {
	if k.Summary == "" {
		return "failed (" + k.Failure + ")"
	}
	return "completed"
}

// ChangedSteps returns the steps with a change.
func (d *Diff) ChangedSteps() []StepDiff {
	return slices.DeleteFunc(slices.Clone(d.Steps), func(s StepDiff) bool { return len(s.Changed) == 0 })
}

// standingApproval reports whether a recorded call a standing approval
// allowed (a person's earlier approve_for_session or approve_always:
// allow by source human, no ask) was asked about in the replay, which has
// no standing approvals, and approved there. That is the same decision.
func standingApproval(rec, rep *Step) bool {
	return rec.Decision == "allow" && rec.Source == "human" && rec.Human == "" &&
		rep.Decision == "ask" && strings.HasPrefix(rep.Human, "approve")
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}
