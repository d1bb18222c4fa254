package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
)

// This file holds the named instance commands: list and show instances,
// read and set an instance's state, and send an event to one. See
// docs/instances.md.

func newInstancesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "instances",
		Short: "List and show named instances, read and set their state, send them events",
		Long: `Commands on named instances: an agent bound to a stable name of the tenant (case/4711) with
a session of its own and a durable JSON state. In the config's data directory or (with
--server) on a daemon:

  list   instances with their agent, state version and last wake-up
  show   an instance, its session and its state
  state  an instance's state; with --set, replace it
  send   post an event to an instance (the first, with --agent, creates it)

See docs/instances.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newInstancesListCmd(), newInstancesShowCmd(), newInstancesStateCmd(), newInstancesSendCmd())
	return cmd
}

const instanceExits = `

Exit codes: 0 done, 1 no such instance, a conflict (a stale --expect-version), or the store
or server could not be read; 2 usage or configuration error (a refused value).`

func newInstancesListCmd() *cobra.Command {
	var (
		f     jsonStoreFlags
		agent string
		limit int
	)
	cmd := &cobra.Command{
		Use:   "list [--agent NAME] [--limit N] [--json]",
		Short: "List named instances with their agent, state version and last wake-up",
		Long: `List the tenant's named instances by id, oldest first (list_instances): on a terminal a table
(INSTANCE, AGENT, STATE VERSION, LAST WOKEN, SESSION); otherwise, or with --json, JSON Lines,
one instance per line as GET /v1/instances lists it.` + instanceExits,
		Example: `  agentrt instances list --config examples/support/case.yaml
  agentrt instances list --server http://127.0.0.1:7420 --agent case --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > maxListLimit {
				return usageErr("invalid --limit %d: use 1 to %d", limit, maxListLimit)
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			ctx := commandContext(cmd)
			all, err := collect(limit, func(n int, cursor string) ([]apitype.InstanceRead, string, error) {
				page, err := b.ListInstances(ctx, &apitype.ListInstancesParams{Agent: agent, AfterID: cursor, Limit: n})
				if err != nil {
					return nil, "", runtimeErr(err)
				}
				return page.Instances, page.NextAfterID, nil
			})
			if err != nil {
				return err
			}
			return newInstanceLister(cmd.OutOrStdout(), f.json, time.Now).print(all)
		},
	}
	f.register(cmd, "print JSON Lines even on a terminal")
	cmd.Flags().StringVar(&agent, "agent", "", "only the instances of this agent")
	cmd.Flags().IntVar(&limit, "limit", 100, "list at most this many, oldest first (at most 1000)")
	return cmd
}

func newInstanceLister(w io.Writer, asJSON bool, now func() time.Time) *lister[apitype.InstanceRead] {
	l := newLister(w, asJSON, []string{"INSTANCE", "AGENT", "STATE VERSION", "LAST WOKEN", "SESSION"}, func(in *apitype.InstanceRead) []string {
		return []string{in.Name, in.Agent, strconv.FormatInt(in.StateVersion, 10), relTimeOf(now(), in.LastWokenAt), in.SessionID}
	})
	l.none = "no instances"
	return l
}

// oneName reads the one instance name a command takes.
func oneName(cmd *cobra.Command, args []string) (string, error) {
	name, err := oneID(cmd, args, "NAME")
	if err == nil && name == "" {
		err = usageErr("%s: the instance's name is empty", cmd.CommandPath())
	}
	return name, err
}

func newInstancesShowCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "show NAME [--json]",
		Short: "Show a named instance, its session and its state",
		Long: `Show a named instance (get_instance): its id, agent and session, its state with its state
and schema versions, and when it was made, changed and last woken. With --json, print it as
GET /v1/instances/{name} does.` + instanceExits,
		Example: `  agentrt instances show case/4711 --config examples/support/case.yaml`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := oneName(cmd, args)
			if err != nil {
				return err
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			in, err := b.GetInstance(commandContext(cmd), &apitype.GetInstanceParams{Name: name})
			if err != nil {
				return controlErr("instance", name, err)
			}
			out := cmd.OutOrStdout()
			if f.json {
				return writeIndented(out, in)
			}
			now := time.Now()
			fmt.Fprintf(out, "instance %s  agent %s  session %s\n", in.Name, in.Agent, in.SessionID)
			fmt.Fprintf(out, "id          %s\n", in.InstanceID)
			fmt.Fprintf(out, "created     %s\n", relTime(now, in.CreatedAt))
			fmt.Fprintf(out, "updated     %s\n", relTime(now, in.UpdatedAt))
			fmt.Fprintf(out, "last woken  %s\n", relTimeOf(now, in.LastWokenAt))
			printState(out, &apitype.InstanceState{State: in.State, StateVersion: in.StateVersion, SchemaVersion: in.SchemaVersion})
			return nil
		},
	}
	f.register(cmd, "print the instance as JSON")
	return cmd
}

// printState prints a state for people: its versions, then the state
// indented.
func printState(w io.Writer, st *apitype.InstanceState) {
	fmt.Fprintf(w, "state       version %d, schema version %d\n", st.StateVersion, st.SchemaVersion)
	var v any
	if json.Unmarshal(st.State, &v) != nil {
		fmt.Fprintf(w, "%s\n", st.State)
		return
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

func newInstancesStateCmd() *cobra.Command {
	var (
		f      jsonStoreFlags
		set    string
		expect int64
	)
	cmd := &cobra.Command{
		Use:   "state NAME [--set JSON [--expect-version N]] [--json]",
		Short: "Print a named instance's state; with --set, replace it",
		Long: `Print a named instance's state and its versions (get_instance_state). With --set, replace the
state with the JSON object given, which must match the agent's state schema
(set_instance_state; recorded as a change by the API), and print the new one. With
--expect-version, the change is made only if the state is still at that version: another
version exits 1 and changes nothing (read it again and retry). With --json, print
{"state", "stateVersion", "schemaVersion"} as the API answers it.` + instanceExits,
		Example: `  agentrt instances state case/4711 --config examples/support/case.yaml
  agentrt instances state case/4711 --set '{"status": "closed", "notes": []}' --expect-version 3 --config examples/support/case.yaml`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := oneName(cmd, args)
			if err != nil {
				return err
			}
			expected := cmd.Flags().Changed("expect-version")
			switch {
			case expected && set == "":
				return usageErr("--expect-version makes --set conditional; without --set it means nothing")
			case expected && expect < 0:
				return usageErr("--expect-version %d is negative", expect)
			case set != "" && !jsonObject(set):
				return usageErr("--set is no JSON object: %s", oneLine(set, 60))
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			ctx := commandContext(cmd)
			var st *apitype.InstanceState
			if set == "" {
				st, err = b.GetInstanceState(ctx, &apitype.GetInstanceParams{Name: name})
			} else {
				p := &apitype.SetInstanceStateParams{Name: name, State: json.RawMessage(set)}
				if expected {
					p.ExpectedStateVersion = &expect
				}
				st, err = b.SetInstanceState(ctx, p)
			}
			if err != nil {
				return controlErr("instance", name, err)
			}
			out := cmd.OutOrStdout()
			if f.json {
				return writeIndented(out, st)
			}
			printState(out, st)
			return nil
		},
	}
	f.register(cmd, "print the state as JSON")
	cmd.Flags().StringVar(&set, "set", "", "replace the state with this JSON object")
	cmd.Flags().Int64Var(&expect, "expect-version", 0, "set only if the state is at this version")
	return cmd
}

func newInstancesSendCmd() *cobra.Command {
	var (
		f                     jsonStoreFlags
		typ, data, agent, key string
	)
	cmd := &cobra.Command{
		Use:   "send NAME --type TYPE [--data JSON] [--agent NAME] [--idempotency-key K] [--json]",
		Short: "Post an event to a named instance",
		Long: `Post an event to a named instance (send_instance_event): a turn on the instance's session says
which event arrived (--type) with its data (--data, JSON), queued behind a turn that runs.
The first event to a name creates the instance: --agent names its agent (later, --agent may
be left out; another agent is refused). Prints the instance and the request the event
started, and returns; whichever agentrt process runs the data directory's work runs it
(agentrt requests show REQUEST follows it). With --json, print the answer as the API does.` + instanceExits,
		Example: `  agentrt instances send case/4711 --agent case --type email.received --data '{"from": "ada@example.com"}' --config examples/support/case.yaml
  agentrt instances send case/4711 --type customer.replied --server http://127.0.0.1:7420`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := oneName(cmd, args)
			if err != nil {
				return err
			}
			switch {
			case typ == "":
				return usageErr("--type is required: say which event arrived")
			case data != "" && !json.Valid([]byte(data)):
				return usageErr("--data is no JSON value: %s", oneLine(data, 60))
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			p := &apitype.SendInstanceEventParams{Name: name, Agent: agent, Type: typ, IdempotencyKey: key}
			if data != "" {
				p.Data = json.RawMessage(data)
			}
			res, err := b.SendInstanceEvent(commandContext(cmd), p)
			switch {
			case errors.Is(err, apitype.ErrNotFound) && agent == "":
				return &exitError{code: ExitFailed, err: fmt.Errorf("no instance %s: the first event to an instance names its agent (--agent)", name)}
			case err != nil:
				return controlErr("instance", name, err)
			}
			out := cmd.OutOrStdout()
			if f.json {
				return writeIndented(out, res)
			}
			fmt.Fprintf(out, "event %s sent to instance %s (agent %s, session %s)\n", typ, res.Instance.Name, res.Instance.Agent, res.Instance.SessionID)
			fmt.Fprintf(out, "request %s  task %s\n", res.TurnID, res.TaskID)
			return nil
		},
	}
	f.register(cmd, "print the answer as JSON")
	cmd.Flags().StringVar(&typ, "type", "", "the event's type (required)")
	cmd.Flags().StringVar(&data, "data", "", "the event's data (JSON)")
	cmd.Flags().StringVar(&agent, "agent", "", "the instance's agent: required when the event creates the instance")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "make the request idempotent: sending again returns the same request")
	return cmd
}
