package builtin_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
)

// testBundle is a registry with the builtin tools and a workspace: ws is
// the workspace directory, inside outer, which also holds secret.txt, a
// file the tools must never reach.
type testBundle struct {
	reg    *tool.Registry
	outer  string
	ws     string
	root   *os.Root
	secret string
	sb     *sandbox.Sandbox // hides the runtime's files; nil hides none
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	outer := t.TempDir()
	ws := filepath.Join(outer, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(outer, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	reg := tool.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return &testBundle{reg: reg, outer: outer, ws: ws, root: root, secret: secret}
}

// call validates input against the tool's schema, as the runtime does,
// and calls the tool with the bundle's workspace.
func (b *testBundle) call(t *testing.T, name, input string) *tool.Result {
	t.Helper()
	if err := b.reg.Validate(name, json.RawMessage(input)); err != nil {
		t.Fatalf("Validate(%s, %s): %v", name, input, err)
	}
	tl, _ := b.reg.Lookup(name)
	res, err := tl.Call(t.Context(), &tool.Call{ID: "call_1", Input: json.RawMessage(input), Workspace: b.root, WorkspaceDir: b.ws, Sandbox: b.sb})
	if err != nil {
		t.Fatalf("Call(%s) returned a Go error: %v", name, err)
	}
	return res
}

func (b *testBundle) writeWS(t *testing.T, name, content string) {
	t.Helper()
	p := filepath.Join(b.ws, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantError(t *testing.T, res *tool.Result, substrs ...string) {
	t.Helper()
	if !res.IsError {
		t.Errorf("result = %+v, want an error result", res)
		return
	}
	for _, s := range substrs {
		if !strings.Contains(res.Content, s) {
			t.Errorf("error result %q does not contain %q", res.Content, s)
		}
	}
}

func TestRegister(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	var names []string
	for _, tl := range builtin.Tools() {
		names = append(names, tl.Spec().Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff(names, bundle.reg.Names()); diff != "" {
		t.Errorf("registered names vs Tools() (-want +got):\n%s", diff)
	}
	wantAnn := map[string]tool.Annotations{
		builtin.ReadFileName:     {ReadOnly: true, Idempotent: true},
		builtin.ListDirName:      {ReadOnly: true, Idempotent: true},
		builtin.WriteFileName:    {Destructive: true, Idempotent: true},
		builtin.CompleteTaskName: {Idempotent: true},
	}
	gotAnn := map[string]tool.Annotations{}
	for _, name := range names {
		tl, _ := bundle.reg.Lookup(name)
		spec := tl.Spec()
		gotAnn[name] = spec.Annotations
		if spec.Source != "builtin" || spec.Description == "" {
			t.Errorf("%s: Source %q, Description %q", name, spec.Source, spec.Description)
		}
	}
	if diff := cmp.Diff(wantAnn, gotAnn); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if err := builtin.Register(bundle.reg); err == nil {
		t.Error("registering the builtins twice succeeded")
	}
}

func TestNoWorkspace(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	inputs := map[string]string{
		builtin.ReadFileName:  `{"path":"a.txt"}`,
		builtin.ListDirName:   `{}`,
		builtin.WriteFileName: `{"path":"a.txt","content":"x"}`,
	}
	for name, input := range inputs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tl, _ := bundle.reg.Lookup(name)
			res, err := tl.Call(t.Context(), &tool.Call{Input: json.RawMessage(input)})
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if diff := cmp.Diff(&tool.Result{Content: name + ": this agent has no workspace", IsError: true}, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompleteTask(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	res := bundle.call(t, tool.CompleteTaskName, `{"result":"refund issued","evidence":["ticket #12 updated"]}`)
	if diff := cmp.Diff(&tool.Result{Content: "task completed"}, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	var inErr *tool.InputError
	if err := bundle.reg.Validate(tool.CompleteTaskName, json.RawMessage(`{"evidence":["x"]}`)); !errors.As(err, &inErr) {
		t.Fatalf("Validate without result = %v, want *InputError", err)
	}
	if diff := cmp.Diff("missing property 'result'", inErr.Reason); diff != "" {
		t.Errorf("reason (-want +got):\n%s", diff)
	}
	if err := bundle.reg.Validate(tool.CompleteTaskName, json.RawMessage(`{"result":"x","evidence":"x"}`)); !errors.As(err, &inErr) {
		t.Errorf("Validate with string evidence = %v, want *InputError", err)
	}
}
