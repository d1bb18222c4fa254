package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// This file serves POST /v1/agui, the AG-UI endpoint
// (https://docs.ag-ui.com, protocol 1.0; docs/api.md#ag-ui): it takes an
// AG-UI RunAgentInput, starts a turn with the last user message — or
// answers the approvals the thread's last run ended with, or follows a
// turn a client names — and answers, once all of that is done, an event
// stream of AG-UI events for that turn (agui_events.go). Everything the
// request can get wrong is answered before the stream starts, as a
// problem.

// aguiRun is what a request to POST /v1/agui streams: a turn, from a
// point of its log.
type aguiRun struct {
	threadID, runID string // the client's, echoed
	sessionID       string
	turnID          string
	// from is the cursor up to which the turn's events were another
	// run's (the one the resume entries answer), or 0: the run shows the
	// turn from its start. The first action.resolved of an action in
	// answered ends that part early: the client has not seen it.
	from     int64
	answered map[string]bool
	// notes are CUSTOM events the stream opens with.
	notes []aguiCustom
}

// aguiBody decodes a RunAgentInput leniently: decodeBody refuses members
// it does not know, and AG-UI asks a producer to ignore them (a newer
// minor version's additions must be served).
type aguiBody struct{ apitype.AGUIRunInput }

func (b *aguiBody) UnmarshalJSON(data []byte) error {
	return json.Unmarshal(data, &b.AGUIRunInput)
}

// runAGUI serves POST /v1/agui.
func (s *Server) runAGUI(w http.ResponseWriter, r *http.Request) {
	var body aguiBody
	if !decodeBody(w, r, &body) {
		return
	}
	in := &body.AGUIRunInput
	fp, ok := aguiCheckInput(w, in)
	if !ok {
		return
	}
	var run *aguiRun
	switch {
	case len(in.Resume) > 0:
		run, ok = s.aguiResume(w, r, in)
	case fp.TurnID != "":
		run, ok = s.aguiFollow(w, r, in, fp.TurnID)
	default:
		agent, ok2 := aguiAgent(w, r, fp)
		if !ok2 {
			return
		}
		run, ok = s.aguiSubmit(w, r, in, agent)
	}
	if !ok {
		return
	}
	run.threadID, run.runID = in.ThreadID, in.RunID
	s.streamAGUI(w, r, run)
}

// aguiCheckInput checks what every request needs, and reads the
// forwardedProps agentrt reads.
func aguiCheckInput(w http.ResponseWriter, in *apitype.AGUIRunInput) (apitype.AGUIForwardedProps, bool) {
	var fp apitype.AGUIForwardedProps
	if in.ThreadID == "" {
		writeError(w, apitype.ProblemInvalidRequest, "threadId is required: it names the conversation (agentrt's session)")
		return fp, false
	}
	if err := runtype.ValidateCallerID("threadId", in.ThreadID); err != nil {
		writeError(w, apitype.ProblemInvalidRequest, err.Error()+" (the threadId is agentrt's session id)")
		return fp, false
	}
	if in.RunID == "" {
		writeError(w, apitype.ProblemInvalidRequest, "runId is required")
		return fp, false
	}
	if v := in.ProtocolVersion; v != "" {
		major, _, _ := strings.Cut(v, ".")
		if n, err := strconv.Atoi(major); err == nil && n != 1 {
			writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("protocolVersion %q: this endpoint speaks AG-UI %s, major version 1", v, apitype.AGUIProtocolVersion))
			return fp, false
		}
	}
	if len(in.ForwardedProps) > 0 {
		if err := json.Unmarshal(in.ForwardedProps, &fp); err != nil {
			writeError(w, apitype.ProblemInvalidRequest, aguiProblem("forwardedProps", err))
			return fp, false
		}
	}
	seen := map[string]bool{}
	for i, e := range in.Resume {
		switch {
		case e.InterruptID == "":
			writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("resume[%d].interruptId is required", i))
			return fp, false
		case seen[e.InterruptID]:
			writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("resume[%d] answers interrupt %s again", i, e.InterruptID))
			return fp, false
		case e.Status != apitype.AGUIResumeResolved && e.Status != apitype.AGUIResumeCancelled:
			writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("resume[%d].status must be resolved or cancelled, not %q", i, e.Status))
			return fp, false
		}
		seen[e.InterruptID] = true
	}
	return fp, true
}

// aguiProblem describes why member name of the input did not decode, in
// decodeProblem's words.
func aguiProblem(name string, err error) string {
	msg := decodeProblem(err)
	if rest, ok := strings.CutPrefix(msg, "the body "); ok {
		return name + " " + rest
	}
	return name + ": " + msg
}

// aguiAgent is the agent a new session gets: forwardedProps.agent or the
// query's ?agent=; "" leaves it to the session (or to the runtime's only
// agent, see aguiSubmit).
func aguiAgent(w http.ResponseWriter, r *http.Request, fp apitype.AGUIForwardedProps) (string, bool) {
	q := r.URL.Query().Get("agent")
	if fp.Agent != "" && q != "" && fp.Agent != q {
		writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("forwardedProps.agent %q and ?agent=%s name different agents", fp.Agent, q))
		return "", false
	}
	if fp.Agent != "" {
		return fp.Agent, true
	}
	return q, true
}

// aguiSubmit submits the last user message as a turn on the thread's
// session. The message's id makes the submission idempotent: a client
// that sends the same conversation again follows the turn it started.
func (s *Server) aguiSubmit(w http.ResponseWriter, r *http.Request, in *apitype.AGUIRunInput, agent string) (*aguiRun, bool) {
	input, msgID, ok := aguiUserInput(w, in.Messages)
	if !ok {
		return nil, false
	}
	if names := s.rt.AgentNames(); agent == "" && len(names) == 1 {
		agent = names[0]
	}
	var key string
	if msgID != "" {
		sum := sha256.Sum256([]byte(in.ThreadID + "\x00" + msgID))
		key = "agui-" + hex.EncodeToString(sum[:20])
	}
	res, err := s.rt.SubmitTurn(r.Context(), &apitype.SubmitTurnParams{
		Owner: owner(r), Agent: agent, Input: input, SessionID: in.ThreadID, IdempotencyKey: key,
		Source: "agui", OnlyOwn: onlyOwn(r),
	})
	var inv *apitype.InvalidError
	switch {
	case errors.As(err, &inv) && inv.Field == "agent":
		names := s.rt.AgentNames()
		slices.Sort(names)
		writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("%s; name the agent with forwardedProps.agent or ?agent= (this runtime has %s)", err, strings.Join(names, ", ")))
		return nil, false
	case err != nil:
		s.writeErr(w, r, err)
		return nil, false
	}
	return &aguiRun{sessionID: res.SessionID, turnID: res.TurnID}, true
}

// aguiMessage is the part of an AG-UI message agentrt reads.
type aguiMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// aguiUserInput is the text of the last message of role user, and its
// id. agentrt takes text: a string, or text parts (concatenated); any
// other part is refused rather than dropped.
func aguiUserInput(w http.ResponseWriter, msgs []json.RawMessage) (input, id string, ok bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		var m aguiMessage
		if err := json.Unmarshal(msgs[i], &m); err != nil {
			writeError(w, apitype.ProblemInvalidRequest, aguiProblem(fmt.Sprintf("messages[%d]", i), err))
			return "", "", false
		}
		if m.Role != "user" {
			continue
		}
		text, err := aguiText(fmt.Sprintf("messages[%d].content", i), m.Content)
		if err != nil {
			writeError(w, apitype.ProblemInvalidRequest, err.Error())
			return "", "", false
		}
		if strings.TrimSpace(text) == "" {
			writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("messages[%d], the last user message, has no text", i))
			return "", "", false
		}
		return text, m.ID, true
	}
	writeError(w, apitype.ProblemInvalidRequest, "no user message: messages holds no message of role user, and neither resume nor forwardedProps.turnId says what else to run")
	return "", "", false
}

// aguiText is a user message's content, field, as text.
func aguiText(field string, content json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(content, &parts); err != nil {
		return "", fmt.Errorf("%s is neither a string nor a list of content parts", field)
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("%s[%d] is %s part: agentrt takes text only", field, i, article(p.Type))
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// article is "an image", "a video".
func article(noun string) string {
	if noun != "" && strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// aguiFollow follows a turn of the thread from its start: a client that
// lost its stream, or never had it, sees the turn again.
func (s *Server) aguiFollow(w http.ResponseWriter, r *http.Request, in *apitype.AGUIRunInput, turnID string) (*aguiRun, bool) {
	missing := "not found: turn " + turnID
	if onlyOwn(r) {
		if err := s.rt.CheckOwn(r.Context(), owner(r), apitype.OwnTurn, turnID); err != nil {
			s.aguiNotFound(w, r, err, missing)
			return nil, false
		}
	}
	req, err := s.rt.GetRequest(r.Context(), owner(r), turnID)
	if err != nil {
		s.aguiNotFound(w, r, err, missing)
		return nil, false
	}
	if req.SessionID != in.ThreadID {
		writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("forwardedProps.turnId: turn %s is not of thread %s", turnID, in.ThreadID))
		return nil, false
	}
	return &aguiRun{sessionID: req.SessionID, turnID: turnID}, true
}

// aguiNotFound answers 404 with detail for a record that is missing or
// not the caller's (the two alike), and err otherwise.
func (s *Server) aguiNotFound(w http.ResponseWriter, r *http.Request, err error, detail string) {
	if errors.Is(err, apitype.ErrNotFound) {
		writeError(w, apitype.ProblemNotFound, detail)
		return
	}
	s.writeErr(w, r, err)
}

// aguiResume answers the interrupts the resume entries name — each the
// action (act_…) of one turn of the thread — and streams the rest of
// that turn. A resolved entry answers its action as POST
// /v1/actions/{actionId} does, which needs an operator's or admin's
// token; a cancelled one abandons it, which interrupts the turn, as its
// submitter may. An entry whose action is no longer pending (answered
// elsewhere, expired) changes nothing: the stream opens with a note
// saying how it was resolved.
func (s *Server) aguiResume(w http.ResponseWriter, r *http.Request, in *apitype.AGUIRunInput) (*aguiRun, bool) {
	ctx := r.Context()
	type entry struct {
		apitype.AGUIResumeEntry
		action *apitype.ActionRead
		answer apitype.RespondActionRequest
	}
	entries := make([]entry, len(in.Resume))
	run := &aguiRun{sessionID: in.ThreadID}
	for i, e := range in.Resume {
		missing := "not found: interrupt " + e.InterruptID
		a, err := s.rt.GetAction(ctx, owner(r), e.InterruptID)
		if err == nil && onlyOwn(r) {
			err = s.rt.CheckOwn(ctx, owner(r), apitype.OwnTurn, a.TurnID)
		}
		if err != nil {
			s.aguiNotFound(w, r, err, missing)
			return nil, false
		}
		switch {
		case a.SessionID != in.ThreadID:
			writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("resume[%d]: interrupt %s is not of thread %s", i, e.InterruptID, in.ThreadID))
			return nil, false
		case run.turnID != "" && a.TurnID != run.turnID:
			writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("resume[%d]: interrupt %s is of turn %s, the others of turn %s: answer one run's interrupts at a time", i, e.InterruptID, a.TurnID, run.turnID))
			return nil, false
		}
		run.turnID = a.TurnID
		entries[i] = entry{AGUIResumeEntry: e, action: a}
		if e.Status != apitype.AGUIResumeResolved {
			continue
		}
		if c := caller(r); c.Role != runtype.APIRoleAdmin && c.Role != runtype.APIRoleOperator {
			writeError(w, apitype.ProblemForbidden, fmt.Sprintf("role %s may not answer interrupt %s: answering an approval needs an operator or admin token; a submitter may only abandon it (status cancelled), which interrupts its turn", c.Role, e.InterruptID))
			return nil, false
		}
		if !aguiAnswer(w, i, e, a, &entries[i].answer) {
			return nil, false
		}
	}
	// The stream shows what happens from here on: the turn's events up to
	// now were the interrupted run's, but for those from the first answer
	// someone else gave meanwhile.
	from, err := s.rt.LastCursor(ctx)
	if err != nil {
		s.writeErr(w, r, err)
		return nil, false
	}
	run.from, run.answered = from, map[string]bool{}
	abandon := false
	for _, e := range entries {
		run.answered[e.InterruptID] = true
		if e.action.Status != runtype.ActionPending {
			run.notes = append(run.notes, aguiNotPending(e.action, e.Status))
			continue
		}
		if e.Status == apitype.AGUIResumeCancelled {
			abandon = true
			continue
		}
		_, err := s.rt.RespondAction(ctx, &apitype.RespondActionParams{
			Owner: owner(r), Role: caller(r).Role, ActionID: e.InterruptID, Decision: e.answer.Decision,
			Message: e.answer.Message, UpdatedInput: e.answer.UpdatedInput, Content: e.answer.Content,
		})
		if err != nil {
			s.writeErr(w, r, err)
			return nil, false
		}
	}
	if abandon {
		if _, err := s.rt.InterruptTurn(ctx, owner(r), run.turnID); err != nil {
			s.writeErr(w, r, err)
			return nil, false
		}
	}
	return run, true
}

// aguiAnswer decodes the payload of resume entry i, which answers action
// a, and checks its decision is one the action offers.
func aguiAnswer(w http.ResponseWriter, i int, e apitype.AGUIResumeEntry, a *apitype.ActionRead, answer *apitype.RespondActionRequest) bool {
	if len(e.Payload) == 0 {
		writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("resume[%d].payload is required with status resolved: {\"decision\": one of %s}", i, strings.Join(aguiDecisions(a), ", ")))
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(e.Payload)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(answer); err != nil {
		writeError(w, apitype.ProblemInvalidRequest, aguiProblem(fmt.Sprintf("resume[%d].payload", i), err))
		return false
	}
	if !slices.Contains(aguiDecisions(a), answer.Decision) {
		writeError(w, apitype.ProblemInvalidRequest, fmt.Sprintf("resume[%d].payload.decision must be one of %s, not %q", i, strings.Join(aguiDecisions(a), ", "), answer.Decision))
		return false
	}
	return true
}

// aguiDecisions are the decisions that answer action a.
func aguiDecisions(a *apitype.ActionRead) []string {
	if a.Type == runtype.ActionElicitation {
		return []string{runtype.DecisionAccept, runtype.DecisionDecline, runtype.DecisionCancel}
	}
	return a.Decisions
}
