package config

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
				Sandbox:           Sandbox{Mode: SandboxWorkspaceWrite, Network: SandboxNetworkNone},
			},
			"triage": {
				Name:         "triage",
				Instructions: "You sort incoming requests.\nAnswer with one word.\n",
				Models:       []*Model{replayModel(filepath.Join(dir, "support.replay.yaml"), "triage-v1")},
				Profile:      Profile{Kind: "triage", Prefer: "order", Fallback: true},
				MaxToolHops:  8,
				Sandbox:      Sandbox{Mode: SandboxWorkspaceWrite, Network: SandboxNetworkNone},
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
		Models:     map[string]*Model{},
		MCPServers: map[string]*MCPServer{},
		Budgets:    Budgets{TenantWindow: WindowTotal, LowThreshold: DefaultLowThreshold, OnExceeded: OnExceededWait},
	}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Errorf("Load mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"support", "triage"}, f.AgentNames()); diff != "" {
		t.Errorf("AgentNames mismatch (-want +got):\n%s", diff)
	}
}

// TestLoadExecutionExample checks testdata/execution.yaml, which uses
// every key of the execution and hooks sections, agents' sandboxes and
// tools' concurrency and output.
func TestLoadExecutionExample(t *testing.T) {
	t.Parallel()

	f, err := Load("testdata/execution.yaml", Options{Builtins: builtins})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	wantExecution := Execution{
		MaxParallel:    4,
		Output:         OutputLimits{InlineBytes: 32768, MaxBytes: 1 << 30},
		SecretEnv:      []string{"GITHUB_TOKEN", "STRIPE_KEY"},
		RedactPatterns: []string{"acct-[0-9]{8}"},
		NoTokenShapes:  true,
		EnvAllow:       []string{"GOPATH", "NODE_ENV"},
		SandboxUID:     2000,
		SandboxGID:     2001,
	}
	if diff := cmp.Diff(wantExecution, f.Execution); diff != "" {
		t.Errorf("Execution mismatch (-want +got):\n%s", diff)
	}
	wantSandboxes := map[string]Sandbox{
		"coder": {
			Mode:        SandboxWorkspaceWrite,
			Network:     SandboxNetworkFull,
			ReadRoots:   []string{"/opt/data", filepath.Join(dir, "refs")},
			WriteRoots:  []string{filepath.Join(dir, "scratch")},
			Processes:   64,
			MemoryBytes: 2 << 30,
			FileBytes:   -1,
			CPUSeconds:  120,
			TmpBytes:    64 << 20,
			WriteBytes:  100 << 20,
		},
		"reviewer": {Mode: SandboxReadOnly, Network: SandboxNetworkNone},
		"operator": {Mode: SandboxFullAccess, Network: SandboxNetworkFull},
	}
	gotSandboxes := map[string]Sandbox{}
	for name, a := range f.Agents {
		gotSandboxes[name] = a.Sandbox
	}
	if diff := cmp.Diff(wantSandboxes, gotSandboxes); diff != "" {
		t.Errorf("sandboxes mismatch (-want +got):\n%s", diff)
	}
	type execution struct {
		Concurrency string
		Output      OutputLimits
	}
	wantTools := map[string]execution{
		"shell": {Concurrency: "exclusive", Output: OutputLimits{InlineBytes: 4096, MaxBytes: 10 << 20}},
		"edit":  {Concurrency: "file:{path}"},
	}
	gotTools := map[string]execution{}
	for name, tl := range f.Tools {
		gotTools[name] = execution{tl.Concurrency, tl.Output}
	}
	if diff := cmp.Diff(wantTools, gotTools); diff != "" {
		t.Errorf("tools mismatch (-want +got):\n%s", diff)
	}
	wantHooks := []*Hook{
		{
			Name:     "guard-rm",
			Point:    "pre_tool_use",
			Matcher:  "shell|exec",
			Command:  filepath.Join(dir, "hooks", "guard.sh") + " --strict",
			Script:   filepath.Join(dir, "hooks", "guard.sh"),
			Env:      map[string]string{"LEVEL": "strict"},
			Timeout:  10 * time.Second,
			FailMode: HookFailClosed,
		},
		{
			Name:     "post_tool_use-1",
			Point:    "post_tool_use",
			URL:      "https://hooks.example.com/post",
			Headers:  map[string]string{"Authorization": "Bearer $HOOK_TOKEN"},
			Env:      map[string]string{"HOOK_TOKEN": "t0ken"},
			FailMode: HookFailOpen,
		},
		{Name: "session_start-2", Point: "session_start", Command: "echo '{}'"},
	}
	if diff := cmp.Diff(wantHooks, f.Hooks); diff != "" {
		t.Errorf("Hooks mismatch (-want +got):\n%s", diff)
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

// TestLoadLimits: a config past the limits every YAML file is held to is
// refused with an error naming it, before it is parsed (200 KB of nested
// brackets once made the parser allocate about 15 GB).
func TestLoadLimits(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		yaml string
		want string
	}{
		{
			name: "TooLarge",
			yaml: "agents: {}\n" + strings.Repeat("# padding\n", MaxFileBytes/10),
			want: "$DIR/agentrt.yaml: the file is larger than 10 MiB, the most agentrt reads",
		},
		{
			name: "TooDeep",
			yaml: "agents: " + strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000) + "\n",
			want: "$DIR/agentrt.yaml:1:264: nested more than 256 levels deep",
		},
		{
			name: "TooManyTokens",
			yaml: "agents: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n",
			want: "$DIR/agentrt.yaml:1:131079: the file holds more than 131072 YAML tokens (keys, values, - and such), the most agentrt reads",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "agentrt.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path, Options{})
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Load error = %v, want Errors", err)
			}
			if diff := cmp.Diff([]string{tt.want}, errorLines(t, err, dir)); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
		})
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
				Sandbox:     Sandbox{Mode: SandboxWorkspaceWrite, Network: SandboxNetworkNone},
			},
		},
		Tools:      map[string]*Tool{},
		Models:     map[string]*Model{},
		MCPServers: map[string]*MCPServer{},
		Budgets:    Budgets{TenantWindow: WindowTotal, LowThreshold: DefaultLowThreshold, OnExceeded: OnExceededWait},
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
		"  bare: {input_schema: {type: object}, command: [jq, -r, .]}\n" +
		"hooks:\n  - {point: stop, command: ../tools/run.sh --x ../y}\n"
	f, err := Parse("agentrt.yaml", []byte(src), sub, Options{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	type paths struct {
		DataDir, Script, Workspace string
		Local, Absolute, Bare      []string
		Hook                       string
	}
	got := paths{
		DataDir:   f.DataDir,
		Script:    f.Agents["a"].Models[0].Script,
		Workspace: f.Agents["a"].Workspace,
		Local:     f.Tools["local"].Command,
		Absolute:  f.Tools["absolute"].Command,
		Bare:      f.Tools["bare"].Command,
		Hook:      f.Hooks[0].Command,
	}
	want := paths{
		DataDir:   filepath.Join(dir, "state", "db"),
		Script:    filepath.Join(dir, "support.replay.yaml"),
		Workspace: filepath.Join(dir, "ws"),
		Local:     []string{filepath.Join(dir, "tools", "run.sh"), "./x"},
		Absolute:  []string{filepath.Join(dir, "tools", "run.sh")},
		Bare:      []string{"jq", "-r", "."},
		Hook:      filepath.Join(dir, "tools", "run.sh") + " --x ../y",
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
			name: "MemoryInject",
			yaml: agent + "    memory: {inject: 5}\n",
			get:  func(f *File) any { return f.Agents["a"].Memory.Inject },
			want: 5,
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
			name: "CORSOrigins",
			yaml: agent + "server:\n  cors_origins: [\"https://Console.example.com\", \"http://127.0.0.1:5173/\"]\n",
			get:  func(f *File) any { return f.Server.CORSOrigins },
			want: []string{"https://console.example.com", "http://127.0.0.1:5173"},
		},
		{
			name: "IntegrityCheckOff",
			yaml: agent + "durability: {integrity_check: off}\n",
			get:  func(f *File) any { return f.Durability.IntegrityCheck },
			want: IntegrityCheckOff,
		},
		{
			name: "ServerLimits",
			yaml: agent + "server:\n  read_header_timeout: 5s\n  body_timeout: 1m\n  idle_timeout: 90s\n" +
				"  max_header_bytes: 16384\n  max_conns_per_client: 8\n",
			get: func(f *File) any { return f.Server },
			want: Server{
				Listen: DefaultListen, ReadHeaderTimeout: 5 * time.Second, BodyTimeout: time.Minute,
				IdleTimeout: 90 * time.Second, MaxHeaderBytes: 16384, MaxConnsPerClient: 8,
			},
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
			name: "NullExecutionSandboxAndHooks",
			yaml: agent + "    sandbox:\nexecution:\n  max_parallel:\n  output:\n  redact:\n  process:\nhooks:\n",
			get:  func(f *File) any { return []any{f.Agents["a"].Sandbox, f.Execution, f.Hooks} },
			want: []any{Sandbox{Mode: SandboxWorkspaceWrite, Network: SandboxNetworkNone}, Execution{}, []*Hook(nil)},
		},
		{
			name: "EmptyHooksList",
			yaml: agent + "hooks: []\nexecution: {}\n",
			get:  func(f *File) any { return []any{f.Hooks, f.Execution} },
			want: []any{[]*Hook(nil), Execution{}},
		},
		{
			name: "SandboxNetworkDefaults",
			yaml: "agents:\n" +
				"  a: {model: {provider: replay, script: support.replay.yaml}, sandbox: {mode: full_access}}\n" +
				"  b: {model: {provider: replay, script: support.replay.yaml}, sandbox: {mode: full_access, network: none}}\n" +
				"  c: {model: {provider: replay, script: support.replay.yaml}, sandbox: {mode: read_only, network: full}}\n" +
				"  d: {model: {provider: replay, script: support.replay.yaml}, sandbox: workspace_write}\n",
			get: func(f *File) any {
				var out []string
				for _, name := range f.AgentNames() {
					out = append(out, f.Agents[name].Sandbox.Mode+"/"+f.Agents[name].Sandbox.Network)
				}
				return out
			},
			want: []string{"full_access/full", "full_access/none", "read_only/full", "workspace_write/none"},
		},
		{
			name: "SandboxRootsAndZeroLimits",
			yaml: agent + "    sandbox:\n      mode: full_access\n      read_roots: [/opt/./data/, refs, /opt/data]\n" +
				"      write_roots: [../out]\n      limits: {processes: 0, memory_bytes: -1}\n",
			get: func(f *File) any {
				s := f.Agents["a"].Sandbox
				return []any{s.ReadRoots, s.WriteRoots, s.Processes, s.MemoryBytes}
			},
			want: []any{[]string{"/opt/data", "$DIR/refs"}, []string{"$PARENT/out"}, 0, int64(-1)},
		},
		{
			name: "TokenShapesTrue",
			yaml: agent + "execution: {redact: {token_shapes: true}, max_parallel: 256}\n",
			get:  func(f *File) any { return []any{f.Execution.NoTokenShapes, f.Execution.MaxParallel} },
			want: []any{false, 256},
		},
		{
			name: "OutputLimitsAlone",
			yaml: agent + "execution: {output: {max_bytes: 256}}\n" +
				"tools:\n  t: {command: [jq], input_schema: {type: object}, output: {inline_bytes: 16777216}}\n",
			get:  func(f *File) any { return []any{f.Execution.Output, f.Tools["t"].Output} },
			want: []any{OutputLimits{MaxBytes: 256}, OutputLimits{InlineBytes: 16 << 20}},
		},
		{
			name: "ConcurrencyKeys",
			yaml: agent + "tools:\n" +
				"  a: {command: [jq], input_schema: {type: object}, concurrency: parallel}\n" +
				"  b: {command: [jq], input_schema: {type: object}, concurrency: \"db:{any}\"}\n" +
				"  c: {command: [jq], input_schema: {type: object, properties: {x: {}, y: {}}}, concurrency: \"{x}/{y}\"}\n" +
				"  d: {command: [jq], input_schema: {type: object}, concurrency: deploy-lock}\n" +
				"  e: {command: [jq], input_schema: {type: object}, concurrency:}\n",
			get: func(f *File) any {
				return []string{f.Tools["a"].Concurrency, f.Tools["b"].Concurrency, f.Tools["c"].Concurrency,
					f.Tools["d"].Concurrency, f.Tools["e"].Concurrency}
			},
			want: []string{"parallel", "db:{any}", "{x}/{y}", "deploy-lock", ""},
		},
		{
			name: "ClaudeCodeHookEvents",
			yaml: agent + "hooks:\n" +
				"  - {point: SessionStart, command: \"true\"}\n" +
				"  - {point: UserPromptSubmit, command: \"true\"}\n" +
				"  - {point: PreToolUse, matcher: Bash, command: \"true\"}\n" +
				"  - {point: PermissionRequest, command: \"true\"}\n" +
				"  - {point: PostToolUse, command: \"true\"}\n" +
				"  - {point: PostToolUseFailure, command: \"true\"}\n" +
				"  - {point: PreCompact, command: \"true\"}\n" +
				"  - {point: Stop, matcher: \"*\", command: \"true\"}\n" +
				"  - {point: SubagentStart, command: \"true\"}\n" +
				"  - {point: SubagentStop, command: \"true\"}\n",
			get: func(f *File) any {
				var points []string
				for _, h := range f.Hooks {
					points = append(points, h.Point)
				}
				return points
			},
			want: HookPoints,
		},
		{
			name: "HookCommands",
			yaml: agent + "hooks:\n" +
				"  - {point: stop, command: ./tools/run.sh}\n" +
				"  - {point: stop, command: \"  ./tools/../tools/run.sh  --a 'b c'\"}\n" +
				"  - {point: stop, command: \"./tools/run.sh;./nope.sh\"}\n" +
				"  - {point: stop, command: \"'./nope.sh' x\"}\n" +
				"  - {point: stop, command: \"$HOME/bin/hook ./rel\"}\n" +
				"  - {point: stop, command: \"/usr/bin/env true\"}\n" +
				"  - {point: stop, command: \"jq -n '{}'\"}\n",
			get: func(f *File) any {
				var cmds []string
				for _, h := range f.Hooks {
					cmds = append(cmds, h.Command)
				}
				return cmds
			},
			want: []string{
				"$DIR/tools/run.sh",
				"  $DIR/tools/run.sh  --a 'b c'",
				"./tools/run.sh;./nope.sh",
				"'./nope.sh' x",
				"$HOME/bin/hook ./rel",
				"/usr/bin/env true",
				"jq -n '{}'",
			},
		},
		{
			name: "HookDefaults",
			yaml: agent + "hooks:\n  - {point: pre_tool_use, url: \"http://127.0.0.1:9000/h\", timeout: 10m}\n",
			get:  func(f *File) any { return f.Hooks },
			want: []*Hook{{Name: "pre_tool_use-0", Point: "pre_tool_use", URL: "http://127.0.0.1:9000/h", Timeout: 10 * time.Minute}},
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
			dir := fixture(t)
			f, err := Parse("agentrt.yaml", []byte(tt.yaml), dir, Options{Builtins: builtins})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			// Paths in want name the fixture as $DIR and its parent as
			// $PARENT.
			want := withDirs(tt.want, dir)
			if diff := cmp.Diff(want, tt.get(f)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// withDirs replaces $DIR and $PARENT in the strings of v, a value of
// TestParseValues' want, with dir and its parent.
func withDirs(v any, dir string) any {
	r := strings.NewReplacer("$DIR", dir, "$PARENT", filepath.Dir(dir))
	switch v := v.(type) {
	case []string:
		if v == nil {
			return v
		}
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = r.Replace(s)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = withDirs(x, dir)
		}
		return out
	}
	return v
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

// TestParseHookCommandQuoted checks that a hook command's first word,
// resolved against a folder whose name the shell would split, is quoted.
func TestParseHookCommandQuoted(t *testing.T) {
	t.Parallel()

	dir := filepath.Join(t.TempDir(), "my 'hooks' dir")
	writeFile(t, filepath.Join(dir, "guard.sh"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(dir, "support.replay.yaml"), "model: m\nresponses: []\n", 0o644)
	src := "agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml}\n" +
		"hooks:\n  - {point: stop, command: ./guard.sh --x}\n"
	f, err := Parse("agentrt.yaml", []byte(src), dir, Options{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := "'" + strings.ReplaceAll(filepath.Join(dir, "guard.sh"), "'", `'\''`) + "' --x"
	if diff := cmp.Diff(want, f.Hooks[0].Command); diff != "" {
		t.Errorf("Command mismatch (-want +got):\n%s", diff)
	}
}

// TestParseDurability: the durability section's values reach the File.
func TestParseDurability(t *testing.T) {
	t.Parallel()

	src := "agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml}\n" +
		"durability:\n  workers: 16\n  lease_ttl: 2s\n  poll_interval: 100ms\n  max_queued: 500\n  max_queued_per_tenant: 50\n" +
		"  multitask: interrupt\n  turn_timeout: 10m\n  inactivity_timeout: 2m\n  shutdown_grace: 45s\n  integrity_check: 1m\n" +
		"  retry: {max_attempts: 3, backoff: 1s, max_backoff: 30s, non_retryable: [permission_denied, lost]}\n"
	f, err := Parse("agentrt.yaml", []byte(src), fixture(t), Options{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := Durability{
		Workers: 16, LeaseTTL: 2 * time.Second, PollInterval: 100 * time.Millisecond, MaxQueued: 500, MaxQueuedPerTenant: 50,
		Multitask: "interrupt", TurnTimeout: 10 * time.Minute, InactivityTimeout: 2 * time.Minute, ShutdownGrace: 45 * time.Second,
		IntegrityCheck: time.Minute,
		Retry:          Retry{MaxAttempts: 3, Backoff: time.Second, MaxBackoff: 30 * time.Second, NonRetryable: []string{"permission_denied", "lost"}},
	}
	if diff := cmp.Diff(want, f.Durability); diff != "" {
		t.Errorf("durability (-want +got):\n%s", diff)
	}
}

// TestParseHealth: the health section's thresholds reach the File, and a
// file without one leaves them zero (the runtime's defaults).
func TestParseHealth(t *testing.T) {
	t.Parallel()
	const agents = "agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml}\n"
	tests := []struct {
		name string
		src  string
		want Health
	}{
		{"all", agents + "health:\n  stuck_after: 10m\n  queue_age_warn: 30s\n  approval_age_warn: 2h\n",
			Health{StuckAfter: 10 * time.Minute, QueueAgeWarn: 30 * time.Second, ApprovalAgeWarn: 2 * time.Hour}},
		{"some", agents + "health: {stuck_after: 90s}\n", Health{StuckAfter: 90 * time.Second}},
		{"null", agents + "health:\n", Health{}},
		{"none", agents, Health{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("agentrt.yaml", []byte(tt.src), fixture(t), Options{})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, f.Health); diff != "" {
				t.Errorf("health (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHiddenPaths: the file, its data directory, its key files, its rule
// files and the hook scripts and checker programs in its folder are what
// sandboxed processes must not see; programs elsewhere and replay
// scripts are not.
func TestHiddenPaths(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	writeFile(t, filepath.Join(dir, "keys", "openai"), "sk-x\n", 0o600)
	writeFile(t, filepath.Join(dir, "hooks", "guard.sh"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(dir, "policy", "rules.yaml"), "rules: []\n", 0o644)
	src := `data_dir: state
models:
  m: {provider: openai_chat, model: g, api_key_file: keys/openai}
agents:
  a:
    models: [m]
  b:
    model: {provider: replay, script: support.replay.yaml}
hooks:
  - {point: pre_tool_use, command: ./hooks/guard.sh --strict}
  - {point: post_tool_use, command: /bin/true}
policy:
  rules: [policy/rules.yaml]
  checkers:
    mine: {command: [./tools/run.sh]}
    system: {command: [/bin/sh, -c, true]}
`
	path := filepath.Join(dir, "agentrt.yaml")
	writeFile(t, path, src, 0o644)
	f, err := Load(path, Options{Builtins: builtins})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := []string{path, filepath.Join(dir, "hooks", "guard.sh"), filepath.Join(dir, "keys", "openai"),
		filepath.Join(dir, "policy", "rules.yaml"), filepath.Join(dir, "state"), filepath.Join(dir, "tools", "run.sh")}
	slices.Sort(want)
	if diff := cmp.Diff(want, f.HiddenPaths()); diff != "" {
		t.Errorf("HiddenPaths (-want +got):\n%s", diff)
	}
}
