package httpapi

import (
	"fmt"
	"net/http"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
)

// exportEvidence streams a request's evidence bundle (application/gzip).
// Errors are answered before the first byte of the bundle: the bundle
// is prepared, and evidence.changed recorded, before the status is sent.
// Signing is the client's (agentrt export --sign-key).
func (s *Server) exportEvidence(w http.ResponseWriter, r *http.Request) {
	var req apitype.ExportEvidenceRequest
	if r.ContentLength != 0 && !decodeBody(w, r, &req) {
		return
	}
	x, err := s.rt.PrepareEvidence(r.Context(), &apitype.ExportEvidenceParams{
		Owner: owner(r), SessionID: r.PathValue("sessionId"), TurnID: r.PathValue("turnId"),
		ArtifactContents: req.ArtifactContents, Health: req.Health,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	s.writeEvidence(w, x)
}

// writeEvidence answers a prepared evidence bundle as a .tar.gz
// attachment, with its id and its manifest's hash in the header.
func (s *Server) writeEvidence(w http.ResponseWriter, x *agentrt.EvidenceExport) {
	m := x.Manifest()
	h := w.Header()
	h.Set("Content-Type", "application/gzip")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.tar.gz"`, m.BundleID))
	h.Set("Evidence-Id", m.BundleID)
	h.Set("Evidence-Manifest-Sha256", x.ManifestSHA256())
	w.WriteHeader(http.StatusOK)
	if _, err := x.WriteTo(w); err != nil {
		// The status is sent: the client sees a truncated archive, which
		// agentrt verify refuses.
		s.cfg.Logger.Error("writing an evidence bundle", "evidenceId", m.BundleID, "err", err)
	}
}
