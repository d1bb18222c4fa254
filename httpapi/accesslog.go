package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentrt/agentrt/apitype"
)

// requestIDPrefix starts the id the server gives each HTTP request. It is
// not a turn id, though the API calls turns requests.
const requestIDPrefix = "req_"

// accessKey keys a request's *accessEntry in its context.
type accessKey struct{}

// accessEntry is what the access log line of a request says that only
// the handlers learn: who the guard authenticated.
type accessEntry struct {
	principal, tenant, tokenID string
}

// noteCaller records whom the guard authenticated r as, for its access
// log line.
func noteCaller(r *http.Request, cred *apitype.Credential) {
	if e, ok := r.Context().Value(accessKey{}).(*accessEntry); ok {
		e.principal, e.tenant, e.tokenID = cred.PrincipalID, cred.TenantID, cred.TokenID
	}
}

// accessLog wraps next: every request gets an id (the X-Request-Id
// response header) and, once answered, one "http request" log line with
// its method, route pattern (never the path, which holds ids), status,
// duration, the principal and tenant its token belongs to and the
// token's id (when it authenticated), and the request's id. It logs no header, query or body, so no
// token: TestAccessLog holds that. The probes (/healthz, /readyz) log at
// debug level, so that a load balancer's polling does not fill the log.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := s.ids.New(requestIDPrefix)
		w.Header().Set("X-Request-Id", id)
		entry := &accessEntry{}
		r = r.WithContext(context.WithValue(r.Context(), accessKey{}, entry))
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)

		// The mux set the pattern it matched on r.
		_, route, ok := strings.Cut(r.Pattern, " ")
		if !ok {
			route = r.Pattern
		}
		level := slog.LevelInfo
		if route == "/healthz" || route == "/readyz" {
			level = slog.LevelDebug
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method), slog.String("route", route), slog.Int("status", sw.code()),
			slog.Float64("durationMs", float64(time.Since(start).Microseconds())/1000),
		}
		if entry.principal != "" {
			attrs = append(attrs, slog.String("principal", entry.principal), slog.String("tenant", entry.tenant), slog.String("tokenId", entry.tokenID))
		}
		attrs = append(attrs, slog.String("httpRequestId", id))
		s.cfg.Logger.LogAttrs(r.Context(), level, "http request", attrs...)
	})
}

// statusWriter remembers the status of the response it writes.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (to flush
// an event stream, to set deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// code is the status sent: 200 when the handler wrote nothing.
func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
