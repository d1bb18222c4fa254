package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds the operator's run control: tasks (show, cancel, pause,
// resume, retry) and a thread's queue of turns (list, remove, promote).
// Like approvals, the commands run the runtime in this process on the
// config's data directory; a daemon serving the same directory sees what
// they record and acts on it (a cancel or pause of a task it runs, say).

func newTasksCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "Show a task with its attempts; cancel, pause, resume or retry it",
		Long: `Every turn runs as a task, in one or more attempts. These commands show a task of the
config's data directory and control it: cancel, pause, resume and retry record the request
in the store, and whichever agentrt process runs the task acts on it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newTasksListCmd(), newTasksShowCmd())
	for _, c := range taskControls {
		cmd.AddCommand(newTaskControlCmd(c))
	}
	return cmd
}

// jsonStoreFlags are the flags of a command that works on a data
// directory or a daemon and can print JSON.
type jsonStoreFlags struct {
	storeFlags
	json bool
}

func (f *jsonStoreFlags) register(cmd *cobra.Command, jsonUsage string) {
	f.storeFlags.register(cmd)
	cmd.Flags().BoolVar(&f.json, "json", false, jsonUsage)
}

func newTasksShowCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "show TASK_ID [--json]",
		Short: "Show a task: its status, last error and attempts",
		Long: `Show a task of the config's data directory: its turn, session and thread, its status and
last error, and a table of its attempts (number, status, the worker that ran it, when it
started and ended, its error). With --json, print the task as GET /v1/tasks/{taskId} does.

Exit codes: 0 shown, 1 no such task or the store could not be read, 2 usage or
configuration error.`,
		Example: `  agentrt tasks show task_01M7Z6EQH1EH35X9M20WK8S11J --config agentrt.yaml
  agentrt tasks show task_01M7Z6EQH1EH35X9M20WK8S11J --config agentrt.yaml --json | jq '.attempts | length'`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "TASK_ID")
			if err != nil {
				return err
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			ctx := commandContext(cmd)
			tr, err := b.GetTask(ctx, runtype.Owner{}, id)
			if err != nil {
				return controlErr("task", id, err)
			}
			out := cmd.OutOrStdout()
			if f.json {
				return writeIndented(out, tr)
			}
			printTask(out, tr)
			return nil
		},
	}
	f.register(cmd, "print the task as JSON")
	return cmd
}

// taskControl is one of the task control commands.
type taskControl struct {
	verb, short, long string
	// canWait: the control may make the task run, here or in a daemon;
	// the command waits for it to rest unless --no-wait.
	canWait bool
	do      func(backend, context.Context, *apitype.TaskControlParams) (runtype.TaskStatus, error)
}

var taskControls = []taskControl{
	{
		verb:  "cancel",
		short: "Cancel a task; it ends cancelled",
		long: `Cancel a task: a queued, parked or paused task that no process runs ends cancelled at once
(here); one that a daemon runs is cancelled there, with its tools and processes, and reads
cancelling until it has ended. Cancelling a task that has ended changes nothing and prints
its status.`,
		do: backend.CancelTask,
	},
	{
		verb:  "pause",
		short: "Pause a task before its next model call",
		long: `Pause a task: a running task parks paused before its next model call, a queued one pauses
at once without starting, a parked one pauses when it would go on. The status printed is
paused for a queued task, otherwise the task's when the request was recorded; tasks show
tells when it has paused. Undo it with tasks resume.`,
		do: backend.PauseTask,
	},
	{
		verb:  "resume",
		short: "Lift a task's pause; it goes on from its last recorded step",
		long: `Resume a paused task (or lift a pause it has not reached yet): it goes on from its last
recorded step. Unless --no-wait, the command then waits until the task's turn ends, parks or
pauses again: it runs in this process, or in a daemon serving the same data directory if
that takes it up first.`,
		canWait: true,
		do:      backend.ResumeTask,
	},
	{
		verb:  "retry",
		short: "Start a new attempt of a failed, cancelled, timed out, lost or blocked task",
		long: `Retry a task that ended failed, cancelled, timed out or lost, or is blocked or waiting to be
retried: a new attempt goes on from the turn's last recorded step (the calls already made
are not made again). Unless --no-wait, the command then waits until the turn ends, parks or
pauses: it runs in this process, or in a daemon serving the same data directory if that
takes it up first.`,
		canWait: true,
		do:      backend.RetryTask,
	},
}

// controlResult is what a task control prints with --json: the status
// the control left the task in (as the HTTP API answers), and, when the
// command waited, the request (turn) as it rests.
type controlResult struct {
	TaskID  string                  `json:"taskId"`
	Status  runtype.TaskStatus      `json:"status"`
	Request *apitype.RequestSummary `json:"request,omitempty"`
}

type controlFlags struct {
	jsonStoreFlags
	noWait bool
}

func newTaskControlCmd(c taskControl) *cobra.Command {
	var f controlFlags
	use := c.verb + " TASK_ID [--json]"
	exits := `

Exit codes: 0 the request was recorded; 1 no such task, the task's status does not allow
it (a conflict, with the reason), or the store could not be read; 2 usage or configuration
error.`
	if c.canWait {
		use = c.verb + " TASK_ID [--no-wait] [--json]"
		exits = `

Exit codes, when the command waits, as for run: 0 the turn completed, 1 it failed or was
cancelled, 3 it is parked. Otherwise: 0 the request was recorded; 1 no such task, the
task's status does not allow it (a conflict, with the reason), or the store could not be
read. 2 usage or configuration error.`
	}
	cmd := &cobra.Command{
		Use:     use,
		Short:   c.short,
		Long:    c.long + exits,
		Example: "  agentrt tasks " + c.verb + " task_01M7Z6EQH1EH35X9M20WK8S11J --config agentrt.yaml",
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return controlTask(cmd, &f, c, args)
		},
	}
	f.register(cmd, `print {"taskId", "status"} as JSON`)
	if c.canWait {
		cmd.Flags().BoolVar(&f.noWait, "no-wait", false, "do not wait for the task's turn to end, park or pause")
	}
	return cmd
}

func controlTask(cmd *cobra.Command, f *controlFlags, c taskControl, args []string) error {
	id, err := oneID(cmd, args, "TASK_ID")
	if err != nil {
		return err
	}
	b, stop, err := f.backend(cmd, true)
	if err != nil {
		return err
	}
	defer stop()
	ctx := commandContext(cmd)
	from, err := b.LastCursor(ctx)
	if err != nil {
		return runtimeErr(err)
	}
	status, err := c.do(b, ctx, &apitype.TaskControlParams{TaskID: id})
	if err != nil {
		return controlErr("task", id, err)
	}
	res := controlResult{TaskID: id, Status: status}
	out := cmd.OutOrStdout()
	if !c.canWait || f.noWait {
		if f.json {
			return writeJSONLine(out, res)
		}
		fmt.Fprintf(out, "task %s %s (%s requested)\n", id, status, c.verb)
		return nil
	}
	if !f.json {
		fmt.Fprintf(out, "task %s %s (%s requested); waiting for its turn to end, park or pause\n", id, status, c.verb)
	}
	tr, err := b.GetTask(ctx, runtype.Owner{}, id)
	if err != nil {
		return controlErr("task", id, err)
	}
	// An interrupt stops the wait, not the task: the runtime stops
	// gracefully, and the task goes on where the data directory runs next.
	waitCtx, cancel := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	turn, err := b.WaitTurn(waitCtx, runtype.Owner{}, tr.TurnID, from)
	if err != nil {
		if waitCtx.Err() != nil && ctx.Err() == nil {
			goesOn := "the task goes on when agentrt next runs this data directory"
			if b.Remote() {
				goesOn = "the daemon goes on with the task"
			}
			return &exitError{code: ExitFailed, err: fmt.Errorf("stopped waiting for request %s; %s", tr.TurnID, goesOn)}
		}
		return runtimeErr(err)
	}
	if f.json {
		req, err := b.GetRequest(ctx, runtype.Owner{}, turn.ID)
		if err != nil {
			return &exitError{code: ExitFailed, err: err}
		}
		res.Request = req
		if err := writeJSONLine(out, res); err != nil {
			return err
		}
	} else {
		line := fmt.Sprintf("request %s is %s", turn.ID, turn.Status)
		if turn.StatusReason != "" {
			line += " (" + string(turn.StatusReason) + ")"
		}
		fmt.Fprintln(out, line)
	}
	return exitFor(turn)
}

// oneID reads the one id argument a command takes.
func oneID(cmd *cobra.Command, args []string, name string) (string, error) {
	if len(args) != 1 {
		return "", usageErr("%s takes one %s, got %d arguments", cmd.CommandPath(), name, len(args))
	}
	return args[0], nil
}

// controlErr reports what went wrong controlling the task or turn id.
func controlErr(kind, id string, err error) error {
	switch {
	case errors.Is(err, apitype.ErrNotFound):
		return &exitError{code: ExitFailed, err: fmt.Errorf("no %s %s", kind, id)}
	case errors.Is(err, apitype.ErrConflict), errors.Is(err, apitype.ErrStopped):
		return &exitError{code: ExitFailed, err: err}
	}
	return runtimeErr(err)
}

// printTask prints a task for people: a header, then its attempts.
func printTask(w io.Writer, tr *apitype.TaskRead) {
	fmt.Fprintf(w, "task %s  turn %s  session %s  thread %s\n", tr.TaskID, tr.TurnID, tr.SessionID, tr.ThreadID)
	status := string(tr.Status)
	if tr.StatusReason != "" {
		status += " (" + string(tr.StatusReason) + ")"
	}
	fmt.Fprintf(w, "status     %s\n", status)
	fmt.Fprintf(w, "objective  %s\n", oneLine(tr.Objective, 100))
	var times []string
	for _, t := range []struct {
		name string
		at   *time.Time
	}{{"created", tr.CreatedAt}, {"started", tr.StartedAt}, {"ended", tr.EndedAt}} {
		if t.at != nil {
			times = append(times, t.name+" "+stamp(t.at))
		}
	}
	fmt.Fprintf(w, "times      %s\n", strings.Join(times, " · "))
	if tr.LastError != nil {
		fmt.Fprintf(w, "last error %s\n", failureText(tr.LastError, 100))
	}
	if len(tr.Attempts) == 0 {
		fmt.Fprintln(w, "no attempts yet")
		return
	}
	rows := [][]string{{"ATTEMPT", "STATUS", "WORKER", "STARTED", "ENDED", "ERROR"}}
	for _, a := range tr.Attempts {
		rows = append(rows, []string{
			strconv.Itoa(a.AttemptCount), a.Status, workerOf(a),
			stamp(a.StartedAt), stamp(a.EndedAt), failureText(a.LastError, 80),
		})
	}
	writeTable(w, "", rows)
}

// stamp writes a time in UTC to the second; "-" when there is none.
func stamp(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.DateTime)
}

func failureText(f *runtype.Failure, width int) string {
	if f == nil {
		return "-"
	}
	return oneLine(string(f.Kind)+": "+f.Message, width)
}

func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func newQueueCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "List a thread's queued turns; remove or promote one",
		Long: `A turn submitted to a thread that is busy (an earlier turn is queued, running, parked or
paused) waits in the thread's queue, with the multitask policy enqueue (the default). These
commands list a thread's queue in the config's data directory, take a turn off it, and move
a turn to its front.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newQueueListCmd(), newQueueChangeCmd("remove"), newQueueChangeCmd("promote"))
	return cmd
}

type queueListFlags struct {
	jsonStoreFlags
	session string
	thread  string
}

func newQueueListCmd() *cobra.Command {
	var f queueListFlags
	cmd := &cobra.Command{
		Use:   "list --thread ID [--session ID] [--json]",
		Short: "List a thread's queued turns in the order they will run",
		Long: `List a thread's queued turns, first to run first: on a terminal as a table; otherwise, or
with --json, as JSON Lines, one turn per line ({"turnId", "taskId", "queuedAt"}).

Exit codes: 0 listed (even none), 1 no such thread (in the session, when --session is
given) or the store could not be read, 2 usage or configuration error.`,
		Example: `  agentrt queue list --config agentrt.yaml --session ses_01M7Z6EQH1EH35X9M20WK8S11D --thread thr_01M7Z6EQH1EH35X9M20WK8S11E`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.thread == "" {
				return usageErr("--thread is required")
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			q, err := b.ListQueue(commandContext(cmd), &apitype.QueueParams{SessionID: f.session, ThreadID: f.thread})
			if err != nil {
				thread := f.thread
				if f.session != "" {
					thread += " in session " + f.session
				}
				return controlErr("thread", thread, err)
			}
			return newQueueLister(cmd.OutOrStdout(), f.json).print(q)
		},
	}
	f.register(cmd, "print JSON Lines even on a terminal")
	cmd.Flags().StringVar(&f.session, "session", "", "the thread's session (checked when given)")
	cmd.Flags().StringVar(&f.thread, "thread", "", "the thread whose queue to list (required)")
	return cmd
}

// newQueueLister prints a thread's queued turns, first to run first.
func newQueueLister(w io.Writer, asJSON bool) *lister[event.QueuedTurn] {
	n := 0
	l := newLister(w, asJSON, []string{"#", "TURN", "TASK", "QUEUED"}, func(e *event.QueuedTurn) []string {
		n++
		return []string{strconv.Itoa(n), e.TurnID, e.TaskID, stamp(&e.QueuedAt)}
	})
	l.none = "no queued turns"
	return l
}

func newQueueChangeCmd(verb string) *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:  verb + " TURN_ID [--json]",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "TURN_ID")
			if err != nil {
				return err
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			ctx := commandContext(cmd)
			do, line := b.PromoteQueuedTurn, "turn %s is first in its thread's queue"
			if verb == "remove" {
				do, line = b.RemoveQueuedTurn, "turn %s removed from its thread's queue; it ended cancelled without running"
			}
			if err := do(ctx, runtype.Owner{}, id); err != nil {
				return controlErr("turn", id, err)
			}
			out := cmd.OutOrStdout()
			if f.json {
				done := "promoted"
				if verb == "remove" {
					done = "removed"
				}
				return writeJSONLine(out, map[string]any{"turnId": id, done: true})
			}
			fmt.Fprintf(out, line+"\n", id)
			return nil
		},
	}
	const exits = `

Exit codes: 0 done, 1 no such turn, or the turn is not queued (it has started or ended; a
conflict), or the store could not be read; 2 usage or configuration error.`
	if verb == "remove" {
		cmd.Short = "Take a queued turn off its thread's queue; it ends cancelled"
		cmd.Long = `Take a queued turn off its thread's queue: it ends cancelled (reason interrupted) without
running, and the queue's change is recorded (queue.changed). With --json, print
{"turnId", "removed": true}.` + exits
	} else {
		cmd.Short = "Move a queued turn to the front of its thread's queue"
		cmd.Long = `Move a queued turn to the front of its thread's queue: it runs as soon as the turn ahead of
the queue ends. The change is recorded (queue.changed). With --json, print
{"turnId", "promoted": true}.` + exits
	}
	cmd.Example = "  agentrt queue " + verb + " turn_01M7Z6QJRVKJX6WHGVKQ1SJQDS --config agentrt.yaml"
	f.register(cmd, "print the result as JSON")
	return cmd
}

// workerOf names the worker that ran an attempt, "-" when unknown.
func workerOf(a apitype.AttemptRead) string {
	if a.Worker == nil {
		return "-"
	}
	return a.Worker.WorkerID
}
