package httpapi

import (
	"bytes"
	"net/http"

	"github.com/agentrt/agentrt/telemetry"
)

// metrics serves the runtime's metrics in the Prometheus text format.
// They are written to a buffer first, so that a store error is a 500,
// not a truncated scrape.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	if err := s.rt.WriteMetrics(r.Context(), &buf); err != nil {
		s.cfg.Logger.ErrorContext(r.Context(), "writing metrics", "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "internal error; see the server log")
		return
	}
	w.Header().Set("Content-Type", telemetry.ContentType)
	w.Write(buf.Bytes())
}
