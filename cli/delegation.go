package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

// This file holds what the read commands show of delegation: the tree
// of a request's task (requests show) and the delegated agents a parked
// request waits for (overview).

// delegationTree reads the delegation tree under taskID; nil when the
// task has no children, or the server predates the tree (404).
func delegationTree(ctx context.Context, b backend, taskID string) (*apitype.DelegationNode, error) {
	tree, err := b.DelegationTree(ctx, runtype.Owner{}, taskID)
	switch {
	case errors.Is(err, apitype.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case len(tree.Children) == 0:
		return nil, nil
	}
	return tree, nil
}

// printTree prints a delegation tree as a table, each node indented
// under its parent: kind, agent, status, depth, pending approvals,
// usage and task.
func printTree(w io.Writer, root *apitype.DelegationNode, st style) {
	t := newTable("NODE", "AGENT", "STATUS", "DEPTH", "PENDING", "USAGE", "TASK")
	t.paint[2] = func(s string) string { return st.status(s) }
	var walk func(n *apitype.DelegationNode, level int)
	walk = func(n *apitype.DelegationNode, level int) {
		t.row(strings.Repeat("  ", level)+n.Kind, orDash(n.Agent), statusText(n.Status, string(n.Reason)),
			strconv.Itoa(n.Depth), strconv.Itoa(n.PendingActions), usageText(n.Usage), n.TaskID)
		for i := range n.Children {
			walk(&n.Children[i], level+1)
		}
	}
	walk(root, 0)
	fmt.Fprintf(w, "delegation  %s\n", plural(countNodes(root)-1, "delegated task"))
	t.write(w, "  ", st)
}

func countNodes(n *apitype.DelegationNode) int {
	c := 1
	for i := range n.Children {
		c += countNodes(&n.Children[i])
	}
	return c
}

// delegateOverview is a delegated agent a parked request waits for: the
// deepest open tasks under it, by agent and kind.
type delegateOverview struct {
	Agent string `json:"agent"`
	// Kind is subagent, job or item.
	Kind string `json:"kind"`
	// Tasks counts its open tasks the request waits on.
	Tasks int `json:"tasks"`
}

// waitingFor lists the delegated agents under root that have not
// settled: of each open child, its open descendants deepest down (a
// child that itself waits for children is not what holds the request),
// grouped by agent and kind in tree order.
func waitingFor(root *apitype.DelegationNode) []delegateOverview {
	var out []delegateOverview
	add := func(n *apitype.DelegationNode) {
		for i := range out {
			if out[i].Agent == n.Agent && out[i].Kind == n.Kind {
				out[i].Tasks++
				return
			}
		}
		out = append(out, delegateOverview{Agent: n.Agent, Kind: n.Kind, Tasks: 1})
	}
	for _, n := range root.Waiting() {
		add(n)
	}
	return out
}

// delegatesText is "lookup, triage ×3 items".
func delegatesText(ds []delegateOverview) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.Agent
		if d.Kind == apitype.NodeItem {
			parts[i] += " ×" + strconv.Itoa(d.Tasks) + " items"
		} else if d.Tasks > 1 {
			parts[i] += " ×" + strconv.Itoa(d.Tasks)
		}
	}
	return strings.Join(parts, ", ")
}
