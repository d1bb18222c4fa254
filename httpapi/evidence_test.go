package httpapi_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/evidence"
	"github.com/agentrt/agentrt/runtype"
)

// TestExportEvidenceOverHTTP: POST .../export streams a bundle that
// verifies, named by its id; unknown requests and other tenants' are 404,
// a bad body 400.
func TestExportEvidenceOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: askScript, policy: askKernel(t), builtins: []string{"read_file"}})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	b.wait(t, res.TurnID) // parked on the ask
	path := "/v1/sessions/" + res.SessionID + "/requests/" + res.TurnID + "/export"

	resp, body := b.do(t, call{method: http.MethodPost, path: path, body: `{"artifactContents":true,"health":true}`})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/gzip" {
		t.Fatalf("export: %d %s: %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	rep := evidence.Verify(bytes.NewReader(body), nil)
	if !rep.OK {
		t.Fatalf("the exported bundle does not verify: %s: %s", rep.Broken, rep.Reason)
	}
	m := rep.Manifest
	if want := `attachment; filename="` + m.BundleID + `.tar.gz"`; resp.Header.Get("Content-Disposition") != want || resp.Header.Get("Evidence-Id") != m.BundleID {
		t.Errorf("headers %v, want %s", resp.Header, want)
	}
	if m.TurnID != res.TurnID || m.Counts.Approvals != 1 || m.Counts.Decisions != 1 || !m.Scope.Health || !m.Scope.ArtifactContents {
		t.Errorf("manifest %+v, want the parked turn with its pending approval, health and contents", m)
	}

	// An empty body takes the defaults.
	resp, body = b.do(t, call{method: http.MethodPost, path: path})
	if rep := evidence.Verify(bytes.NewReader(body), nil); resp.StatusCode != http.StatusOK || !rep.OK || rep.Manifest.Scope.Health {
		t.Errorf("empty body: %d, ok %v", resp.StatusCode, rep.OK)
	}

	for _, tt := range []struct {
		path, body string
		want       int
		reason     string
	}{
		{"/v1/sessions/" + res.SessionID + "/requests/turn_nope/export", "", http.StatusNotFound, "turn_nope"},
		{"/v1/sessions/ses_other/requests/" + res.TurnID + "/export", "", http.StatusNotFound, "ses_other"},
		{path, `{"artifacts":true}`, http.StatusBadRequest, "unknown field"},
		{path, `{"health":"yes"}`, http.StatusBadRequest, "field health is a JSON string; want true or false"},
	} {
		var e apitype.Problem
		b.getJSON(t, call{method: http.MethodPost, path: tt.path, body: tt.body}, tt.want, &e)
		if !strings.Contains(e.Detail, tt.reason) {
			t.Errorf("POST %s %s: %+v, want %q", tt.path, tt.body, e, tt.reason)
		}
	}

	// Another tenant sees no such request.
	ob := b.as(t, "other", "eve", runtype.APIRoleOperator)
	var e apitype.Problem
	ob.getJSON(t, call{method: http.MethodPost, path: path}, http.StatusNotFound, &e)
}
