package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds the job commands: create a job from a JSON Lines file
// of items, show it, list its items, retry failed ones, cancel it. See
// docs/subagents.md.

func newJobsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "Create, show, list the items of, retry and cancel jobs",
		Long: `Commands on jobs: a job fans a list of items out to an agent, each item a task of its own,
at most --concurrency at a time. In the config's data directory or (with --server) on a
daemon:

  create  create a job from a JSON Lines file of items
  show    a job and its progress
  items   a job's items, with status, attempts, result and last error
  retry   give failed items another attempt
  cancel  cancel a job and its open items

See docs/subagents.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newJobsCreateCmd(), newJobsShowCmd(), newJobsItemsCmd(), newJobsRetryCmd(), newJobsCancelCmd())
	return cmd
}

const jobExits = `

Exit codes: 0 done, 1 no such job or session, a conflict, or the store or server could not be
read; 2 usage or configuration error (a bad items file, a refused value).`

func newJobsCreateCmd() *cobra.Command {
	var (
		f                                          jsonStoreFlags
		session, agent, items, instruction, parent string
		key                                        string
		concurrency, maxAttempts                   int
	)
	cmd := &cobra.Command{
		Use:   "create --session ID --agent NAME --items FILE.jsonl|- [--instruction T] [--concurrency N] [--max-attempts N] [--json]",
		Short: "Create a job: one task of an agent per item of a JSON Lines file",
		Long: `Create a job (create_job) in a session: each line of --items (a file, or - for standard
input) is one item, a JSON value; blank lines are skipped. Each item runs as a task of
--agent, --instruction before its input, at most --concurrency at a time (default 4, at most
64), each with at most --max-attempts automatic attempts (default 1, at most 10: a failed
item waits for agentrt jobs retry). A job holds at most 10000 items of at most 64 KiB each;
a line that is no JSON is a usage error naming the file and line. The command prints the
job and returns; whichever agentrt process runs the data directory's work runs it. With
--json, print the job as the API answers it.` + jobExits,
		Example: `  agentrt jobs create --config agentrt.yaml --session ses_01M7Z6EQH1EH35X9M20WK8S11D --agent triage --items tickets.jsonl
  jq -c '.[]' tickets.json | agentrt jobs create --server http://127.0.0.1:7420 --session ses_01M7Z6EQH1EH35X9M20WK8S11D --agent triage --items -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if session == "" || agent == "" || items == "" {
				return usageErr("--session, --agent and --items are required")
			}
			list, err := readItems(cmd, items)
			if err != nil {
				return err
			}
			return jobCommand(cmd, &f, session, func(b backend) (*apitype.JobRead, error) {
				return b.CreateJob(commandContext(cmd), &apitype.CreateJobParams{
					SessionID: session, Agent: agent, Instruction: instruction, Items: list,
					Concurrency: concurrency, MaxAttempts: maxAttempts, ParentTaskID: parent, IdempotencyKey: key,
				})
			})
		},
	}
	f.register(cmd, "print the job as JSON")
	cmd.Flags().StringVar(&session, "session", "", "the session to run it in (required)")
	cmd.Flags().StringVar(&agent, "agent", "", "the agent that works on each item (required)")
	cmd.Flags().StringVar(&items, "items", "", "a JSON Lines file of the items, one JSON value a line; - reads standard input (required)")
	cmd.Flags().StringVar(&instruction, "instruction", "", "what precedes each item's input")
	cmd.Flags().IntVar(&concurrency, "concurrency", 0, "at most this many items at a time (0: the default, 4; at most 64)")
	cmd.Flags().IntVar(&maxAttempts, "max-attempts", 0, "automatic attempts of each item (0: the default, 1)")
	cmd.Flags().StringVar(&parent, "parent-task", "", "make the job the child of this task of the session")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "make the request idempotent: asking again returns the same job")
	return cmd
}

// readItems reads the items of a JSON Lines file (- : standard input),
// refusing what create_job would: no items, too many, a line that is no
// JSON value or is too big.
func readItems(cmd *cobra.Command, name string) ([]json.RawMessage, error) {
	var r io.Reader = cmd.InOrStdin()
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, usageErr("reading --items: %v", err)
		}
		defer f.Close()
		r = f
	} else {
		name = "standard input"
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), apitype.MaxJobItemBytes+1)
	var items []json.RawMessage
	n := 0 // the line read last
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		switch {
		case len(line) == 0:
			continue
		case !json.Valid(line):
			return nil, usageErr("%s:%d: not a JSON value", name, n)
		case len(line) > apitype.MaxJobItemBytes:
			return nil, usageErr("%s:%d: the item is %d bytes; an item may be at most %d", name, n, len(line), apitype.MaxJobItemBytes)
		case len(items) == apitype.MaxJobItems:
			return nil, usageErr("%s:%d: more than %d items; a job holds at most %d", name, n, apitype.MaxJobItems, apitype.MaxJobItems)
		}
		items = append(items, json.RawMessage(bytes.Clone(line)))
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, usageErr("%s:%d: the item is more than %d bytes; an item may be at most %d", name, n+1, apitype.MaxJobItemBytes, apitype.MaxJobItemBytes)
		}
		return nil, usageErr("reading %s: %v", name, err)
	}
	if len(items) == 0 {
		return nil, usageErr("%s holds no items; a job needs at least one (one JSON value a line)", name)
	}
	return items, nil
}

// jobCommand runs do on the backend and prints the job it answers, as
// JSON or for people.
func jobCommand(cmd *cobra.Command, f *jsonStoreFlags, id string, do func(backend) (*apitype.JobRead, error)) error {
	b, stop, err := f.backend(cmd, false)
	if err != nil {
		return err
	}
	defer stop()
	j, err := do(b)
	if err != nil {
		return controlErr("job", id, err)
	}
	out := cmd.OutOrStdout()
	if f.json {
		return writeIndented(out, j)
	}
	printJob(out, j)
	return nil
}

// printJob prints a job for people.
func printJob(w io.Writer, j *apitype.JobRead) {
	fmt.Fprintf(w, "job %s  agent %s  session %s  task %s\n", j.JobID, j.Agent, j.SessionID, j.TaskID)
	fmt.Fprintf(w, "status     %s\n", j.Status)
	fmt.Fprintf(w, "items      %d: %d completed, %d failed, %d cancelled, %d running, %d pending\n",
		j.Items, j.Completed, j.Failed, j.Cancelled, j.Running, j.Pending)
	fmt.Fprintf(w, "limits     concurrency %d, %s an item\n", j.Concurrency, plural(j.MaxAttempts, "attempt"))
	if j.ParentTaskID != "" {
		fmt.Fprintf(w, "parent     task %s\n", j.ParentTaskID)
	}
	if j.Instruction != "" {
		fmt.Fprintf(w, "instruct   %s\n", oneLine(j.Instruction, 200))
	}
}

func newJobsShowCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "show JOB_ID [--json]",
		Short: "Show a job and its progress",
		Long: `Show a job (get_job): its agent, session and dispatcher task, its status, and how many of its
items completed, failed, were cancelled, run and wait. With --json, print it as
GET /v1/jobs/{jobId} does.` + jobExits,
		Example: `  agentrt jobs show job_01M7Z6EQH1EH35X9M20WK8S11E --config agentrt.yaml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "JOB_ID")
			if err != nil {
				return err
			}
			return jobCommand(cmd, &f, id, func(b backend) (*apitype.JobRead, error) {
				return b.GetJob(commandContext(cmd), &apitype.JobParams{JobID: id})
			})
		},
	}
	f.register(cmd, "print the job as JSON")
	return cmd
}

func newJobsCancelCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "cancel JOB_ID [--json]",
		Short: "Cancel a job and its open items",
		Long: `Cancel a job (cancel_job): its open items are cancelled; completed items keep their results.
Cancelling a job that has ended changes nothing and prints it. With --json, print the job.` + jobExits,
		Example: `  agentrt jobs cancel job_01M7Z6EQH1EH35X9M20WK8S11E --config agentrt.yaml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "JOB_ID")
			if err != nil {
				return err
			}
			return jobCommand(cmd, &f, id, func(b backend) (*apitype.JobRead, error) {
				return b.CancelJob(commandContext(cmd), &apitype.JobParams{JobID: id})
			})
		},
	}
	f.register(cmd, "print the job as JSON")
	return cmd
}

func newJobsItemsCmd() *cobra.Command {
	var (
		f           jsonStoreFlags
		status      string
		from, limit int
	)
	cmd := &cobra.Command{
		Use:   "items JOB_ID [--status S] [--from N] [--limit N] [--json]",
		Short: "List a job's items with status, attempts, result and last error",
		Long: `List a job's items in index order (list_job_items), from --from, every one or at most
--limit; --status keeps one status (pending, running, completed, failed or cancelled). On a
terminal a table (INDEX, ITEM, STATUS, ATTEMPTS, TASK, RESULT OR ERROR); otherwise, or with
--json, JSON Lines, one item per line as GET /v1/jobs/{jobId}/items lists it.` + jobExits,
		Example: `  agentrt jobs items job_01M7Z6EQH1EH35X9M20WK8S11E --status failed --config agentrt.yaml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "JOB_ID")
			if err != nil {
				return err
			}
			st := runtype.JobItemStatus(status)
			switch st {
			case "", runtype.ItemPending, runtype.ItemRunning, runtype.ItemCompleted, runtype.ItemFailed, runtype.ItemCancelled:
			default:
				return usageErr("--status %q is not an item status: want pending, running, completed, failed or cancelled", status)
			}
			if from < 0 || limit < 0 {
				return usageErr("--from and --limit may not be negative")
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			l := newJobItemLister(cmd.OutOrStdout(), f.json)
			ctx := commandContext(cmd)
			left := limit
			for {
				page, err := b.ListJobItems(ctx, &apitype.ListJobItemsParams{JobID: id, Status: st, FromIndex: from, Limit: min(left, maxListLimit)})
				if err != nil {
					return controlErr("job", id, err)
				}
				items := page.Items
				if limit > 0 {
					items = items[:min(len(items), left)]
					left -= len(items)
				}
				if err := l.print(items); err != nil {
					return err
				}
				if page.NextIndex == 0 || limit > 0 && left == 0 {
					return nil
				}
				from = page.NextIndex
			}
		},
	}
	f.register(cmd, "print JSON Lines even on a terminal")
	cmd.Flags().StringVar(&status, "status", "", "only items in this status: pending, running, completed, failed or cancelled")
	cmd.Flags().IntVar(&from, "from", 0, "start at this index")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many items (0: every one)")
	return cmd
}

func newJobItemLister(w io.Writer, asJSON bool) *lister[apitype.JobItemRead] {
	l := newLister(w, asJSON, []string{"INDEX", "ITEM", "STATUS", "ATTEMPTS", "TASK", "RESULT OR ERROR"}, func(it *apitype.JobItemRead) []string {
		outcome := it.Result
		if it.LastError != nil && it.Status != runtype.ItemCompleted {
			outcome = string(it.LastError.Kind) + ": " + it.LastError.Message
		}
		return []string{strconv.Itoa(it.Index), it.ItemID, string(it.Status), strconv.Itoa(it.Attempts), orDash(it.TaskID), outcome}
	})
	l.none, l.paint[2] = "no items", paintStatusWord
	return l
}

func newJobsRetryCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "retry JOB_ID [ITEM_ID...] [--json]",
		Short: "Give failed items of a job another attempt",
		Long: `Retry failed items of a job (retry_job_items): those named, or every failed one when none is
named. Items that did not fail are left alone: a completed item never runs again. Prints the
items retried and the job; with --json, the result as the API answers it.` + jobExits,
		Example: `  agentrt jobs retry job_01M7Z6EQH1EH35X9M20WK8S11E --config agentrt.yaml
  agentrt jobs retry job_01M7Z6EQH1EH35X9M20WK8S11E item_01M7Z6EQH1EH35X9M20WK8S11F --config agentrt.yaml`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("%s takes a JOB_ID and, optionally, ITEM_IDs", cmd.CommandPath())
			}
			id := args[0]
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			res, err := b.RetryJobItems(commandContext(cmd), &apitype.RetryJobItemsParams{JobID: id, ItemIDs: args[1:]})
			if err != nil {
				return controlErr("job", id, err)
			}
			out := cmd.OutOrStdout()
			if f.json {
				return writeIndented(out, res)
			}
			if len(res.Retried) == 0 {
				fmt.Fprintln(out, "no failed items to retry")
			} else {
				fmt.Fprintf(out, "retrying %s: %s\n", plural(len(res.Retried), "item"), strings.Join(res.Retried, ", "))
			}
			printJob(out, &res.Job)
			return nil
		},
	}
	f.register(cmd, "print the result as JSON")
	return cmd
}
