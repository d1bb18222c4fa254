package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/event"
)

// events streams the event log as Server-Sent Events. Each event is sent
// with its store cursor as the SSE id and its type as the SSE event name,
// so a client that reconnects with Last-Event-ID (or ?after=) resumes
// exactly after the last event it saw. ?sessionId= and ?turnId= filter;
// ?follow=false ends the stream once it has caught up.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = q.Get("after")
	}
	var cursor int64
	if after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "invalid_parameter", fmt.Sprintf("the resume cursor must be a non-negative integer, not %q", after))
			return
		}
		cursor = n
	}
	follow := true
	switch q.Get("follow") {
	case "", "true", "1":
	case "false", "0":
		follow = false
	default:
		writeError(w, http.StatusBadRequest, "invalid_parameter", fmt.Sprintf("follow must be true or false, not %q", q.Get("follow")))
		return
	}
	sub, err := s.rt.Subscribe(r.Context(), &agentrt.SubscribeParams{
		Owner: s.cfg.Owner, SessionID: q.Get("sessionId"), TurnID: q.Get("turnId"), AfterCursor: cursor,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	defer sub.Close()

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	if err := rc.Flush(); err != nil {
		return
	}
	ctx := r.Context()
	for {
		var (
			e   *event.Event
			err error
		)
		switch {
		case sub.Buffered():
			e, err = sub.Next(ctx)
		case !follow:
			e, err = sub.TryNext(ctx)
			if err == nil && e == nil {
				return // caught up
			}
		default:
			wctx, cancel := context.WithTimeout(ctx, s.cfg.Heartbeat)
			e, err = sub.Next(wctx)
			cancel()
			if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
					return
				}
				if rc.Flush() != nil {
					return
				}
				continue
			}
		}
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, agentrt.ErrStopped) {
				s.cfg.Logger.Error("streaming events", "err", err)
			}
			return
		}
		data, err := e.JSON()
		if err != nil {
			s.cfg.Logger.Error("encoding event", "eventId", e.EventID, "err", err)
			return
		}
		if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Cursor, e.Type, data); err != nil {
			return
		}
		if !sub.Buffered() {
			if rc.Flush() != nil {
				return
			}
		}
	}
}
