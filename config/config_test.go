package config

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func TestLoadExample(t *testing.T) {
	t.Parallel()

	f, err := Load("testdata/agentrt.yaml", Options{Builtins: builtins})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	want := &File{
		Path:    filepath.Join(dir, "agentrt.yaml"),
		Dir:     dir,
		DataDir: filepath.Join(dir, ".agentrt"),
		Server:  Server{Listen: "127.0.0.1:7420"},
		Agents: map[string]*Agent{
			"support": {
				Name:              "support",
				Instructions:      "You triage support requests. Finish with complete_task.",
				Models:            []*Model{replayModel(filepath.Join(dir, "support.replay.yaml"), "")},
				Profile:           Profile{Kind: "support", Prefer: "order", Fallback: true},
				Tools:             []string{"lookup_order", "open_ticket", "read_file"},
				RequireCompletion: true,
				MaxToolHops:       8,
				Workspace:         filepath.Join(dir, "workspace"),
			},
			"triage": {
				Name:         "triage",
				Instructions: "You sort incoming requests.\nAnswer with one word.\n",
				Models:       []*Model{replayModel(filepath.Join(dir, "support.replay.yaml"), "triage-v1")},
				Profile:      Profile{Kind: "triage", Prefer: "order", Fallback: true},
				MaxToolHops:  8,
			},
		},
		Tools: map[string]*Tool{
			"lookup_order": {
				Name:        "lookup_order",
				Description: "Look up an order by id.",
				InputSchema: []byte(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
				Command:     []string{filepath.Join(dir, "tools", "lookup_order.sh")},
				Timeout:     10 * time.Second,
				Env:         map[string]string{"REGION": "eu"},
				Annotations: Annotations{ReadOnly: true, Idempotent: true},
			},
			"open_ticket": {
				Name:        "open_ticket",
				Description: "Open a support ticket.",
				InputSchema: []byte(`{"type":"object","properties":{"order_id":{"type":"string"},` +
					`"summary":{"type":"string","maxLength":200},"priority":{"type":"integer","minimum":1,"maximum":5}},` +
					`"required":["order_id","summary"],"additionalProperties":false}`),
				Command: []string{"jq", "-n", `{ticket: "T-1"}`},
				Timeout: 90 * time.Second,
			},
		},
		Models:  map[string]*Model{},
		Budgets: Budgets{TenantWindow: WindowTotal, LowThreshold: DefaultLowThreshold, OnExceeded: OnExceededWait},
	}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Errorf("Load mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"support", "triage"}, f.AgentNames()); diff != "" {
		t.Errorf("AgentNames mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()

	_, err := Load(filepath.Join(t.TempDir(), "agentrt.yaml"), Options{})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load error = %v, want fs.ErrNotExist", err)
	}
	var errs Errors
	if errors.As(err, &errs) {
		t.Errorf("a read error must not be Errors: %v", err)
	}
}

// TestLoadBrokenGolden checks the full report for testdata/broken.yaml
// against testdata/broken.golden; run with -update to rewrite it.
func TestLoadBrokenGolden(t *testing.T) {
	t.Parallel()

	_, err := Load("testdata/broken.yaml", Options{Builtins: builtins})
	if err == nil {
		t.Fatal("Load: no error")
	}
	dir, err2 := filepath.Abs("testdata")
	if err2 != nil {
		t.Fatal(err2)
	}
	got := strings.Join(errorLines(t, err, dir), "\n") + "\n"
	const golden = "testdata/broken.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()

	dir := fixture(t)
	src := "agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml}\n"
	f, err := Parse("agentrt.yaml", []byte(src), dir, Options{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &File{
		Path:    "agentrt.yaml",
		Dir:     dir,
		DataDir: filepath.Join(dir, DefaultDataDir),
		Server:  Server{Listen: DefaultListen},
		Agents: map[string]*Agent{
			"a": {
				Name:        "a",
				Models:      []*Model{replayModel(filepath.Join(dir, "support.replay.yaml"), "")},
				Profile:     Profile{Kind: "a", Prefer: "order", Fallback: true},
				MaxToolHops: DefaultMaxToolHops,
			},
		},
		Tools:   map[string]*Tool{},
		Models:  map[string]*Model{},
		Budgets: Budgets{TenantWindow: WindowTotal, LowThreshold: DefaultLowThreshold, OnExceeded: OnExceededWait},
	}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
}

func TestParsePaths(t *testing.T) {
	t.Parallel()

	dir := fixture(t)
	sub := filepath.Join(dir, "conf")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// The file lives in conf/, so relative paths climb out of it; absolute
	// paths are kept but cleaned.
	src := "data_dir: ../state/./db\n" +
		"agents:\n  a:\n" +
		"    model: {provider: replay, script: ../support.replay.yaml}\n" +
		"    workspace: " + dir + "/ws/\n" +
		"tools:\n" +
		"  local: {input_schema: {type: object}, command: [../tools/run.sh, ./x]}\n" +
		"  absolute: {input_schema: {type: object}, command: [" + dir + "/tools/../tools/run.sh]}\n" +
		"  bare: {input_schema: {type: object}, command: [jq, -r, .]}\n"
	f, err := Parse("agentrt.yaml", []byte(src), sub, Options{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	type paths struct {
		DataDir, Script, Workspace string
		Local, Absolute, Bare      []string
	}
	got := paths{
		DataDir:   f.DataDir,
		Script:    f.Agents["a"].Models[0].Script,
		Workspace: f.Agents["a"].Workspace,
		Local:     f.Tools["local"].Command,
		Absolute:  f.Tools["absolute"].Command,
		Bare:      f.Tools["bare"].Command,
	}
	want := paths{
		DataDir:   filepath.Join(dir, "state", "db"),
		Script:    filepath.Join(dir, "support.replay.yaml"),
		Workspace: filepath.Join(dir, "ws"),
		Local:     []string{filepath.Join(dir, "tools", "run.sh"), "./x"},
		Absolute:  []string{filepath.Join(dir, "tools", "run.sh")},
		Bare:      []string{"jq", "-r", "."},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paths mismatch (-want +got):\n%s", diff)
	}
}

func TestParseEmptyBaseDirIsWorkingDirectory(t *testing.T) {
	t.Parallel()

	src := "agents:\n  a:\n    model: {provider: replay, script: testdata/support.replay.yaml}\n"
	f, err := Parse("agentrt.yaml", []byte(src), "", Options{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wd, f.Dir); diff != "" {
		t.Errorf("Dir mismatch (-want +got):\n%s", diff)
	}
}

func TestParseValues(t *testing.T) {
	t.Parallel()

	const agent = "agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml}\n"
	tests := []struct {
		name string
		yaml string
		get  func(*File) any
		want any
	}{
		{
			name: "MaxToolHopsLowerBound",
			yaml: agent + "    max_tool_hops: 1\n",
			get:  func(f *File) any { return f.Agents["a"].MaxToolHops },
			want: 1,
		},
		{
			name: "MaxToolHopsUpperBound",
			yaml: agent + "    max_tool_hops: 1000\n",
			get:  func(f *File) any { return f.Agents["a"].MaxToolHops },
			want: 1000,
		},
		{
			name: "NullMeansDefault",
			yaml: "server:\ndata_dir:\n" + agent + "    max_tool_hops:\n    tools:\n",
			get: func(f *File) any {
				return []any{f.Server.Listen, filepath.Base(f.DataDir), f.Agents["a"].MaxToolHops, f.Agents["a"].Tools}
			},
			want: []any{DefaultListen, DefaultDataDir, DefaultMaxToolHops, []string(nil)},
		},
		{
			name: "Listen",
			yaml: agent + "server: {listen: \":8080\"}\n",
			get:  func(f *File) any { return f.Server.Listen },
			want: ":8080",
		},
		{
			name: "ScalarsAsStrings",
			yaml: agent + "tools:\n  t:\n    input_schema: {type: object}\n    command: [sleep, 5, true]\n" +
				"    env: {PORT: 8080, DEBUG: true, RATIO: 0.5, QUOTED: \"a b\"}\n",
			get: func(f *File) any { return []any{f.Tools["t"].Command, f.Tools["t"].Env} },
			want: []any{
				[]string{"sleep", "5", "true"},
				map[string]string{"PORT": "8080", "DEBUG": "true", "RATIO": "0.5", "QUOTED": "a b"},
			},
		},
		{
			name: "Annotations",
			yaml: agent + "tools:\n  t:\n    input_schema: {type: object}\n    command: [rm]\n" +
				"    annotations: {destructive: true, idempotent: true}\n",
			get:  func(f *File) any { return f.Tools["t"].Annotations },
			want: Annotations{Destructive: true, Idempotent: true},
		},
		{
			name: "AnchorsAndMergeKeys",
			yaml: "x-agent: &agent\n  model: {provider: replay, script: support.replay.yaml}\n  max_tool_hops: 3\n  tools: [read_file]\n" +
				"agents:\n  a:\n    <<: *agent\n    max_tool_hops: 5\n  b: {<<: *agent, instructions: hi}\n",
			get: func(f *File) any {
				a, b := f.Agents["a"], f.Agents["b"]
				return []any{a.MaxToolHops, a.Tools, b.MaxToolHops, b.Instructions, b.Models[0].Provider}
			},
			want: []any{5, []string{"read_file"}, 3, "hi", "replay"},
		},
		{
			name: "MergeListEarlierWins",
			yaml: "x-one: &one {max_tool_hops: 1}\nx-two: &two {max_tool_hops: 2, require_completion: true}\n" +
				"agents:\n  a:\n    <<: [*one, *two]\n    model: {provider: replay, script: support.replay.yaml}\n",
			get:  func(f *File) any { return []any{f.Agents["a"].MaxToolHops, f.Agents["a"].RequireCompletion} },
			want: []any{1, true},
		},
		{
			name: "BuiltinsNeedNoDeclaration",
			yaml: agent + "    tools: [complete_task, read_file, list_dir, write_file]\n",
			get:  func(f *File) any { return len(f.Tools) },
			want: 0,
		},
		{
			name: "ModelNameForReplay",
			yaml: "agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml, model: gpt-test}\n",
			get:  func(f *File) any { return f.Agents["a"].Models[0].Name },
			want: "gpt-test",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("agentrt.yaml", []byte(tt.yaml), fixture(t), Options{Builtins: builtins})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, tt.get(f)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseInputSchemaJSON(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		schema string // YAML indented under input_schema
		want   string
	}{
		{
			name:   "KeyOrderKept",
			schema: "{type: object, required: [z, a], properties: {z: {type: string}, a: {type: integer}}}",
			want:   `{"type":"object","required":["z","a"],"properties":{"z":{"type":"string"},"a":{"type":"integer"}}}`,
		},
		{
			name:   "Numbers",
			schema: "{type: object, minimum: -5, maximum: 1e3, multipleOf: 0.5, big: 99999999999999999999, hex: 0x10, dot: .5}",
			want:   `{"type":"object","minimum":-5,"maximum":1e3,"multipleOf":0.5,"big":99999999999999999999,"hex":16,"dot":0.5}`,
		},
		{
			name:   "QuotedAndTaggedStringsStayStrings",
			schema: "{type: object, const: \"5\", enum: ['1e3', !!str 7, true, null]}",
			want:   `{"type":"object","const":"5","enum":["1e3","7",true,null]}`,
		},
		{
			name:   "BlockScalarAndHTML",
			schema: "\n      type: object\n      description: |\n        Use <b> & </b>.\n",
			want:   `{"type":"object","description":"Use <b> & </b>.\n"}`,
		},
		{
			name:   "AliasesExpanded",
			schema: "{type: object, properties: {a: &s {type: string, minLength: 1}, b: *s, c: {<<: *s, minLength: 2}}}",
			want:   `{"type":"object","properties":{"a":{"type":"string","minLength":1},"b":{"type":"string","minLength":1},"c":{"type":"string","minLength":2}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := "agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml}\n" +
				"tools:\n  t:\n    command: [jq]\n    input_schema: " + tt.schema + "\n"
			f, err := Parse("agentrt.yaml", []byte(src), fixture(t), Options{})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, string(f.Tools["t"].InputSchema)); diff != "" {
				t.Errorf("InputSchema mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseAliasAbuse checks that alias expansion is bounded: a "billion
// laughs" schema and a schema that contains itself are reported, not
// expanded without end.
func TestParseAliasAbuse(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "BillionLaughs",
			yaml: "x-l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n" +
				"x-l1: &l1 [*l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0]\n" +
				"x-l2: &l2 [*l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1]\n" +
				"x-l3: &l3 [*l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2]\n" +
				"x-l4: &l4 [*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3]\n" +
				"x-l5: &l5 [*l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4]\n" +
				"agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml}\n" +
				"tools:\n  t:\n    command: [jq]\n    input_schema: {type: object, enum: *l5}\n",
			want: []string{
				`agentrt.yaml:13:19: input_schema in tool "t": too large (more than 100000 nodes after expanding aliases)`,
			},
		},
		{
			name: "SelfReference",
			yaml: "agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml}\n" +
				"tools:\n  t:\n    command: [jq]\n    input_schema: &s {type: object, properties: {self: *s}}\n",
			want: []string{
				`agentrt.yaml:7:19: input_schema in tool "t": nested more than 64 levels deep`,
			},
		},
		{
			name: "SelfMerge",
			yaml: "x-a: &a {<<: *a}\n" +
				"agents:\n  a:\n    <<: *a\n    model: {provider: replay, script: support.replay.yaml}\n",
			want: []string{
				"agentrt.yaml:1:14: merge key (<<) merges a mapping into itself",
			},
		},
		{
			name: "SelfMergeTwice",
			yaml: "x-a: &a {<<: [*a, *a], k: 1}\n" +
				"agents:\n  a:\n    <<: *a\n    model: {provider: replay, script: support.replay.yaml}\n",
			want: []string{
				"agentrt.yaml:1:15: merge key (<<) merges a mapping into itself",
				"agentrt.yaml:1:19: merge key (<<) merges a mapping into itself",
				`agentrt.yaml:1:24: unknown key "k" in agent "a"`,
			},
		},
		{
			name: "ExponentialMerges",
			yaml: mergeLadder(20) +
				"agents:\n  a:\n    <<: *m20\n    model: {provider: replay, script: support.replay.yaml}\n",
			want: []string{
				"agentrt.yaml:2:17: too many merges (more than 10000); simplify the merge keys (<<)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			_, err := Parse("agentrt.yaml", []byte(tt.yaml), dir, Options{})
			if err == nil {
				t.Fatal("Parse: no error")
			}
			if diff := cmp.Diff(tt.want, errorLines(t, err, dir)); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// mergeLadder returns anchors m0..mN where each merges the one before it
// twice, so expanding mN naively takes 2^N merges.
func mergeLadder(n int) string {
	var b strings.Builder
	b.WriteString("x-m0: &m0 {max_tool_hops: 3}\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "x-m%d: &m%d {<<: [*m%d, *m%d]}\n", i, i, i-1, i-1)
	}
	return b.String()
}

// replayModel is an inline replay model as Parse builds it.
func replayModel(script, name string) *Model {
	return &Model{Key: InlineModel, Provider: ProviderReplay, Script: script, Name: name, Capabilities: []string{"tools"}}
}
