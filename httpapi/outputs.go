package httpapi

import (
	"io"
	"net/http"
	"strconv"
)

// getOutput streams stored content by its ref (a tool call's outputRef,
// a raw response's ref): a blob of the caller's tenant, or a spilled
// output one of its tool calls produced. Another tenant's ref answers
// 404 as a missing one does. The content is served as an attachment
// that no browser renders (nosniff, a sandboxing CSP): tool output is
// whatever a tool printed.
func (s *Server) getOutput(w http.ResponseWriter, r *http.Request) {
	out, err := s.rt.OpenOutput(r.Context(), owner(r), r.PathValue("ref"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	defer out.Close()
	h := w.Header()
	h.Set("Content-Type", out.MediaType)
	h.Set("Content-Length", strconv.FormatInt(out.Size, 10))
	h.Set("Content-Disposition", "attachment")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("Output-Source", out.Source)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.Copy(w, out); err != nil {
		s.cfg.Logger.Error("writing an output", "ref", out.Ref, "err", err)
	}
}
