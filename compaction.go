package agentrt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/agentrt/agentrt/policy"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// This file holds the runtime's side of context compaction: the policy
// snapshot a compaction names, so that an auditor can show the policy in
// force did not change with the context (docs/context.md).

// policySnapshot is what a compaction records of the policy in force for
// a session.
type policySnapshot struct {
	// Evaluator is "kernel" for the policy section of the configuration,
	// "default" without one, or the Go type of a host's evaluator.
	Evaluator string `json:"evaluator"`
	// RulesSHA256 is the hex SHA-256 of the kernel's rules as JSON, in
	// rank order; Rules name them with where they came from.
	RulesSHA256 string   `json:"rulesSha256,omitempty"`
	Rules       []string `json:"rules,omitempty"`
	// SessionMode is the session's permission mode ("" for the agent's or
	// the policy's).
	SessionMode string `json:"sessionMode"`
	// Grants are the standing approvals that apply to the session.
	Grants []snapshotGrant `json:"grants"`
}

type snapshotGrant struct {
	ID      string `json:"id"`
	Tool    string `json:"tool"`
	Agent   string `json:"agent"`
	Session bool   `json:"session"` // for this session only (else always)
}

// policySnapshot describes the policy in force for a session as JSON
// (loop.Config.PolicySnapshot). It reads the session's mode and grants
// from the store, so any runtime on the store describes them alike.
func (rt *Runtime) policySnapshot(ctx context.Context, owner runtype.Owner, sessionID string) ([]byte, error) {
	snap := policySnapshot{Evaluator: "default", Grants: []snapshotGrant{}}
	switch p := rt.cfg.Policy.(type) {
	case policy.DefaultEvaluator:
	case *policy.Kernel:
		rules := p.Rules()
		data, err := json.Marshal(rules)
		if err != nil {
			return nil, fmt.Errorf("encoding the policy's rules: %w", err)
		}
		sum := sha256.Sum256(data)
		snap.Evaluator, snap.RulesSHA256 = "kernel", hex.EncodeToString(sum[:])
		for _, r := range rules {
			snap.Rules = append(snap.Rules, r.ID+" ("+r.Source+")")
		}
	default:
		snap.Evaluator = reflect.TypeOf(p).String()
	}
	sess, err := rt.store.SessionGet(ctx, &store.SessionGetParams{TenantID: owner.TenantID, ID: sessionID})
	if err != nil {
		return nil, fmt.Errorf("reading the session's mode: %w", err)
	}
	snap.SessionMode = sess.PolicyMode
	grants, err := rt.store.GrantList(ctx, &store.GrantListParams{TenantID: owner.TenantID, SessionID: sessionID})
	if err != nil {
		return nil, fmt.Errorf("reading the session's standing approvals: %w", err)
	}
	for _, g := range grants {
		snap.Grants = append(snap.Grants, snapshotGrant{ID: g.ID, Tool: g.ToolName, Agent: g.Agent, Session: g.SessionID != ""})
	}
	return json.Marshal(snap)
}
