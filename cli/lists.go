package cli

import (
	"cmp"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds the list commands of the read models: requests list,
// sessions list and tasks list. Each prints what the HTTP API's list
// route answers (GET /v1/requests, /v1/sessions, /v1/tasks), newest
// first, with the convention of every list command (lister.go).

// readListFlags are the flags the read-model lists share.
type readListFlags struct {
	storeFlags
	status  string
	session string
	agent   string
	limit   int
	json    bool
}

func (f *readListFlags) register(cmd *cobra.Command, what string, statuses bool) {
	f.storeFlags.register(cmd)
	fl := cmd.Flags()
	if statuses {
		fl.StringVar(&f.status, "status", statusAll, "only the "+what+" in this status (all: every status)")
		fl.StringVar(&f.session, "session", "", "only the "+what+" of this session")
	}
	fl.StringVar(&f.agent, "agent", "", "only the "+what+" of this agent")
	fl.IntVar(&f.limit, "limit", 50, "list at most this many, newest first (at most 1000)")
	fl.BoolVar(&f.json, "json", false, "print JSON Lines even on a terminal")
}

func (f *readListFlags) checkLimit() error {
	if f.limit < 1 || f.limit > maxListLimit {
		return usageErr("invalid --limit %d: use 1 to %d", f.limit, maxListLimit)
	}
	return nil
}

const listExits = `

Exit codes: 0 listed (even none), 1 the store or server could not be read, 2 usage or
configuration error.`

func newRequestsListCmd() *cobra.Command {
	var f readListFlags
	cmd := &cobra.Command{
		Use:   "list [--status S,...] [--session ID] [--agent NAME] [--limit N] [--json]",
		Short: "List requests (turns), newest first",
		Long: `List the requests (turns) of the config's data directory, or of a daemon with --server,
newest first: on a terminal as a table (REQUEST, STATUS and its reason, AGENT, SESSION, AGE,
INPUT); otherwise, or with --json, as JSON Lines, one request per line as GET /v1/requests
lists it. --status keeps the requests in any of the given statuses (comma-separated); all,
the default, keeps every status.` + listExits,
		Example: `  agentrt requests list --config agentrt.yaml --status waiting_permission,failed
  agentrt requests list --server http://127.0.0.1:7420 --agent support | jq -r .requestId`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			keep, err := parseStatuses(f.status)
			if err != nil {
				return err
			}
			if err := f.checkLimit(); err != nil {
				return err
			}
			p := &apitype.ListRequestsParams{SessionID: f.session, Agent: f.agent, Limit: f.limit}
			for _, st := range runtype.TaskStatuses { // in a stable order
				if keep[st] {
					p.Statuses = append(p.Statuses, st)
				}
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			reqs, err := b.ListRequests(commandContext(cmd), p)
			if err != nil {
				return runtimeErr(err)
			}
			return newRequestLister(cmd.OutOrStdout(), f.json, time.Now).print(reqs)
		},
	}
	f.register(cmd, "requests", true)
	cmd.Flag("status").Usage = "only the requests in one of these statuses (comma-separated; all: every status)"
	return cmd
}

// newRequestLister prints requests; ages are relative to now().
func newRequestLister(w io.Writer, asJSON bool, now func() time.Time) *lister[apitype.RequestSummary] {
	l := newLister(w, asJSON, []string{"REQUEST", "STATUS", "AGENT", "SESSION", "AGE", "INPUT"}, func(r *apitype.RequestSummary) []string {
		return []string{r.TurnID, statusText(r.Status, string(r.StatusReason)), r.Agent, r.SessionID, age(now(), r.CreatedAt), r.InputPreview}
	})
	l.none, l.paint[1] = "no requests", paintStatusWord
	return l
}

func newSessionsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List sessions",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	var f readListFlags
	list := &cobra.Command{
		Use:   "list [--agent NAME] [--limit N] [--json]",
		Short: "List sessions, newest first",
		Long: `List the sessions of the config's data directory, or of a daemon with --server, newest
first: on a terminal as a table (SESSION, AGENT, AGE, UPDATED, TITLE); otherwise, or with
--json, as JSON Lines, one session per line as GET /v1/sessions lists it.` + listExits,
		Example: `  agentrt sessions list --config agentrt.yaml --agent support`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.checkLimit(); err != nil {
				return err
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			sessions, err := b.ListSessions(commandContext(cmd), &apitype.ListSessionsParams{Agent: f.agent, Limit: f.limit})
			if err != nil {
				return runtimeErr(err)
			}
			return newSessionLister(cmd.OutOrStdout(), f.json, time.Now).print(sessions)
		},
	}
	f.register(list, "sessions", false)
	cmd.AddCommand(list)
	return cmd
}

// newSessionLister prints sessions; ages are relative to now().
func newSessionLister(w io.Writer, asJSON bool, now func() time.Time) *lister[apitype.SessionSummary] {
	l := newLister(w, asJSON, []string{"SESSION", "AGENT", "AGE", "UPDATED", "TITLE"}, func(s *apitype.SessionSummary) []string {
		updated := "-"
		if s.UpdatedAt != nil {
			updated = age(now(), s.UpdatedAt) + " ago"
		}
		return []string{s.SessionID, s.Agent, age(now(), s.CreatedAt), updated, cmp.Or(s.Title, "-")}
	})
	l.none = "no sessions"
	return l
}

func newTasksListCmd() *cobra.Command {
	var f readListFlags
	cmd := &cobra.Command{
		Use:   "list [--status S] [--session ID] [--agent NAME] [--limit N] [--json]",
		Short: "List tasks, newest first",
		Long: `List the tasks of the config's data directory, or of a daemon with --server, newest first:
on a terminal as a table (TASK, STATUS and its reason, TURN, SESSION, ATTEMPTS, AGE,
OBJECTIVE); otherwise, or with --json, as JSON Lines, one task per line as GET /v1/tasks
lists it. --status keeps the tasks in that status; all, the default, keeps every status.` + listExits,
		Example: `  agentrt tasks list --config agentrt.yaml --status failed
  agentrt tasks list --server http://127.0.0.1:7420 --session ses_01M7Z6EQH1EH35X9M20WK8S11D --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			keep, err := parseStatuses(f.status)
			if err != nil {
				return err
			}
			if len(keep) > 1 {
				return usageErr("invalid --status %q: tasks list takes one status, or all", f.status)
			}
			if err := f.checkLimit(); err != nil {
				return err
			}
			p := &apitype.ListTasksParams{SessionID: f.session, Agent: f.agent, Limit: f.limit}
			for st := range keep {
				p.Status = st
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			page, err := b.ListTasks(commandContext(cmd), p)
			if err != nil {
				return runtimeErr(err)
			}
			return newTaskLister(cmd.OutOrStdout(), f.json, time.Now).print(page.Tasks)
		},
	}
	f.register(cmd, "tasks", true)
	return cmd
}

// newTaskLister prints tasks; ages are relative to now().
func newTaskLister(w io.Writer, asJSON bool, now func() time.Time) *lister[apitype.TaskRead] {
	l := newLister(w, asJSON, []string{"TASK", "STATUS", "TURN", "SESSION", "ATTEMPTS", "AGE", "OBJECTIVE"}, func(t *apitype.TaskRead) []string {
		return []string{t.TaskID, statusText(t.Status, string(t.StatusReason)), t.TurnID, t.SessionID, strconv.Itoa(len(t.Attempts)), age(now(), t.CreatedAt), t.Objective}
	})
	l.none, l.paint[1] = "no tasks", paintStatusWord
	return l
}

// statusText is a status and, when there is one, its reason.
func statusText(s runtype.TaskStatus, reason string) string {
	if reason == "" {
		return string(s)
	}
	return string(s) + " " + reason
}

// age is how long before now t was, in two units ("-" without t).
func age(now time.Time, t *time.Time) string {
	if t == nil {
		return "-"
	}
	return compactDuration(now.Sub(*t))
}
