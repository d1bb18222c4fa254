package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/spectest"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
)

// echoScript starts a background process that echoes its stdin, then asks
// for a read the policy holds for a person: the turn parks and the
// process lives on.
const echoScript = `responses:
  - {tool_calls: [{name: shell, input: {command: "while read l; do echo got:$l; done", background: true, yield_ms: 50}}]}
  - {tool_calls: [{name: read_file, input: {path: x.md}}]}
  - {text: "done"}
`

// TestProcessControlOverHTTP: a session's live processes are listed,
// written to and terminated through the control plane; bad requests get
// 4xx with a reason.
func TestProcessControlOverHTTP(t *testing.T) {
	t.Parallel()
	if _, err := sandbox.New(sandbox.Options{}).Enforcer(); err != nil {
		testenv.Missing(t, "no sandbox can be enforced here: %v", err)
	}
	rules, err := policy.ParseRules("rules.yaml", []byte(`rules:
  - {id: ask-reads, tools: [read_file], decision: ask, reason_code: review}
  - {id: shell, tools: [shell], decision: allow, reason_code: allowed}`))
	if err != nil {
		t.Fatal(err)
	}
	k, err := policy.NewKernel(policy.KernelConfig{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, setupOpts{script: echoScript, policy: k, builtins: []string{"shell", "read_file"}, workspace: t.TempDir()})
	res := b.submit(t, apitype.SubmitTurnRequest{Input: "go"})
	if turn := b.wait(t, res.TurnID); turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("turn %s (%s)", turn.Status, turn.StatusReason)
	}
	base := "/v1/sessions/" + res.SessionID + "/processes"
	var list struct{ Processes []apitype.ProcessInfo }
	b.getJSON(t, call{path: base}, http.StatusOK, &list)
	if len(list.Processes) != 1 || !list.Processes[0].Background || !strings.Contains(list.Processes[0].Command, "got:") {
		t.Fatalf("processes %+v, want the background echo", list.Processes)
	}
	pid := list.Processes[0].ProcessID

	var body apitype.Problem
	b.getJSON(t, call{method: http.MethodPost, path: base + "/" + pid + "/stdin", body: `{}`}, http.StatusBadRequest, &body)
	if !strings.Contains(body.Detail, "nothing to do") {
		t.Errorf("empty write: %+v", body)
	}
	b.getJSON(t, call{method: http.MethodPost, path: base + "/" + pid + "/stdin", body: `{"data":1}`}, http.StatusBadRequest, &body)
	b.getJSON(t, call{method: http.MethodPost, path: base + "/proc_nope/stdin", body: `{"data":"x"}`}, http.StatusNotFound, &body)
	b.getJSON(t, call{method: http.MethodPost, path: "/v1/sessions/ses_nope/processes/" + pid + "/terminate"}, http.StatusNotFound, &body)

	b.getJSON(t, call{method: http.MethodPost, path: base + "/" + pid + "/stdin", body: `{"data":"hello\n"}`}, http.StatusOK, nil)
	b.getJSON(t, call{method: http.MethodPost, path: base + "/" + pid + "/terminate"}, http.StatusOK, nil)
	b.getJSON(t, call{path: base}, http.StatusOK, &list)
	if len(list.Processes) != 0 {
		t.Errorf("processes after terminate: %+v", list.Processes)
	}
	b.getJSON(t, call{method: http.MethodPost, path: base + "/" + pid + "/terminate"}, http.StatusNotFound, &body)

	// The process's end is recorded as it happens: follow the session's
	// events until it is there.
	sub, err := b.rt.Subscribe(context.Background(), &apitype.SubscribeParams{SessionID: res.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
	defer cancel()
	var input bool
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for process.terminated (process.input seen: %v): %v", input, err)
		}
		raw, err := e.JSON()
		if err != nil {
			t.Fatal(err)
		}
		spectest.Event(t, raw)
		input = input || e.Type == event.ProcessInput
		if e.Type == event.ProcessTerminated {
			break
		}
	}
	if !input {
		t.Error("no process.input for the control-plane write")
	}
}
