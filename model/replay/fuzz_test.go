package replay

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReplayScript: no script makes Parse panic; every problem is one of
// a *ScriptError, at a position of the file, and a script that parses has
// a response per entry.
func FuzzReplayScript(f *testing.F) {
	for _, dir := range []string{"testdata", "../../examples/support"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.replay.yaml"))
		for _, name := range files {
			if data, err := os.ReadFile(name); err == nil {
				f.Add(data)
			}
		}
	}
	for _, s := range []string{
		"responses:\n  - text: hi\n    tool_calls: [{name: t, input: {a: [1, {b: null}]}}]\n    usage: {input_tokens: 3}\n",
		"responses:\n  - error: {kind: rate_limit, retry_after_ms: 200}\n  - {delay_ms: 5, text: x, finish_reason: length}\n",
		"responses:\n  - tool_calls: [{name: t, raw_input: '{\"a\":'}]\n",
		"model: m\nresponses: &r [{text: a}, *r]\n",
		`{"model":"replay","responses":[{"text":"a","tool_calls":[{"name":"t","id":"c1","raw_input":"{}"}]}]}`,
		"responses: " + strings.Repeat("[", 300) + strings.Repeat("]", 300) + "\n",
		"responses:\n  - text: !!binary aGk=\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.replay.yaml", data)
		if err == nil {
			if s == nil || s.Len() != len(s.responses) {
				t.Fatalf("Parse = %+v", s)
			}
			return
		}
		var se *ScriptError
		if !errors.As(err, &se) || len(se.Problems) == 0 {
			t.Fatalf("error %T %v is not a *ScriptError", err, err)
		}
		for _, p := range se.Problems {
			if p.File != "fuzz.replay.yaml" || p.Line < 1 || p.Column < 1 || p.Message == "" {
				t.Fatalf("problem without a position: %#v", p)
			}
		}
	})
}
