package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/internal/yamlpos"
)

// Limits of every YAML file agentrt reads (agentrt.yaml, policy rule
// files, replay scripts), checked before a file is parsed: a file past
// one is an error naming it.
const (
	// MaxFileBytes is the largest file: 10 MiB.
	MaxFileBytes = yamlpos.MaxFileBytes
	// MaxDepth is how deeply mappings and lists may nest.
	MaxDepth = yamlpos.MaxDepth
	// MaxTokens is how many YAML tokens (keys, values, indicators) a
	// file may hold.
	MaxTokens = yamlpos.MaxTokens
	// MaxBlockKeys is how many keys a block mapping (one key per line)
	// may hold; the parser's time grows with its square.
	MaxBlockKeys = yamlpos.MaxBlockKeys
)

// DefaultDataDir is the data directory, relative to the config file's
// folder, used when the file names none.
const DefaultDataDir = ".agentrt"

// DefaultListen is the server address used when the file names none.
const DefaultListen = "127.0.0.1:7420"

// DefaultMaxToolHops is an agent's hop limit when the file sets none.
const DefaultMaxToolHops = 8

// Model provider kinds.
const (
	// ProviderReplay plays back a scripted conversation (offline).
	ProviderReplay = "replay"
	// ProviderOpenAIChat is OpenAI's Chat Completions API.
	ProviderOpenAIChat = "openai_chat"
	// ProviderOpenAIResponses is OpenAI's Responses API.
	ProviderOpenAIResponses = "openai_responses"
	// ProviderAnthropic is Anthropic's Messages API.
	ProviderAnthropic = "anthropic_messages"
	// ProviderOpenAICompatible is any server speaking the Chat Completions
	// API at a base URL (Ollama, vLLM, llama.cpp, …).
	ProviderOpenAICompatible = "openai_compatible"
)

// Providers lists the provider kinds, in the order docs present them.
var Providers = []string{ProviderOpenAIChat, ProviderOpenAIResponses, ProviderAnthropic, ProviderOpenAICompatible, ProviderReplay}

// DefaultAPIKeyEnv returns the environment variable a provider kind reads
// its API key from when the file names none; empty when the kind needs no
// key by default.
func DefaultAPIKeyEnv(provider string) string {
	switch provider {
	case ProviderOpenAIChat, ProviderOpenAIResponses:
		return "OPENAI_API_KEY"
	case ProviderAnthropic:
		return "ANTHROPIC_API_KEY"
	}
	return ""
}

// InlineModel is the key of a model written inline under an agent.
const InlineModel = "default"

// Budget defaults.
const (
	DefaultLowThreshold = 0.8
	OnExceededWait      = "wait"
	OnExceededFail      = "fail"
	WindowTotal         = "total"
	WindowDay           = "day"
	WindowMonth         = "month"
)

// Limits on an agent's max_tool_hops.
const (
	minToolHops = 1
	maxToolHops = 1000
)

// File is a loaded and validated agentrt.yaml.
type File struct {
	// Path is the file's absolute path when it came from Load, or the name
	// given to Parse.
	Path string
	// Dir is the absolute folder relative paths in the file resolve against.
	Dir string
	// DataDir is the absolute directory holding the SQLite file, blobs and
	// the API token.
	DataDir string
	// Store is the store section: the zero Store is the embedded SQLite
	// database in DataDir.
	Store  Store
	Server Server
	// Agents maps an agent's name to the agent. It is never empty.
	Agents map[string]*Agent
	// Tools maps a declared tool's name to the tool. It is never nil.
	Tools map[string]*Tool
	// Models maps a declared model's key to the model. It is never nil.
	Models map[string]*Model
	// MCPServers maps a server's name under mcp_servers to the server. It
	// is never nil.
	MCPServers map[string]*MCPServer
	// Budgets are the default token and cost budgets.
	Budgets Budgets
	// Policy is the policy section: nil when the file has none, and
	// agentrt then allows every tool call. When it is set, every call
	// goes through the policy kernel it describes.
	Policy *Policy
	// Execution is the execution section: how tool calls run, their
	// output limits and redaction. Zero fields mean the defaults.
	Execution Execution
	// Hooks are the hooks section's hooks, in file order; nil when none.
	Hooks []*Hook
	// Durability is the durability section: workers, leases, queue
	// limits, multitask, retries and timeouts. Zero fields mean the
	// defaults.
	Durability Durability
	// Health is the health section: the thresholds of the health
	// checks. Zero fields mean the defaults.
	Health Health
	// Delegation is the delegation section: limits of delegation trees.
	// Zero fields mean the defaults.
	Delegation Delegation
	// Webhooks maps a webhook's name under webhooks to the webhook; nil
	// when none.
	Webhooks map[string]*Webhook
	// Schedules are the schedules section's schedules, in file order;
	// nil when none.
	Schedules []*Schedule
	// Workflows are the workflows section, by name.
	Workflows map[string]*Workflow
}

// Execution is the execution section.
type Execution struct {
	// MaxParallel bounds the calls of one hop running at once; zero means
	// the runtime's default (8).
	MaxParallel int
	// Output holds the global output limits.
	Output OutputLimits
	// SecretEnv names daemon environment variables whose values are
	// secrets: they are redacted from every tool output.
	SecretEnv []string
	// RedactPatterns are extra regular expressions (RE2 syntax) whose
	// matches are redacted from every tool output. Validated here.
	RedactPatterns []string
	// NoTokenShapes turns off the built-in redaction of common token
	// shapes (API keys, bearer tokens, private keys, JWTs).
	NoTokenShapes bool
	// EnvAllow names daemon environment variables passed to processes the
	// shell and exec tools start.
	EnvAllow []string
	// SandboxUID and SandboxGID are the unprivileged user and group a
	// daemon running as root runs sandboxed processes as; zero means
	// the sandbox's default (65534, nobody).
	SandboxUID, SandboxGID int
}

// OutputLimits bound a tool's output. Zero means the default.
type OutputLimits struct {
	// InlineBytes is the most output shown inline; more is spilled to the
	// output store with a head/tail preview.
	InlineBytes int
	// MaxBytes is the most output stored; the rest is dropped.
	MaxBytes int64
}

// Sandbox is an agent's sandbox profile.
type Sandbox struct {
	// Mode is one of SandboxModes; Network is none or full.
	Mode    string
	Network string
	// ReadRoots and WriteRoots are absolute paths (relative ones in the
	// file resolve against File.Dir).
	ReadRoots  []string
	WriteRoots []string
	// Limits; zero means the default, -1 unlimited.
	Processes   int
	MemoryBytes int64
	FileBytes   int64
	CPUSeconds  int64
	// TmpBytes bounds the private /tmp (tmp_size); WriteBytes how much
	// the writable roots may grow in one command (max_write_bytes).
	// Zero means the default, -1 unlimited.
	TmpBytes   int64
	WriteBytes int64
}

// Sandbox modes.
const (
	SandboxReadOnly       = "read_only"
	SandboxWorkspaceWrite = "workspace_write"
	SandboxFullAccess     = "full_access"
)

// SandboxModes lists the sandbox modes.
var SandboxModes = []string{SandboxReadOnly, SandboxWorkspaceWrite, SandboxFullAccess}

// Sandbox networks.
const (
	SandboxNetworkNone = "none"
	SandboxNetworkFull = "full"
)

// SandboxNetworks lists the sandbox networks.
var SandboxNetworks = []string{SandboxNetworkNone, SandboxNetworkFull}

// Hook is one entry of the hooks section.
type Hook struct {
	// Name is the hook's name (default: point and index).
	Name string
	// Point is one of HookPoints.
	Point string
	// Matcher is a regular expression on the tool name (tool points only).
	Matcher string
	// Command is run with /bin/sh -c; URL receives a POST. Exactly one is
	// set.
	Command string
	// Script is the absolute path of the program Command starts with when
	// the file names it as a ./ or ../ path; empty otherwise.
	Script  string
	URL     string
	Headers map[string]string
	Env     map[string]string
	// Timeout bounds one run; zero means the default (60 s).
	Timeout time.Duration
	// FailMode is fail_open or fail_closed; empty means the point's
	// default.
	FailMode string
}

// HookPoints lists the hook points.
var HookPoints = []string{"session_start", "user_prompt_submit", "pre_tool_use", "permission_request", "post_tool_use",
	"post_tool_failure", "pre_compact", "stop", "subagent_start", "subagent_stop"}

// Hook fail modes.
const (
	HookFailOpen   = "fail_open"
	HookFailClosed = "fail_closed"
)

// HookFailModes lists the hook fail modes.
var HookFailModes = []string{HookFailOpen, HookFailClosed}

// MaxHookTimeout bounds a hook's timeout.
const MaxHookTimeout = 10 * time.Minute

// Budgets are the default limits on what model calls may use. Zero
// maxima mean no limit.
type Budgets struct {
	// Session limits each session; Tenant all of a tenant's sessions
	// together, within TenantWindow.
	Session Budget
	Tenant  Budget
	// TenantWindow is total, day or month (calendar, UTC).
	TenantWindow string
	// LowThreshold is the fraction of a budget at which quota.low fires.
	LowThreshold float64
	// OnExceeded is wait (the task parks waiting_resource until the limit
	// is raised) or fail.
	OnExceeded string
}

// Budget is one scope's maxima.
type Budget struct {
	MaxTokens  int64
	MaxCostUSD float64
}

// Server holds the HTTP server's settings. Zero limits mean the server's
// defaults (httpapi.Limits).
type Server struct {
	// Listen is the host:port the daemon listens on.
	Listen string
	// ReadHeaderTimeout bounds reading a request's header, BodyTimeout its
	// body, and IdleTimeout the wait of a kept-alive connection for its
	// next request.
	ReadHeaderTimeout time.Duration
	BodyTimeout       time.Duration
	IdleTimeout       time.Duration
	// MaxHeaderBytes bounds a request's header.
	MaxHeaderBytes int
	// MaxConnsPerClient bounds the connections one client address has
	// open at once, event streams included.
	MaxConnsPerClient int
	// CORSOrigins are the origins whose pages may call the API from a
	// browser (scheme://host[:port], as apitype.ParseOrigin returns them).
	CORSOrigins []string
}

// Agent is one agent definition.
type Agent struct {
	// Name is the agent's key under agents.
	Name         string
	Instructions string
	// Models are the agent's candidate models in declared order; the first
	// is the default. It is never empty in a valid file.
	Models []*Model
	// Profile is what the agent's tasks need of a model.
	Profile Profile
	// Tools lists the tools the agent may call, declared or builtin, in the
	// order the file lists them.
	Tools []string
	// RequireCompletion makes the run end only through the completion tool.
	RequireCompletion bool
	// MaxToolHops bounds the model ↔ tools round trips of one run.
	MaxToolHops int
	// Workspace is the absolute directory for file tools and the working
	// directory of command tools; empty when the agent has none.
	Workspace string
	// Mode is the agent's permission mode, one of Modes; empty means the
	// policy's mode. It is set only when the file has a policy section.
	Mode string
	// Scopes are the scopes the agent's calls may use when
	// ScopesRestricted; nil when none. ScopesRestricted is true when the
	// file writes the agent's scopes key, even as an empty list: a
	// restricted agent cannot call a tool needing a scope it lacks. It is
	// set only when the file has a policy section.
	Scopes           []string
	ScopesRestricted bool
	// Sandbox is the profile the agent's processes run under: the file's
	// sandbox key, or workspace_write with network none.
	Sandbox Sandbox
	// MCP are the agent's MCP servers, in file order; nil when none.
	MCP []*AgentMCP
	// Context manages the agent's context window; nil when the file has
	// no context key (no automatic compaction).
	Context *Context
	// Memory configures the agent's long-term memory.
	Memory AgentMemory
	// Subagents are the agents this one may delegate to, in file order;
	// nil when none.
	Subagents []*SubagentUse
	// State is the schema of the durable state of the agent's named
	// instances; nil when the file has no state key (the agent has no
	// instances).
	State *State
}

// AgentMemory is an agent's memory section.
type AgentMemory struct {
	// Inject is how many of the agent's memories that match a turn's
	// input precede it (0 to MaxMemoryInject); 0 injects none.
	Inject int
}

// MaxMemoryInject bounds memory.inject.
const MaxMemoryInject = 50

// Model is one model an agent may use: a provider kind, the model's name
// there, how to reach it, and what it can do and costs.
type Model struct {
	// Key is the model's key under models, or InlineModel for a model
	// written inline under an agent.
	Key string
	// Provider is the provider's kind, one of Providers.
	Provider string
	// Script is the absolute path of the replay script; empty for other
	// providers.
	Script string
	// Name is the provider's model name (the YAML key "model").
	Name string
	// BaseURL overrides the provider's API address; required for
	// openai_compatible.
	BaseURL string
	// APIKeyEnv names the environment variable holding the API key; empty
	// when the key is inline or none is needed.
	APIKeyEnv string
	// APIKey is a key written in the file (api_key) or read from
	// APIKeyFile; prefer APIKeyEnv or APIKeyFile.
	APIKey string
	// APIKeyFile is the absolute path of the file the key was read from
	// (api_key_file), read when the config is loaded; empty when none.
	APIKeyFile string
	Price      Price
	// ContextWindow is the model's context window in tokens; zero when not
	// declared.
	ContextWindow   int
	MaxOutputTokens int
	// Capabilities the model has; defaulted by provider when not written.
	Capabilities   []string
	TypicalLatency time.Duration
	// Timeout bounds one request; IdleTimeout the wait for data within it.
	// Zero means the adapter's default.
	Timeout     time.Duration
	IdleTimeout time.Duration
	Temperature *float64
	// ReasoningEffort (OpenAI) and ReasoningSummary (OpenAI Responses).
	ReasoningEffort  string
	ReasoningSummary string
	// ThinkingBudget enables Anthropic extended thinking with this many
	// tokens; zero leaves it off.
	ThinkingBudget int
	// Headers are extra HTTP headers sent with every request.
	Headers map[string]string
}

// Price is a model's price in US dollars per million tokens.
type Price struct {
	Input       float64
	CachedInput float64
	Output      float64
}

// Profile is what an agent's tasks need of a model and how to choose.
type Profile struct {
	// Kind names the kind of task; default the agent's name.
	Kind             string
	Requires         []string
	MinContextWindow int
	// Prefer is order, cost or latency.
	Prefer string
	// Fallback moves a run to the next candidate on retryable failures.
	Fallback bool
}

// Tool is a tool declared in the file and run as a command.
type Tool struct {
	// Name is the tool's key under tools.
	Name        string
	Description string
	// InputSchema is the JSON Schema for the tool's input, converted from
	// YAML with the key order kept. Its type is "object".
	InputSchema json.RawMessage
	// Command is the program and its arguments. Command[0] is an absolute
	// path when the file wrote it as a path, and a bare name otherwise.
	Command []string
	// Timeout bounds one call; zero means the tool layer's default.
	Timeout time.Duration
	// Env holds extra environment variables for the command; nil when none.
	Env         map[string]string
	Annotations Annotations
	// Scopes are the scopes a call of the tool needs; nil when none. The
	// file may declare them only with a policy section.
	Scopes []string
	// Intent says what a call does, for policy rules (read, write,
	// execute, …); empty lets the runtime derive it from the annotations.
	Intent string
	// CommandField names the input property, of type string, that holds a
	// shell command line; policy command matchers look at it. Empty for
	// tools that run no command line.
	CommandField string
	// Concurrency is parallel, exclusive or a resource key template
	// ("file:{path}"); empty derives it from the annotations.
	Concurrency string
	// Output overrides the global output limits for this tool.
	Output OutputLimits
}

// Annotations are hints about a tool's effects, as in MCP tool annotations.
type Annotations struct {
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
}

// Permission modes: what the policy kernel does with a call no rule
// decides. They are the policy package's modes, as strings.
const (
	// ModeDefault asks for anything a rule does not allow.
	ModeDefault = "default"
	// ModeReadOnly denies every tool that is not read-only.
	ModeReadOnly = "read_only"
	// ModeAcceptEdits allows what is not destructive without asking.
	ModeAcceptEdits = "accept_edits"
	// ModeAuto lets the policy's auto checker decide what would ask.
	ModeAuto = "auto"
	// ModeBypass allows everything that deny rules do not deny.
	ModeBypass = "bypass"
)

// Modes lists the permission modes, in the order docs present them.
var Modes = []string{ModeDefault, ModeReadOnly, ModeAcceptEdits, ModeAuto, ModeBypass}

// Builtin checkers: the runtime provides them, so a policy section uses
// them without defining them and may not define a checker of that name.
const (
	// CheckerSecrets looks for credentials such as API keys and private
	// keys.
	CheckerSecrets = "secrets"
	// CheckerPromptInjection looks for text that tries to give the model
	// new instructions.
	CheckerPromptInjection = "prompt_injection"
)

// BuiltinCheckers lists the builtin checkers.
var BuiltinCheckers = []string{CheckerSecrets, CheckerPromptInjection}

// Check actions: what happens when a checker flags a call's input or
// output.
const (
	// ActionDeny denies the call (input checks).
	ActionDeny = "deny"
	// ActionAsk asks a person to approve the call (input checks).
	ActionAsk = "ask"
	// ActionWarn lets the call or its output through and records the
	// finding (input and output checks).
	ActionWarn = "warn"
	// ActionRedact replaces what the checker found before the model sees
	// the output (output checks).
	ActionRedact = "redact"
	// ActionBlock withholds the whole output from the model (output
	// checks).
	ActionBlock = "block"
)

// InputActions and OutputActions list the actions of input and output
// checks.
var (
	InputActions = []string{ActionDeny, ActionAsk, ActionWarn}
	// OpaqueDecisions are the values of policy.opaque.
	OpaqueDecisions = []string{ActionAsk, ActionDeny}
	OutputActions   = []string{ActionWarn, ActionRedact, ActionBlock}
)

// Policy defaults.
const (
	// DefaultCheckerTimeout bounds one run of a command checker whose
	// timeout the file does not set.
	DefaultCheckerTimeout = 5 * time.Second
	// DefaultApprovalTimeout is how long an approval waits before it
	// expires and denies, when the file does not say.
	DefaultApprovalTimeout = 24 * time.Hour
	// ApprovalNever is Policy.ApprovalTimeout for "approval_timeout:
	// never": approvals wait until someone answers.
	ApprovalNever time.Duration = -1
)

// Policy is the policy section: what the policy kernel is built from.
// Rule files are only checked to exist here; the root package parses them.
type Policy struct {
	// Mode is the permission mode of agents that set none, one of Modes.
	Mode string
	// RuleFiles are the absolute paths of the rule files, in the order
	// the file lists them.
	RuleFiles []string
	// Principals maps a principal's name to its roles and scopes. It is
	// never nil.
	Principals map[string]*Principal
	// Checkers maps a command checker's name to the checker. It is never
	// nil, and holds no builtin checker.
	Checkers map[string]*Checker
	// InputChecks run on a call's input before it is decided, and
	// OutputChecks on its output before the model sees it, both in the
	// order the file lists them; nil when none.
	InputChecks  []Check
	OutputChecks []Check
	// AutoChecker names the checker that decides, in mode auto, the calls
	// that would ask; empty when none is set.
	AutoChecker string
	// ApprovalTimeout is how long an approval waits before it expires and
	// denies; ApprovalNever when it never expires.
	ApprovalTimeout time.Duration
	// Opaque is what a shell command line the policy cannot see into gets
	// when no deny rule or rule with command opaque decides it: ask (the
	// default) or deny, one of OpaqueDecisions.
	Opaque string
	// SelfApproval is whether the principal who submitted a turn may
	// approve its actions: SelfApprovalAllow or SelfApprovalForbid.
	SelfApproval string
	// ForkGrants is whether a fork of a session (fork_thread) gets the
	// session's standing approvals and permission mode: ForkGrantsCopy,
	// or ForkGrantsNone (as when empty, the default).
	ForkGrants string
}

// Values of policy.fork_grants.
const (
	// ForkGrantsNone starts a fork without the source session's
	// approve_for_session grants and mode (a read_only mode is kept).
	ForkGrantsNone = "none"
	// ForkGrantsCopy copies them into the fork.
	ForkGrantsCopy = "copy"
)

// ForkGrantsValues lists the values of policy.fork_grants.
var ForkGrantsValues = []string{ForkGrantsNone, ForkGrantsCopy}

// Values of policy.self_approval.
const (
	// SelfApprovalAllow lets a turn's submitter answer its actions.
	SelfApprovalAllow = "allow"
	// SelfApprovalForbid leaves a turn's submitter only deny (and fail):
	// another principal must approve.
	SelfApprovalForbid = "forbid"
)

// SelfApprovals lists the values of policy.self_approval.
var SelfApprovals = []string{SelfApprovalAllow, SelfApprovalForbid}

// Principal is what the policy knows of one principal (a caller of the
// runtime).
type Principal struct {
	// Roles are the principal's roles, for rules that match on roles; nil
	// when none.
	Roles []string
	// Scopes are the scopes the principal grants when Restricted; nil
	// when none. Restricted is true when the file writes the principal's
	// scopes key, even as an empty list; an unrestricted principal lacks
	// no scope.
	Scopes     []string
	Restricted bool
}

// Checker is a checker run as a command: it reads a check's JSON on
// standard input and prints its verdict as JSON.
type Checker struct {
	// Name is the checker's key under policy.checkers.
	Name string
	// Command is the program and its arguments, resolved as a tool's
	// command is.
	Command []string
	// Timeout bounds one run.
	Timeout time.Duration
	// Env holds extra environment variables for the command; nil when none.
	Env map[string]string
}

// Check runs a checker on every call's input or output.
type Check struct {
	// Checker names a builtin checker or one under policy.checkers.
	Checker string
	// Action is what happens when the checker flags a call: one of
	// InputActions for an input check, of OutputActions for an output
	// check.
	Action string
}

// Options tune how a file is validated.
type Options struct {
	// Builtins names the built-in tools, which agents may list without
	// declaring them and which declared tools may not shadow.
	Builtins []string
}

// AgentNames returns the names of the file's agents, sorted.
func (f *File) AgentNames() []string {
	names := make([]string, 0, len(f.Agents))
	for name := range f.Agents {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// HiddenPaths returns what a runtime on f hides from sandboxed processes,
// sorted: the file itself, its data directory, every api_key_file, the
// policy's rule files, and the hook scripts and checker programs in the
// file's folder, which run outside the sandbox (a tool that could rewrite
// one would run code there, or change the policy at the next start).
// Replay scripts and command tools' programs stay visible: they hold no
// secret, and a command tool runs its program in the sandbox.
func (f *File) HiddenPaths() []string {
	var out []string
	add := func(p string) {
		if filepath.IsAbs(p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	add(f.Path)
	add(f.DataDir)
	models := slices.Collect(maps.Values(f.Models))
	for _, a := range f.Agents {
		models = append(models, a.Models...)
	}
	for _, m := range models {
		if m != nil && m.APIKeyFile != "" {
			add(m.APIKeyFile)
		}
	}
	ownFile := func(p string) bool {
		return p != "" && f.Dir != "" && strings.HasPrefix(p, f.Dir+string(filepath.Separator))
	}
	for _, h := range f.Hooks {
		if ownFile(h.Script) {
			add(h.Script)
		}
	}
	if f.Policy != nil {
		for _, r := range f.Policy.RuleFiles {
			add(r)
		}
		for _, c := range f.Policy.Checkers {
			if len(c.Command) > 0 && ownFile(c.Command[0]) {
				add(c.Command[0])
			}
		}
	}
	slices.Sort(out)
	return out
}

// Load reads and validates the file at path. Problems with the file's
// content are returned as Errors naming path as given; so is a file past
// one of the limits (MaxFileBytes, MaxDepth, MaxTokens, MaxBlockKeys),
// which is refused before it is parsed.
func Load(path string, opts Options) (*File, error) {
	data, err := yamlpos.ReadFile(path)
	var le *yamlpos.LimitError
	switch {
	case errors.As(err, &le):
		return nil, Errors{le.FileError(path)}
	case err != nil:
		return nil, fmt.Errorf("reading config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolving config path: %w", err)
	}
	f, err := Parse(path, data, filepath.Dir(abs), opts)
	if err != nil {
		return nil, err
	}
	f.Path = abs
	return f, nil
}

// Parse validates data as the content of an agentrt.yaml. Name is used in
// error positions and as File.Path; relative paths in the file resolve
// against baseDir (the current directory when empty). Every problem found
// is returned, as Errors.
func Parse(name string, data []byte, baseDir string, opts Options) (*File, error) {
	dir, err := filepath.Abs(baseDir)
	if err != nil {
		return nil, fmt.Errorf("resolving base directory: %w", err)
	}
	d := newDecoder(name, dir, opts)
	f := d.decode(data)
	if errs := d.errors(); errs != nil {
		return nil, errs
	}
	return f, nil
}
