package tool_test

import (
	"encoding/json"
	"testing"

	"github.com/agentrt/agentrt/tool"
)

func TestQuoteArgv(t *testing.T) {
	t.Parallel()
	got := tool.QuoteArgv([]string{"printf", "%s|", "a b", "it's", ""})
	want := `printf '%s|' 'a b' 'it'\''s' ''`
	if got != want {
		t.Errorf("QuoteArgv = %s, want %s", got, want)
	}
}

// TestCommandLine: what policy command rules see of a shell-like or an
// exec-like call, with and without extra environment variables.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	shell := tool.Spec{Name: "shell", CommandField: "command", EnvField: "env"}
	exec := tool.Spec{Name: "exec", ArgvField: "argv", EnvField: "env"}
	for _, tt := range []struct {
		spec  tool.Spec
		input string
		want  string
	}{
		{shell, `{"command":"ls -la && rm x"}`, "ls -la && rm x"},
		{shell, `{"command":"ls","env":{"LD_PRELOAD":"./x.so","A":"1"}}`, "env A=1 LD_PRELOAD=./x.so sh -c ls"},
		{shell, `{"command":"ls; rm -rf /","env":{"A":"b c"}}`, `env 'A=b c' sh -c 'ls; rm -rf /'`},
		{shell, `{"command":"ls","env":{}}`, "ls"},
		{exec, `{"argv":["rm","-rf","/"]}`, "rm -rf /"},
		{exec, `{"argv":["sh","-c","rm -rf / ; echo $HOME"]}`, `sh -c 'rm -rf / ; echo $HOME'`},
		{exec, `{"argv":["ls"],"env":{"BASH_ENV":"/w/x"}}`, "env BASH_ENV=/w/x ls"},
		{exec, `{"argv":[]}`, ""},
		{exec, `{"argv":"rm"}`, ""},
		{exec, `not json`, ""},
		{tool.Spec{Name: "read_file"}, `{"command":"rm"}`, ""},
	} {
		if got := tt.spec.CommandLine(json.RawMessage(tt.input)); got != tt.want {
			t.Errorf("%s %s: CommandLine = %q, want %q", tt.spec.Name, tt.input, got, tt.want)
		}
	}
}
