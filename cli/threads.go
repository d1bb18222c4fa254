package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
)

// This file holds the thread commands: rollback and fork, which change
// what a thread's conversation is (never its facts), and compact and
// reset, which queue a maintenance turn on the thread.

func newThreadsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "threads",
		Short: "Roll a thread back, fork it, or queue a compaction or reset of its context",
		Long: `Commands on a thread's conversation, in the config's data directory or (with --server) on a
daemon:

  rollback  take the turns after a turn out of the conversation; their facts stay
  fork      copy the conversation up to a turn into a new session
  compact   queue a compaction of the thread's context
  reset     queue a context reset: a handoff, then a fresh thread

See docs/context.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newThreadRollbackCmd(), newThreadForkCmd(), newThreadMaintainCmd("compact"), newThreadMaintainCmd("reset"))
	return cmd
}

// threadFlags address a thread.
type threadFlags struct {
	jsonStoreFlags
	session string
	thread  string
}

func (f *threadFlags) registerThread(cmd *cobra.Command) {
	f.register(cmd, "print the result as JSON")
	cmd.Flags().StringVar(&f.session, "session", "", "the thread's session (checked when given; required with --server)")
	cmd.Flags().StringVar(&f.thread, "thread", "", "the thread (required)")
}

func (f *threadFlags) params() apitype.ThreadParams {
	return apitype.ThreadParams{SessionID: f.session, ThreadID: f.thread}
}

// threadErr is the exit error of a thread command that failed.
func threadErr(thread string, err error) error {
	var ee *exitError
	var inv *apitype.InvalidError
	switch {
	case errors.As(err, &ee):
		return ee
	case errors.As(err, &inv):
		return &exitError{code: ExitFailed, err: err}
	}
	return controlErr("thread", thread, err)
}

const threadExits = `

Exit codes: 0 done, 1 no such thread (in the session, when --session is given), a turn that
is not the thread's, a conflict, or the store could not be read; 2 usage or configuration
error.`

func newThreadRollbackCmd() *cobra.Command {
	var (
		f  threadFlags
		to string
	)
	cmd := &cobra.Command{
		Use:   "rollback --thread ID --to TURN_ID [--session ID] [--json]",
		Short: "Take a thread's turns after a turn out of its conversation",
		Long: `Roll a thread back to one of its turns: the turns after it are marked rolled back. Their
facts — events, tool calls, approvals, receipts, status — stay; their messages leave the
conversation the model sees from the next turn on. A thread with a turn that has not ended
(queued, running, parked, paused) refuses: end or interrupt it first. Recorded as
history.rollback.started and history.rollback.completed. With --json, print the result
({"rolledBackTurns", "throughSeq", "toolCalls", …}).` + threadExits,
		Example: `  agentrt threads rollback --config agentrt.yaml --thread thr_01M7Z6EQH1EH35X9M20WK8S11E --to turn_01M7Z6EQH1EH35X9M20WK8S11C`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.thread == "" || to == "" {
				return usageErr("--thread and --to are required")
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			res, err := b.RollbackThread(commandContext(cmd), &apitype.RollbackThreadParams{ThreadParams: f.params(), ToTurnID: to})
			if err != nil {
				return threadErr(f.thread, err)
			}
			out := cmd.OutOrStdout()
			if f.json {
				return writeJSONLine(out, res)
			}
			if len(res.RolledBackTurns) == 0 {
				fmt.Fprintf(out, "thread %s already ends at turn %s; nothing rolled back\n", res.ThreadID, res.ToTurnID)
				return nil
			}
			fmt.Fprintf(out, "thread %s rolled back to turn %s (message %d): %d turns out of the conversation (%s), %d tool calls kept as facts\n",
				res.ThreadID, res.ToTurnID, res.ThroughSeq, len(res.RolledBackTurns), strings.Join(res.RolledBackTurns, ", "), res.ToolCalls)
			return nil
		},
	}
	f.registerThread(cmd)
	cmd.Flags().StringVar(&to, "to", "", "the last turn that stays (required)")
	return cmd
}

func newThreadForkCmd() *cobra.Command {
	var (
		f             threadFlags
		from, newSess string
	)
	cmd := &cobra.Command{
		Use:   "fork --thread ID --from TURN_ID [--session ID] [--new-session ID] [--json]",
		Short: "Fork a thread from a turn into a new session",
		Long: `Fork a thread: a new session of the same agent and owner whose thread shares the
conversation up to and including the turn (rolled-back turns left out). The session's
standing approvals stay behind unless the policy says fork_grants: copy. Recorded as
session.created, thread.started and history.reconstructed in the new session. With --json,
print the result ({"sessionId", "threadId", "lineage", "messages", "grants"}).` + threadExits,
		Example: `  agentrt threads fork --config agentrt.yaml --thread thr_01M7Z6EQH1EH35X9M20WK8S11E --from turn_01M7Z6EQH1EH35X9M20WK8S11C`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.thread == "" || from == "" {
				return usageErr("--thread and --from are required")
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			res, err := b.ForkThread(commandContext(cmd), &apitype.ForkThreadParams{ThreadParams: f.params(), FromTurnID: from, NewSessionID: newSess})
			if err != nil {
				return threadErr(f.thread, err)
			}
			out := cmd.OutOrStdout()
			if f.json {
				return writeJSONLine(out, res)
			}
			fmt.Fprintf(out, "forked thread %s at turn %s into session %s, thread %s: %d messages, %d standing approvals copied\n",
				res.Lineage.ThreadID, res.Lineage.TurnID, res.SessionID, res.ThreadID, res.Messages, res.Grants)
			return nil
		},
	}
	f.registerThread(cmd)
	cmd.Flags().StringVar(&from, "from", "", "the last turn the fork shares (required)")
	cmd.Flags().StringVar(&newSess, "new-session", "", "the new session's id (default: generated)")
	return cmd
}

func newThreadMaintainCmd(verb string) *cobra.Command {
	var (
		f             threadFlags
		strategy, key string
	)
	cmd := &cobra.Command{
		Use:  verb + " --thread ID [--session ID] [--json]",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.thread == "" {
				return usageErr("--thread is required")
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			do := b.CompactThread
			if verb == "reset" {
				do = b.ResetThread
			}
			res, err := do(commandContext(cmd), &apitype.CompactThreadParams{ThreadParams: f.params(), Strategy: strategy, IdempotencyKey: key})
			if err != nil {
				return threadErr(f.thread, err)
			}
			out := cmd.OutOrStdout()
			if f.json {
				return writeJSONLine(out, res)
			}
			fmt.Fprintf(out, "%s of thread %s queued: turn %s, task %s\n", verb, res.ThreadID, res.TurnID, res.TaskID)
			return nil
		},
	}
	if verb == "compact" {
		cmd.Use = "compact --thread ID [--strategy S] [--session ID] [--idempotency-key K] [--json]"
		cmd.Short = "Queue a compaction of a thread's context"
		cmd.Long = `Queue a compaction of a thread's context: a maintenance turn (kind compact) that waits
behind the thread's open turns, like any turn, and summarizes or drops its older messages
when a worker runs it. --strategy is summarize, drop_tool_outputs, summarize_then_drop or
reset (then it queues a reset); without it the agent's context configuration decides. With
--json, print the turn's ids.` + threadExits
		cmd.Flags().StringVar(&strategy, "strategy", "", "summarize, drop_tool_outputs, summarize_then_drop or reset")
	} else {
		cmd.Short = "Queue a context reset of a thread"
		cmd.Long = `Queue a context reset of a thread: a maintenance turn (kind reset) that waits behind the
thread's open turns, then writes a structured handoff and continues on a fresh thread whose
first message is the handoff. With --json, print the turn's ids.` + threadExits
	}
	cmd.Example = "  agentrt threads " + verb + " --config agentrt.yaml --thread thr_01M7Z6EQH1EH35X9M20WK8S11E"
	f.registerThread(cmd)
	cmd.Flags().StringVar(&key, "idempotency-key", "", "make the request idempotent: asking again returns the same turn")
	return cmd
}
