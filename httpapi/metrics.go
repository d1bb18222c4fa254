package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"

	"github.com/agentrt/agentrt/telemetry"
)

// metrics serves the runtime's metrics in the Prometheus text format:
// the whole runtime's to an admin, the caller's tenant's to the others.
// They are written to a buffer first, so that a store error is a 500,
// not a truncated scrape.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	write := s.rt.WriteMetrics
	if c := caller(r); c.Role != runtype.APIRoleAdmin {
		write = func(ctx context.Context, w io.Writer) error { return s.rt.WriteTenantMetrics(ctx, w, c.TenantID) }
	}
	if err := write(r.Context(), &buf); err != nil {
		s.cfg.Logger.ErrorContext(r.Context(), "writing metrics", "err", err)
		writeError(w, apitype.ProblemInternal, "internal error; see the server log")
		return
	}
	w.Header().Set("Content-Type", telemetry.ContentType)
	w.Write(buf.Bytes())
}
