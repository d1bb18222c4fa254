package command_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/command"
)

// TestSandboxedCommandTool: under a runtime (a call with a sandbox and a
// profile) a command tool runs in the agent's sandbox: its own script is
// readable, the workspace writable, the rest refused and reported as a
// violation.
func TestSandboxedCommandTool(t *testing.T) {
	t.Parallel()
	sb := sandbox.New(sandbox.Options{})
	if _, err := sb.Enforcer(); err != nil {
		testenv.Missing(t, "no sandbox can be enforced here: %v", err)
	}
	outside := filepath.Join(t.TempDir(), "outside.txt")
	script := writeScript(t, `cat >/dev/null
echo ok > note.txt
if [ -n "$ESCAPE" ]; then echo x > `+outside+` || exit 1; fi
echo '{"ok":true}'`)
	ws := t.TempDir()
	prof, _ := sandbox.Builtin("workspace_write")
	for _, escape := range []bool{false, true} {
		env := map[string]string{}
		if escape {
			env["ESCAPE"] = "1"
		}
		ct, err := command.New(tool.Spec{Name: "note"}, command.Config{Argv: []string{script}, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var events []event.Type
		var violation *event.SandboxPayload
		res, err := ct.Call(context.Background(), &tool.Call{
			ID: "call_1", Input: json.RawMessage(`{}`), WorkspaceDir: ws, Sandbox: sb, Profile: &prof,
			Emit: func(typ event.Type, p event.Payload) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, typ)
				if typ == event.SandboxViolation {
					violation = p.(*event.SandboxPayload)
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "note.txt")); err != nil || string(b) != "ok\n" {
			t.Errorf("escape=%v: note.txt = %q, %v; want the workspace write", escape, b, err)
		}
		if len(events) == 0 || events[0] != event.SandboxApplied {
			t.Errorf("escape=%v: events %v, want sandbox.applied first", escape, events)
		}
		switch {
		case !escape && (res.IsError || res.Content != `{"ok":true}`):
			t.Errorf("result %+v", res)
		case escape && (!res.IsError || res.Violation == nil || res.Violation.Kind != sandbox.WriteDenied || violation == nil):
			t.Errorf("escape: result %+v, violation event %+v; want write_denied", res, violation)
		}
		if _, err := os.Stat(outside); err == nil {
			t.Fatal("the command wrote outside the workspace")
		}
	}
}
