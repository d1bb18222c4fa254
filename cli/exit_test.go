package cli

import (
	"errors"
	"testing"

	"github.com/agentrt/agentrt/runtype"
)

// TestExitFor maps every turn status to its exit code. The end-to-end
// tests reach some of them (a policy ask parks a run with code 3: see
// TestApprovalsApprove).
func TestExitFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status runtype.TaskStatus
		want   int
	}{
		{runtype.StatusCompleted, ExitOK},
		{runtype.StatusWaitingPermission, ExitParked},
		{runtype.StatusWaitingInput, ExitParked},
		{runtype.StatusFailed, ExitFailed},
		{runtype.StatusCancelled, ExitFailed},
		{runtype.StatusTimedOut, ExitFailed},
		{runtype.StatusLost, ExitFailed},
		{runtype.StatusBlocked, ExitFailed},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			t.Parallel()
			err := exitFor(&runtype.Turn{Status: tt.status})
			got := ExitOK
			if err != nil {
				var ee *exitError
				if !errors.As(err, &ee) {
					t.Fatalf("exitFor(%s) = %v, want an *exitError", tt.status, err)
				}
				got = ee.code
			}
			if got != tt.want {
				t.Errorf("exit code for %s = %d, want %d", tt.status, got, tt.want)
			}
		})
	}
}
