package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// TestRequestContext: GET /v1/requests/{turnId}/context rebuilds a model
// call's context and verifies it; hostile input gets a clear 400 or 404.
func TestRequestContext(t *testing.T) {
	t.Parallel()
	b, a, _, _ := readsBundle(t)
	path := "/v1/requests/" + a.TurnID + "/context"
	for _, q := range []string{"", "?hop=1", "?hop=0"} {
		var v apitype.ContextView
		b.getJSON(t, call{path: path + q}, http.StatusOK, &v)
		if !v.Verified || v.Hop != 1 || len(v.Messages) != 1 || v.Messages[0].Content != "one" || v.RequestID != a.TurnID {
			t.Errorf("GET %s%s = %+v, want hop 1 verified with the input", path, q, v)
		}
	}
	viewer := b.as(t, "", "val", runtype.APIRoleViewer)
	var v apitype.ContextView
	viewer.getJSON(t, call{path: path}, http.StatusOK, &v)

	other := b.as(t, "tenant_other", "eve", runtype.APIRoleViewer)
	for _, tt := range []struct {
		who  *testBundle
		path string
		code int
		want string
	}{
		{b, path + "?hop=2", http.StatusBadRequest, "hops 1; 2 is not one"},
		{b, path + "?hop=-1", http.StatusBadRequest, "hop must be a non-negative integer"},
		{b, path + "?hop=x", http.StatusBadRequest, "hop must be a non-negative integer"},
		{b, path + "?hop=99999999999999999999", http.StatusBadRequest, "hop"},
		{b, "/v1/requests/turn_nope/context", http.StatusNotFound, ""},
		{other, path, http.StatusNotFound, ""},
	} {
		resp, body := tt.who.do(t, call{method: http.MethodGet, path: tt.path})
		if resp.StatusCode != tt.code || !strings.Contains(string(body), tt.want) {
			t.Errorf("GET %s = %d %s, want %d with %q", tt.path, resp.StatusCode, body, tt.code, tt.want)
		}
	}
}
