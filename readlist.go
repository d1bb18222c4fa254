package agentrt

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// Paged lists. Every list of the control plane reads newest first, takes
// filters that the store applies before its limit (so a page is full
// unless the list is done) and answers with an opaque NextCursor: pass it
// back as Cursor for the next page; "" means there is none. The legacy
// BeforeID (the last ID of the previous page) pages the same way.

// ListHistory returns a page of a thread's messages: the newest limit
// (default MessageWindow, at most store.MaxListLimit) before cursor, or
// the newest of all when cursor is empty. A cursor is a history's
// OlderCursor or a page's NextCursor: the seq of the oldest message the
// reader has.
func (rt *Runtime) ListHistory(ctx context.Context, owner runtype.Owner, sessionID, threadID, cursor string, limit int) (*apitype.HistoryPage, error) {
	tenant := tenantOf(owner)
	var before int64
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n <= 0 {
			return nil, invalid("cursor", "want the olderCursor of a history or the nextCursor of a page, got %q", cursor)
		}
		before = n
	}
	if limit < 0 {
		return nil, invalid("limit", "must not be negative, got %d", limit)
	}
	if limit == 0 {
		limit = apitype.MessageWindow
	}
	th, err := rt.store.ThreadGet(ctx, &store.ThreadGetParams{TenantID: tenant, ID: threadID})
	if err == nil && th.SessionID != sessionID {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("session %s, thread %s: %w", sessionID, threadID, err)
	}
	return rt.historyPage(ctx, tenant, threadID, before, min(limit, store.MaxListLimit))
}

// historyPage reads the newest limit messages of a thread with a seq below
// before (all, when before is 0).
func (rt *Runtime) historyPage(ctx context.Context, tenant, threadID string, before int64, limit int) (*apitype.HistoryPage, error) {
	ms, err := rt.store.MessageList(ctx, &store.MessageListParams{TenantID: tenant, ThreadID: threadID, BeforeSeq: before, Newest: true, Limit: limit + 1})
	if err != nil {
		return nil, fmt.Errorf("reading the thread's history: %w", err)
	}
	p := &apitype.HistoryPage{Messages: make([]apitype.HistoryMessage, 0, min(len(ms), limit))}
	if len(ms) > limit {
		ms = ms[:limit]
		p.NextCursor = strconv.FormatInt(ms[limit-1].Seq, 10)
	}
	for i := len(ms) - 1; i >= 0; i-- {
		p.Messages = append(p.Messages, rt.historyMessage(ms[i]))
	}
	return p, nil
}

// historyMessage is a message as a read model shows it: its content cut
// to HistoryPreviewBytes, with secrets redacted as in every preview (the
// store keeps the message as the model saw it).
func (rt *Runtime) historyMessage(m *runtype.Message) apitype.HistoryMessage {
	// The redaction looks a little past the cut, so that a secret the cut
	// would halve is still recognized.
	_, cut := event.Preview(m.Content, apitype.HistoryPreviewBytes)
	wide, _ := event.Preview(m.Content, apitype.HistoryPreviewBytes+256)
	content, cut2 := event.Preview(rt.safePreview(wide), apitype.HistoryPreviewBytes)
	cut = cut || cut2
	if !utf8.ValidString(content) {
		content = strings.ToValidUTF8(content, "\uFFFD")
	}
	h := apitype.HistoryMessage{
		Seq: m.Seq, Role: m.Role, TurnID: m.TurnID, Content: content, ContentBytes: len(m.Content), Truncated: cut,
		ToolCallID: m.ToolCallID, IsError: m.IsError, CreatedAt: ts(m.CreatedAt),
	}
	for _, c := range m.ToolCalls {
		h.ToolCalls = append(h.ToolCalls, apitype.HistoryToolCall{ID: c.ID, Name: c.Name})
	}
	return h
}

// encodeCursor makes the opaque cursor of a list page that ends at id.
func encodeCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(id))
}

// pageStart settles where a page starts: after cursor or before (the
// legacy BeforeID), not both.
func pageStart(cursor, before string) (string, error) {
	if cursor == "" {
		return before, nil
	}
	if before != "" {
		return "", invalid("cursor", "give cursor or before, not both")
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) == 0 || !utf8.Valid(b) {
		return "", invalid("cursor", "%q is not a cursor this runtime handed out", cursor)
	}
	return string(b), nil
}

// timeWindow checks a created-at filter.
func timeWindow(since, until time.Time) error {
	if !since.IsZero() && !until.IsZero() && !until.After(since) {
		return invalid("until", "must be after since")
	}
	return nil
}

// pageOf cuts items, read with a limit one above limit, to a page, and
// says where the next starts. At store.MaxListLimit the store cannot read
// one more: a full page then has a next one, which may be empty.
func pageOf[T any](items []T, limit int, id func(T) string) ([]T, string) {
	switch {
	case len(items) > limit:
		items = items[:limit]
	case len(items) < limit || limit < store.MaxListLimit:
		return items, ""
	}
	return items, encodeCursor(id(items[len(items)-1]))
}

// taskStatuses are the statuses a list's status filter accepts.
var taskStatuses = append(slices.Clone(notCompleted), runtype.StatusCompleted)

func checkStatus(s runtype.TaskStatus) error {
	if s != "" && !slices.Contains(taskStatuses, s) {
		return invalid("status", "unknown status %q", s)
	}
	return nil
}

// ListRequestsPage lists turns (requests) newest first, a page at a time.
func (rt *Runtime) ListRequestsPage(ctx context.Context, p *apitype.ListRequestsParams) (*apitype.RequestPage, error) {
	before, err := pageStart(p.Cursor, p.BeforeID)
	if err != nil {
		return nil, err
	}
	errs := []error{checkStatus(p.Status), timeWindow(p.Since, p.Until)}
	for _, st := range p.Statuses {
		errs = append(errs, checkStatus(st))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if p.ThreadID != "" && p.SessionID == "" {
		return nil, invalid("threadId", "needs sessionId")
	}
	limit := store.ClampLimit(p.Limit)
	turns, err := rt.store.TurnList(ctx, &store.TurnListParams{
		TenantID: tenantOf(p.Owner), PrincipalID: onlyOwn(p.Owner, p.OnlyOwn), SessionID: p.SessionID, ThreadID: p.ThreadID,
		Status: p.Status, Statuses: p.Statuses, Agent: p.Agent, Since: p.Since, Until: p.Until, BeforeID: before, Limit: limit + 1,
	})
	if err != nil {
		return nil, fmt.Errorf("listing requests: %w", err)
	}
	turns, next := pageOf(turns, limit, func(t *runtype.Turn) string { return t.ID })
	out := &apitype.RequestPage{Requests: make([]apitype.RequestSummary, len(turns)), NextCursor: next}
	for i, t := range turns {
		out.Requests[i] = requestSummary(t)
	}
	return out, nil
}

// ListSessionsPage lists sessions newest first, a page at a time.
func (rt *Runtime) ListSessionsPage(ctx context.Context, p *apitype.ListSessionsParams) (*apitype.SessionPage, error) {
	before, err := pageStart(p.Cursor, p.BeforeID)
	if err != nil {
		return nil, err
	}
	if err := timeWindow(p.Since, p.Until); err != nil {
		return nil, err
	}
	limit := store.ClampLimit(p.Limit)
	ss, err := rt.store.SessionList(ctx, &store.SessionListParams{
		TenantID: tenantOf(p.Owner), PrincipalID: onlyOwn(p.Owner, p.OnlyOwn), Agent: p.Agent, Since: p.Since, Until: p.Until,
		BeforeID: before, Limit: limit + 1,
	})
	switch {
	case errors.Is(err, store.ErrNotFound) && p.Cursor != "":
		return nil, invalid("cursor", "%q is not a cursor this runtime handed out", p.Cursor)
	case errors.Is(err, store.ErrNotFound):
		return nil, invalid("before", "names no session %q; give the last session id of the previous page", before)
	case err != nil:
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	ss, next := pageOf(ss, limit, func(s *runtype.Session) string { return s.ID })
	out := &apitype.SessionPage{Sessions: make([]apitype.SessionSummary, len(ss)), NextCursor: next}
	for i, s := range ss {
		out.Sessions[i] = apitype.SessionSummary{SessionID: s.ID, Agent: s.Agent, Title: s.Title, CreatedAt: ts(s.CreatedAt), UpdatedAt: ts(s.UpdatedAt)}
	}
	return out, nil
}

// ListTasks lists the tenant's tasks across sessions, newest first, with
// their attempts.
func (rt *Runtime) ListTasks(ctx context.Context, p *apitype.ListTasksParams) (*apitype.TaskPage, error) {
	before, err := pageStart(p.Cursor, "")
	if err != nil {
		return nil, err
	}
	if err := errors.Join(checkStatus(p.Status), timeWindow(p.Since, p.Until)); err != nil {
		return nil, err
	}
	tenant := tenantOf(p.Owner)
	sp := &store.TaskSearchParams{
		TenantID: tenant, PrincipalID: onlyOwn(p.Owner, p.OnlyOwn), SessionID: p.SessionID, Agent: p.Agent,
		Since: p.Since, Until: p.Until, BeforeID: before,
	}
	if p.Status != "" {
		sp.Statuses = []runtype.TaskStatus{p.Status}
	}
	limit := store.ClampLimit(p.Limit)
	sp.Limit = limit + 1
	tasks, err := rt.store.TaskSearch(ctx, sp)
	if err != nil {
		return nil, fmt.Errorf("listing tasks: %w", err)
	}
	tasks, next := pageOf(tasks, limit, func(t *runtype.Task) string { return t.ID })
	out := &apitype.TaskPage{Tasks: make([]apitype.TaskRead, len(tasks)), NextCursor: next}
	if len(tasks) == 0 {
		return out, nil
	}
	// The page's attempts in one read, oldest first, then by task.
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	runs, err := rt.store.RunList(ctx, &store.RunListParams{TenantID: tenant, TaskIDs: ids})
	if err != nil {
		return nil, fmt.Errorf("listing the attempts of the tasks: %w", err)
	}
	byTask := make(map[string][]*runtype.Run, len(tasks))
	for _, r := range runs {
		byTask[r.TaskID] = append(byTask[r.TaskID], r)
	}
	for i, t := range tasks {
		out.Tasks[i] = taskRead(t, byTask[t.ID])
	}
	return out, nil
}

// onlyOwn is the principal a list keeps: the caller's when it asked for
// its own records only, else "" (every principal's).
func onlyOwn(o runtype.Owner, only bool) string {
	if !only {
		return ""
	}
	return ownerOrDefault(o).PrincipalID
}

// ListActionsPage lists the tenant's actions newest first, a page at a
// time: with Status pending, the approvals waiting across sessions.
func (rt *Runtime) ListActionsPage(ctx context.Context, p *apitype.ListActionsParams) (*apitype.ActionPage, error) {
	owner := ownerOrDefault(p.Owner)
	switch p.Status {
	case "", runtype.ActionPending, runtype.ActionApproved, runtype.ActionDenied, runtype.ActionExpired, runtype.ActionCancelled:
	default:
		return nil, invalid("status", "must be pending, approved, denied, expired or cancelled, got %q", p.Status)
	}
	before, err := pageStart(p.Cursor, p.BeforeID)
	if err != nil {
		return nil, err
	}
	if err := timeWindow(p.Since, p.Until); err != nil {
		return nil, err
	}
	if p.Oldest && before != "" {
		return nil, invalid("order", "oldest first is one page: not with a cursor or before")
	}
	limit := store.ClampLimit(p.Limit)
	acts, err := rt.store.ActionList(ctx, &store.ActionListParams{
		TenantID: owner.TenantID, SessionID: p.SessionID, TurnID: p.TurnID, Status: p.Status, Agent: p.Agent,
		Since: p.Since, Until: p.Until, BeforeID: before, Limit: limit + 1, Oldest: p.Oldest,
	})
	if err != nil {
		return nil, fmt.Errorf("listing actions: %w", err)
	}
	acts, next := pageOf(acts, limit, func(a *runtype.Action) string { return a.ID })
	if p.Oldest {
		next = ""
	}
	out := &apitype.ActionPage{Actions: make([]apitype.ActionRead, len(acts)), NextCursor: next}
	for i, a := range acts {
		out.Actions[i] = actionRead(a)
	}
	if err := rt.actionLineage(ctx, owner.TenantID, out.Actions); err != nil {
		return nil, err
	}
	return out, nil
}
