package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

func newRequestsShowCmd() *cobra.Command {
	var f jsonStoreFlags
	cmd := &cobra.Command{
		Use:   "show REQUEST_ID [--json]",
		Short: "Show the whole timeline of a request: hops, decisions, tool calls, approvals, costs",
		Long: `Show a past (or running) request — a turn — as the timeline agentrt run prints: every model
hop with its text, each policy decision with the rule that made it, each tool call with its
input and output previews, sandbox facts, hooks, redactions, costs, budgets, the approvals
with who answered them, and how the request ended. When the request delegated (subagents, a
job), the delegation tree of its task follows: each node indented under its parent with its
kind, agent, status, depth, pending approvals and usage. With --json, print the request's
events as JSON Lines instead, as GET /v1/events?turnId=ID&follow=false sends them.

The request comes from the config's data directory, or with --server from a daemon, which
shows only its token's tenant's requests. On a terminal the timeline is coloured and fitted
to its width (NO_COLOR turns colour off).

Exit codes: 0 shown, 1 no such request or the store could not be read, 2 usage or
configuration error.`,
		Example: `  agentrt requests show turn_01M7Z6E98T14HZ9P6EVS3DAV37 --config agentrt.yaml
  agentrt requests show turn_01M7Z6E98T14HZ9P6EVS3DAV37 --server http://127.0.0.1:7420 --json | jq -c '[.type, .payload.toolName]'`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := oneID(cmd, args, "REQUEST_ID")
			if err != nil {
				return err
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			out := cmd.OutOrStdout()
			return showRequest(commandContext(cmd), out, b, id, f.json, timelineOptionsFor(out, false))
		},
	}
	f.register(cmd, "print the request's events as JSON Lines")
	return cmd
}

// showRequest prints request id's timeline (or its events, asJSON) from
// b: everything of it committed so far.
func showRequest(ctx context.Context, out io.Writer, b backend, id string, asJSON bool, o timelineOptions) error {
	r, err := b.GetRequest(ctx, runtype.Owner{}, id)
	if err != nil {
		return controlErr("request", id, err)
	}
	events, err := b.Events(ctx, &apitype.SubscribeParams{TurnID: id})
	if err != nil {
		return runtimeErr(err)
	}
	defer events.Close()
	var t *timeline
	if !asJSON {
		t = newTimeline(out, o)
		defer func() {
			if t != nil {
				t.close()
			}
		}()
		t.header(r.TurnID, r.Agent, r.SessionID, "")
		if r.CreatedAt != nil {
			t.prose("submitted ", r.CreatedAt.UTC().Format(time.DateTime+" MST"))
		}
		if r.InputPreview != "" {
			t.prose("input:  ", r.InputPreview)
		}
	}
	var taskID string // the request's task, the root of its delegation tree
	delegated := false
	for {
		e, err := events.TryNext(ctx)
		if err != nil {
			return runtimeErr(fmt.Errorf("reading the events of request %s: %w", id, err))
		}
		if e == nil {
			break
		}
		if taskID == "" && e.TurnID == id {
			taskID = e.TaskID
		}
		delegated = delegated || e.Type == event.TaskDelegated
		if asJSON {
			if err := writeEvent(out, e); err != nil {
				return err
			}
			continue
		}
		t.event(e)
	}
	if t == nil {
		return nil
	}
	t.unfinished(r.Status, string(r.StatusReason))
	t.close()
	t = nil
	if !delegated || taskID == "" {
		return nil
	}
	tree, err := delegationTree(ctx, b, taskID)
	if err != nil {
		return runtimeErr(fmt.Errorf("reading the delegation tree of request %s: %w", id, err))
	}
	if tree != nil {
		printTree(out, tree, o.style)
	}
	return nil
}
