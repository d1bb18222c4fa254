package configure

import (
	"fmt"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/policy/checker"
)

// policyFromFile builds the policy kernel, principals and output checks
// the policy section of an agentrt.yaml describes. Rule files are parsed
// here; their errors carry file:line:column.
func policyFromFile(f *config.File, cfg *agentrt.Config) error {
	p := f.Policy
	if p == nil {
		return nil
	}
	rules, err := policy.LoadRuleFiles(p.RuleFiles...)
	if err != nil {
		return err
	}
	kc := policy.KernelConfig{
		Rules:       rules,
		DefaultMode: policy.Mode(p.Mode),
		AgentModes:  make(map[string]policy.Mode),
		AgentScopes: make(map[string][]string),
		Principals:  make(map[string]policy.Principal, len(p.Principals)),
		Checkers:    make(map[string]policy.Checker),
		AutoChecker: p.AutoChecker,
		Opaque:      policy.Outcome(p.Opaque),
	}
	for name, a := range f.Agents {
		if a.Mode != "" {
			kc.AgentModes[name] = policy.Mode(a.Mode)
		}
		if a.ScopesRestricted {
			kc.AgentScopes[name] = a.Scopes
		}
	}
	for name, pr := range p.Principals {
		kc.Principals[name] = policy.Principal{Roles: pr.Roles, Scopes: pr.Scopes, Restricted: pr.Restricted}
	}
	for _, name := range checker.Names() {
		c, _ := checker.Builtin(name)
		kc.Checkers[name] = c
	}
	for name, c := range p.Checkers {
		kc.Checkers[name] = checker.NewCommand(name, c.Command, c.Timeout, envList(c.Env))
	}
	for _, c := range p.InputChecks {
		kc.InputCheckers = append(kc.InputCheckers, policy.InputCheck{Name: c.Checker, Action: c.Action})
	}
	k, err := policy.NewKernel(kc)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	cfg.Policy, cfg.Principals, cfg.ActionTTL = k, kc.Principals, p.ApprovalTimeout
	cfg.ForbidSelfApproval = p.SelfApproval == config.SelfApprovalForbid
	cfg.ForkGrants = p.ForkGrants == config.ForkGrantsCopy
	for _, c := range p.OutputChecks {
		cfg.OutputChecks = append(cfg.OutputChecks, agentrt.OutputCheck{Name: c.Checker, Checker: kc.Checkers[c.Checker], Action: c.Action})
	}
	return nil
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range sortedKeys(env) {
		out = append(out, k+"="+env[k])
	}
	return out
}
