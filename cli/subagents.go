package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds the subagent commands: a host's side of delegation
// (spawn_subagent, send_subagent_input, wait_subagents, close_subagent)
// and the reads of a session's subagents. See docs/subagents.md.

func newSubagentsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "subagents",
		Short: "List, show, spawn, give input to, wait for and close subagents",
		Long: `Commands on subagents: child agents working on threads of their own in a session, each
input a turn with its task. In the config's data directory or (with --server) on a daemon:

  list   a session's subagents
  show   one subagent: its parent, status, latest result, usage, pending approvals
  spawn  start a child agent with its first input
  input  give a subagent another input
  wait   wait until subagents' latest inputs have settled
  close  close a subagent, cancelling its open work

See docs/subagents.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSubagentsListCmd(), newSubagentsShowCmd(), newSubagentsSpawnCmd(), newSubagentsInputCmd(),
		newSubagentsWaitCmd(), newSubagentsCloseCmd())
	return cmd
}

const subagentExits = `

Exit codes: 0 done, 1 no such subagent or session, a closed subagent, a conflict, or the store
or server could not be read; 2 usage or configuration error.`

func newSubagentsListCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "list SESSION_ID [--json]",
		Short: "List a session's subagents, oldest first",
		Long: `List a session's subagents, oldest first: on a terminal a table (SUBAGENT, AGENT, STATUS,
DEPTH, INPUTS, PENDING, PARENT); otherwise, or with --json, JSON Lines, one subagent per line
as GET /v1/sessions/{sessionId}/subagents lists it.` + subagentExits,
		Example: `  agentrt subagents list ses_01M7Z6EQH1EH35X9M20WK8S11D --config agentrt.yaml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "SESSION_ID")
			if err != nil {
				return err
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			subs, err := b.ListSubagents(commandContext(cmd), runtype.Owner{}, id)
			if err != nil {
				return controlErr("session", id, err)
			}
			return newSubagentLister(cmd.OutOrStdout(), f.json).print(subs)
		},
	}
	f.register(cmd, "print JSON Lines even on a terminal")
	return cmd
}

func newSubagentLister(w io.Writer, asJSON bool) *lister[apitype.SubagentRead] {
	l := newLister(w, asJSON, []string{"SUBAGENT", "AGENT", "STATUS", "DEPTH", "INPUTS", "PENDING", "PARENT"}, func(s *apitype.SubagentRead) []string {
		return []string{s.SubagentID, subagentName(s), subagentStatus(s), strconv.Itoa(s.Depth), strconv.Itoa(s.Inputs),
			strconv.Itoa(s.PendingActions), orDash(s.ParentTaskID)}
	})
	l.none, l.paint[2] = "no subagents", paintStatusWord
	return l
}

// subagentName is the agent, and the name the parent calls it by when
// that differs.
func subagentName(s *apitype.SubagentRead) string {
	if s.Name == "" || s.Name == s.Agent {
		return s.Agent
	}
	return s.Agent + " (" + s.Name + ")"
}

// subagentStatus is its status, "closed" added once closed.
func subagentStatus(s *apitype.SubagentRead) string {
	if s.Closed {
		return string(s.Status) + " closed"
	}
	return string(s.Status)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newSubagentsShowCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "show SUBAGENT_ID [--json]",
		Short: "Show a subagent: its parent, status, latest result, usage and pending approvals",
		Long: `Show a subagent: its agent and thread, its parent (task, turn and tool call; none for one a
host spawned), depth, status, its latest input's turn and task, result or failure, usage and
pending approvals. With --json, print it as GET /v1/subagents/{subagentId} does.` + subagentExits,
		Example: `  agentrt subagents show sub_01M7Z6EQH1EH35X9M20WK8S11E --config agentrt.yaml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "SUBAGENT_ID")
			if err != nil {
				return err
			}
			return subagentCommand(cmd, &f, false, id, func(b backend) (*apitype.SubagentRead, error) {
				return b.GetSubagent(commandContext(cmd), &apitype.SubagentParams{SubagentID: id})
			})
		},
	}
	f.register(cmd, "print the subagent as JSON")
	return cmd
}

// subagentCommand runs do on the backend and prints the subagent it
// answers, as JSON or for people.
func subagentCommand(cmd *cobra.Command, f *jsonStoreFlags, work bool, id string, do func(backend) (*apitype.SubagentRead, error)) error {
	b, stop, err := f.backend(cmd, work)
	if err != nil {
		return err
	}
	defer stop()
	s, err := do(b)
	if err != nil {
		return controlErr("subagent", id, err)
	}
	out := cmd.OutOrStdout()
	if f.json {
		return writeIndented(out, s)
	}
	printSubagent(out, s)
	return nil
}

// printSubagent prints a subagent for people.
func printSubagent(w io.Writer, s *apitype.SubagentRead) {
	fmt.Fprintf(w, "subagent %s  agent %s  session %s  thread %s\n", s.SubagentID, subagentName(s), s.SessionID, s.ThreadID)
	fmt.Fprintf(w, "status     %s\n", subagentStatus(s))
	if s.ParentTaskID != "" {
		parent := "task " + s.ParentTaskID
		if s.ParentTurnID != "" {
			parent += "  turn " + s.ParentTurnID
		}
		if s.ParentToolCallID != "" {
			parent += "  call " + s.ParentToolCallID
		}
		fmt.Fprintf(w, "parent     %s\n", parent)
		fmt.Fprintf(w, "root       task %s  depth %d\n", s.RootTaskID, s.Depth)
	} else {
		fmt.Fprintf(w, "parent     none (spawned by a host)  depth %d\n", s.Depth)
	}
	if s.Workspace != "" {
		fmt.Fprintf(w, "workspace  %s\n", s.Workspace)
	}
	latest := plural(s.Inputs, "input")
	if s.TurnID != "" {
		latest += "; latest turn " + s.TurnID + "  task " + s.TaskID
	}
	fmt.Fprintf(w, "inputs     %s\n", latest)
	if s.Result != "" {
		fmt.Fprintf(w, "result     %s\n", oneLine(s.Result, 200))
	}
	if s.Failure != nil {
		fmt.Fprintf(w, "failure    %s: %s\n", s.Failure.Kind, oneLine(s.Failure.Message, 200))
	}
	fmt.Fprintf(w, "usage      %s\n", usageText(s.Usage))
	fmt.Fprintf(w, "pending    %s\n", plural(s.PendingActions, "approval"))
	var times []string
	if s.CreatedAt != nil {
		times = append(times, "created "+s.CreatedAt.UTC().Format(time.DateTime))
	}
	if s.ClosedAt != nil {
		times = append(times, "closed "+s.ClosedAt.UTC().Format(time.DateTime))
	}
	if len(times) > 0 {
		fmt.Fprintf(w, "times      %s UTC\n", strings.Join(times, "  "))
	}
}

// usageText is usage in a few words: tokens in and out, and the cost
// when there is one.
func usageText(u runtype.Usage) string {
	s := fmt.Sprintf("%d in / %d out tokens", u.InputTokens, u.OutputTokens)
	if u.CostUSD > 0 {
		s += " · " + usd(u.CostUSD)
	}
	return s
}

func newSubagentsSpawnCmd() *cobra.Command {
	var (
		f                                 jsonStoreFlags
		session, agent, name, parent, key string
	)
	cmd := &cobra.Command{
		Use:   "spawn --session ID --agent NAME [--name N] [--parent-task ID] [--idempotency-key K] [--json] INPUT",
		Short: "Start a child agent on a thread of its own in a session",
		Long: `Spawn a subagent (spawn_subagent): a child agent on a thread of its own in the session, with
INPUT as its first input. --parent-task makes it the child of a task of the session (the
delegation tree, depth and budgets follow it). The command prints the subagent and returns at
once; whichever agentrt process runs the data directory's work (a daemon, or --server's) runs
it. Follow it with agentrt subagents wait. With --json, print the subagent as the API answers
it.` + subagentExits,
		Example: `  agentrt subagents spawn --config agentrt.yaml --session ses_01M7Z6EQH1EH35X9M20WK8S11D --agent lookup "find order 1042"`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			input, err := oneID(cmd, args, "INPUT")
			if err != nil {
				return err
			}
			if session == "" || agent == "" {
				return usageErr("--session and --agent are required")
			}
			return subagentCommand(cmd, &f, false, session, func(b backend) (*apitype.SubagentRead, error) {
				return b.SpawnSubagent(commandContext(cmd), &apitype.SpawnSubagentParams{
					SessionID: session, Agent: agent, Name: name, Input: input, ParentTaskID: parent, IdempotencyKey: key,
				})
			})
		},
	}
	f.register(cmd, "print the subagent as JSON")
	cmd.Flags().StringVar(&session, "session", "", "the session to spawn it in (required)")
	cmd.Flags().StringVar(&agent, "agent", "", "the child agent (required)")
	cmd.Flags().StringVar(&name, "name", "", "what to call it (default: the agent's name)")
	cmd.Flags().StringVar(&parent, "parent-task", "", "make it the child of this task of the session")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "make the spawn idempotent: asking again returns the same subagent")
	return cmd
}

func newSubagentsInputCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "input SUBAGENT_ID TEXT [--json]",
		Short: "Give a subagent another input",
		Long: `Give a subagent another input (send_subagent_input): a turn on its thread, queued behind the
one in progress, if any. A closed subagent refuses. With --json, print the subagent.` + subagentExits,
		Example: `  agentrt subagents input sub_01M7Z6EQH1EH35X9M20WK8S11E "and order 1043" --config agentrt.yaml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErr("%s takes a SUBAGENT_ID and a TEXT, got %d arguments", cmd.CommandPath(), len(args))
			}
			id, text := args[0], args[1]
			if text == "" {
				return usageErr("TEXT is empty")
			}
			return subagentCommand(cmd, &f, false, id, func(b backend) (*apitype.SubagentRead, error) {
				return b.SendSubagentInput(commandContext(cmd), &apitype.SendSubagentInputParams{SubagentID: id, Input: text})
			})
		},
	}
	f.register(cmd, "print the subagent as JSON")
	return cmd
}

func newSubagentsCloseCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "close SUBAGENT_ID [--json]",
		Short: "Close a subagent, cancelling its open work",
		Long: `Close a subagent (close_subagent): its open work is cancelled and it takes no more input.
Closing a closed subagent changes nothing. With --json, print the subagent.` + subagentExits,
		Example: `  agentrt subagents close sub_01M7Z6EQH1EH35X9M20WK8S11E --config agentrt.yaml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "SUBAGENT_ID")
			if err != nil {
				return err
			}
			return subagentCommand(cmd, &f, false, id, func(b backend) (*apitype.SubagentRead, error) {
				return b.CloseSubagent(commandContext(cmd), &apitype.SubagentParams{SubagentID: id})
			})
		},
	}
	f.register(cmd, "print the subagent as JSON")
	return cmd
}

func newSubagentsWaitCmd() *cobra.Command {
	var (
		f       jsonStoreFlags
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "wait SUBAGENT_ID... [--timeout D] [--json]",
		Short: "Wait until subagents' latest inputs have settled",
		Long: `Wait until each named subagent's latest input has settled (its task ended), or --timeout
passes (default: no limit), then print each subagent as the wait left it: a table on a
terminal, otherwise, or with --json, JSON Lines, one subagent per line. On a data directory
this process runs the work while it waits (as a daemon on the same directory may too).

Exit codes: 0 every subagent's latest input completed; 1 one failed or was cancelled, the
wait timed out (the output says which), no such subagent, or the store or server could not
be read; 2 usage or configuration error.`,
		Example: `  agentrt subagents wait sub_01M7Z6EQH1EH35X9M20WK8S11E sub_01M7Z6EQH1EH35X9M20WK8S11F --timeout 5m --config agentrt.yaml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return usageErr("%s takes at least one SUBAGENT_ID", cmd.CommandPath())
			case len(args) > apitype.MaxWaitSubagents:
				return usageErr("%s takes at most %d SUBAGENT_IDs, got %d", cmd.CommandPath(), apitype.MaxWaitSubagents, len(args))
			case timeout < 0:
				return usageErr("--timeout %s is negative", timeout)
			}
			b, stop, err := f.backend(cmd, true)
			if err != nil {
				return err
			}
			defer stop()
			res, err := b.WaitSubagents(commandContext(cmd), &apitype.WaitSubagentsParams{SubagentIDs: args, Timeout: timeout})
			if err != nil {
				if errors.Is(err, apitype.ErrNotFound) {
					return &exitError{code: ExitFailed, err: err} // it names the subagent
				}
				return controlErr("subagent", "", err)
			}
			if err := newSubagentLister(cmd.OutOrStdout(), f.json).print(res.Subagents); err != nil {
				return err
			}
			return waitOutcome(res, timeout)
		},
	}
	f.register(cmd, "print JSON Lines even on a terminal")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "stop waiting after this long (0: no limit)")
	return cmd
}

// waitOutcome is the exit error of a wait whose subagents did not all
// complete.
func waitOutcome(res *apitype.WaitSubagentsResult, timeout time.Duration) error {
	if res.TimedOut {
		return &exitError{code: ExitFailed, err: fmt.Errorf("timed out after %s: not every subagent settled", timeout)}
	}
	var bad []string
	for _, s := range res.Subagents {
		if s.Status != runtype.StatusCompleted {
			bad = append(bad, s.SubagentID+" "+string(s.Status))
		}
	}
	if len(bad) > 0 {
		return &exitError{code: ExitFailed, err: fmt.Errorf("not every subagent completed: %s", strings.Join(bad, ", "))}
	}
	return nil
}
