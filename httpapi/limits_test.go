package httpapi_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/httpapi"
)

// serveLimited serves b's API a second time, as agentrt serve does: an
// http.Server from NewHTTPServer on a listener from LimitListener (which
// reports each release on released, when it is not nil). It returns a copy
// of b that talks to that server.
func serveLimited(t *testing.T, b *testBundle, l httpapi.Limits, released chan<- netip.Addr) *testBundle {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = httpapi.NewHTTPServer(b.api.Handler(), l)
	if released != nil {
		srv.Listener = httpapi.LimitListenerNotify(srv.Listener, l.WithDefaults().MaxConnsPerClient, released)
	} else {
		srv.Listener = httpapi.LimitListener(srv.Listener, l.WithDefaults().MaxConnsPerClient, nil)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	lb := *b
	lb.server = srv
	return &lb
}

// slowClient is a connection that sends the start of a request, then one
// more byte every tick, until the server closes it.
type slowClient struct {
	name  string
	start string // sent at once
	more  byte   // trickled
}

// closedByServer reports whether err, from reading a connection, says
// that the server ended it (rather than the client's deadline passing).
func closedByServer(err error) bool {
	return err == nil || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// TestSlowClientsLoseTheirConnections: two hundred clients that send a
// header or a body a byte at a time, each byte well within the timeout,
// lose their connections once the header or body timeout has passed,
// whether or not a handler reads the body; meanwhile other clients get
// their answers, and an event stream opened before keeps delivering
// after the timeouts.
func TestSlowClientsLoseTheirConnections(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	b := serveLimited(t, setup(t, setupOpts{}), httpapi.Limits{
		ReadHeaderTimeout: timeout, BodyTimeout: timeout, MaxConnsPerClient: 1000,
	}, nil)
	stream := b.openEvents(t, "", nil)

	auth := "Authorization: Bearer " + testToken + "\r\n"
	body := "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
	kinds := []slowClient{
		{"slow header", "POST /v1/turns HTTP/1.1\r\nHost: agentrt\r\nX-Slow: ", 'a'},
		{"slow body, refused unauthenticated", "POST /v1/turns HTTP/1.1\r\nHost: agentrt\r\n" + body + `{"input": "`, 'a'},
		{"slow body, decoded", "POST /v1/turns HTTP/1.1\r\nHost: agentrt\r\n" + auth + body + `{"agent": "support", "input": "`, 'a'},
		{"slow body nobody reads", "GET /v1/health HTTP/1.1\r\nHost: agentrt\r\n" + auth + body, ' '},
	}
	const n = 200
	// Far beyond the timeout: a connection still open then is held for good.
	const patience = 10*timeout + 5*time.Second
	deadline := time.Now().Add(patience)
	type outcome struct {
		kind string
		err  error // the read's error: EOF or a reset when the server closed it
	}
	results := make(chan outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		k := kinds[i%len(kinds)]
		conn, err := net.Dial("tcp", b.server.Listener.Addr().String())
		if err != nil {
			t.Fatalf("dialing: %v", err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := io.WriteString(conn, k.start); err != nil {
			t.Fatalf("%s: writing: %v", k.name, err)
		}
		closed := make(chan struct{})
		wg.Go(func() { // trickle: a byte every fifth of the timeout
			tick := time.NewTicker(timeout / 5)
			defer tick.Stop()
			for {
				select {
				case <-closed:
					return
				case <-tick.C:
					if _, err := conn.Write([]byte{k.more}); err != nil {
						return
					}
				}
			}
		})
		wg.Go(func() {
			defer close(closed)
			conn.SetReadDeadline(deadline)
			_, err := io.Copy(io.Discard, conn)
			results <- outcome{k.name, err}
		})
	}

	// The slow clients hold their connections; others get answers.
	for i := range 10 {
		var res struct{ TurnID string }
		b.getJSON(t, call{method: http.MethodPost, path: "/v1/turns", body: fmt.Sprintf(`{"agent": "support", "input": "hello %d"}`, i)}, http.StatusAccepted, &res)
		b.getJSON(t, call{path: "/v1/health"}, http.StatusOK, nil)
		b.getJSON(t, call{path: "/readyz", header: map[string]string{"Authorization": ""}}, http.StatusOK, nil)
	}

	held := map[string]int{}
	for range n {
		r := <-results
		if !closedByServer(r.err) {
			held[r.kind]++
			if held[r.kind] == 1 {
				t.Errorf("%s: the connection was still open %s after the request began (timeouts %s): %v", r.kind, patience, timeout, r.err)
			}
		}
	}
	wg.Wait()
	if len(held) > 0 {
		t.Errorf("connections held past the timeouts, by kind: %v", held)
	}

	// The stream opened before the slow clients outlived their timeouts.
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "after the slow clients"})
	stream.until(turnEnded(res.TurnID))
}

// TestConnectionsPerClientAreCapped: a client address with as many
// connections open as the cap allows (an event stream among them) has the
// next one closed unanswered, while another address is served; once one
// of its connections closes, it may open another.
func TestConnectionsPerClientAreCapped(t *testing.T) {
	t.Parallel()
	released := make(chan netip.Addr, 16)
	b := serveLimited(t, setup(t, setupOpts{}), httpapi.Limits{MaxConnsPerClient: 3}, released)
	addr := b.server.Listener.Addr().String()
	loopback := netip.MustParseAddr("127.0.0.1")

	stream := b.openEvents(t, "", nil) // the first connection
	c2, c3 := dialFrom(t, addr, "127.0.0.1"), dialFrom(t, addr, "127.0.0.1")
	for _, c := range []net.Conn{c2, c3} {
		if code, err := healthz(c, false); err != nil || code != http.StatusOK {
			t.Fatalf("GET /healthz on a connection within the cap = %d, %v; want 200", code, err)
		}
	}

	over := dialFrom(t, addr, "127.0.0.1")
	if code, err := healthz(over, false); err == nil || !closedByServer(unwrapRead(err)) {
		t.Errorf("GET /healthz on a fourth connection = %d, %v; want the connection closed unanswered", code, err)
	}
	if code, err := healthz(dialFrom(t, addr, "127.0.0.2"), false); err != nil || code != http.StatusOK {
		t.Errorf("GET /healthz from another address = %d, %v; want 200", code, err)
	}

	// Connection: close makes the server close c2 after answering.
	if code, err := healthz(c2, true); err != nil || code != http.StatusOK {
		t.Fatalf("GET /healthz, Connection: close = %d, %v; want 200", code, err)
	}
	for a := range released {
		if a == loopback {
			break
		}
	}
	if code, err := healthz(dialFrom(t, addr, "127.0.0.1"), false); err != nil || code != http.StatusOK {
		t.Errorf("GET /healthz after a connection closed = %d, %v; want 200", code, err)
	}
	// The stream still works. (The turn is submitted in process: the
	// address has no connection to spare.)
	res, err := b.rt.SubmitTurn(t.Context(), &apitype.SubmitTurnParams{Agent: "support", Input: "still streaming"})
	if err != nil {
		t.Fatal(err)
	}
	stream.until(turnEnded(res.TurnID))
}

// dialFrom connects to addr from the local address from (any loopback
// address is this host on Linux); cleanup closes the connection.
func dialFrom(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dialing %s from %s: %v", addr, from, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readError marks the error of reading a response, as opposed to sending
// the request.
type readError struct{ err error }

func (e *readError) Error() string { return "reading the response: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// unwrapRead returns the read's error inside err, or err when it is not one.
func unwrapRead(err error) error {
	var re *readError
	if errors.As(err, &re) {
		if errors.Is(re.err, io.ErrUnexpectedEOF) {
			return io.EOF
		}
		return re.err
	}
	return err
}

// healthz sends GET /healthz on c and reads the answer's status, within a
// deadline far beyond what the server needs.
func healthz(c net.Conn, closeAfter bool) (int, error) {
	c.SetDeadline(time.Now().Add(30 * time.Second))
	req := "GET /healthz HTTP/1.1\r\nHost: agentrt\r\n"
	if closeAfter {
		req += "Connection: close\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		return 0, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, &readError{err}
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, &readError{err}
	}
	if closeAfter {
		// The server closes the connection after the answer.
		if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("after a Connection: close answer: %v, want EOF", err)
		}
	}
	return resp.StatusCode, nil
}

// TestOversizedHeadersAreRefused: a header over MaxHeaderBytes (64 KiB
// by default) is answered 431 without reaching a handler.
func TestOversizedHeadersAreRefused(t *testing.T) {
	t.Parallel()
	b := serveLimited(t, setup(t, setupOpts{}), httpapi.Limits{}, nil)
	big := strings.Repeat("x", 100<<10)
	resp, _ := b.do(t, call{method: http.MethodGet, path: "/healthz", header: map[string]string{"X-Big": big}})
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("GET /healthz with a 100 KiB header = %d, want 431", resp.StatusCode)
	}
	resp, _ = b.do(t, call{method: http.MethodGet, path: "/healthz", header: map[string]string{"X-Big": big[:16<<10]}})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz with a 16 KiB header = %d, want 200", resp.StatusCode)
	}
}
