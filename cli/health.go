package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/client"
)

func newHealthCmd() *cobra.Command {
	var flags storeFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "health [--config FILE] [--data-dir D | --server URL] [--json]",
		Short: "Check the store, queue, approvals and stuck runs of a data directory",
		Long: `Report the health of a daemon (--server) or of a data directory, opened
without workers (a running daemon is left alone): whether the store answers and how fast, its schema version,
the work waiting for a worker, the approvals waiting for a person, and the runs
that made no progress for health.stuck_after. One line says the status (ok,
degraded, unhealthy), then one line per check; --json prints the projection
GET /v1/health serves.

Exit codes: 0 ok or degraded (a check warns), 1 unhealthy (a check fails, or
the data directory cannot be opened), 2 the configuration does not load.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := flags.health(cmd)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(h); err != nil {
					return err
				}
			} else {
				printHealth(out, h)
			}
			if h.Status == apitype.HealthUnhealthy || h.Status == apitype.HealthStopped {
				return &exitError{code: ExitFailed, err: errors.New("")}
			}
			return nil
		},
	}
	flags.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the health projection as JSON")
	return cmd
}

// health reads the health projection of the daemon (--server) or of the
// data directory, opened read-only. A data directory that cannot be opened,
// or a daemon that cannot be reached, is unhealthy: its store does not
// answer.
func (f *storeFlags) health(cmd *cobra.Command) (*apitype.Health, error) {
	b, stop, err := f.backend(cmd, false)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.code == ExitUsage {
			return nil, err
		}
		return unreachable(err), nil
	}
	defer stop()
	h, err := b.Health(commandContext(cmd))
	if err != nil {
		var ce *client.ConnectError
		if errors.As(err, &ce) {
			return unreachable(err), nil
		}
		return nil, runtimeErr(err)
	}
	return h, nil
}

// unreachable is the health of a data directory that could not be
// opened.
func unreachable(err error) *apitype.Health {
	reason := "the store did not open: " + err.Error()
	return &apitype.Health{
		Status: apitype.HealthUnhealthy, Version: agentrt.Version(), CheckedAt: time.Now().UTC(),
		Store:     apitype.StoreInfo{Error: err.Error()},
		StuckRuns: []apitype.StuckRun{},
		Checks:    []apitype.HealthCheck{{Name: "store", Status: apitype.CheckFail, Reason: reason}},
		Problems:  []string{"store: " + reason},
	}
}

// printHealth prints the status, then one line per check and one per
// stuck run.
func printHealth(w io.Writer, h *apitype.Health) {
	fmt.Fprintf(w, "%s %s\n", h.Status, healthContext(h))
	for _, c := range h.Checks {
		mark := map[string]string{apitype.CheckOK: "✔", apitype.CheckWarn: "!", apitype.CheckFail: "✘"}[c.Status]
		fmt.Fprintf(w, "  %s %-10s %s\n", mark, c.Name, checkLine(h, c))
	}
	for _, s := range h.StuckRuns {
		lease := ""
		switch {
		case s.LeaseHeld:
			lease = ", held by " + s.LeaseOwner + " (lease renewed)"
		case s.LeaseOwner != "":
			lease = ", held by " + s.LeaseOwner
		}
		fmt.Fprintf(w, "      %s (turn %s) %s, last progress %s%s\n", s.TaskID, s.TurnID, s.Status, ago(s.IdleMs), lease)
	}
	if n := h.StuckTotal - len(h.StuckRuns); n > 0 {
		fmt.Fprintf(w, "      and %d more\n", n)
	}
	if sharedStore(h.Store.Driver) {
		fmt.Fprintf(w, "  store: %s %s\n", h.Store.Driver, h.Store.Location)
	}
	for _, n := range h.Nodes {
		beat := ""
		if n.LastHeartbeatAt != nil {
			beat = ", heartbeat " + ago(h.CheckedAt.Sub(*n.LastHeartbeatAt).Milliseconds())
		}
		fmt.Fprintf(w, "  node %s: %s, %d run out%s\n", n.Worker, plural(n.Leases, "lease"), n.ExpiredLeases, beat)
	}
}

// healthContext says which runtime and store the status is about.
func healthContext(h *apitype.Health) string {
	if h.RuntimeID == "" {
		return "(agentrt " + h.Version + ")"
	}
	return fmt.Sprintf("(runtime %s, agentrt %s)", h.RuntimeID, h.Version)
}

// checkLine is a check's line: for the queue and the approvals a
// summary with relative ages, for the others the check's reason.
func checkLine(h *apitype.Health, c apitype.HealthCheck) string {
	var line string
	var limit int64
	switch {
	case c.Name == "queue" && h.Queue.OldestTaskID != "":
		line = fmt.Sprintf("%d waiting, the oldest (%s) due %s", h.Queue.Depth, h.Queue.OldestTaskID, ago(h.Queue.OldestQueuedAgeMs))
		limit = h.Thresholds.QueueAgeWarnMs
	case c.Name == "approvals" && h.Approvals.OldestActionID != "":
		line = fmt.Sprintf("%d pending, the oldest (%s) asked %s", h.Approvals.Pending, h.Approvals.OldestActionID, ago(h.Approvals.OldestAgeMs))
		limit = h.Thresholds.ApprovalAgeWarnMs
	default:
		return c.Reason
	}
	if c.Status != apitype.CheckOK {
		line += ", longer than " + (time.Duration(limit) * time.Millisecond).String()
	}
	return line
}

// ago says how long ago something was, to a glance's precision: "just
// now", "45s ago", "3m ago", "2h ago", "4d ago".
func ago(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}

// sharedStore reports whether a store of driver is one several nodes
// share (PostgreSQL), whose location the text outputs name; the embedded
// SQLite file and memory go without saying.
func sharedStore(driver string) bool {
	return driver != "sqlite" && driver != "memory" && driver != ""
}
