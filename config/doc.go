// Package config loads and validates agentrt.yaml, the one file that holds
// the runtime's settings, its agents and the command tools they may call.
//
// # File format
//
// A complete file looks like this:
//
//	data_dir: .agentrt                 # SQLite file, blobs and API token (default ".agentrt")
//	server:
//	  listen: 127.0.0.1:7420           # default 127.0.0.1:7420
//	  body_timeout: 30s                # and read_header_timeout, idle_timeout,
//	  max_conns_per_client: 64         # max_header_bytes: see docs/config.md
//	store:                             # default: the SQLite file in data_dir
//	  url: postgres://agentrt@db:5432/agentrt  # several nodes: see docs/postgres.md
//	agents:
//	  support:
//	    instructions: "You triage support requests. Finish with complete_task."
//	    model: {provider: replay, script: support.replay.yaml}
//	    tools: [lookup_order, read_file]
//	    require_completion: true       # default false
//	    max_tool_hops: 8               # default 8, 1..1000
//	    workspace: workspace           # optional directory for file and command tools
//	tools:
//	  lookup_order:
//	    description: Look up an order by id.
//	    input_schema: {type: object, properties: {order_id: {type: string}}, required: [order_id]}
//	    command: [./tools/lookup_order.sh]
//	    timeout: 10s                   # Go duration; default: the tool layer's
//	    env: {REGION: eu}
//	    annotations: {read_only: true, idempotent: true, destructive: false}
//
// Keys may be added in later versions; the keys above keep their meaning.
// Top-level keys starting with "x-" are ignored, so they can hold YAML
// anchors that agents and tools merge with "<<: *name".
//
// # Paths
//
// Relative paths resolve against the folder holding the file and come out
// absolute and cleaned: data_dir, an agent's workspace, model.script and
// sandbox roots, policy.rules, an MCP server's cwd, and a tool's,
// checker's or MCP server's command[0] when it contains a path separator. A bare command
// name such as "jq" is kept as written and looked up in PATH when the tool
// runs. A hook's command is a shell command line: only its first word is
// resolved, when it is a path starting with ./ or ../. Parse checks that
// the files and directories named exist (sandbox roots need not), and
// that command files are executable.
//
// # Execution and hooks
//
// The execution section bounds how many calls of a hop run at once, how
// much of a tool's output is shown inline and stored, and what is
// redacted from it; agents may set a sandbox profile and tools a
// concurrency class and output limits. The hooks section lists commands
// and URLs run at fixed points of a run (pre_tool_use, stop, …; Claude
// Code's event names are accepted too):
//
//	execution:
//	  max_parallel: 8
//	  output: {inline_bytes: 32768, max_bytes: 1073741824}
//	  redact: {secret_env: [GITHUB_TOKEN], patterns: ['acct-[0-9]{8}']}
//	hooks:
//	  - {point: pre_tool_use, matcher: shell, command: ./hooks/guard.sh}
//
// # MCP servers
//
// The mcp_servers section declares Model Context Protocol servers, each
// started over stdio (command, args, env, cwd) or reached over streamable
// HTTP (url, headers, bearer_token_env); an agent's mcp key lists the ones
// whose tools it may call, with allow and deny globs over their tool names:
//
//	mcp_servers:
//	  everything: {command: npx, args: [-y, "@modelcontextprotocol/server-everything"], env: [HOME_TOKEN]}
//	  remote: {url: "https://example.test/mcp", bearer_token_env: REMOTE_MCP_TOKEN}
//	agents:
//	  helper:
//	    mcp: [everything, {server: remote, tools: {allow: ["search*"], deny: ["delete_*"]}}]
//
// Environment variables are named, never read: the runtime reads them
// when it connects.
//
// # Delegation
//
// An agent's subagents key lists the agents it may delegate to, each
// offered to its model as a tool (as_tool, default delegate_AGENT) whose
// input must match input_schema; the delegation section bounds how deep
// trees grow:
//
//	agents:
//	  triage:
//	    subagents:
//	      - {agent: lookup, as_tool: lookup_order, max_parallel: 2, workspace: parent_readonly}
//	delegation:
//	  max_depth: 3
//
// # Schedules and webhooks
//
// The schedules section declares schedules the runtime creates when it
// starts and keeps as the file says, found again by name; exactly one of
// cron, every and at decides the kind. A schedule may deliver each fire's
// result to a webhook of the webhooks section, whose signing secret is
// read from the environment variable secret_env names:
//
//	webhooks:
//	  digest: {url: "https://hooks.example.com/digest", secret_env: DIGEST_SECRET}
//	schedules:
//	  - name: nightly-digest
//	    agent: digest
//	    cron: "0 7 * * *"
//	    time_zone: Europe/Berlin
//	    input: "Digest of {{.Params.team}} before {{.FireTime}}"
//	    params: {team: support}
//	    webhook: digest
//
// # Named instances
//
// An agent's state key gives its named instances a durable state: the
// JSON Schema it must match (a YAML mapping), the initial state, and once
// the version rises above 1 the command tool that migrates older states.
// A schedule's instance key makes a named instance own the schedule; the
// instance must exist when the runtime starts:
//
//	agents:
//	  case:
//	    state:
//	      version: 1
//	      schema: {type: object, properties: {status: {enum: [new, open, closed]}}, required: [status]}
//	      initial: {status: new}
//	schedules:
//	  - {name: follow-up, agent: case, instance: case/4711, every: 24h, input: "Follow up on {{.Name}}"}
//
// # Policy
//
// An optional policy section turns on the policy kernel: without it every
// tool call is allowed. It names rule files, principals with their roles
// and scopes, command checkers, the input and output checks, the default
// permission mode and how long approvals wait:
//
//	policy:
//	  mode: default                    # default, read_only, accept_edits, auto or bypass
//	  rules: [policy/admin.yaml]       # rule files, parsed by package policy
//	  principals:
//	    alice: {roles: [operator], scopes: [orders.read]}
//	  checkers:
//	    pii: {command: [./checkers/pii.sh], timeout: 5s}
//	  input_checks: [{checker: secrets, action: deny}]
//	  output_checks: [{checker: prompt_injection, action: block}]
//	  approval_timeout: 24h            # or never
//	  opaque: ask                      # or deny: command lines the policy cannot see into
//	  self_approval: forbid            # a turn's submitter may not approve its actions
//	  fork_grants: copy                # forks keep the session's standing approvals (default none)
//
// Agents may then set a mode and scopes, and tools the scopes they need;
// those keys are errors without a policy section. Package config only
// checks that rule files exist: it does not import package policy, and
// the runtime parses them when it is built from the file.
//
// # Errors
//
// Parse reports every problem it finds, not only the first, as [Errors]:
// one [Error] per problem, each printed as "file:line:column: message" and
// sorted by position. Unknown keys come with a "did you mean" suggestion
// when a known key is close.
package config
