package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
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
			writeError(w, apitype.ProblemInvalidParameter, fmt.Sprintf("the resume cursor must be a non-negative integer, not %q", after))
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
		writeError(w, apitype.ProblemInvalidParameter, fmt.Sprintf("follow must be true or false, not %q", q.Get("follow")))
		return
	}
	sub, err := s.rt.Subscribe(r.Context(), &apitype.SubscribeParams{
		Owner: owner(r), SessionID: q.Get("sessionId"), TurnID: q.Get("turnId"), AfterCursor: cursor,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	defer sub.Close()

	rc, ok := openStream(w, true)
	if !ok {
		return
	}
	if follow {
		s.follow(r.Context(), w, rc, sub, s.writeEvent)
	} else {
		s.catchUp(r.Context(), w, rc, sub)
	}
}

// catchUp streams the events already committed, then returns.
func (s *Server) catchUp(ctx context.Context, w io.Writer, rc *http.ResponseController, sub *agentrt.Subscription) {
	for {
		e, err := sub.TryNext(ctx)
		if err != nil {
			s.streamFailed(ctx, err)
			return
		}
		if e == nil {
			return // caught up; the handler's return flushes
		}
		if !s.writeEvent(w, e) {
			return
		}
		if !sub.Buffered() && rc.Flush() != nil {
			return
		}
	}
}

// openStream starts a Server-Sent Events answer, with the reconnection
// delay (2 s) when retry is set, and flushes it; false when the client
// is gone.
func openStream(w http.ResponseWriter, retry bool) (*http.ResponseController, bool) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if retry {
		fmt.Fprint(w, "retry: 2000\n\n")
	}
	return rc, rc.Flush() == nil
}

// follow streams events as they commit, each as write makes it (false
// ends the stream), with a keep-alive comment after every Heartbeat
// without one. One goroutine reads the subscription so that keep-alives
// never cut a store read short: a read cancelled at each heartbeat would
// start over forever on a store slower than the heartbeat. The API's
// event stream and the console's timeline both follow with it.
func (s *Server) follow(ctx context.Context, w io.Writer, rc *http.ResponseController, sub *agentrt.Subscription, write func(io.Writer, *event.Event) bool) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // the reader is done with sub before the handler closes it
	defer cancel()

	batches := make(chan []*event.Event)
	failed := make(chan error, 1)
	wg.Go(func() {
		for {
			e, err := sub.Next(ctx)
			if err != nil {
				failed <- err
				return
			}
			// What the subscription already holds goes out in one write.
			batch := []*event.Event{e}
			for sub.Buffered() {
				if e, err = sub.Next(ctx); err != nil {
					break
				}
				batch = append(batch, e)
			}
			select {
			case batches <- batch:
			case <-ctx.Done():
				return
			}
		}
	})

	heartbeat := time.NewTimer(s.cfg.Heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case batch := <-batches:
			for _, e := range batch {
				if !write(w, e) {
					return
				}
			}
		case <-heartbeat.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
		case err := <-failed:
			s.streamFailed(ctx, err)
			return
		case <-ctx.Done():
			return
		}
		if rc.Flush() != nil {
			return
		}
		heartbeat.Reset(s.cfg.Heartbeat)
	}
}

// writeEvent writes e as one SSE message; false means the stream is over.
func (s *Server) writeEvent(w io.Writer, e *event.Event) bool {
	data, err := e.JSON()
	if err != nil {
		s.cfg.Logger.Error("encoding event", "eventId", e.EventID, "err", err)
		return false
	}
	_, err = fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Cursor, e.Type, data)
	return err == nil
}

// streamFailed logs why a stream ended unless the client left or the
// runtime stopped.
func (s *Server) streamFailed(ctx context.Context, err error) {
	if ctx.Err() == nil && !errors.Is(err, apitype.ErrStopped) {
		s.cfg.Logger.Error("streaming events", "err", err)
	}
}
