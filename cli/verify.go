package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/runtype"
)

type verifyFlags struct {
	storeFlags
	session string
	json    bool
}

func newVerifyCmd() *cobra.Command {
	var f verifyFlags
	cmd := &cobra.Command{
		Use:   "verify --session ID [--config FILE] [--json]",
		Short: "Check a session's evidence receipts",
		Long: `Check the hash chain of a session's evidence receipts: every receipt's hash covers its body
and its predecessor's hash, the sequence has no gaps, and every sealed event (policy
decisions, approvals, tool results) still reads back as its receipt recorded it.

Exit codes: 0 the chain is sound, 1 a receipt is bad (the first one found is named) or the
session does not exist, 2 usage or configuration error.`,
		Example: `  agentrt verify --config agentrt.yaml --session ses_01M7Z6E98T14HZ9P6EVS3DAV33`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.session == "" {
				return usageErr("--session is required")
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			res, err := b.VerifySession(commandContext(cmd), runtype.Owner{}, f.session)
			switch {
			case errors.Is(err, agentrt.ErrNotFound):
				return &exitError{code: ExitFailed, err: fmt.Errorf("no session %s", f.session)}
			case err != nil:
				return runtimeErr(err)
			}
			out := cmd.OutOrStdout()
			if f.json {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(out, verifyLine(res))
			}
			if !res.OK {
				return &exitError{code: ExitFailed, err: errors.New("")}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.session, "session", "", "the session to verify (required)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the result as JSON")
	return cmd
}

// verifyLine says what VerifySession found, in one line.
func verifyLine(res *agentrt.VerifyResult) string {
	switch {
	case res.OK && res.Receipts == 0:
		return fmt.Sprintf("session %s: no receipts", res.SessionID)
	case res.OK:
		return fmt.Sprintf("session %s: %d receipts, chain ok (head %s)", res.SessionID, res.Receipts, res.Head)
	case res.Seq == 0:
		return fmt.Sprintf("session %s: event %s: %s", res.SessionID, res.EventID, res.Problem)
	}
	return fmt.Sprintf("session %s: receipt %d (event %s): %s", res.SessionID, res.Seq, res.EventID, res.Problem)
}
