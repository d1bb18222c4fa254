package apitype_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool/process"
)

// TestSentinels checks that every error the layers below the runtime
// return, and every typed error of the contract, matches the contract's
// sentinel with errors.Is: the store's and the process manager's
// sentinels are the contract's own values, not copies.
func TestSentinels(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		err    error
		target error
	}{
		{"store.ErrNotFound", fmt.Errorf("turn x: %w", store.ErrNotFound), apitype.ErrNotFound},
		{"store.ErrConflict", fmt.Errorf("writing: %w", store.ErrConflict), apitype.ErrConflict},
		{"store.ErrLeaseLost", store.ErrLeaseLost, apitype.ErrConflict},
		{"process.ErrUnknownProcess", fmt.Errorf("%w: proc_1", process.ErrUnknownProcess), apitype.ErrUnknownProcess},
		{"ErrBusy", apitype.ErrBusy, apitype.ErrConflict},
		{"ErrNoPolicy", apitype.ErrNoPolicy, apitype.ErrConflict},
		{"ErrTokenRevoked", apitype.ErrTokenRevoked, apitype.ErrUnauthorized},
		{"SelfApprovalError", &apitype.SelfApprovalError{ActionID: "act_1"}, apitype.ErrForbidden},
		{"OverloadedError", fmt.Errorf("submitting: %w", &apitype.OverloadedError{Reason: "full", RetryAfter: time.Second}), apitype.ErrOverloaded},
	} {
		if !errors.Is(tt.err, tt.target) {
			t.Errorf("errors.Is(%s, %v) = false, want true", tt.name, tt.target)
		}
	}
	// Distinct conditions stay distinct.
	for _, tt := range []struct{ err, target error }{
		{apitype.ErrNotFound, apitype.ErrConflict},
		{apitype.ErrBusy, apitype.ErrNoPolicy},
		{apitype.ErrForbidden, apitype.ErrUnauthorized},
		{apitype.ErrStopped, apitype.ErrOverloaded},
	} {
		if errors.Is(tt.err, tt.target) {
			t.Errorf("errors.Is(%v, %v) = true, want false", tt.err, tt.target)
		}
	}
	var inv *apitype.InvalidError
	if err := fmt.Errorf("submitting: %w", &apitype.InvalidError{Field: "input", Reason: "empty"}); !errors.As(err, &inv) || err.Error() != "submitting: invalid input: empty" {
		t.Errorf("InvalidError: %v, As %v", err, inv)
	}
}

// TestMultitaskValid checks the multitask policies a submission may name.
func TestMultitaskValid(t *testing.T) {
	t.Parallel()
	for _, m := range []apitype.Multitask{"", apitype.MultitaskEnqueue, apitype.MultitaskReject, apitype.MultitaskInterrupt, apitype.MultitaskRollback} {
		if !m.Valid() {
			t.Errorf("Multitask(%q).Valid() = false", m)
		}
	}
	if apitype.Multitask("later").Valid() {
		t.Error(`Multitask("later").Valid() = true`)
	}
}
