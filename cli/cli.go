// Package cli implements the agentrt command line: run (an agent turn
// in-process, with a readable timeline or JSON Lines), serve (the HTTP
// daemon), approvals (list, watch and answer the tool calls the policy
// asks about), tasks (list tasks; show one with its attempts; cancel,
// pause, resume, retry it), queue (list a thread's queued turns, remove
// or promote one), requests (list, tail), sessions (list), outputs (fetch
// a stored output by its ref; alias blobs), policy (explain a decision,
// lint rule files), verify (a session's evidence receipts), replay (re-run
// a recorded request under today's policy and tools and show what decides
// differently), doctor (configuration, providers and keys; --probe calls
// them), health (a data directory's store, queue, approvals and stuck
// runs), bench (the agent-loop benchmark), migrate-store (copy a data
// directory's SQLite store into PostgreSQL) and version. cmd/agentrt only
// calls Main.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/proc"
)

// Exit codes of agentrt commands.
const (
	ExitOK     = 0 // completed
	ExitFailed = 1 // the turn failed or was cancelled; or an operational error
	ExitUsage  = 2 // bad flags, arguments or configuration
	ExitParked = 3 // the turn waits for a permission decision, input or a raised budget
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// Main runs the command line and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return MainContext(context.Background(), args, stdin, stdout, stderr)
}

// MainContext is Main under ctx: ending ctx ends a command that follows
// events (watch, tail) as an interrupt would.
func MainContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Hooks, command tools and the sandbox's helpers inherit nothing of
	// what this process inherited (the helper marks it again for every
	// sandboxed command, so a failure here leaves those alone).
	_ = proc.CloseInheritedOnExec()
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(singleDashArgs(root, args))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintln(stderr, "agentrt:", strings.TrimSpace(ee.err.Error()))
		}
		return ee.code
	}
	// cobra's own errors: unknown command or flag.
	fmt.Fprintln(stderr, "agentrt:", err)
	return ExitUsage
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "agentrt",
		Short:         "agentrt runs governed, durable AI agents",
		Long:          "agentrt runs LLM agent loops (model and tools) and records every step as a durable,\ninspectable Agent Runtime event. See docs/cli.md.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version prints what agentrt version does.
	root.Version = versionLine()
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRunCmd(), newServeCmd(), newApprovalsCmd(), newTasksCmd(), newQueueCmd(), newThreadsCmd(), newSubagentsCmd(), newJobsCmd(), newSchedulesCmd(), newInstancesCmd(), newWorkflowsCmd(), newPolicyCmd(),
		newVerifyCmd(), newExportCmd(), newReplayCmd(), newOverviewCmd(), newRequestsCmd(), newInspectCmd(), newSessionsCmd(), newOutputsCmd(), newDoctorCmd(), newMCPCmd(), newHealthCmd(), newBenchCmd(), newTokenCmd(), newMigrateStoreCmd(), newVersionCmd())
	registerGlobalFlags(root)
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error { return refuseServer(cmd) }
	for _, c := range root.Commands() {
		switch c.Name() {
		case "run", "serve", "policy", "doctor", "bench", "mcp", "migrate-store":
			c.Annotations = localOnly()
		}
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr("%v (see %s --help)", err, c.CommandPath())
	})
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the agentrt version (as agentrt --version does)",
		Long: `Print the module version agentrt was built from ("devel" for a build from a checkout),
the version control revision and time of that checkout when the build recorded them (with
"modified" when it had uncommitted changes), the Go version, and the platform.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return nil
		},
	}
}

// versionLine is what agentrt version and agentrt --version print:
// "agentrt v0.5.0 (rev 3083c69a1b2c, 2026-11-20T10:00:00Z, modified) go1.26.0 linux/amd64".
func versionLine() string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(agentrt.Version(), bi)
}

// versionOf is the version line of module version v, with the version
// control facts the build bi (nil: none) recorded, if any.
func versionOf(v string, bi *debug.BuildInfo) string {
	line := "agentrt " + v
	var vcs []string
	if bi != nil {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision":
				vcs = append(vcs, "rev "+s.Value[:min(len(s.Value), 12)])
			case s.Key == "vcs.time":
				vcs = append(vcs, s.Value)
			case s.Key == "vcs.modified" && s.Value == "true":
				vcs = append(vcs, "modified")
			}
		}
	}
	if len(vcs) > 0 {
		line += " (" + strings.Join(vcs, ", ") + ")"
	}
	return line + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}
