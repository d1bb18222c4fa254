package agentrt_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// bigOutputScript calls big twice: 5000 bytes (more than the 2 KiB
// preview: a blob) and 40000 (more than the 32 KiB inline limit:
// spilled to the output store).
const bigOutputScript = `
responses:
  - tool_calls: [{name: big, input: {n: 5000, fill: "b"}}, {name: big, input: {n: 40000, fill: "s"}}]
  - text: done
`

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

// outputRefs returns the outputRef of each tool.result of a session, in order.
func (b *testBundle) outputRefs(t *testing.T, owner runtype.Owner, sessionID string) []string {
	t.Helper()
	var refs []string
	for _, e := range b.sessionEvents(t, owner, sessionID) {
		if e.Type == event.ToolResult && e.OutputRef != "" {
			refs = append(refs, e.OutputRef)
		}
	}
	return refs
}

// TestOpenOutput: a tenant reads the whole output of its tool calls, from
// the store (a blob) and from the output store (spilled); another tenant,
// and a ref of nothing, get ErrNotFound; a malformed ref is invalid and
// not echoed when long.
func TestOpenOutput(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{script: bigOutputScript, sqlite: true, tools: []tool.Tool{bigTool()}, names: []string{"big"}})
	acme := runtype.Owner{TenantID: "acme", PrincipalID: "alice"}
	globex := runtype.Owner{TenantID: "globex", PrincipalID: "bob"}
	res, turn := b.submit(t, &apitype.SubmitTurnParams{Owner: acme, Agent: "support", Input: "print"})
	if turn.Status != runtype.StatusCompleted {
		t.Fatalf("turn %s (%s)", turn.Status, turn.StatusReason)
	}
	refs := b.outputRefs(t, acme, res.SessionID)
	if len(refs) != 2 {
		t.Fatalf("output refs %v, want two", refs)
	}
	ctx := context.Background()
	for i, want := range []struct {
		source string
		body   string
	}{{apitype.OutputSourceBlob, strings.Repeat("b", 5000)}, {apitype.OutputSourceStore, strings.Repeat("s", 40000)}} {
		out, err := b.rt.OpenOutput(ctx, acme, refs[i])
		if err != nil {
			t.Fatalf("OpenOutput(%s): %v", refs[i], err)
		}
		got, err := io.ReadAll(out)
		out.Close()
		if err != nil {
			t.Fatal(err)
		}
		if out.Source != want.source || out.Size != int64(len(want.body)) || out.MediaType != "text/plain; charset=utf-8" || string(got) != want.body {
			t.Errorf("OpenOutput(%s) = %s, %d bytes, %s, %d read; want %s, %d bytes", refs[i], out.Source, out.Size, out.MediaType, len(got), want.source, len(want.body))
		}
		if _, err := b.rt.OpenOutput(ctx, globex, refs[i]); !errors.Is(err, apitype.ErrNotFound) {
			t.Errorf("another tenant's OpenOutput(%s) = %v, want ErrNotFound", refs[i], err)
		}
	}
	missing := "sha256:" + strings.Repeat("0", 64)
	if _, err := b.rt.OpenOutput(ctx, acme, missing); !errors.Is(err, apitype.ErrNotFound) {
		t.Errorf("OpenOutput(a ref of nothing) = %v, want ErrNotFound", err)
	}

	huge := "sha256:" + strings.Repeat("a", 1<<20)
	for _, ref := range []string{"", "../../../etc/passwd", "sha256:../../etc/passwd", "sha256-" + strings.Repeat("a", 64),
		"sha256:" + strings.Repeat("A", 64), "sha256:" + strings.Repeat("a", 63), huge} {
		_, err := b.rt.OpenOutput(ctx, acme, ref)
		var inv *apitype.InvalidError
		if !errors.As(err, &inv) || inv.Field != "ref" || !strings.Contains(inv.Reason, "sha256: followed by 64 lowercase hex digits") {
			t.Errorf("OpenOutput(%.40q) = %v, want an invalid ref", ref, err)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("OpenOutput(a %d-byte ref): the error quotes it: %.80s…", len(ref), err)
		}
	}
}
