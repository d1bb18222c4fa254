package apitype

import "github.com/agentrt/agentrt/runtype"

// SetLimitParams is the input of SetLimit.
type SetLimitParams struct {
	// Owner.TenantID is the tenant whose budget changes (default
	// DefaultTenant); Owner.PrincipalID is who changes it, recorded with
	// the limit and in limit.changed.
	runtype.Owner
	// Scope is runtype.LimitSession (SessionID required) or
	// runtype.LimitTenant.
	Scope     runtype.LimitScope
	SessionID string
	// MaxTokens and MaxCostUSD are the new maxima; zero removes that
	// kind of limit. They replace the configured default for the scope.
	MaxTokens  int64
	MaxCostUSD float64
}

// SetLimitResult is the budget after a SetLimit.
type SetLimitResult struct {
	Budget BudgetRead `json:"budget"`
	// Resumed lists the turns that waited for this budget and were
	// resumed (each checks its budgets again before its next model call).
	Resumed []string `json:"resumed"`
}
