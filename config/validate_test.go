package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// okAgent is a valid agents section for cases about other sections.
const okAgent = `agents:
  a:
    model: {provider: replay, script: support.replay.yaml}
`

// TestParseErrors is the golden list of error messages: each input, parsed
// as agentrt.yaml in a fixture directory, yields exactly these lines.
func TestParseErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		yaml string
		want []string
	}{
		// Documents.
		{
			name: "EmptyFile",
			yaml: "",
			want: []string{
				"agentrt.yaml:1:1: empty document; expected a mapping with at least an agents key",
			},
		},
		{
			name: "OnlyComments",
			yaml: "# nothing here\n",
			want: []string{
				"agentrt.yaml:1:1: empty document; expected a mapping with at least an agents key",
			},
		},
		{
			name: "TopLevelList",
			yaml: "- a\n- b\n",
			want: []string{
				"agentrt.yaml:1:1: top level must be a mapping, got a list",
			},
		},
		{
			name: "TopLevelScalar",
			yaml: "hello\n",
			want: []string{
				`agentrt.yaml:1:1: top level must be a mapping, got string "hello"`,
			},
		},
		{
			name: "TwoDocuments",
			yaml: okAgent + "---\n" + okAgent,
			want: []string{
				"agentrt.yaml:4:1: more than one YAML document; the config is a single document",
			},
		},
		{
			name: "SyntaxErrorUnclosedFlow",
			yaml: "agents:\n  a: {model: [1, 2\n",
			want: []string{
				"agentrt.yaml:2:14: syntax error: sequence end token ']' not found",
			},
		},
		{
			name: "SyntaxErrorIndentation",
			yaml: "agents:\n  a:\n    model: x\n   tools: []\n",
			want: []string{
				"agentrt.yaml:4:4: syntax error: value is not allowed in this context",
			},
		},
		{
			name: "DuplicateKey",
			yaml: okAgent + "agents: {}\n",
			want: []string{
				`agentrt.yaml:4:1: duplicate key "agents" (first defined at line 1, column 1)`,
			},
		},
		{
			name: "NoAgentsKey",
			yaml: "data_dir: data\n",
			want: []string{
				"agentrt.yaml:1:1: no agents defined; add at least one under agents",
			},
		},
		{
			name: "AgentsEmptyMapping",
			yaml: "data_dir: data\nagents: {}\n",
			want: []string{
				"agentrt.yaml:2:1: no agents defined; add at least one under agents",
			},
		},
		{
			name: "AgentsNull",
			yaml: "agents:\n",
			want: []string{
				"agentrt.yaml:1:1: no agents defined; add at least one under agents",
			},
		},
		{
			name: "AgentsList",
			yaml: "agents: [a, b]\n",
			want: []string{
				"agentrt.yaml:1:9: agents must be a mapping, got a list",
			},
		},

		// Unknown keys.
		{
			name: "UnknownTopLevelKey",
			yaml: okAgent + "agent: {}\nlisten: x\n",
			want: []string{
				`agentrt.yaml:4:1: unknown top-level key "agent"; did you mean agents?`,
				`agentrt.yaml:5:1: unknown top-level key "listen"`,
			},
		},
		{
			name: "UnknownAgentKeySuggestsByWords",
			yaml: okAgent + "    max_hops: 8\n",
			want: []string{
				`agentrt.yaml:4:5: unknown key "max_hops" in agent "a"; did you mean max_tool_hops?`,
			},
		},
		{
			name: "UnknownAgentKeySuggestsByDistance",
			yaml: okAgent + "    max_tool_hop: 8\n    Tools: []\n    colour: red\n",
			want: []string{
				`agentrt.yaml:4:5: unknown key "max_tool_hop" in agent "a"; did you mean max_tool_hops?`,
				`agentrt.yaml:5:5: unknown key "Tools" in agent "a"; did you mean tools?`,
				`agentrt.yaml:6:5: unknown key "colour" in agent "a"`,
			},
		},
		{
			name: "UnknownKeysInNestedMappings",
			yaml: "server: {listen: \"127.0.0.1:1\", port: 1}\n" +
				"agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml, scirpt: x}\n" +
				"tools:\n  t:\n    input_schema: {type: object}\n    command: [jq]\n    annotation: {}\n" +
				"    annotations: {readonly: true, idempotnet: true, safe: true}\n",
			want: []string{
				`agentrt.yaml:1:33: unknown key "port" in server`,
				`agentrt.yaml:4:60: unknown key "scirpt" in model of agent "a"; did you mean script?`,
				`agentrt.yaml:9:5: unknown key "annotation" in tool "t"; did you mean annotations?`,
				`agentrt.yaml:10:19: unknown key "readonly" in annotations of tool "t"; did you mean read_only?`,
				`agentrt.yaml:10:35: unknown key "idempotnet" in annotations of tool "t"; did you mean idempotent?`,
				`agentrt.yaml:10:53: unknown key "safe" in annotations of tool "t"`,
			},
		},
		{
			name: "ExtensionKeysAreIgnored",
			yaml: "x-defaults: {anything: [1, 2]}\n" + okAgent,
			want: nil,
		},

		// Types.
		{
			name: "WrongScalarTypes",
			yaml: "agents:\n  a:\n    instructions: {text: hi}\n    model: {provider: replay, script: support.replay.yaml}\n" +
				"    require_completion: yes\n    max_tool_hops: eight\n",
			want: []string{
				`agentrt.yaml:3:19: instructions in agent "a" must be a string, got a mapping`,
				`agentrt.yaml:5:25: require_completion in agent "a" must be true or false, got string "yes"`,
				`agentrt.yaml:6:20: max_tool_hops in agent "a" must be an integer, got string "eight"`,
			},
		},
		{
			name: "MemoryBadValues",
			yaml: "agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml}\n    memory: {inject: 51}\n" +
				"  b:\n    model: {provider: replay, script: support.replay.yaml}\n    memory: {injekt: 2}\n" +
				"  c:\n    model: {provider: replay, script: support.replay.yaml}\n    memory: 3\n" +
				"  d:\n    model: {provider: replay, script: support.replay.yaml}\n    memory: {inject: -1}\n",
			want: []string{
				`agentrt.yaml:4:22: inject in memory in agent "a" must be between 0 and 50, got 51`,
				`agentrt.yaml:7:14: unknown key "injekt" in memory in agent "b"; did you mean inject?`,
				`agentrt.yaml:10:13: memory in agent "c" must be a mapping, got integer 3`,
				`agentrt.yaml:13:22: inject in memory in agent "d" must be between 0 and 50, got -1`,
			},
		},
		{
			name: "MaxToolHopsFloatAndHuge",
			yaml: "agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml}\n    max_tool_hops: 8.0\n" +
				"  b:\n    model: {provider: replay, script: support.replay.yaml}\n    max_tool_hops: 99999999999999999999\n",
			want: []string{
				`agentrt.yaml:4:20: max_tool_hops in agent "a" must be an integer, got number 8.0`,
				`agentrt.yaml:7:20: max_tool_hops in agent "b" must be an integer, got number 99999999999999999999`,
			},
		},
		{
			name: "MaxToolHopsRange",
			yaml: "agents:\n" +
				"  a: {model: {provider: replay, script: support.replay.yaml}, max_tool_hops: 0}\n" +
				"  b: {model: {provider: replay, script: support.replay.yaml}, max_tool_hops: 1001}\n" +
				"  c: {model: {provider: replay, script: support.replay.yaml}, max_tool_hops: -3}\n",
			want: []string{
				`agentrt.yaml:2:78: max_tool_hops in agent "a" must be between 1 and 1000, got 0`,
				`agentrt.yaml:3:78: max_tool_hops in agent "b" must be between 1 and 1000, got 1001`,
				`agentrt.yaml:4:78: max_tool_hops in agent "c" must be between 1 and 1000, got -3`,
			},
		},
		{
			name: "AgentNotMapping",
			yaml: "agents:\n  a: just a string\n  b: [x]\n",
			want: []string{
				`agentrt.yaml:2:6: agent "a" must be a mapping, got string "just a string"`,
				`agentrt.yaml:3:6: agent "b" must be a mapping, got a list`,
			},
		},
		{
			name: "AgentNullNeedsModel",
			yaml: "agents:\n  a:\n",
			want: []string{
				`agentrt.yaml:2:3: model is required in agent "a" (or models, a list of candidates)`,
			},
		},
		{
			name: "ToolsListWrongShapes",
			yaml: "agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml}\n    tools: read_file\n" +
				"  b:\n    model: {provider: replay, script: support.replay.yaml}\n    tools: [read_file, {name: x}, ~]\n",
			want: []string{
				`agentrt.yaml:4:12: tools in agent "a" must be a list of tool names, got string "read_file"`,
				`agentrt.yaml:7:24: tools in agent "b" must list tool names, got a mapping`,
				`agentrt.yaml:7:35: tools in agent "b" must list tool names, got null`,
			},
		},
		{
			name: "ServerNotMappingAndBadListen",
			yaml: okAgent + "server: 7420\n",
			want: []string{
				"agentrt.yaml:4:9: server must be a mapping, got integer 7420",
			},
		},
		{
			name: "BadListen",
			yaml: okAgent + "server:\n  listen: localhost\n",
			want: []string{
				`agentrt.yaml:5:11: server.listen must be host:port such as 127.0.0.1:7420, got "localhost"`,
			},
		},
		{
			name: "BadServerLimits",
			yaml: okAgent + "server:\n  read_header_timeout: 0s\n  body_timeout: soon\n  idle_timeout: -1m\n" +
				"  max_header_bytes: 100\n  max_conns_per_client: 0\n  max_conns: 5\n",
			want: []string{
				`agentrt.yaml:5:24: server.read_header_timeout must be positive, got string "0s"`,
				`agentrt.yaml:6:17: server.body_timeout must be a duration such as 10s or 1m30s, got string "soon"`,
				`agentrt.yaml:7:17: server.idle_timeout must be positive, got string "-1m"`,
				`agentrt.yaml:8:21: server.max_header_bytes must be between 1024 and 1048576, got 100`,
				`agentrt.yaml:9:25: server.max_conns_per_client must be between 1 and 1000000, got 0`,
				`agentrt.yaml:10:3: unknown key "max_conns" in server; did you mean max_conns_per_client?`,
			},
		},
		{
			name: "BadCORSOrigins",
			yaml: okAgent + "server:\n  cors_origins:\n    - \"*\"\n    - https://a.example/app\n    - https://b.example\n    - https://B.example\n    - {x: 1}\n",
			want: []string{
				`agentrt.yaml:6:7: server.cors_origins: "*" is not an origin: want http:// or https:// and a host, such as https://console.example.com`,
				`agentrt.yaml:7:7: server.cors_origins: "https://a.example/app" is not an origin: want a scheme and a host with no path, such as https://console.example.com`,
				`agentrt.yaml:9:7: origin https://b.example is listed twice in server.cors_origins`,
				`agentrt.yaml:10:7: server.cors_origins must list origins such as https://console.example.com, got a mapping`,
			},
		},
		{
			name: "DataDirWrongTypes",
			yaml: okAgent + "data_dir: [a]\n",
			want: []string{
				"agentrt.yaml:4:11: data_dir must be a string, got a list",
			},
		},

		// Models.
		{
			name: "ModelMissing",
			yaml: "agents:\n  a:\n    instructions: hi\n",
			want: []string{
				`agentrt.yaml:2:3: model is required in agent "a" (or models, a list of candidates)`,
			},
		},
		{
			name: "ModelNotMapping",
			yaml: "agents:\n  a:\n    model: replay\n",
			want: []string{
				`agentrt.yaml:3:12: agent "a" uses model "replay", which is not declared under models; declare it under models, or write the model inline as a mapping`,
			},
		},
		{
			name: "ProviderMissing",
			yaml: "agents:\n  a:\n    model: {script: support.replay.yaml}\n",
			want: []string{
				`agentrt.yaml:3:5: provider is required in model of agent "a" (one of openai_chat, openai_responses, anthropic_messages, openai_compatible, replay)`,
			},
		},
		{
			name: "ProviderShorthandsAndRequiredKeys",
			yaml: "agents:\n" +
				"  a: {model: {provider: openai, model: gpt-5}}\n" +
				"  b: {model: {provider: anthropic, model: claude}}\n" +
				"  c: {model: {provider: openai_compatible}}\n",
			want: []string{
				`agentrt.yaml:2:25: unknown model provider "openai" in model of agent "a"; did you mean openai_chat or openai_responses?`,
				`agentrt.yaml:3:25: unknown model provider "anthropic" in model of agent "b"; did you mean anthropic_messages?`,
				`agentrt.yaml:4:7: base_url is required in model of agent "c" for provider openai_compatible (for example http://localhost:11434/v1 for Ollama)`,
				`agentrt.yaml:4:7: model is required in model of agent "c" for provider openai_compatible (the provider's model name)`,
			},
		},
		{
			name: "UnknownProvider",
			yaml: "agents:\n  a: {model: {provider: replya, script: support.replay.yaml}}\n  b: {model: {provider: gemini}}\n",
			want: []string{
				`agentrt.yaml:2:25: unknown model provider "replya" in model of agent "a"; did you mean replay?`,
				`agentrt.yaml:3:25: unknown model provider "gemini" in model of agent "b" (one of openai_chat, openai_responses, anthropic_messages, openai_compatible, replay)`,
			},
		},
		{
			name: "ReplayWithoutScript",
			yaml: "agents:\n  a:\n    model:\n      provider: replay\n",
			want: []string{
				`agentrt.yaml:3:5: script is required in model of agent "a" for provider replay`,
			},
		},
		{
			name: "ReplayScriptMissingOrDirectory",
			yaml: "agents:\n  a: {model: {provider: replay, script: nope.yaml}}\n  b: {model: {provider: replay, script: ws}}\n",
			want: []string{
				`agentrt.yaml:2:41: script "nope.yaml" in model of agent "a" does not exist (resolved to $DIR/nope.yaml)`,
				`agentrt.yaml:3:41: script "ws" in model of agent "b" is a directory, not a file`,
			},
		},

		// Names.
		{
			name: "BadNames",
			yaml: "agents:\n  \"has space\":\n    model: {provider: replay, script: support.replay.yaml}\n" +
				"  " + strings.Repeat("a", 65) + ":\n    model: {provider: replay, script: support.replay.yaml}\n" +
				"tools:\n  bad.name:\n    input_schema: {type: object}\n    command: [jq]\n",
			want: []string{
				`agentrt.yaml:2:3: invalid agent name "has space": use 1 to 64 letters, digits, '_' or '-'`,
				`agentrt.yaml:4:3: invalid agent name "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": use 1 to 64 letters, digits, '_' or '-'`,
				`agentrt.yaml:7:3: invalid tool name "bad.name": use 1 to 64 letters, digits, '_' or '-'`,
			},
		},

		// Tool references.
		{
			name: "AgentListsUnknownTools",
			yaml: "agents:\n  a:\n    model: {provider: replay, script: support.replay.yaml}\n" +
				"    tools: [lookup_ordr, read_fil, read_file, complete_task, frobnicate]\n" +
				"tools:\n  lookup_order:\n    input_schema: {type: object}\n    command: [jq]\n",
			want: []string{
				`agentrt.yaml:4:13: agent "a" lists tool "lookup_ordr", which is neither declared under tools nor a builtin; did you mean lookup_order?`,
				`agentrt.yaml:4:26: agent "a" lists tool "read_fil", which is neither declared under tools nor a builtin; did you mean read_file?`,
				`agentrt.yaml:4:62: agent "a" lists tool "frobnicate", which is neither declared under tools nor a builtin`,
			},
		},
		{
			name: "AgentListsToolTwice",
			yaml: okAgent + "    tools: [read_file, list_dir, read_file]\n",
			want: []string{
				`agentrt.yaml:4:34: tool "read_file" is listed twice in agent "a"`,
			},
		},
		{
			name: "ToolShadowsBuiltin",
			yaml: okAgent + "tools:\n  read_file:\n    input_schema: {type: object}\n    command: [cat]\n",
			want: []string{
				`agentrt.yaml:5:3: tool "read_file" has the same name as a builtin tool; rename it`,
			},
		},

		// Tools.
		{
			name: "ToolsNotMapping",
			yaml: okAgent + "tools: [a]\n",
			want: []string{
				"agentrt.yaml:4:8: tools must be a mapping, got a list",
			},
		},
		{
			name: "ToolMissingCommandAndSchema",
			yaml: okAgent + "tools:\n  t:\n    description: does nothing\n  u:\n",
			want: []string{
				`agentrt.yaml:5:3: command is required in tool "t"`,
				`agentrt.yaml:5:3: input_schema is required in tool "t"`,
				`agentrt.yaml:7:3: command is required in tool "u"`,
				`agentrt.yaml:7:3: input_schema is required in tool "u"`,
			},
		},
		{
			name: "CommandShapes",
			yaml: okAgent + "tools:\n" +
				"  empty: {input_schema: {type: object}, command: []}\n" +
				"  scalar: {input_schema: {type: object}, command: ./tools/run.sh --flag}\n" +
				"  blank: {input_schema: {type: object}, command: [\"\", x]}\n" +
				"  nested: {input_schema: {type: object}, command: [jq, [x]]}\n",
			want: []string{
				`agentrt.yaml:5:50: command in tool "empty" must not be empty`,
				`agentrt.yaml:6:51: command in tool "scalar" must be a list such as [./tools/run.sh, --flag], got string "./tools/run.sh --flag"`,
				`agentrt.yaml:7:51: command[0] in tool "blank" must not be empty`,
				`agentrt.yaml:8:56: command[1] in tool "nested" must be a string, got a list`,
			},
		},
		{
			name: "CommandFiles",
			yaml: okAgent + "tools:\n" +
				"  missing: {input_schema: {type: object}, command: [./tools/missing.sh]}\n" +
				"  plain: {input_schema: {type: object}, command: [./tools/plain.sh]}\n" +
				"  dir: {input_schema: {type: object}, command: [./tools]}\n",
			want: []string{
				`agentrt.yaml:5:53: command "./tools/missing.sh" in tool "missing" does not exist (resolved to $DIR/tools/missing.sh)`,
				`agentrt.yaml:6:51: command "./tools/plain.sh" in tool "plain" is not executable (chmod +x $DIR/tools/plain.sh)`,
				`agentrt.yaml:7:49: command "./tools" in tool "dir" is a directory, not a file`,
			},
		},
		{
			name: "InputSchemaShapes",
			yaml: okAgent + "tools:\n" +
				"  string: {command: [jq], input_schema: {type: string}}\n" +
				"  notype: {command: [jq], input_schema: {properties: {}}}\n" +
				"  scalar: {command: [jq], input_schema: object}\n" +
				"  props: {command: [jq], input_schema: {type: object, properties: [a], required: a}}\n" +
				"  inf: {command: [jq], input_schema: {type: object, maximum: .inf}}\n" +
				"  bad: {command: [jq], input_schema: {type: object, minProperties: many}}\n",
			want: []string{
				`agentrt.yaml:5:48: input_schema in tool "string" must have type: object, got string "string"`,
				`agentrt.yaml:6:27: input_schema in tool "notype" must have type: object`,
				`agentrt.yaml:7:41: input_schema in tool "scalar" must be a mapping holding a JSON Schema, got string "object"`,
				`agentrt.yaml:8:67: input_schema.properties in tool "props" must be a mapping, got a list`,
				`agentrt.yaml:8:82: input_schema.required in tool "props" must be a list of property names, got string "a"`,
				`agentrt.yaml:9:62: input_schema in tool "inf": number .inf cannot be represented in JSON`,
				`agentrt.yaml:10:38: input_schema in tool "bad" is not a valid JSON Schema: compiling input schema: at '/minProperties': got string, want integer`,
			},
		},
		{
			name: "Timeouts",
			yaml: okAgent + "tools:\n" +
				"  words: {command: [jq], input_schema: {type: object}, timeout: 10 seconds}\n" +
				"  bare: {command: [jq], input_schema: {type: object}, timeout: 10}\n" +
				"  zero: {command: [jq], input_schema: {type: object}, timeout: 0s}\n" +
				"  negative: {command: [jq], input_schema: {type: object}, timeout: -5s}\n",
			want: []string{
				`agentrt.yaml:5:65: timeout in tool "words" must be a duration such as 10s or 1m30s, got string "10 seconds"`,
				`agentrt.yaml:6:64: timeout in tool "bare" must be a duration such as 10s or 1m30s, got integer 10`,
				`agentrt.yaml:7:64: timeout in tool "zero" must be positive, got string "0s"`,
				`agentrt.yaml:8:68: timeout in tool "negative" must be positive, got string "-5s"`,
			},
		},
		{
			name: "EnvShapes",
			yaml: okAgent + "tools:\n" +
				"  t:\n    command: [jq]\n    input_schema: {type: object}\n" +
				"    env: {GOOD: 1, BAD-NAME: x, NESTED: {a: b}}\n" +
				"  u: {command: [jq], input_schema: {type: object}, env: [A=b]}\n",
			want: []string{
				`agentrt.yaml:8:20: env key "BAD-NAME" in tool "t" is not a valid variable name`,
				`agentrt.yaml:8:41: env NESTED in tool "t" must be a string, got a mapping`,
				`agentrt.yaml:9:57: env in tool "u" must be a mapping, got a list`,
			},
		},
		{
			name: "Annotations",
			yaml: okAgent + "tools:\n" +
				"  t:\n    command: [jq]\n    input_schema: {type: object}\n" +
				"    annotations: {read_only: true, destructive: true, idempotent: sure}\n",
			want: []string{
				`agentrt.yaml:8:5: annotations in tool "t" cannot be both read_only and destructive`,
				`agentrt.yaml:8:67: annotations.idempotent in tool "t" must be true or false, got string "sure"`,
			},
		},

		// Paths.
		{
			name: "WorkspaceMissingOrFile",
			yaml: "agents:\n" +
				"  a: {model: {provider: replay, script: support.replay.yaml}, workspace: nope}\n" +
				"  b: {model: {provider: replay, script: support.replay.yaml}, workspace: notes.txt}\n" +
				"  c: {model: {provider: replay, script: support.replay.yaml}, workspace: \"\"}\n",
			want: []string{
				`agentrt.yaml:2:74: workspace "nope" in agent "a" does not exist (resolved to $DIR/nope)`,
				`agentrt.yaml:3:74: workspace "notes.txt" in agent "b" is not a directory`,
				`agentrt.yaml:4:74: workspace in agent "c" must not be empty`,
			},
		},
		{
			name: "DataDirIsFile",
			yaml: okAgent + "data_dir: notes.txt\n",
			want: []string{
				`agentrt.yaml:4:11: data_dir "notes.txt" is not a directory`,
			},
		},

		// Execution.
		{
			name: "ExecutionUnknownKeys",
			yaml: okAgent + "execution:\n  max_paralel: 4\n  output: {inline: 1}\n" +
				"  redact: {secrets: [A]}\n  process: {env: [A]}\n",
			want: []string{
				`agentrt.yaml:5:3: unknown key "max_paralel" in execution; did you mean max_parallel?`,
				`agentrt.yaml:6:12: unknown key "inline" in execution.output; did you mean inline_bytes?`,
				`agentrt.yaml:7:12: unknown key "secrets" in execution.redact`,
				`agentrt.yaml:8:13: unknown key "env" in execution.process; did you mean env_allow?`,
			},
		},
		{
			name: "DurabilityValues",
			yaml: okAgent + "durability:\n  workers: 0\n  lease_ttl: soon\n  multitask: queue\n  max_queued: -1\n" +
				"  retry: {max_attempts: 0, backoff: 0s, non_retryable: [model_error, modle_error]}\n  turn_timeot: 1m\n" +
				"  integrity_check: never\n",
			want: []string{
				`agentrt.yaml:5:12: durability.workers must be between 1 and 4096, got 0`,
				`agentrt.yaml:6:14: durability.lease_ttl must be a duration such as 10s or 1m30s, got string "soon"`,
				`agentrt.yaml:7:14: durability.multitask must be one of enqueue, reject, interrupt, rollback, got "queue"; did you mean enqueue?`,
				`agentrt.yaml:8:15: durability.max_queued must be between 1 and 10000000, got -1`,
				`agentrt.yaml:9:25: durability.retry.max_attempts must be between 1 and 100, got 0`,
				`agentrt.yaml:9:37: durability.retry.backoff must be positive, got string "0s"`,
				`agentrt.yaml:9:70: unknown failure kind "modle_error" in durability.retry.non_retryable; did you mean model_error?`,
				`agentrt.yaml:10:3: unknown key "turn_timeot" in durability; did you mean turn_timeout?`,
				`agentrt.yaml:11:20: durability.integrity_check must be a duration such as 10s or 1m30s, or off, got string "never"`,
			},
		},
		{
			name: "HealthValues",
			yaml: okAgent + "health:\n  stuck_after: 0s\n  queue_age_warn: a while\n  approval_age_wrn: 1h\n",
			want: []string{
				`agentrt.yaml:5:16: health.stuck_after must be positive, got string "0s"`,
				`agentrt.yaml:6:19: health.queue_age_warn must be a duration such as 10s or 1m30s, got string "a while"`,
				`agentrt.yaml:7:3: unknown key "approval_age_wrn" in health; did you mean approval_age_warn?`,
			},
		},
		{
			name: "HealthNotAMapping",
			yaml: okAgent + "health: 5m\n",
			want: []string{
				`agentrt.yaml:4:9: health must be a mapping, got string "5m"`,
			},
		},
		{
			name: "ExecutionMaxParallel",
			yaml: okAgent + "execution: {max_parallel: 0}\n",
			want: []string{
				`agentrt.yaml:4:27: execution.max_parallel must be between 1 and 256, got 0`,
			},
		},
		{
			name: "OutputLimits",
			yaml: okAgent + "execution:\n  output: {inline_bytes: 100, max_bytes: 32KiB}\n" +
				"tools:\n  t:\n    command: [jq]\n    input_schema: {type: object}\n" +
				"    output: {inline_bytes: 4096, max_bytes: 1024, max: 1}\n",
			want: []string{
				`agentrt.yaml:5:26: execution.output.inline_bytes must be between 256 and 16777216, got 100`,
				`agentrt.yaml:5:42: execution.output.max_bytes must be an integer, got string "32KiB"`,
				`agentrt.yaml:10:45: output.max_bytes in tool "t" must be at least inline_bytes (4096), got 1024`,
				`agentrt.yaml:10:51: unknown key "max" in output of tool "t"; did you mean max_bytes?`,
			},
		},
		{
			name: "RedactAndProcess",
			yaml: okAgent + "execution:\n  redact:\n" +
				"    secret_env: [GITHUB_TOKEN, 1BAD, GITHUB_TOKEN]\n" +
				"    patterns: ['acct-[0-9', '', {a: b}]\n" +
				"    token_shapes: off\n" +
				"  process: {env_allow: [A-B]}\n",
			want: []string{
				`agentrt.yaml:6:32: invalid variable name "1BAD" in execution.redact.secret_env: use letters, digits and '_', not starting with a digit`,
				`agentrt.yaml:6:38: variable "GITHUB_TOKEN" is listed twice in execution.redact.secret_env`,
				"agentrt.yaml:7:16: pattern \"acct-[0-9\" in execution.redact.patterns is not a valid regular expression: missing closing ]: `[0-9`",
				`agentrt.yaml:7:29: execution.redact.patterns must not list an empty pattern (it would match everywhere)`,
				`agentrt.yaml:7:33: execution.redact.patterns must list regular expressions, got a mapping`,
				`agentrt.yaml:8:19: execution.redact.token_shapes must be true or false, got string "off"`,
				`agentrt.yaml:9:25: invalid variable name "A-B" in execution.process.env_allow: use letters, digits and '_', not starting with a digit`,
			},
		},

		// Sandboxes.
		{
			name: "SandboxUnknownKeys",
			yaml: okAgent + "    sandbox:\n      mode: read_only\n      netwrk: none\n      limits: {procs: 1}\n",
			want: []string{
				`agentrt.yaml:6:7: unknown key "netwrk" in sandbox of agent "a"; did you mean network?`,
				`agentrt.yaml:7:16: unknown key "procs" in sandbox.limits of agent "a"`,
			},
		},
		{
			name: "SandboxBadModes",
			yaml: okAgent + "    sandbox: readonly\n" +
				"  b: {model: {provider: replay, script: support.replay.yaml}, sandbox: {mode: yolo}}\n" +
				"  c: {model: {provider: replay, script: support.replay.yaml}, sandbox: {network: full}}\n" +
				"  d: {model: {provider: replay, script: support.replay.yaml}, sandbox: [read_only]}\n",
			want: []string{
				`agentrt.yaml:4:14: sandbox in agent "a" must be one of read_only, workspace_write, full_access, got "readonly"; did you mean read_only?`,
				`agentrt.yaml:5:79: sandbox.mode in agent "b" must be one of read_only, workspace_write, full_access, got "yolo"`,
				`agentrt.yaml:6:63: mode is required in sandbox of agent "c" (one of read_only, workspace_write, full_access)`,
				`agentrt.yaml:7:72: sandbox in agent "d" must be a mode (read_only, workspace_write, full_access) or a mapping, got a list`,
			},
		},
		{
			name: "SandboxWriteRootsNeedWriteMode",
			yaml: okAgent + "    sandbox:\n      mode: read_only\n      write_roots: [./scratch]\n",
			want: []string{
				`agentrt.yaml:6:7: write_roots in sandbox of agent "a" need mode workspace_write or full_access, not read_only`,
			},
		},
		{
			name: "SandboxBadNetworkAndRoots",
			yaml: okAgent + "    sandbox:\n      mode: workspace_write\n      network: host\n" +
				"      read_roots: [\"\", ~/data, [x]]\n      write_roots: /tmp\n",
			want: []string{
				`agentrt.yaml:6:16: sandbox.network in agent "a" must be one of none, full, got "host"`,
				`agentrt.yaml:7:20: sandbox.read_roots in agent "a" must not list an empty path`,
				`agentrt.yaml:7:24: path "~/data" in sandbox.read_roots in agent "a" starts with ~, which is not expanded; write an absolute path`,
				`agentrt.yaml:7:32: sandbox.read_roots in agent "a" must list paths, got a list`,
				`agentrt.yaml:8:20: sandbox.write_roots in agent "a" must be a list of paths, got string "/tmp"`,
			},
		},
		{
			name: "SandboxLimits",
			yaml: okAgent + "    sandbox:\n      mode: workspace_write\n" +
				"      limits: {processes: -2, memory_bytes: -5, file_bytes: -1, cpu_seconds: 1.5, processes_x: 1}\n",
			want: []string{
				`agentrt.yaml:6:27: sandbox.limits.processes in agent "a" must be between 0 and 2147483647, or -1 for no limit, got -2`,
				`agentrt.yaml:6:45: sandbox.limits.memory_bytes in agent "a" must be between 0 and 4611686018427387904, or -1 for no limit, got -5`,
				`agentrt.yaml:6:78: sandbox.limits.cpu_seconds in agent "a" must be an integer, got number 1.5`,
				`agentrt.yaml:6:83: unknown key "processes_x" in sandbox.limits of agent "a"; did you mean processes?`,
			},
		},
		{
			name: "SandboxTmpAndWriteCaps",
			yaml: okAgent + "    sandbox:\n      mode: workspace_write\n" +
				"      tmp_size: 256MiB\n      max_write_bytes: -2\n      tmp_sise: 1\n",
			want: []string{
				`agentrt.yaml:6:17: sandbox.tmp_size in agent "a" must be an integer, got string "256MiB"`,
				`agentrt.yaml:7:24: sandbox.max_write_bytes in agent "a" must be between 0 and 4611686018427387904, or -1 for no limit, got -2`,
				`agentrt.yaml:8:7: unknown key "tmp_sise" in sandbox of agent "a"; did you mean tmp_size?`,
			},
		},
		{
			name: "SandboxUser",
			yaml: okAgent + "execution:\n  sandbox: {uid: 0, gid: 4294967295, user: nobody}\n",
			want: []string{
				`agentrt.yaml:5:18: execution.sandbox.uid must be between 1 and 4294967294, got 0`,
				`agentrt.yaml:5:26: execution.sandbox.gid must be between 1 and 4294967294, got 4294967295`,
				`agentrt.yaml:5:38: unknown key "user" in execution.sandbox`,
			},
		},

		// Tool concurrency.
		{
			name: "ConcurrencyTemplates",
			yaml: okAgent + "tools:\n" +
				"  a: {command: [jq], input_schema: {type: object, properties: {path: {}}}, concurrency: \"file:{pth}\"}\n" +
				"  b: {command: [jq], input_schema: {type: object}, concurrency: \"file:{path\"}\n" +
				"  c: {command: [jq], input_schema: {type: object}, concurrency: \"file:{a{b}}\"}\n" +
				"  d: {command: [jq], input_schema: {type: object}, concurrency: \"by path\"}\n" +
				"  e: {command: [jq], input_schema: {type: object}, concurrency: \"\"}\n" +
				"  f: {command: [jq], input_schema: {type: object}, concurrency: \"x}{\"}\n" +
				"  g: {command: [jq], input_schema: {type: object}, concurrency: \"f:{}\"}\n",
			want: []string{
				`agentrt.yaml:5:89: concurrency in tool "a" names {pth}, which is not a property of its input_schema; did you mean path?`,
				`agentrt.yaml:6:65: concurrency in tool "b": resource key "file:{path" has a '{' without a '}' at offset 5`,
				`agentrt.yaml:7:65: concurrency in tool "c": resource key "file:{a{b}}" nests braces at offset 7`,
				`agentrt.yaml:8:65: concurrency in tool "d" must be parallel, exclusive or a resource key without spaces or control characters, got "by path"`,
				`agentrt.yaml:9:65: concurrency in tool "e" must not be empty: use parallel, exclusive or a resource key such as file:{path}`,
				`agentrt.yaml:10:65: concurrency in tool "f": resource key "x}{" has a '}' without a '{' at offset 1`,
				`agentrt.yaml:11:65: concurrency in tool "g": resource key "f:{}" has empty braces {}; name an input property, as in file:{path}`,
			},
		},

		// Hooks.
		{
			name: "HooksKeyedByEvent",
			yaml: okAgent + "hooks:\n  PreToolUse:\n    - matcher: Bash\n",
			want: []string{
				`agentrt.yaml:4:1: hooks must be a list of hooks, each with point and command or url, got a mapping ` +
					`(hooks keyed by event, as Claude Code writes them, are not read: write one list item per hook, ` +
					`such as - {point: PreToolUse, matcher: Bash, command: ./hooks/guard.sh})`,
			},
		},
		{
			name: "HookShapes",
			yaml: okAgent + "hooks:\n  - ./tools/run.sh\n  - {command: ./tools/run.sh}\n" +
				"  - {point: pre_tool, command: ./tools/run.sh, type: command}\n",
			want: []string{
				`agentrt.yaml:5:5: hooks[0] must be a mapping with point and command or url, got string "./tools/run.sh"`,
				`agentrt.yaml:6:5: point is required in hooks[1] (one of session_start, user_prompt_submit, pre_tool_use, permission_request, post_tool_use, post_tool_failure, pre_compact, stop, subagent_start, subagent_stop)`,
				`agentrt.yaml:7:13: point in hooks[2] must be one of session_start, user_prompt_submit, pre_tool_use, permission_request, post_tool_use, post_tool_failure, pre_compact, stop, subagent_start, subagent_stop (or the Claude Code event name, such as PreToolUse), got "pre_tool"; did you mean pre_tool_use?`,
				`agentrt.yaml:7:48: unknown key "type" in hooks[2]`,
			},
		},
		{
			name: "HookMatchers",
			yaml: okAgent + "hooks:\n" +
				"  - {point: pre_tool_use, matcher: \"shell|(exec\", command: ./tools/run.sh}\n" +
				"  - {point: session_start, matcher: startup, command: ./tools/run.sh}\n" +
				"  - {point: Stop, matcher: \"*\", command: ./tools/run.sh}\n",
			want: []string{
				"agentrt.yaml:5:36: matcher in hooks[0] is not a valid regular expression: missing closing ): `shell|(exec`",
				`agentrt.yaml:6:37: matcher in hooks[1] applies only at the tool points (pre_tool_use, permission_request, post_tool_use, post_tool_failure), not at session_start`,
			},
		},
		{
			name: "HookCommandOrURL",
			yaml: okAgent + "hooks:\n" +
				"  - {point: stop, command: ./tools/run.sh, url: https://example.com/h}\n" +
				"  - {point: stop, name: idle}\n" +
				"  - {point: stop, url: ftp://example.com/h}\n" +
				"  - {point: stop, command: ./tools/run.sh, headers: {X-A: b}}\n" +
				"  - {point: stop, command: ./tools/missing.sh}\n" +
				"  - {point: stop, command: \"  \"}\n" +
				"  - {point: stop, url: \"https://example.com/h\", headers: {\"Bad Name\": x}}\n",
			want: []string{
				`agentrt.yaml:5:44: hooks[0] has both command and url; set one`,
				`agentrt.yaml:6:5: command or url is required in hooks[1]`,
				`agentrt.yaml:7:24: url in hooks[2] must be an http or https URL such as https://hooks.example.com/pre, got "ftp://example.com/h"`,
				`agentrt.yaml:8:44: headers in hooks[3] apply to url hooks only, and this hook has a command`,
				`agentrt.yaml:9:28: command "./tools/missing.sh" in hooks[4] does not exist (resolved to $DIR/tools/missing.sh)`,
				`agentrt.yaml:10:28: command in hooks[5] must not be empty`,
				`agentrt.yaml:11:59: header name "Bad Name" in hooks[6] is not a valid HTTP header name`,
			},
		},
		{
			name: "HookNames",
			yaml: okAgent + "hooks:\n" +
				"  - {point: stop, name: guard, command: ./tools/run.sh}\n" +
				"  - {point: stop, name: guard, command: ./tools/run.sh}\n" +
				"  - {point: stop, name: stop-3, command: ./tools/run.sh}\n" +
				"  - {point: stop, command: ./tools/run.sh}\n" +
				"  - {point: stop, name: \"bad name\", command: ./tools/run.sh}\n",
			want: []string{
				`agentrt.yaml:6:25: hook name "guard" in hooks[1] is already used by hooks[0]`,
				`agentrt.yaml:8:5: hooks[3] needs a name: its default name "stop-3" is already used by hooks[2]`,
				`agentrt.yaml:9:25: invalid hook name "bad name" in hooks[4]: use 1 to 64 letters, digits, '_' or '-'`,
			},
		},
		{
			name: "HookTimeoutFailModeEnv",
			yaml: okAgent + "hooks:\n" +
				"  - point: stop\n    command: ./tools/run.sh\n    timeout: 11m\n    fail_mode: closed\n    env: {BAD-NAME: x}\n" +
				"  - {point: stop, command: ./tools/run.sh, timeout: 0s}\n",
			want: []string{
				`agentrt.yaml:7:14: timeout in hooks[0] must be at most 10m, got string "11m"`,
				`agentrt.yaml:8:16: fail_mode in hooks[0] must be one of fail_open, fail_closed, got "closed"; did you mean fail_closed?`,
				`agentrt.yaml:9:11: env key "BAD-NAME" in hooks[0] is not a valid variable name`,
				`agentrt.yaml:10:53: timeout in hooks[1] must be positive, got string "0s"`,
			},
		},

		// Anchors.
		{
			name: "UnknownAlias",
			yaml: "agents:\n  a:\n    model: *base\n",
			want: []string{
				"agentrt.yaml:3:12: unknown alias *base",
			},
		},
		{
			name: "MistakeInMergedAnchorReportedPerAgent",
			yaml: "x-base: &base\n  model: {provider: replay, script: support.replay.yaml}\n  max_hops: 3\n" +
				"agents:\n  a: {<<: *base}\n  b: {<<: *base}\n",
			want: []string{
				`agentrt.yaml:3:3: unknown key "max_hops" in agent "a"; did you mean max_tool_hops?`,
				`agentrt.yaml:3:3: unknown key "max_hops" in agent "b"; did you mean max_tool_hops?`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := fixture(t)
			f, err := Parse("agentrt.yaml", []byte(tt.yaml), dir, Options{Builtins: builtins})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Parse: unexpected error:\n%v", err)
				}
				if f == nil {
					t.Fatal("Parse returned neither a file nor an error")
				}
				return
			}
			if f != nil {
				t.Errorf("Parse returned a file along with errors")
			}
			if err == nil {
				t.Fatal("Parse: no error")
			}
			got := errorLines(t, err, dir)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s\ngot:\n%s", diff, "\t\""+strings.Join(got, "\",\n\t\"")+"\",")
			}
		})
	}
}
