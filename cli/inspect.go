package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/runtype"
)

func newInspectCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Look inside what a request did: the exact context a model call saw",
	}
	cmd.AddCommand(newInspectContextCmd())
	return cmd
}

type inspectContextFlags struct {
	jsonStoreFlags
	request string
	hop     int
}

func newInspectContextCmd() *cobra.Command {
	var f inspectContextFlags
	cmd := &cobra.Command{
		Use:   "context --request REQUEST_ID [--hop H] [--json]",
		Short: "Print the exact context a model call of a request saw, rebuilt from the log and verified",
		Long: `Print the context one model call of a request (a turn) sent: the system prompt, the tool
list and the thread's messages in the order the model saw them, whole. agentrt rebuilds it from
the log — the blobs and message ranges the call's model.requested event names — and checks it
against the fingerprint the call recorded (docs/context.md): the hash of the messages,
the system prompt and the tool list must be the recorded one, and every blob and message
must still be there.

--hop picks the model call (1 is the request's first; the default is its last); of a hop that
was retried, the last attempt is shown. With --json, print the view as
GET /v1/requests/{turnId}/context answers it.

The request comes from the config's data directory, or with --server from a daemon, which
shows only its token's tenant's requests.

Exit codes: 0 shown and verified, 1 the context does not verify (the reason is printed), no
such request or the store could not be read, 2 usage or configuration error (a hop the
request made no model call at).`,
		Example: `  agentrt inspect context --request turn_01M7Z6E98T14HZ9P6EVS3DAV37 --config agentrt.yaml
  agentrt inspect context --request turn_01M7Z6E98T14HZ9P6EVS3DAV37 --hop 1 --server http://127.0.0.1:7420 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.request == "" {
				return usageErr("--request is required: the request (turn) whose model call to show")
			}
			if f.hop < 0 {
				return usageErr("--hop must be a hop number (1 is the first model call), not %d", f.hop)
			}
			b, stop, err := f.backend(cmd, false)
			if err != nil {
				return err
			}
			defer stop()
			v, err := b.GetContext(commandContext(cmd), runtype.Owner{}, f.request, f.hop)
			if err != nil {
				return controlErr("request", f.request, err)
			}
			out := cmd.OutOrStdout()
			if f.json {
				if err := printJSON(out, v); err != nil {
					return err
				}
			} else {
				printContext(out, v)
			}
			if !v.Verified {
				return &exitError{code: ExitFailed, err: fmt.Errorf("the context of request %s at hop %d does not verify: %s", v.RequestID, v.Hop, v.Reason)}
			}
			return nil
		},
	}
	f.register(cmd, "print the context as JSON")
	cmd.Flags().StringVar(&f.request, "request", "", "the request (turn) id")
	cmd.Flags().IntVar(&f.hop, "hop", 0, "the model call's hop (default: the request's last)")
	return cmd
}

// printContext prints a model call's context for people: where it comes
// from, whether it verifies, then the system prompt, the tools and every
// message whole.
func printContext(w io.Writer, v *apitype.ContextView) {
	fp := &v.Fingerprint
	hops := make([]string, len(v.Hops))
	for i, h := range v.Hops {
		hops[i] = fmt.Sprint(h)
	}
	fmt.Fprintf(w, "request %s  hop %d of %s  attempt %d\n", v.RequestID, v.Hop, strings.Join(hops, ", "), v.Attempt)
	line := fmt.Sprintf("  session %s  thread %s  model %s/%s", v.SessionID, v.ThreadID, v.Provider.Kind, v.Provider.Model)
	if v.RequestedAt != nil {
		line += "  at " + v.RequestedAt.UTC().Format(time.DateTime+" MST")
	}
	fmt.Fprintln(w, line)
	ranges := make([]string, len(fp.Messages))
	for i, r := range fp.Messages {
		ranges[i] = fmt.Sprintf("%d–%d", r[0], r[1])
		if r[0] == r[1] {
			ranges[i] = fmt.Sprint(r[0])
		}
	}
	fmt.Fprintf(w, "  %d messages (seqs %s), about %d tokens\n", fp.MessageCount, strings.Join(ranges, ", "), fp.EstimatedTokens)
	fmt.Fprintf(w, "  fingerprint %s\n", fp.Hash)
	if v.Verified {
		fmt.Fprintln(w, "  ✔ verified: the log holds exactly what the model was sent")
	} else {
		fmt.Fprintf(w, "  ✘ NOT verified: %s\n", v.Reason)
	}
	fmt.Fprintf(w, "\nsystem prompt (%s)\n", fp.InstructionsRef)
	fmt.Fprintln(w, indentLines(v.Instructions, "  "))
	fmt.Fprintf(w, "\ntools (%s)\n", fp.ToolsRef)
	for _, t := range v.Tools {
		fmt.Fprintf(w, "  %s", t.Name)
		if t.Description != "" {
			fmt.Fprintf(w, " — %s", oneLine(t.Description, 100))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "\nmessages")
	for _, m := range v.Messages {
		head := fmt.Sprintf("#%d %s", m.Seq, m.Role)
		switch {
		case m.Boundary != nil:
			head += fmt.Sprintf(" [%s %s of seqs %d–%d]", m.Boundary.Kind, m.Boundary.ID, m.Boundary.FromSeq, m.Boundary.ThroughSeq)
		case m.ToolCallID != "" && m.IsError:
			head += " (" + m.ToolCallID + ", error)"
		case m.ToolCallID != "":
			head += " (" + m.ToolCallID + ")"
		}
		fmt.Fprintln(w, head)
		if m.Content != "" {
			fmt.Fprintln(w, indentLines(m.Content, "    "))
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(w, "    → %s %s %s\n", c.Name, c.ID, c.Arguments)
		}
	}
}

// indentLines prefixes every line of s.
func indentLines(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}
