package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds the workflow commands: start a run of a workflow
// definition, list and show runs, cancel and resume one. See
// docs/workflows.md.

func newWorkflowsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workflows",
		Short: "Start, list, show, cancel and resume workflow runs",
		Long: `Commands on workflow runs: a run of a workflow definition of the configuration (agent steps,
timers and human steps in a graph). In the config's data directory or (with --server) on a
daemon:

  start   start a run
  list    runs with their status and steps done
  show    a run and each of its steps
  cancel  cancel a run
  resume  go on with a failed run

A human step waits as an action: answer it with agentrt approvals approve or deny (or
POST /v1/actions/{actionId}). See docs/workflows.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newWorkflowsStartCmd(), newWorkflowsListCmd(), newWorkflowsShowCmd(),
		newWorkflowControlCmd("cancel"), newWorkflowControlCmd("resume"))
	return cmd
}

const workflowExits = `

Exit codes: 0 done, 1 no such run, a conflict (resuming a run that did not fail), a run
that --wait saw fail or be cancelled, or the store or server could not be read; 2 usage or
configuration error (a refused value).`

func newWorkflowsStartCmd() *cobra.Command {
	var (
		f                   jsonStoreFlags
		input, session, key string
		wait                bool
	)
	cmd := &cobra.Command{
		Use:   "start WORKFLOW [--input JSON] [--session ID] [--idempotency-key K] [--wait] [--json]",
		Short: "Start a run of a workflow",
		Long: `Start a run of a workflow definition of the configuration (start_workflow), with --input, a
JSON object checked against the workflow's input schema, in a new session or --session.
Prints the run and returns; whichever agentrt process runs the data directory's work runs it.
With --wait, run it here (or watch it on --server) until it rests: completed, failed,
cancelled, or waiting on a timer or a person (exit 1 when it failed or was cancelled). With
--json, print the run as the API answers it.` + workflowExits,
		Example: `  agentrt workflows start support_triage --input '{"order": 1042, "text": "It is late"}' --config examples/support/workflow.yaml
  agentrt workflows start support_triage --input '{"order": 1042, "text": "It is late"}' --wait --server http://127.0.0.1:7420`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := oneID(cmd, args, "WORKFLOW")
			if err != nil {
				return err
			}
			if input != "" && !jsonObject(input) {
				return usageErr("--input is no JSON object: %s", oneLine(input, 60))
			}
			b, stop, err := f.backend(cmd, wait)
			if err != nil {
				return err
			}
			defer stop()
			ctx := commandContext(cmd)
			from, err := b.LastCursor(ctx)
			if err != nil {
				return runtimeErr(err)
			}
			p := &apitype.StartWorkflowParams{Workflow: name, SessionID: session, IdempotencyKey: key}
			if input != "" {
				p.Input = json.RawMessage(input)
			}
			run, err := b.StartWorkflow(ctx, p)
			if err != nil {
				return controlErr("session", session, err)
			}
			if wait {
				if run, err = waitWorkflow(cmd, b, run, from); err != nil {
					return err
				}
			}
			if err := printWorkflowOut(cmd.OutOrStdout(), f.json, run); err != nil {
				return err
			}
			if wait && (run.Status == runtype.WorkflowFailed || run.Status == runtype.WorkflowCancelled) {
				return &exitError{code: ExitFailed, err: fmt.Errorf("workflow run %s %s", run.RunID, run.Status)}
			}
			return nil
		},
	}
	f.register(cmd, "print the run as JSON")
	cmd.Flags().StringVar(&input, "input", "", "the run's input, a JSON object (default {})")
	cmd.Flags().StringVar(&session, "session", "", "run in this session (default a new one)")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "make the request idempotent: starting again returns the same run")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the run completes, fails, is cancelled or waits on a timer or a person")
	return cmd
}

// waitWorkflow follows the run's session from the cursor from until the
// run is no longer running, and returns it as it rests.
func waitWorkflow(cmd *cobra.Command, b backend, run *apitype.WorkflowRead, from int64) (*apitype.WorkflowRead, error) {
	ctx := commandContext(cmd)
	sub, err := b.Events(ctx, &apitype.SubscribeParams{SessionID: run.SessionID, AfterCursor: from})
	if err != nil {
		return nil, runtimeErr(err)
	}
	defer sub.Close()
	for {
		cur, err := b.GetWorkflow(ctx, &apitype.WorkflowParams{RunID: run.RunID})
		if err != nil {
			return nil, controlErr("workflow run", run.RunID, err)
		}
		if cur.Status != runtype.WorkflowRunning {
			return cur, nil
		}
		if _, err := sub.Next(ctx); err != nil {
			return nil, runtimeErr(err)
		}
	}
}

// printWorkflowOut prints a run as JSON or for people.
func printWorkflowOut(w io.Writer, asJSON bool, run *apitype.WorkflowRead) error {
	if asJSON {
		return writeIndented(w, run)
	}
	printWorkflow(w, run, time.Now())
	return nil
}

// printWorkflow prints a run for people: a header, then its steps.
func printWorkflow(w io.Writer, r *apitype.WorkflowRead, now time.Time) {
	fmt.Fprintf(w, "workflow run %s  workflow %s  session %s\n", r.RunID, r.Workflow, r.SessionID)
	fmt.Fprintf(w, "status     %s\n", r.Status)
	fmt.Fprintf(w, "steps      %s\n", stepsDone(r))
	fmt.Fprintf(w, "started    %s, ended %s\n", relTimeOf(now, r.CreatedAt), relTimeOf(now, r.EndedAt))
	fmt.Fprintf(w, "input      %s\n", oneLine(string(r.Input), 200))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tKIND\tSTATUS\tDETAIL")
	for _, s := range r.Steps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.StepID, orDash(s.Kind), s.Status, stepDetail(&s, now))
	}
	tw.Flush()
}

// stepsDone is "2 of 5 completed".
func stepsDone(r *apitype.WorkflowRead) string {
	n := 0
	for _, s := range r.Steps {
		if s.Status == runtype.StepCompleted {
			n++
		}
	}
	return fmt.Sprintf("%d of %d completed", n, len(r.Steps))
}

// stepDetail is what a step waits for, runs as or ended with.
func stepDetail(s *apitype.WorkflowStepRead, now time.Time) string {
	var parts []string
	switch {
	case s.ActionID != "" && s.Status == runtype.StepWaiting:
		parts = append(parts, "action "+s.ActionID+" (agentrt approvals approve|deny)")
	case s.DueAt != nil && s.Status == runtype.StepWaiting:
		parts = append(parts, "due "+relTime(now, *s.DueAt))
	case s.TaskID != "":
		parts = append(parts, "task "+s.TaskID)
	case s.Status == runtype.StepPending && len(s.Needs) > 0:
		parts = append(parts, "needs "+strings.Join(s.Needs, ", "))
	}
	if s.Agent != "" {
		parts = append(parts, "agent "+s.Agent)
	}
	if s.Reason != "" {
		parts = append(parts, oneLine(s.Reason, 80))
	}
	if s.OutputPreview != "" {
		parts = append(parts, "output "+oneLine(s.OutputPreview, 80))
	}
	return orDash(strings.Join(parts, "; "))
}

func newWorkflowsListCmd() *cobra.Command {
	var (
		f                jsonStoreFlags
		workflow, status string
		limit            int
	)
	cmd := &cobra.Command{
		Use:   "list [--workflow NAME] [--status S] [--limit N] [--json]",
		Short: "List workflow runs with their status and steps done",
		Long: `List the tenant's workflow runs by id, oldest first (list_workflows): on a terminal a table
(RUN, WORKFLOW, STATUS, STEPS, STARTED); otherwise, or with --json, JSON Lines, one run per
line as GET /v1/workflows lists it. --status keeps one status: running, waiting, completed,
failed, cancelled, or all (the default).` + workflowExits,
		Example: `  agentrt workflows list --config examples/support/workflow.yaml
  agentrt workflows list --server http://127.0.0.1:7420 --status failed --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st := runtype.WorkflowStatus(status)
			switch st {
			case statusAll:
				st = ""
			case runtype.WorkflowRunning, runtype.WorkflowWaiting, runtype.WorkflowCompleted, runtype.WorkflowFailed, runtype.WorkflowCancelled:
			default:
				return usageErr("--status %q is not a workflow run status: want running, waiting, completed, failed, cancelled or all", status)
			}
			if limit < 1 || limit > maxListLimit {
				return usageErr("invalid --limit %d: use 1 to %d", limit, maxListLimit)
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			ctx := commandContext(cmd)
			all, err := collect(limit, func(n int, cursor string) ([]apitype.WorkflowRead, string, error) {
				page, err := b.ListWorkflows(ctx, &apitype.ListWorkflowsParams{Workflow: workflow, Status: st, AfterID: cursor, Limit: n})
				if err != nil {
					return nil, "", runtimeErr(err)
				}
				return page.Runs, page.NextAfterID, nil
			})
			if err != nil {
				return err
			}
			return newWorkflowLister(cmd.OutOrStdout(), f.json, time.Now).print(all)
		},
	}
	f.register(cmd, "print JSON Lines even on a terminal")
	cmd.Flags().StringVar(&workflow, "workflow", "", "only the runs of this workflow")
	cmd.Flags().StringVar(&status, "status", statusAll, "only the runs in this status: running, waiting, completed, failed, cancelled or all")
	cmd.Flags().IntVar(&limit, "limit", 100, "list at most this many, oldest first (at most 1000)")
	return cmd
}

func newWorkflowLister(w io.Writer, asJSON bool, now func() time.Time) *lister[apitype.WorkflowRead] {
	l := newLister(w, asJSON, []string{"RUN", "WORKFLOW", "STATUS", "STEPS", "STARTED"}, func(r *apitype.WorkflowRead) []string {
		return []string{r.RunID, r.Workflow, string(r.Status), stepsDone(r), relTimeOf(now(), r.CreatedAt)}
	})
	l.none, l.paint[2] = "no workflow runs", paintStatus
	return l
}

func newWorkflowsShowCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "show RUN_ID [--json]",
		Short: "Show a workflow run and each of its steps",
		Long: `Show a workflow run (get_workflow): its status, input and times, and each step's kind, status
and what it waits for (a person's action, a timer's due time), runs as (its task) or ended
with (its output, or why it was skipped or failed). With --json, print it as
GET /v1/workflows/{runId} does.` + workflowExits,
		Example: `  agentrt workflows show wfr_01M7Z6EQH1EH35X9M20WK8S11G --config examples/support/workflow.yaml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "RUN_ID")
			if err != nil {
				return err
			}
			return workflowCommand(cmd, &f, id, func(b backend) (*apitype.WorkflowRead, error) {
				return b.GetWorkflow(commandContext(cmd), &apitype.WorkflowParams{RunID: id})
			})
		},
	}
	f.register(cmd, "print the run as JSON")
	return cmd
}

// newWorkflowControlCmd is cancel or resume.
func newWorkflowControlCmd(verb string) *cobra.Command {
	var f jsonStoreFlags
	short, long := "Cancel a workflow run", `Cancel a workflow run (cancel_workflow): steps not started never start, running ones are
cancelled, timers stop and questions are withdrawn. A run that ended is left as it is.`
	if verb == "resume" {
		short, long = "Go on with a failed workflow run", `Resume a failed workflow run (resume_workflow): its failed steps (and those the failure
skipped or cancelled) run again; completed steps do not. A run that did not fail is a
conflict (exit 1).`
	}
	cmd := &cobra.Command{
		Use:   verb + " RUN_ID [--json]",
		Short: short,
		Long: long + ` The run's dispatcher acts on it: the command prints the run as it was
asked, and returns; whichever agentrt process runs the data directory's work acts. With
--json, print the run as the API answers it.` + workflowExits,
		Example: "  agentrt workflows " + verb + " wfr_01M7Z6EQH1EH35X9M20WK8S11G --config examples/support/workflow.yaml",
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "RUN_ID")
			if err != nil {
				return err
			}
			return workflowCommand(cmd, &f, id, func(b backend) (*apitype.WorkflowRead, error) {
				p := &apitype.WorkflowParams{RunID: id}
				if verb == "resume" {
					return b.ResumeWorkflow(commandContext(cmd), p)
				}
				return b.CancelWorkflow(commandContext(cmd), p)
			})
		},
	}
	f.register(cmd, "print the run as JSON")
	return cmd
}

// workflowCommand runs do on the backend and prints the run it answers.
func workflowCommand(cmd *cobra.Command, f *jsonStoreFlags, id string, do func(backend) (*apitype.WorkflowRead, error)) error {
	b, stop, err := f.backend(cmd, false)
	if err != nil {
		return err
	}
	defer stop()
	run, err := do(b)
	if err != nil {
		return controlErr("workflow run", id, err)
	}
	return printWorkflowOut(cmd.OutOrStdout(), f.json, run)
}
