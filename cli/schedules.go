package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds the schedule commands: create a schedule, list and
// show schedules, pause, resume, trigger and delete one, list its fires
// (its history) and retry a fire's delivery. See docs/schedules.md.

func newSchedulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "Create, list, show, pause, resume, trigger and delete schedules; read their history",
		Long: `Commands on schedules: a schedule runs an agent (or a named instance's turn) on a cron spec
in a time zone, every interval, or once at a time; each time it comes due it makes a fire,
and a fire that starts is an ordinary request and task. In the config's data directory or
(with --server) on a daemon:

  create          create a schedule
  list            schedules with their next fire, running fires and failures
  show            a schedule, its spec and its state
  pause, resume   stop a schedule firing, and start it again from now
  trigger         fire a schedule now
  history         a schedule's fires: when, what became of each, its task and delivery
  delete          end a schedule (its history stays)
  retry-delivery  deliver a fire's result to its webhook again after the delivery failed

See docs/schedules.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSchedulesCreateCmd(), newSchedulesListCmd(), newSchedulesShowCmd(),
		newSchedulePauseCmd("pause"), newSchedulePauseCmd("resume"), newSchedulesTriggerCmd(),
		newSchedulesHistoryCmd(), newSchedulesDeleteCmd(), newSchedulesRetryDeliveryCmd())
	return cmd
}

const scheduleExits = `

Exit codes: 0 done, 1 no such schedule or fire, a conflict, or the store or server could not
be read; 2 usage or configuration error (a refused value).`

// scheduleFlags are create's flags.
type scheduleFlags struct {
	jsonStoreFlags
	agent, name, instance    string
	cron, tz, every, at      string
	start                    string
	input, inputFile, params string
	overlap, catchup         string
	pauseAfter               int
	model                    string
	tools                    []string
	inactivity               string
	preRunTool, preRunInput  string
	webhook, key             string
}

func newSchedulesCreateCmd() *cobra.Command {
	var f scheduleFlags
	cmd := &cobra.Command{
		Use:   "create --agent NAME (--cron SPEC [--tz ZONE] | --every DURATION [--start TIME] | --at TIME) (--input TEXT | --input-file FILE) [flags]",
		Short: "Create a schedule",
		Long: `Create a schedule (create_schedule). Exactly one of --cron, --every and --at says when it
fires: --cron a five-field cron spec in --tz (an IANA zone, default UTC); --every an
interval (a duration such as 90s or 2h) from --start (RFC 3339, default now); --at once, at
an RFC 3339 time. --input is each fire's input, a Go text/template over .FireTime,
.ScheduleID, .Params and .PreRun (--input-file reads it from a file, - for standard input);
--params its values, a JSON object.

--overlap says what a fire does while an earlier one still runs: skip (the default),
buffer_one, buffer_all, cancel_other or allow_all. --catchup is how late a fire may still
run after downtime (default 1m; older fires are recorded missed). --pause-after pauses the
schedule after that many failed fires in a row. --model, --tool (repeatable) and
--inactivity override the agent's for each fire; --pre-run-tool names a command tool of the
agent run before each fire, with --pre-run-input (JSON); --webhook names a configured
webhook each fire's result is delivered to. Prints the schedule; with --json, as the API
answers it.` + scheduleExits,
		Example: `  agentrt schedules create --config agentrt.yaml --agent digest --name nightly --cron "0 2 * * *" --tz Europe/Berlin --input "Summarize the tickets of {{.FireTime}}" --webhook ops
  agentrt schedules create --server http://127.0.0.1:7420 --agent support --instance case/4711 --every 4h --input "Follow up on the case" --pause-after 3
  agentrt schedules create --config agentrt.yaml --agent support --at 2026-12-01T09:00:00Z --input-file reminder.txt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := f.spec(cmd)
			if err != nil {
				return err
			}
			return scheduleCommand(cmd, &f.jsonStoreFlags, "", func(b backend) (*apitype.ScheduleRead, error) {
				return b.CreateSchedule(commandContext(cmd), &apitype.CreateScheduleParams{ScheduleSpec: *spec, IdempotencyKey: f.key})
			})
		},
	}
	f.register(cmd, "print the schedule as JSON")
	fl := cmd.Flags()
	fl.StringVar(&f.agent, "agent", "", "the agent each fire runs (required)")
	fl.StringVar(&f.name, "name", "", "a label for the schedule")
	fl.StringVar(&f.instance, "instance", "", "the named instance that owns the schedule: its fires are turns of the instance")
	fl.StringVar(&f.cron, "cron", "", `fire on this five-field cron spec ("0 2 * * *")`)
	fl.StringVar(&f.tz, "tz", "", "the IANA time zone of --cron (default UTC)")
	fl.StringVar(&f.every, "every", "", "fire every this long (a duration: 90s, 15m, 2h)")
	fl.StringVar(&f.start, "start", "", "the first fire of --every (RFC 3339; default now)")
	fl.StringVar(&f.at, "at", "", "fire once, at this time (RFC 3339)")
	fl.StringVar(&f.input, "input", "", "each fire's input (a Go text/template)")
	fl.StringVar(&f.inputFile, "input-file", "", "read each fire's input from this file (- : standard input)")
	fl.StringVar(&f.params, "params", "", "the input template's .Params, a JSON object")
	fl.StringVar(&f.overlap, "overlap", "", "while a fire runs: skip (default), buffer_one, buffer_all, cancel_other or allow_all")
	fl.StringVar(&f.catchup, "catchup", "", "how late a fire may run after downtime (a duration; default 1m)")
	fl.IntVar(&f.pauseAfter, "pause-after", 0, "pause after this many failed fires in a row (0: never)")
	fl.StringVar(&f.model, "model", "", "run each fire with this model of the configuration")
	fl.StringArrayVar(&f.tools, "tool", nil, "give each fire only these of the agent's tools (repeatable)")
	fl.StringVar(&f.inactivity, "inactivity", "", "fail a fire's run after this long without progress (a duration)")
	fl.StringVar(&f.preRunTool, "pre-run-tool", "", "a command tool of the agent run before each fire; its JSON output is context, or skips the fire")
	fl.StringVar(&f.preRunInput, "pre-run-input", "", "the pre-run tool's input (JSON)")
	fl.StringVar(&f.webhook, "webhook", "", "deliver each fire's result to this configured webhook")
	fl.StringVar(&f.key, "idempotency-key", "", "make the request idempotent: asking again returns the same schedule")
	return cmd
}

// spec is the schedule the flags describe, or a usage error saying what
// is wrong with them.
func (f *scheduleFlags) spec(cmd *cobra.Command) (*apitype.ScheduleSpec, error) {
	if f.agent == "" {
		return nil, usageErr("--agent is required: name the agent each fire runs")
	}
	sp := &apitype.ScheduleSpec{
		Name: f.name, Agent: f.agent, Instance: f.instance, Cron: f.cron, TimeZone: f.tz, Every: f.every, At: f.at, Start: f.start,
		Overlap: f.overlap, CatchupWindow: f.catchup, PauseAfterFailures: f.pauseAfter, Model: f.model, Tools: f.tools,
		InactivityTimeout: f.inactivity, Webhook: f.webhook,
	}
	var kinds []string
	for _, k := range []struct{ flag, value, kind string }{{"--cron", f.cron, "cron"}, {"--every", f.every, "interval"}, {"--at", f.at, "once"}} {
		if k.value != "" {
			kinds = append(kinds, k.flag)
			sp.Kind = k.kind
		}
	}
	switch {
	case len(kinds) == 0:
		return nil, usageErr("say when it fires: give one of --cron, --every and --at")
	case len(kinds) > 1:
		return nil, usageErr("give one of --cron, --every and --at, not %s", strings.Join(kinds, " and "))
	case f.tz != "" && f.cron == "":
		return nil, usageErr("--tz is the time zone of --cron; without --cron it means nothing")
	case f.start != "" && f.every == "":
		return nil, usageErr("--start is the first fire of --every; without --every it means nothing")
	case f.pauseAfter < 0:
		return nil, usageErr("--pause-after %d is negative: use 0 (never pause) or more", f.pauseAfter)
	case f.preRunInput != "" && f.preRunTool == "":
		return nil, usageErr("--pre-run-input needs --pre-run-tool")
	}
	for _, d := range []struct{ flag, value string }{{"--every", f.every}, {"--catchup", f.catchup}, {"--inactivity", f.inactivity}} {
		if d.value == "" {
			continue
		}
		if v, err := time.ParseDuration(d.value); err != nil || v <= 0 {
			return nil, usageErr("invalid %s %q: want a positive duration such as 90s, 15m or 2h", d.flag, d.value)
		}
	}
	for _, t := range []struct{ flag, value string }{{"--at", f.at}, {"--start", f.start}} {
		if t.value == "" {
			continue
		}
		if _, err := time.Parse(time.RFC3339, t.value); err != nil {
			return nil, usageErr("invalid %s %q: want an RFC 3339 time such as 2026-12-01T09:00:00Z", t.flag, t.value)
		}
	}
	for _, t := range f.tools {
		if t == "" {
			return nil, usageErr("--tool is empty: name a tool of the agent")
		}
	}
	input, err := f.readInput(cmd)
	if err != nil {
		return nil, err
	}
	sp.Input = input
	if f.params != "" {
		if !jsonObject(f.params) {
			return nil, usageErr("--params is no JSON object: %s", oneLine(f.params, 60))
		}
		sp.Params = json.RawMessage(f.params)
	}
	if f.preRunTool != "" {
		sp.PreRun = &apitype.PreRunSpec{Tool: f.preRunTool}
		if f.preRunInput != "" {
			if !json.Valid([]byte(f.preRunInput)) {
				return nil, usageErr("--pre-run-input is no JSON value: %s", oneLine(f.preRunInput, 60))
			}
			sp.PreRun.Input = json.RawMessage(f.preRunInput)
		}
	}
	return sp, nil
}

// readInput is --input, or what --input-file holds.
func (f *scheduleFlags) readInput(cmd *cobra.Command) (string, error) {
	switch {
	case f.input != "" && f.inputFile != "":
		return "", usageErr("give --input or --input-file, not both")
	case f.input == "" && f.inputFile == "":
		return "", usageErr("--input or --input-file is required: each fire's input")
	case f.input != "":
		return checkInput(f.input, "--input")
	}
	var b []byte
	var err error
	if f.inputFile == "-" {
		b, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), apitype.MaxScheduleInputBytes+1))
	} else {
		b, err = os.ReadFile(f.inputFile)
	}
	if err != nil {
		return "", usageErr("reading --input-file: %v", err)
	}
	return checkInput(string(b), "--input-file "+f.inputFile)
}

func checkInput(s, from string) (string, error) {
	switch {
	case strings.TrimSpace(s) == "":
		return "", usageErr("%s is empty: give each fire's input", from)
	case len(s) > apitype.MaxScheduleInputBytes:
		return "", usageErr("%s is more than %d bytes; an input template may be at most %d", from, apitype.MaxScheduleInputBytes, apitype.MaxScheduleInputBytes)
	}
	return s, nil
}

// jsonObject reports whether s is one JSON object.
func jsonObject(s string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &m) == nil && m != nil
}

// scheduleCommand runs do on the backend and prints the schedule it
// answers, as JSON or for people.
func scheduleCommand(cmd *cobra.Command, f *jsonStoreFlags, id string, do func(backend) (*apitype.ScheduleRead, error)) error {
	b, stop, err := f.backend(cmd, false)
	if err != nil {
		return err
	}
	defer stop()
	s, err := do(b)
	if err != nil {
		return controlErr("schedule", id, err)
	}
	out := cmd.OutOrStdout()
	if f.json {
		return writeIndented(out, s)
	}
	printSchedule(out, s, time.Now())
	return nil
}

// whenText is a schedule's kind and spec: "cron 0 2 * * * Europe/Berlin",
// "every 2h", "once 2026-12-01T09:00:00Z".
func whenText(s *apitype.ScheduleSpec) string {
	switch s.Kind {
	case "cron":
		if s.TimeZone != "" {
			return "cron " + s.Cron + " " + s.TimeZone
		}
		return "cron " + s.Cron
	case "interval":
		if s.Start != "" {
			return "every " + shortDuration(s.Every) + " from " + s.Start
		}
		return "every " + shortDuration(s.Every)
	case "once":
		return "once " + s.At
	}
	return s.Kind
}

// shortDuration is a Go duration without its zero units: "1h" for
// "1h0m0s", "1h30m" for "1h30m0s"; s as it is when it is no duration.
func shortDuration(s string) string {
	d, err := time.ParseDuration(s)
	if err != nil {
		return s
	}
	out := d.String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
}

// nextFireText is when a schedule fires next, relative and absolute:
// "in 3h05m (2026-11-28 02:00 UTC)"; "-" when it fires no more.
func nextFireText(now time.Time, t *time.Time) string {
	if t == nil {
		return "-"
	}
	return relTime(now, *t) + " (" + t.UTC().Format("2006-01-02 15:04 MST") + ")"
}

// statusOf is a schedule's status, and why it is paused.
func statusOf(s *apitype.ScheduleRead) string {
	if s.Status == runtype.SchedulePaused && s.PausedReason != "" {
		return string(s.Status) + " " + s.PausedReason
	}
	return string(s.Status)
}

// printSchedule prints a schedule for people.
func printSchedule(w io.Writer, s *apitype.ScheduleRead, now time.Time) {
	fmt.Fprintf(w, "schedule %s  agent %s  session %s\n", s.ScheduleID, s.Agent, s.SessionID)
	if s.Name != "" {
		fmt.Fprintf(w, "name       %s\n", s.Name)
	}
	if s.Instance != "" {
		fmt.Fprintf(w, "instance   %s\n", s.Instance)
	}
	fmt.Fprintf(w, "when       %s\n", whenText(&s.ScheduleSpec))
	fmt.Fprintf(w, "status     %s\n", statusOf(s))
	fmt.Fprintf(w, "next fire  %s\n", nextFireText(now, s.NextFireAt))
	fmt.Fprintf(w, "fires      %d so far, %d running, %d buffered, last %s\n", s.Fires, s.Running, s.Buffered, relTimeOf(now, s.LastFireAt))
	failures := strconv.Itoa(s.ConsecutiveFailures) + " in a row"
	if s.PauseAfterFailures > 0 {
		failures += fmt.Sprintf(" (pauses after %d)", s.PauseAfterFailures)
	}
	fmt.Fprintf(w, "failures   %s\n", failures)
	overlap := s.Overlap
	if overlap == "" {
		overlap = "skip"
	}
	policy := "overlap " + overlap
	if s.CatchupWindow != "" {
		policy += ", catch-up " + shortDuration(s.CatchupWindow)
	}
	fmt.Fprintf(w, "policy     %s\n", policy)
	var over []string
	if s.Model != "" {
		over = append(over, "model "+s.Model)
	}
	if len(s.Tools) > 0 {
		over = append(over, "tools "+strings.Join(s.Tools, ","))
	}
	if s.InactivityTimeout != "" {
		over = append(over, "inactivity "+shortDuration(s.InactivityTimeout))
	}
	if len(over) > 0 {
		fmt.Fprintf(w, "overrides  %s\n", strings.Join(over, ", "))
	}
	if s.PreRun != nil {
		fmt.Fprintf(w, "pre-run    %s\n", s.PreRun.Tool)
	}
	if s.Webhook != "" {
		fmt.Fprintf(w, "webhook    %s\n", s.Webhook)
	}
	fmt.Fprintf(w, "input      %s\n", oneLine(s.Input, 200))
}

func newSchedulesListCmd() *cobra.Command {
	var (
		f                       jsonStoreFlags
		agent, instance, status string
		limit                   int
	)
	cmd := &cobra.Command{
		Use:   "list [--agent NAME] [--instance NAME] [--status S] [--limit N] [--json]",
		Short: "List schedules with their next fire, running fires and failures",
		Long: `List the tenant's schedules, oldest first (list_schedules): on a terminal a table (SCHEDULE,
NAME, AGENT, WHEN, STATUS, NEXT FIRE in relative and absolute time, RUNNING, FAILURES in a
row); otherwise, or with --json, JSON Lines, one schedule per line as GET /v1/schedules lists
it. --status keeps one status: active, paused, deleted, or all (the default).` + scheduleExits,
		Example: `  agentrt schedules list --config agentrt.yaml
  agentrt schedules list --server http://127.0.0.1:7420 --status paused --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st := runtype.ScheduleStatus(status)
			switch st {
			case statusAll:
				st = ""
			case runtype.ScheduleActive, runtype.SchedulePaused, runtype.ScheduleDeleted:
			default:
				return usageErr("--status %q is not a schedule status: want active, paused, deleted or all", status)
			}
			if limit < 1 || limit > maxListLimit {
				return usageErr("invalid --limit %d: use 1 to %d", limit, maxListLimit)
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			l := newScheduleLister(cmd.OutOrStdout(), f.json, time.Now)
			ctx := commandContext(cmd)
			all, err := collect(limit, func(n int, cursor string) ([]apitype.ScheduleRead, string, error) {
				page, err := b.ListSchedules(ctx, &apitype.ListSchedulesParams{Agent: agent, Instance: instance, Status: st, Cursor: cursor, Limit: n})
				if err != nil {
					return nil, "", runtimeErr(err)
				}
				return page.Schedules, page.NextCursor, nil
			})
			if err != nil {
				return err
			}
			return l.print(all)
		},
	}
	f.register(cmd, "print JSON Lines even on a terminal")
	cmd.Flags().StringVar(&agent, "agent", "", "only the schedules of this agent")
	cmd.Flags().StringVar(&instance, "instance", "", "only the schedules of this named instance")
	cmd.Flags().StringVar(&status, "status", statusAll, "only the schedules in this status: active, paused, deleted or all")
	cmd.Flags().IntVar(&limit, "limit", 100, "list at most this many, oldest first (at most 1000)")
	return cmd
}

// newScheduleLister prints schedules; next fires are relative to now().
func newScheduleLister(w io.Writer, asJSON bool, now func() time.Time) *lister[apitype.ScheduleRead] {
	l := newLister(w, asJSON, []string{"SCHEDULE", "NAME", "AGENT", "WHEN", "STATUS", "NEXT FIRE", "RUNNING", "FAILURES"}, func(s *apitype.ScheduleRead) []string {
		return []string{s.ScheduleID, orDash(s.Name), s.Agent, whenText(&s.ScheduleSpec), statusOf(s), nextFireText(now(), s.NextFireAt),
			strconv.Itoa(s.Running), strconv.Itoa(s.ConsecutiveFailures)}
	})
	l.none, l.paint[4] = "no schedules", paintStatusWord
	return l
}

func newSchedulesShowCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "show SCHEDULE_ID [--json]",
		Short: "Show a schedule, its spec and its state",
		Long: `Show a schedule (get_schedule): when it fires, its status (and why it is paused), its next
fire, how many fires ran, run and wait, its failures in a row, its policies and overrides, and
its input. With --json, print it as GET /v1/schedules/{scheduleId} does.` + scheduleExits,
		Example: `  agentrt schedules show sch_01M7Z6EQH1EH35X9M20WK8S11G --config agentrt.yaml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "SCHEDULE_ID")
			if err != nil {
				return err
			}
			return scheduleCommand(cmd, &f, id, func(b backend) (*apitype.ScheduleRead, error) {
				return b.GetSchedule(commandContext(cmd), &apitype.ScheduleParams{ScheduleID: id})
			})
		},
	}
	f.register(cmd, "print the schedule as JSON")
	return cmd
}

// newSchedulePauseCmd is pause or resume.
func newSchedulePauseCmd(verb string) *cobra.Command {
	var (
		f      jsonStoreFlags
		reason string
	)
	short, long := "Stop a schedule firing", `Pause a schedule (pause_schedule): it fires nothing until resumed; fires that run go on.
--reason is kept in its history.`
	if verb == "resume" {
		short, long = "Make a paused schedule fire again from now", `Resume a paused schedule (resume_schedule): it fires again from now. The fire times it was
paused over are not run, nor recorded missed. --reason is kept in its history.`
	}
	cmd := &cobra.Command{
		Use:     verb + " SCHEDULE_ID [--reason TEXT] [--json]",
		Short:   short,
		Long:    long + " Prints the schedule; with --json, as the API answers it." + scheduleExits,
		Example: "  agentrt schedules " + verb + " sch_01M7Z6EQH1EH35X9M20WK8S11G --reason \"maintenance window\" --config agentrt.yaml",
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "SCHEDULE_ID")
			if err != nil {
				return err
			}
			if len(reason) > apitype.MaxScheduleNameBytes {
				return usageErr("--reason is %d bytes; a reason may be at most %d", len(reason), apitype.MaxScheduleNameBytes)
			}
			return scheduleCommand(cmd, &f, id, func(b backend) (*apitype.ScheduleRead, error) {
				p := &apitype.PauseScheduleParams{ScheduleID: id, Reason: reason}
				if verb == "resume" {
					return b.ResumeSchedule(commandContext(cmd), p)
				}
				return b.PauseSchedule(commandContext(cmd), p)
			})
		},
	}
	f.register(cmd, "print the schedule as JSON")
	cmd.Flags().StringVar(&reason, "reason", "", "why, kept in the schedule's history")
	return cmd
}

func newSchedulesDeleteCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "delete SCHEDULE_ID [--json]",
		Short: "End a schedule; its history stays",
		Long: `Delete a schedule (delete_schedule): it never fires again; fires that run go on, and its
history stays readable (agentrt schedules history). Prints the schedule, deleted.` + scheduleExits,
		Example: `  agentrt schedules delete sch_01M7Z6EQH1EH35X9M20WK8S11G --config agentrt.yaml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "SCHEDULE_ID")
			if err != nil {
				return err
			}
			return scheduleCommand(cmd, &f, id, func(b backend) (*apitype.ScheduleRead, error) {
				return b.DeleteSchedule(commandContext(cmd), &apitype.ScheduleParams{ScheduleID: id})
			})
		},
	}
	f.register(cmd, "print the schedule as JSON")
	return cmd
}

// fireCommand runs do on the backend and prints the fire it answers.
func fireCommand(cmd *cobra.Command, f *jsonStoreFlags, kind, id string, do func(backend) (*apitype.FireRead, error)) error {
	b, stop, err := f.backend(cmd, false)
	if err != nil {
		return err
	}
	defer stop()
	fire, err := do(b)
	if err != nil {
		return controlErr(kind, id, err)
	}
	out := cmd.OutOrStdout()
	if f.json {
		return writeIndented(out, fire)
	}
	printFire(out, fire)
	return nil
}

// printFire prints a fire for people.
func printFire(w io.Writer, f *apitype.FireRead) {
	kind := "fire"
	if f.Manual {
		kind = "manual fire"
	}
	fmt.Fprintf(w, "%s %s  schedule %s  at %s\n", kind, f.FireID, f.ScheduleID, timeText(f.FireAt))
	fmt.Fprintf(w, "status     %s\n", fireStatusText(f))
	if f.TaskID != "" {
		fmt.Fprintf(w, "task       %s  request %s\n", f.TaskID, orDash(f.TurnID))
	}
	if f.Failure != nil {
		fmt.Fprintf(w, "failure    %s: %s\n", f.Failure.Kind, oneLine(f.Failure.Message, 200))
	}
	if f.Delivery != nil {
		fmt.Fprintf(w, "delivery   %s\n", deliveryText(f.Delivery))
	}
}

// timeText is t in RFC 3339, "-" without it.
func timeText(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// fireStatusText is a fire's status and reason ("missed outside_catch_up
// ×3").
func fireStatusText(f *apitype.FireRead) string {
	s := string(f.Status)
	if f.Reason != "" {
		s += " " + f.Reason
	}
	if f.MissedCount > 1 {
		s += " ×" + strconv.Itoa(f.MissedCount)
	}
	return s
}

// deliveryText is a delivery's state: "failed to ops after 5 attempts:
// 500 Internal Server Error", "delivered to ops", "pending to ops".
func deliveryText(d *apitype.DeliveryRead) string {
	s := string(d.Status) + " to " + d.Webhook
	if d.Attempts > 0 {
		s += " after " + plural(d.Attempts, "attempt")
	}
	if d.LastError != "" && d.Status != runtype.DeliveryDelivered {
		s += ": " + oneLine(d.LastError, 120)
	}
	return s
}

func newSchedulesTriggerCmd() *cobra.Command {
	var (
		f   jsonStoreFlags
		key string
	)
	cmd := &cobra.Command{
		Use:   "trigger SCHEDULE_ID [--idempotency-key K] [--json]",
		Short: "Fire a schedule now",
		Long: `Fire a schedule now (trigger_schedule), whatever its spec says: a manual fire, recorded in its
history. The overlap policy still applies (a fire may be buffered or skipped), and a paused
schedule fires too. Prints the fire and returns; whichever agentrt process runs the data
directory's work runs it. With --json, print the fire as the API answers it.` + scheduleExits,
		Example: `  agentrt schedules trigger sch_01M7Z6EQH1EH35X9M20WK8S11G --config agentrt.yaml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "SCHEDULE_ID")
			if err != nil {
				return err
			}
			return fireCommand(cmd, &f, "schedule", id, func(b backend) (*apitype.FireRead, error) {
				return b.TriggerSchedule(commandContext(cmd), &apitype.TriggerScheduleParams{ScheduleID: id, IdempotencyKey: key})
			})
		},
	}
	f.register(cmd, "print the fire as JSON")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "make the request idempotent: asking again returns the same fire")
	return cmd
}

func newSchedulesRetryDeliveryCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "retry-delivery FIRE_ID [--json]",
		Short: "Deliver a fire's result to its webhook again after the delivery failed",
		Long: `Retry a fire's delivery (retry_delivery): a fire whose result could not be delivered to its
schedule's webhook (delivery failed, see agentrt schedules history) is delivered again, its
attempts starting anew. A fire whose delivery did not fail is a conflict (exit 1). Prints the
fire; with --json, as the API answers it.` + scheduleExits,
		Example: `  agentrt schedules retry-delivery fire_01M7Z6EQH1EH35X9M20WK8S11H --config agentrt.yaml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "FIRE_ID")
			if err != nil {
				return err
			}
			return fireCommand(cmd, &f, "fire", id, func(b backend) (*apitype.FireRead, error) {
				return b.RetryDelivery(commandContext(cmd), &apitype.FireParams{FireID: id})
			})
		},
	}
	f.register(cmd, "print the fire as JSON")
	return cmd
}

func newSchedulesHistoryCmd() *cobra.Command {
	var (
		f      jsonStoreFlags
		status string
		limit  int
	)
	cmd := &cobra.Command{
		Use:   "history SCHEDULE_ID [--status S] [--limit N] [--json]",
		Short: "List a schedule's fires: when, what became of each, its task and delivery",
		Long: `List a schedule's fires, newest first (list_fires): every time it came due or was triggered,
and what became of it — running, buffered, skipped (and why: overlap, pre_run_skip, paused),
missed (outside_catch_up, and how many fire times), completed, failed or cancelled — with its
task and the state of its delivery. On a terminal a table (FIRE, FIRE TIME, STATUS, REASON,
TASK, DELIVERY); otherwise, or with --json, JSON Lines, one fire per line as
GET /v1/schedules/{scheduleId}/fires lists it. --status keeps one status.` + scheduleExits,
		Example: `  agentrt schedules history sch_01M7Z6EQH1EH35X9M20WK8S11G --config agentrt.yaml
  agentrt schedules history sch_01M7Z6EQH1EH35X9M20WK8S11G --status failed --json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "SCHEDULE_ID")
			if err != nil {
				return err
			}
			st := runtype.FireStatus(status)
			switch st {
			case statusAll:
				st = ""
			case runtype.FireRunning, runtype.FireBuffered, runtype.FireSkipped, runtype.FireMissed,
				runtype.FireCompleted, runtype.FireFailed, runtype.FireCancelled:
			default:
				return usageErr("--status %q is not a fire status: want running, buffered, skipped, missed, completed, failed, cancelled or all", status)
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
			all, err := collect(limit, func(n int, cursor string) ([]apitype.FireRead, string, error) {
				page, err := b.ListFires(ctx, &apitype.ListFiresParams{ScheduleID: id, Status: st, Cursor: cursor, Limit: n})
				if err != nil {
					return nil, "", controlErr("schedule", id, err)
				}
				return page.Fires, page.NextCursor, nil
			})
			if err != nil {
				return err
			}
			return newFireLister(cmd.OutOrStdout(), f.json).print(all)
		},
	}
	f.register(cmd, "print JSON Lines even on a terminal")
	cmd.Flags().StringVar(&status, "status", statusAll, "only fires in this status: running, buffered, skipped, missed, completed, failed, cancelled or all")
	cmd.Flags().IntVar(&limit, "limit", 50, "list at most this many, newest first (at most 1000)")
	return cmd
}

func newFireLister(w io.Writer, asJSON bool) *lister[apitype.FireRead] {
	l := newLister(w, asJSON, []string{"FIRE", "FIRE TIME", "STATUS", "REASON", "TASK", "DELIVERY"}, func(f *apitype.FireRead) []string {
		at := timeText(f.FireAt)
		if f.Manual {
			at += " (manual)"
		}
		reason := orDash(f.Reason)
		if f.MissedCount > 1 {
			reason += " ×" + strconv.Itoa(f.MissedCount)
		}
		if f.Failure != nil {
			reason = string(f.Failure.Kind) + ": " + oneLine(f.Failure.Message, 60)
		}
		delivery := "-"
		if f.Delivery != nil {
			delivery = deliveryText(f.Delivery)
		}
		return []string{f.FireID, at, string(f.Status), reason, orDash(f.TaskID), delivery}
	})
	l.none, l.paint[2] = "no fires", paintStatus
	return l
}
