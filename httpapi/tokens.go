package httpapi

import (
	"net/http"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// The token routes, for admins: list, create, rotate and revoke the API
// tokens of every tenant. A new token's text is in the answer that makes
// it, and nowhere else: the store keeps its hash.

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	list, err := s.rt.ListTokens(r.Context(), &apitype.ListTokensParams{TenantID: r.URL.Query().Get("tenantId")})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	if list == nil {
		list = []apitype.TokenRead{}
	}
	writeJSON(w, http.StatusOK, apitype.TokenList{Tokens: list})
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var req apitype.CreateTokenRequest
	if !decodeBody(w, r, &req) {
		return
	}
	k, err := s.rt.CreateToken(r.Context(), &apitype.CreateTokenParams{
		Owner: runtype.Owner{TenantID: req.TenantID, PrincipalID: req.PrincipalID}, Role: req.Role, Name: req.Name,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, k)
}

func (s *Server) rotateToken(w http.ResponseWriter, r *http.Request) {
	k, err := s.rt.RotateToken(r.Context(), r.PathValue("tokenId"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, k)
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	k, err := s.rt.RevokeToken(r.Context(), r.PathValue("tokenId"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, k)
}
