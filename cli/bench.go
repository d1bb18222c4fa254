package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/bench"
)

// processStart approximates when the process started, for setup_s.
var processStart = time.Now()

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run benchmarks",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "loop -variant mem|sqlite|pg -s 1000 -t 5 -c 1 -w 20 [-dir PARENT_TMP] [-dsn DSN]",
		Short: "Run the agent-loop benchmark workload and print one RESULT line",
		Long: `Run the agent-loop workload (docs/benchmarks.md) on the real runtime: S sessions, each one
user message, T echo tool calls and a final answer from a stateless scripted model,
C sessions in flight, after W warm-up sessions. Prints exactly one line:
RESULT {"peer":"agentrt","variant":…,"steps_per_s":…,"cpu_us_per_step":…}
and exits non-zero when verification fails.`,
		// The workload contract uses single-dash long flags (-variant), which
		// the standard library's flag package parses; cobra's would not.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			fs := flag.NewFlagSet("bench loop", flag.ContinueOnError)
			fs.SetOutput(cmd.ErrOrStderr())
			o := bench.Options{ProcessStart: processStart}
			fs.StringVar(&o.Variant, "variant", "mem", "mem, sqlite or pg")
			fs.IntVar(&o.S, "s", 1000, "sessions measured")
			fs.IntVar(&o.T, "t", 5, "tool calls per session")
			fs.IntVar(&o.C, "c", 1, "sessions in flight")
			fs.IntVar(&o.W, "w", 20, "warm-up sessions")
			fs.StringVar(&o.Dir, "dir", "", "parent of the sqlite variant's temporary directory")
			fs.StringVar(&o.DSN, "dsn", "", "PostgreSQL DSN for the pg variant")
			cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the measured phase to this file")
			if err := fs.Parse(args); err != nil {
				if errors.Is(err, flag.ErrHelp) {
					return nil
				}
				return usageErr("%v", err)
			}
			if fs.NArg() > 0 {
				return usageErr("unexpected arguments: %v", fs.Args())
			}
			// Bad options are a usage error (exit 2), not a failed run.
			if err := o.Validate(); err != nil {
				return usageErr("%v", err)
			}
			f, err := createProfile(*cpuprofile)
			if err != nil {
				return err
			}
			if f != nil {
				defer f.Close()
				o.CPUProfile = f
			}
			res, err := bench.Loop(cmd.Context(), o)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			return printResult(cmd, res)
		},
	})
	cmd.AddCommand(newBenchParkedCmd())
	return cmd
}

func newBenchParkedCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "parked -variant mem|sqlite -n 10000 -r 200 [-c 32] [-dir PARENT_TMP] [-cpuprofile FILE] [-check]",
		Short: "Measure what sessions parked on an approval cost, and how fast they resume",
		Long: `Park N sessions on an approval (docs/benchmarks.md, "Parked sessions"), measure the
RSS, Go heap and goroutines they add to an idle runtime, then approve R of them one at a
time and time each from the approval until its task.resumed event arrives and until the
turn completes. Prints exactly one line:
RESULT {"bench":"parked","variant":…,"parked_cost_mb":…,"resume_ms_p99":…,"cost_ok":…,"resume_ok":…}
A missed target is reported, not an error, unless -check is given (then the exit code
is 1).`,
		// Single-dash long flags, as bench loop.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			fs := flag.NewFlagSet("bench parked", flag.ContinueOnError)
			fs.SetOutput(cmd.ErrOrStderr())
			var o bench.ParkedOptions
			fs.StringVar(&o.Variant, "variant", "sqlite", "mem or sqlite")
			fs.IntVar(&o.Sessions, "n", 10000, "sessions parked")
			fs.IntVar(&o.Resumes, "r", 200, "parked sessions approved and timed, one at a time")
			fs.IntVar(&o.Concurrency, "c", 32, "submissions in flight while parking")
			fs.StringVar(&o.Dir, "dir", "", "parent of the sqlite variant's temporary directory")
			cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the resumes to this file")
			check := fs.Bool("check", false, fmt.Sprintf("exit 1 unless parked_cost_mb ≤ %d and resume_ms_p99 ≤ %d", bench.ParkedCostTargetMB, bench.ResumeTargetMs))
			if err := fs.Parse(args); err != nil {
				if errors.Is(err, flag.ErrHelp) {
					return nil
				}
				return usageErr("%v", err)
			}
			if fs.NArg() > 0 {
				return usageErr("unexpected arguments: %v", fs.Args())
			}
			// Zero would mean "the default" to ParkedOptions; on the
			// command line it is a mistake.
			if o.Sessions == 0 || o.Resumes == 0 || o.Concurrency == 0 {
				return usageErr("%v: need -n, -r and -c ≥ 1", bench.ErrInvalidOptions)
			}
			if err := o.Validate(); err != nil {
				return usageErr("%v", err)
			}
			f, err := createProfile(*cpuprofile)
			if err != nil {
				return err
			}
			if f != nil {
				defer f.Close()
				o.CPUProfile = f
			}
			res, err := bench.Parked(cmd.Context(), o)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if err := printResult(cmd, res); err != nil {
				return err
			}
			if *check && !res.Pass() {
				return &exitError{code: ExitFailed, err: fmt.Errorf("targets missed: parked_cost_mb %.1f (target ≤ %d), resume_ms_p99 %.2f (target ≤ %d)",
					res.ParkedCostMB, bench.ParkedCostTargetMB, res.ResumeMsP99, bench.ResumeTargetMs)}
			}
			return nil
		},
	}
}

// createProfile creates the -cpuprofile file; nil when none was asked for.
func createProfile(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, usageErr("creating CPU profile: %v", err)
	}
	return f, nil
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
