package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoadConfig: no agentrt.yaml makes Parse (what Load runs on a file's
// bytes) panic; every problem is an Error at a position of the file, and
// a file that parses defines an agent.
func FuzzLoadConfig(f *testing.F) {
	if files, err := filepath.Glob("testdata/*.yaml"); err == nil {
		for _, name := range files {
			if data, err := os.ReadFile(name); err == nil {
				f.Add(data)
			}
		}
	}
	for _, s := range []string{
		"agents: {a: {model: {provider: replay, script: support.replay.yaml}}}\n",
		"agents:\n  a:\n    <<: &m {model: {provider: replay, script: support.replay.yaml}}\n    tools: [lookup_order]\n",
		"agents: " + strings.Repeat("[", 300) + strings.Repeat("]", 300) + "\n",
		"x-a: &a [*a]\nagents: *a\n",
		"agents: !!map {a: !!str 1}\n---\nb: 2\n",
		"mcp_servers: {s: {command: x, env: {A: B}}, r: {url: \"https://h.test\", headers: {X-A: b}}}\n" +
			"agents: {a: {model: {provider: replay, script: support.replay.yaml}, mcp: [s, {server: r, tools: {allow: [\"a*\"]}}]}}\n",
		"{",
		"agents:\n\t- a\n",
	} {
		f.Add([]byte(s))
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("agentrt.yaml", data, dir, Options{Builtins: builtins})
		if err == nil {
			if file == nil || len(file.Agents) == 0 {
				t.Fatalf("Parse accepted a file without agents: %+v", file)
			}
			return
		}
		var es Errors
		if !errors.As(err, &es) || len(es) == 0 {
			t.Fatalf("error %T %v is not Errors", err, err)
		}
		for _, e := range es {
			if e.File != "agentrt.yaml" || e.Line < 1 || e.Column < 1 || e.Message == "" {
				t.Fatalf("error without a position: %#v", e)
			}
		}
	})
}
