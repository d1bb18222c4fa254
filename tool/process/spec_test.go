package process_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/process"
)

func TestSpecs(t *testing.T) {
	t.Parallel()
	m := process.NewManager(process.Options{})
	defer m.Close()
	r := tool.NewRegistry()
	var names []string
	for _, tl := range m.Tools() {
		if err := r.Register(tl); err != nil {
			t.Fatalf("registering %s: %v", tl.Spec().Name, err)
		}
		names = append(names, tl.Spec().Name)
	}
	if diff := cmp.Diff([]string{"shell", "exec", "write_process_stdin", "terminate_process"}, names); diff != "" {
		t.Errorf("tool names (-want +got):\n%s", diff)
	}
	for _, tl := range m.Tools()[:2] {
		s := tl.Spec()
		if s.CallIntent() != "execute" || s.CallConcurrency() != tool.Exclusive || s.Timeout != process.MaxTimeout || s.Source != "builtin" {
			t.Errorf("%s spec = %+v", s.Name, s)
		}
	}
	if got := m.Tools()[0].Spec().CommandField; got != "command" {
		t.Errorf("shell CommandField = %q, want command", got)
	}
	for _, tt := range []struct {
		name, input string
		ok          bool
	}{
		{"shell", `{"command":"ls","cwd":"a","env":{"A":"b"},"timeout_ms":10,"idle_timeout_ms":0,"background":true,"yield_ms":0,"stdin":"x"}`, true},
		{"shell", `{"argv":["ls"]}`, false},
		{"shell", `{"command":"ls","timeout_ms":0}`, false},
		{"exec", `{"argv":["ls","-l"]}`, true},
		{"exec", `{"argv":[]}`, false},
		{"write_process_stdin", `{"process_id":"proc_1","chars":"x\n","close_stdin":true,"yield_ms":10}`, true},
		{"write_process_stdin", `{"chars":"x"}`, false},
		{"terminate_process", `{"process_id":"proc_1"}`, true},
	} {
		err := r.Validate(tt.name, json.RawMessage(tt.input))
		if (err == nil) != tt.ok {
			t.Errorf("Validate(%s, %s) = %v, want ok %v", tt.name, tt.input, err, tt.ok)
		}
	}
}
