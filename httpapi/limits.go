package httpapi

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Limits bound what one client can hold of the server: how long it may
// take to send a request's header and body, how big the header may be,
// how long an idle connection stays open, and how many connections one
// address may have open at once. Zero fields take the defaults.
//
// There is deliberately no whole-request read timeout and no write
// timeout: an event stream (GET /v1/events) lasts as long as its client
// follows it.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's header; default 10s.
	ReadHeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, from when its header
	// has been read until the body's end, whoever reads it: the handler,
	// or the server, which reads what a handler left unread (up to 256
	// KiB) before it reuses the connection. A client still sending when
	// it runs out loses its connection. Default 30s.
	BodyTimeout time.Duration
	// IdleTimeout is how long a kept-alive connection may wait for its
	// next request; default 2m.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header (its line and fields);
	// default 64 KiB. A bigger one is answered 431.
	MaxHeaderBytes int
	// MaxConnsPerClient bounds the connections one client address has
	// open at once, event streams included; default 64. A connection
	// over the cap is closed as soon as it is accepted. Behind a reverse
	// proxy every client has the proxy's address: raise it there.
	MaxConnsPerClient int
}

// Default limits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxConnsPerClient = 64
)

// WithDefaults returns l with zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxConnsPerClient <= 0 {
		l.MaxConnsPerClient = DefaultMaxConnsPerClient
	}
	return l
}

// NewHTTPServer returns an http.Server that serves h within l. Serve it
// on a listener from LimitListener, which enforces MaxConnsPerClient. The
// caller may set the server's other fields (BaseContext, ErrorLog).
func NewHTTPServer(h http.Handler, l Limits) *http.Server {
	l = l.WithDefaults()
	return &http.Server{
		Handler:           bodyDeadline(h, l.BodyTimeout),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// bodyDeadline sets the connection's read deadline to d from now while a
// request has a body, and clears it once the body has been read to its
// end. A handler that never reads the body (one that refuses the request
// first) leaves the deadline in place for the server's own read of the
// rest. Clearing it matters: once the body is in, the server watches the
// connection for the client going away, and a deadline passing would
// cancel the request of a long handler (an event stream).
func bodyDeadline(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
			// Not a network connection (a test's recorder): no deadline to keep.
			next.ServeHTTP(w, r)
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody clears the read deadline at the end of the body.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// LimitListener returns ln with at most perClient connections open at once
// from one client address (the peer's IP address, whatever its port); a
// connection over the cap is closed as soon as it is accepted, before
// anything is read from it, and logged (at most one line a minute). A
// perClient of zero or less takes DefaultMaxConnsPerClient.
func LimitListener(ln net.Listener, perClient int, logger *slog.Logger) net.Listener {
	if perClient <= 0 {
		perClient = DefaultMaxConnsPerClient
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &limitListener{Listener: ln, max: perClient, logger: logger, open: make(map[netip.Addr]int)}
}

// refusedLogEvery spaces the log lines about refused connections.
const refusedLogEvery = time.Minute

type limitListener struct {
	net.Listener
	max    int
	logger *slog.Logger
	// released, when set (tests), is sent each address whose count went
	// down, after the count did.
	released chan<- netip.Addr

	mu      sync.Mutex
	open    map[netip.Addr]int // guarded by mu: open connections by address
	refused int                // guarded by mu: refused since the last log line
	logged  time.Time          // guarded by mu: when the last log line was written
}

// Accept returns the next connection within its address's cap, closing
// those over it.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := peerAddr(c)
		if l.take(addr) {
			return &limitConn{Conn: c, l: l, addr: addr}, nil
		}
		c.Close()
	}
}

// take counts a connection from addr, unless addr is at the cap.
func (l *limitListener) take(addr netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[addr] < l.max {
		l.open[addr]++
		return true
	}
	l.refused++
	if now := time.Now(); now.Sub(l.logged) >= refusedLogEvery {
		l.logger.Warn("refusing connections over the per-client cap", "client", addr.String(),
			"cap", l.max, "refused", l.refused)
		l.refused, l.logged = 0, now
	}
	return false
}

func (l *limitListener) release(addr netip.Addr) {
	l.mu.Lock()
	if l.open[addr]--; l.open[addr] <= 0 {
		delete(l.open, addr)
	}
	l.mu.Unlock()
	if l.released != nil {
		l.released <- addr
	}
}

// peerAddr is the IP address of c's peer; the zero Addr when it has none
// (a Unix socket), which makes every such client one.
func peerAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// limitConn gives its place back when it is closed.
type limitConn struct {
	net.Conn
	l    *limitListener
	addr netip.Addr
	once sync.Once
}

// Close frees the connection's place, then closes it: a client that sees
// the connection end may connect again at once.
func (c *limitConn) Close() error {
	c.once.Do(func() { c.l.release(c.addr) })
	return c.Conn.Close()
}

// CloseWrite half-closes a TCP connection, which the server does before it
// closes one it answered with unread data pending (so that the client
// reads the answer rather than a reset).
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
