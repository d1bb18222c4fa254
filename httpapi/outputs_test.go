package httpapi_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// bigTool returns n bytes of fill.
func bigTool() tool.Tool {
	type in struct {
		N    int    `json:"n"`
		Fill string `json:"fill"`
	}
	return tool.Func("big", "Prints n bytes.", tool.Annotations{ReadOnly: true}, func(_ context.Context, _ *tool.Call, in in) (string, error) {
		return strings.Repeat(in.Fill, in.N), nil
	})
}

// bigScript prints 5000 bytes (kept as a blob) and 40000 (spilled to the
// output store).
const bigScript = `
responses:
  - tool_calls: [{name: big, input: {n: 5000, fill: "b"}}, {name: big, input: {n: 40000, fill: "s"}}]
  - text: done
`

// TestGetOutput: a viewer reads the whole output of its tenant's tool
// calls, a blob and a spilled one, byte for byte, as an attachment no
// browser renders; HEAD answers the headers alone; a viewer of another
// tenant gets exactly the 404 of a ref of nothing; a submitter may not
// call the route.
func TestGetOutput(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: bigScript, tools: []tool.Tool{bigTool()}})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "print"})
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn %s (%s)", turn.Status, turn.StatusReason)
	}
	var refs []string
	for _, e := range b.readAll(t, "sessionId="+res.SessionID, nil) {
		if e.Type == "tool.result" && e.OutputRef != "" {
			refs = append(refs, e.OutputRef)
		}
	}
	if len(refs) != 2 {
		t.Fatalf("output refs %v, want two", refs)
	}
	vera := b.as(t, apitype.DefaultTenant, "vera", runtype.APIRoleViewer)
	for i, want := range []struct{ source, body string }{
		{apitype.OutputSourceBlob, strings.Repeat("b", 5000)},
		{apitype.OutputSourceStore, strings.Repeat("s", 40000)},
	} {
		for _, path := range []string{"/v1/outputs/" + refs[i], "/v1/outputs/" + strings.Replace(refs[i], ":", "%3A", 1)} {
			resp, body := vera.do(t, call{method: http.MethodGet, path: path})
			h := resp.Header
			if resp.StatusCode != http.StatusOK || string(body) != want.body {
				t.Fatalf("GET %s = %d, %d bytes; want 200 and the %d bytes", path, resp.StatusCode, len(body), len(want.body))
			}
			for k, v := range map[string]string{
				"Content-Type": "text/plain; charset=utf-8", "Content-Length": strconv.Itoa(len(want.body)),
				"Content-Disposition": "attachment", "X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox",
				"Output-Source": want.source,
			} {
				if h.Get(k) != v {
					t.Errorf("GET %s: %s = %q, want %q", path, k, h.Get(k), v)
				}
			}
		}
		resp, body := vera.do(t, call{method: http.MethodHead, path: "/v1/outputs/" + refs[i]})
		if resp.StatusCode != http.StatusOK || len(body) != 0 || resp.Header.Get("Output-Source") != want.source {
			t.Errorf("HEAD = %d, %d bytes, source %q", resp.StatusCode, len(body), resp.Header.Get("Output-Source"))
		}
	}

	foreign := b.as(t, "tenant_other", "vera", runtype.APIRoleViewer)
	missing := "sha256:" + strings.Repeat("0", 64)
	resp, body := foreign.do(t, call{method: http.MethodGet, path: "/v1/outputs/" + missing})
	nothing := wantError(t, resp, body, http.StatusNotFound, "not_found", "not found: ref "+missing)
	for _, ref := range refs {
		resp, body := foreign.do(t, call{method: http.MethodGet, path: "/v1/outputs/" + ref})
		got := wantError(t, resp, body, http.StatusNotFound, "not_found")
		if strings.ReplaceAll(got.Detail, ref, missing) != nothing.Detail {
			t.Errorf("another tenant's ref answers %q; a ref of nothing %q", got.Detail, nothing.Detail)
		}
	}

	sam := b.as(t, apitype.DefaultTenant, "sam", runtype.APIRoleSubmitter)
	resp, body = sam.do(t, call{method: http.MethodGet, path: "/v1/outputs/" + refs[0]})
	wantError(t, resp, body, http.StatusForbidden, "forbidden", "role submitter")
}

// TestGetOutputHostileRefs: a ref that is a path, in any spelling, or is
// too long, or is not a sha256 ref, answers 400 with the reason, never
// content; a path with dot segments never reaches the route.
func TestGetOutputHostileRefs(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	const reason = "invalid ref: must be sha256: followed by 64 lowercase hex digits"
	for _, ref := range []string{
		"..%2F..%2F..%2Fetc%2Fpasswd",
		"sha256:..%2F..%2Fapi-token",
		"%2E%2E",
		"sha256-" + strings.Repeat("a", 64),
		"sha256:" + strings.Repeat("A", 64),
		"sha256:" + strings.Repeat("a", 65),
		"md5:d41d8cd98f00b204e9800998ecf8427e",
		"sha256:" + strings.Repeat("a", 63) + "%00",
	} {
		resp, body := b.do(t, call{method: http.MethodGet, path: "/v1/outputs/" + ref})
		wantError(t, resp, body, http.StatusBadRequest, "invalid_request", reason)
	}
	huge := "sha256:" + strings.Repeat("a", 64<<10)
	resp, body := b.do(t, call{method: http.MethodGet, path: "/v1/outputs/" + huge})
	e := wantError(t, resp, body, http.StatusBadRequest, "invalid_request", reason, "got 65543 bytes")
	if len(e.Detail) > 200 {
		t.Errorf("the answer quotes the huge ref back: %d bytes", len(e.Detail))
	}
	// Dot segments are cleaned by the mux before any route: the request is
	// redirected away from /v1/outputs, and the redirect serves nothing.
	resp, body = b.do(t, call{method: http.MethodGet, path: "/v1/outputs/../../api-token"})
	if resp.StatusCode < 400 || resp.StatusCode >= 500 || strings.Contains(string(body), testToken) {
		t.Errorf("GET /v1/outputs/../../api-token = %d %s, want a 4xx without the token", resp.StatusCode, body)
	}
}
