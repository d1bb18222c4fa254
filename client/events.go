package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/event"
)

// EventFilter selects the events of a stream; empty fields match all.
type EventFilter struct {
	SessionID string
	TurnID    string
}

// defaultReconnect is the reconnect delay before the server suggests one.
const defaultReconnect = 2 * time.Second

// maxEventBytes bounds one SSE line (an event's JSON).
const maxEventBytes = 16 << 20

// ErrStreamClosed is returned by Next after Close.
var ErrStreamClosed = errors.New("event stream closed")

// Events follows the server's event stream (GET /v1/events) after the
// event with cursor lastEventID (0: from the beginning of the log). The
// first connection is made before Events returns, so that a refused
// token or a bad filter is its error. When the connection breaks, Next
// reconnects with Last-Event-ID set to the last cursor it returned, so
// the stream neither misses nor repeats an event; it keeps trying, after
// the server's retry delay, until its context ends. Close the stream when
// done.
func (c *Client) Events(ctx context.Context, f EventFilter, lastEventID int64) (*EventStream, error) {
	return c.openEvents(ctx, f, lastEventID, true)
}

// EventsCatchUp is Events that ends, with io.EOF from Next, once it has
// returned every event committed when it connected.
func (c *Client) EventsCatchUp(ctx context.Context, f EventFilter, lastEventID int64) (*EventStream, error) {
	return c.openEvents(ctx, f, lastEventID, false)
}

func (c *Client) openEvents(ctx context.Context, f EventFilter, after int64, follow bool) (*EventStream, error) {
	s := &EventStream{c: c, filter: f, follow: follow, cursor: after, retry: defaultReconnect}
	if err := s.connect(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// EventStream is an open event stream. Use it from one goroutine; Close
// may be called from any.
type EventStream struct {
	c      *Client
	filter EventFilter
	follow bool

	cursor     int64 // of the last event Next returned
	retry      time.Duration
	reconnects int

	mu     sync.Mutex // guards the fields below
	closed bool
	body   io.ReadCloser
	cancel context.CancelFunc // of the current connection
	r      *bufio.Reader
}

// Cursor is the cursor (SSE id) of the last event Next returned.
func (s *EventStream) Cursor() int64 { return s.cursor }

// Reconnects counts the connections made after the first.
func (s *EventStream) Reconnects() int { return s.reconnects }

// connect opens a connection resuming after s.cursor. Its lifetime is
// the stream's, not ctx's: ctx bounds only the connecting.
func (s *EventStream) connect(ctx context.Context) error {
	connCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopWatch := context.AfterFunc(ctx, cancel)
	defer stopWatch()
	q := query("sessionId", s.filter.SessionID, "turnId", s.filter.TurnID)
	if !s.follow {
		q.Set("follow", "false")
	}
	req, err := s.c.newRequest(connCtx, http.MethodGet, "/v1/events", q, nil)
	if err != nil {
		cancel()
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if s.cursor > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(s.cursor, 10))
	}
	resp, err := s.c.send(req)
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		resp.Body.Close()
		cancel()
		return ErrStreamClosed
	}
	s.body, s.cancel, s.r = resp.Body, cancel, bufio.NewReaderSize(resp.Body, 64<<10)
	return nil
}

// dropConn closes the current connection, if any.
func (s *EventStream) dropConn() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.body != nil {
		s.cancel()
		s.body.Close()
		s.body, s.cancel, s.r = nil, nil, nil
	}
}

// Close ends the stream; a Next waiting for an event returns.
func (s *EventStream) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.dropConn()
}

// Next returns the next event, waiting for one. When ctx ends it returns
// ctx's cause (the stream stays usable: the next call reconnects after
// the last event returned). A stream of EventsCatchUp returns io.EOF
// once caught up. An error the server answers on reconnecting (a refused
// token, say) is returned; a server that cannot be reached is tried
// again until ctx ends.
func (s *EventStream) Next(ctx context.Context) (*event.Event, error) {
	for {
		s.mu.Lock()
		closed, r := s.closed, s.r
		s.mu.Unlock()
		switch {
		case closed:
			return nil, ErrStreamClosed
		case ctx.Err() != nil:
			return nil, context.Cause(ctx)
		}
		if r == nil {
			if err := s.wait(ctx); err != nil {
				return nil, err
			}
			s.reconnects++
			err := s.connect(ctx)
			var ce *ConnectError
			var se *Error
			switch {
			case err == nil:
			case errors.As(err, &ce), errors.As(err, &se) && se.StatusCode >= 500:
				continue // the server restarts, say: try again
			default:
				return nil, err
			}
			continue
		}
		e, err := s.read(ctx, r)
		if err == nil {
			s.cursor = e.Cursor
			return e, nil
		}
		s.dropConn()
		switch {
		case ctx.Err() != nil:
			return nil, context.Cause(ctx)
		case errors.Is(err, io.EOF) && !s.follow:
			return nil, io.EOF
		case isProtocolError(err):
			return nil, err
		}
		// The connection broke (the server went away): reconnect.
	}
}

// wait waits the reconnect delay, or until ctx ends.
func (s *EventStream) wait(ctx context.Context) error {
	d := s.retry
	if s.c.reconnectDelay > 0 {
		d = s.c.reconnectDelay
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// protocolError is a stream the client cannot read: a bad event, not a
// broken connection.
type protocolError struct{ err error }

func (e *protocolError) Error() string { return e.err.Error() }
func (e *protocolError) Unwrap() error { return e.err }

func isProtocolError(err error) bool {
	var pe *protocolError
	return errors.As(err, &pe)
}

// read reads SSE lines up to the next event. A comment (keep-alive) or a
// message without data is skipped; retry: sets the reconnect delay.
func (s *EventStream) read(ctx context.Context, r *bufio.Reader) (*event.Event, error) {
	// A read blocks on the connection: ctx ending closes it.
	stop := context.AfterFunc(ctx, s.dropConn)
	defer stop()
	var id, data string
	var hasData bool
	for {
		line, err := readLine(r)
		if err != nil {
			return nil, err
		}
		if line == "" {
			if !hasData {
				id = ""
				continue
			}
			cur, err := strconv.ParseInt(id, 10, 64)
			if err != nil {
				return nil, &protocolError{fmt.Errorf("reading the event stream: an event has id %q, want a cursor", id)}
			}
			e, err := event.Decode([]byte(data))
			if err != nil {
				return nil, &protocolError{fmt.Errorf("reading the event stream: %w", err)}
			}
			e.Cursor = cur
			return e, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			id = value
		case "data":
			if hasData {
				data += "\n"
			}
			data += value
			hasData = true
		case "retry":
			if ms, err := strconv.Atoi(value); err == nil && ms > 0 {
				s.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

// readLine reads one line without its line ending.
func readLine(r *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		if err != nil {
			return "", err
		}
		b = append(b, chunk...)
		if len(b) > maxEventBytes {
			return "", &protocolError{fmt.Errorf("reading the event stream: a line exceeds %d bytes", maxEventBytes)}
		}
		if !isPrefix {
			return string(b), nil
		}
	}
}
