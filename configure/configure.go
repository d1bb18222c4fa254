// Package configure turns agentrt.yaml into an agentrt.Config: the model
// providers (each configured model's adapter, on its SDK) and routing
// candidates, the policy kernel with its rule files, principals and
// checkers, the command tools, budgets, durability, execution, hooks,
// webhooks and declared schedules.
//
// It is what the command line (package cli) builds its runtime with. It
// is apart from the root package so that a program embedding the runtime
// with a Config of its own does not link the model SDKs or the
// configuration schema (package config): it imports only the adapters it
// uses.
package configure

import (
	"fmt"
	"os"
	"regexp"
	"slices"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/hook"
	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/anthropic"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/command"
)

// Load reads an agentrt.yaml file and builds the Config it describes:
// its command tools, its agents with their model providers, its data
// directory, and what sandboxed processes must not see (the file itself,
// its key files; see config.File.HiddenPaths). Errors in the file (or in
// a replay script it names) carry file:line:column.
func Load(path string) (agentrt.Config, *config.File, error) {
	f, err := config.Load(path, config.Options{Builtins: agentrt.BuiltinToolNames()})
	if err != nil {
		return agentrt.Config{}, nil, err
	}
	cfg, err := FromFile(f)
	return cfg, f, err
}

// FromFile builds a Config from a parsed agentrt.yaml.
func FromFile(f *config.File) (agentrt.Config, error) {
	cfg := agentrt.Config{DataDir: f.DataDir, Agents: make(map[string]*agentrt.Agent, len(f.Agents))}
	cfg.Sandbox.Hidden = f.HiddenPaths()
	for _, name := range sortedKeys(f.Tools) {
		t := f.Tools[name]
		ct, err := command.New(tool.Spec{
			Name:         t.Name,
			Description:  t.Description,
			InputSchema:  t.InputSchema,
			Annotations:  tool.Annotations{ReadOnly: t.Annotations.ReadOnly, Destructive: t.Annotations.Destructive, Idempotent: t.Annotations.Idempotent},
			Timeout:      t.Timeout,
			Source:       "command",
			Scopes:       t.Scopes,
			Intent:       t.Intent,
			CommandField: t.CommandField,
			Concurrency:  t.Concurrency,
			Output:       output.Limits{Inline: t.Output.InlineBytes, Max: t.Output.MaxBytes},
		}, command.Config{Argv: t.Command, Dir: f.Dir, Env: t.Env})
		if err != nil {
			return agentrt.Config{}, fmt.Errorf("tool %q: %w", name, err)
		}
		cfg.Tools = append(cfg.Tools, ct)
	}
	cfg.Budgets = agentrt.Budgets{
		Session:        agentrt.Budget{MaxTokens: f.Budgets.Session.MaxTokens, MaxCostUSD: f.Budgets.Session.MaxCostUSD},
		Tenant:         agentrt.Budget{MaxTokens: f.Budgets.Tenant.MaxTokens, MaxCostUSD: f.Budgets.Tenant.MaxCostUSD},
		TenantWindow:   f.Budgets.TenantWindow,
		LowThreshold:   f.Budgets.LowThreshold,
		FailOnExceeded: f.Budgets.OnExceeded == config.OnExceededFail,
	}
	if err := policyFromFile(f, &cfg); err != nil {
		return agentrt.Config{}, err
	}
	durabilityFromFile(f, &cfg)
	cfg.MaxDelegationDepth = f.Delegation.MaxDepth
	if err := webhooksFromFile(f, &cfg); err != nil {
		return agentrt.Config{}, err
	}
	schedulesFromFile(f, &cfg)
	cfg.Workflows = workflowsFromFile(f)
	cfg.Health = agentrt.HealthThresholds{StuckAfter: f.Health.StuckAfter, QueueAgeWarn: f.Health.QueueAgeWarn, ApprovalAgeWarn: f.Health.ApprovalAgeWarn}
	if err := executionFromFile(f, &cfg); err != nil {
		return agentrt.Config{}, err
	}
	cfg.Redact.Secrets = append(cfg.Redact.Secrets, modelKeys(f)...)
	// After the execution section, which sets the redactor up.
	if err := mcpFromFile(f, &cfg); err != nil {
		return agentrt.Config{}, err
	}
	// A model declared under models is one candidate, shared by every
	// agent that lists it; inline models belong to their agent.
	shared := make(map[string]*model.Candidate)
	for _, key := range sortedKeys(f.Models) {
		c, err := candidate(f.Models[key])
		if err != nil {
			return agentrt.Config{}, fmt.Errorf("model %q: %w", key, err)
		}
		shared[key] = c
	}
	for _, name := range f.AgentNames() {
		a := f.Agents[name]
		var models []*model.Candidate
		for _, m := range a.Models {
			c, ok := shared[m.Key]
			if m.Key == config.InlineModel || !ok {
				var err error
				if c, err = candidate(m); err != nil {
					return agentrt.Config{}, fmt.Errorf("agent %q: %w", name, err)
				}
			}
			models = append(models, c)
		}
		requires := make([]model.Capability, len(a.Profile.Requires))
		for i, k := range a.Profile.Requires {
			requires[i] = model.Capability(k)
		}
		cfg.Agents[name] = &agentrt.Agent{
			Instructions: a.Instructions,
			Models:       models,
			Profile: model.Profile{
				Kind: a.Profile.Kind, Requires: requires, MinContextWindow: a.Profile.MinContextWindow,
				Prefer: model.Preference(a.Profile.Prefer), NoFallback: !a.Profile.Fallback,
			},
			Tools:             a.Tools,
			RequireCompletion: a.RequireCompletion,
			MaxToolHops:       a.MaxToolHops,
			Memory:            agentrt.AgentMemory{Inject: a.Memory.Inject},
			Workspace:         a.Workspace,
			Sandbox:           sandboxProfile(a.Sandbox),
			MCP:               mcpUses(a),
			Subagents:         subagentUses(a),
			State:             stateSchema(a.State),
		}
		if cp := a.Context; cp != nil {
			p := &agentrt.ContextPolicy{WindowTokens: cp.WindowTokens, CompactAt: cp.CompactAt, KeepRecentTurns: cp.KeepRecentTurns, Strategy: cp.Strategy}
			if cp.SummaryModel != nil {
				c, ok := shared[cp.SummaryModel.Key]
				if !ok {
					return agentrt.Config{}, fmt.Errorf("agent %q: summary_model %q is not declared under models", name, cp.SummaryModel.Key)
				}
				p.Summary = c
			}
			cfg.Agents[name].Context = p
		}
	}
	return cfg, nil
}

// subagentUses copies an agent's subagents list.
func subagentUses(a *config.Agent) []agentrt.SubagentUse {
	var out []agentrt.SubagentUse
	for _, u := range a.Subagents {
		out = append(out, agentrt.SubagentUse{
			Agent: u.Agent, AsTool: u.AsTool, Description: u.Description,
			InputSchema: u.InputSchema, MaxParallel: u.MaxParallel, Workspace: u.Workspace, AsJob: u.AsJob, Context: u.Context,
		})
	}
	return out
}

// stateSchema copies an agent's state section; nil when it has none.
func stateSchema(s *config.State) *agentrt.StateSchema {
	if s == nil {
		return nil
	}
	return &agentrt.StateSchema{Version: s.Version, Schema: s.Schema, Initial: s.Initial, Migrate: s.Migrate}
}

// durabilityFromFile copies the durability section.
func durabilityFromFile(f *config.File, cfg *agentrt.Config) {
	x := f.Durability
	cfg.MaxConcurrentRuns, cfg.MaxQueued, cfg.MaxQueuedPerTenant = x.Workers, x.MaxQueued, x.MaxQueuedPerTenant
	cfg.LeaseTTL, cfg.PollInterval = x.LeaseTTL, x.PollInterval
	cfg.Multitask = apitype.Multitask(x.Multitask)
	cfg.TurnTimeout, cfg.InactivityTimeout = x.TurnTimeout, x.InactivityTimeout
	cfg.IntegrityCheck = x.IntegrityCheck // IntegrityCheckOff is negative: no check
	cfg.Retry = agentrt.RetryPolicy{MaxAttempts: x.Retry.MaxAttempts, Backoff: x.Retry.Backoff, MaxBackoff: x.Retry.MaxBackoff}
	for _, k := range x.Retry.NonRetryable {
		cfg.Retry.NonRetryable = append(cfg.Retry.NonRetryable, runtype.FailureKind(k))
	}
}

// executionFromFile copies the execution and hooks sections.
func executionFromFile(f *config.File, cfg *agentrt.Config) error {
	x := f.Execution
	cfg.MaxParallelTools = x.MaxParallel
	cfg.Output = output.Limits{Inline: x.Output.InlineBytes, Max: x.Output.MaxBytes}
	cfg.ProcessEnvAllow = x.EnvAllow
	cfg.Sandbox.UID, cfg.Sandbox.GID = x.SandboxUID, x.SandboxGID
	cfg.Redact = output.RedactorConfig{NoTokenShapes: x.NoTokenShapes}
	for _, name := range x.SecretEnv {
		if v := os.Getenv(name); v != "" {
			cfg.Redact.Secrets = append(cfg.Redact.Secrets, v)
		}
	}
	for _, p := range x.RedactPatterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return fmt.Errorf("execution: redact pattern %q: %w", p, err)
		}
		cfg.Redact.Patterns = append(cfg.Redact.Patterns, re)
	}
	for _, h := range f.Hooks {
		cfg.Hooks = append(cfg.Hooks, hook.Config{
			Name: h.Name, Point: hook.Point(h.Point), Matcher: h.Matcher, Command: h.Command, URL: h.URL,
			Headers: h.Headers, Env: h.Env, Timeout: h.Timeout, FailMode: hook.FailMode(h.FailMode),
		})
	}
	return nil
}

// modelKeys returns the API keys of the configured models, from the file
// or their environment variables: the redactor removes them wherever they
// show up.
func modelKeys(f *config.File) []string {
	var keys []string
	add := func(m *config.Model) {
		if key, _ := APIKey(m); key != "" {
			keys = append(keys, key)
		}
	}
	for _, key := range sortedKeys(f.Models) {
		add(f.Models[key])
	}
	for _, name := range f.AgentNames() {
		for _, m := range f.Agents[name].Models {
			add(m)
		}
	}
	return keys
}

// sandboxProfile is the profile an agent's sandbox section describes,
// named by its mode (and "+network" when it widens the mode's network).
func sandboxProfile(s config.Sandbox) *sandbox.Profile {
	p, _ := sandbox.Builtin(s.Mode)
	if p.Mode == "" {
		p, _ = sandbox.Builtin(string(sandbox.WorkspaceWrite))
	}
	if s.Network != "" && sandbox.Network(s.Network) != p.Network {
		p.Network = sandbox.Network(s.Network)
		if p.Network == sandbox.NetworkFull {
			p.Name += "+network"
		} else {
			p.Name += "-network"
		}
	}
	p.ReadRoots, p.WriteRoots = s.ReadRoots, s.WriteRoots
	lim := &p.Limits
	if s.Processes != 0 {
		lim.Processes = s.Processes
	}
	if s.MemoryBytes != 0 {
		lim.MemoryBytes = s.MemoryBytes
	}
	if s.FileBytes != 0 {
		lim.FileBytes = s.FileBytes
	}
	if s.CPUSeconds != 0 {
		lim.CPUSeconds = s.CPUSeconds
	}
	if s.TmpBytes != 0 {
		lim.TmpBytes = s.TmpBytes
	}
	if s.WriteBytes != 0 {
		lim.WriteBytes = s.WriteBytes
	}
	return &p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// candidate builds the routing candidate a model of the file describes.
// A model whose API key is missing is still a candidate, marked
// unavailable, so that routing can say why it was set aside.
func candidate(m *config.Model) (*model.Candidate, error) {
	caps := make([]model.Capability, len(m.Capabilities))
	for i, k := range m.Capabilities {
		caps[i] = model.Capability(k)
	}
	maxOut := m.MaxOutputTokens
	if maxOut == 0 && m.Provider == config.ProviderAnthropic {
		// The adapter sends this when none is set; estimates should assume
		// the same.
		maxOut = anthropic.DefaultMaxOutputTokens
	}
	c := &model.Candidate{
		Name:            m.Key,
		Price:           model.Price{InputPerMTok: m.Price.Input, CachedInputPerMTok: m.Price.CachedInput, OutputPerMTok: m.Price.Output},
		ContextWindow:   m.ContextWindow,
		MaxOutputTokens: maxOut,
		Capabilities:    caps,
		TypicalLatency:  m.TypicalLatency,
	}
	p, unavailable, err := provider(m)
	if err != nil {
		return nil, err
	}
	c.Provider, c.Unavailable = p, unavailable
	return c, nil
}

// workflowsFromFile maps the workflows section.
func workflowsFromFile(f *config.File) map[string]*agentrt.Workflow {
	if len(f.Workflows) == 0 {
		return nil
	}
	out := make(map[string]*agentrt.Workflow, len(f.Workflows))
	for name, w := range f.Workflows {
		wf := &agentrt.Workflow{InputSchema: w.InputSchema}
		for _, s := range w.Steps {
			wf.Steps = append(wf.Steps, agentrt.WorkflowStep{ID: s.ID, Agent: s.Agent, Input: s.Input, Needs: s.Needs,
				Join: s.Join, N: s.N, When: s.When, Wait: s.Wait, Until: s.Until, Human: s.Human})
		}
		out[name] = wf
	}
	return out
}
