package cli_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/cli"
)

// TestBenchLoop runs the agent-loop workload with the double-dash flags
// of every command and with the workload contract's single-dash ones,
// and checks the one RESULT line it prints.
func TestBenchLoop(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		variant string
		s, tc   int
	}{
		{"mem", []string{"--variant", "mem", "--sessions", "5", "--tool-calls", "2", "--concurrency", "2", "--warmup", "1"}, "mem", 5, 2},
		{"mem, the contract's spelling", []string{"-variant", "mem", "-s", "5", "-t", "2", "-c", "2", "-w", "1"}, "mem", 5, 2},
		{"sqlite, flag=value forms", []string{"-variant=sqlite", "--s=3", "-t=1", "-c", "1", "-w", "0", "-dir", "DIR"}, "sqlite", 3, 1},
		{"sqlite, double dashes", []string{"--variant=sqlite", "-s", "3", "-t", "1", "-w", "0", "--dir=DIR"}, "sqlite", 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := append([]string{"bench", "loop"}, tt.args...)
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, "DIR", dir)
			}
			r := runOK(t, "", args...)
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "RESULT {") {
				t.Fatalf("stdout = %q, want exactly one line starting with RESULT {", r.stdout)
			}
			var res map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[0], "RESULT ")), &res); err != nil {
				t.Fatalf("RESULT is not JSON: %v", err)
			}
			var missing []string
			for _, k := range []string{"peer", "variant", "S", "T", "C", "W", "steps", "wall_s", "steps_per_s",
				"wall_us_per_step", "cpu_us_per_step", "setup_s", "maxrss_mb", "events_per_session",
				"store_writes_per_session", "versions"} {
				if _, ok := res[k]; !ok {
					missing = append(missing, k)
				}
			}
			if len(missing) > 0 {
				t.Errorf("RESULT lacks %v: %s", missing, lines[0])
			}
			if tt.variant == "sqlite" {
				// A step stores and writes something; the sqlite variant says how much.
				for _, k := range []string{"bytes_per_step", "wal_bytes_per_step"} {
					if v, _ := res[k].(float64); v <= 0 {
						t.Errorf("RESULT %s = %v, want > 0: %s", k, res[k], lines[0])
					}
				}
			}
			want := map[string]any{
				"peer": "agentrt", "variant": tt.variant, "S": float64(tt.s), "T": float64(tt.tc),
				"steps": float64(tt.s * (2*tt.tc + 1)), // per session: T model hops with a tool call each, and the answer
			}
			got := map[string]any{}
			for k := range want {
				got[k] = res[k]
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("RESULT (-want +got):\n%s", diff)
			}
			if v, ok := res["versions"].(map[string]any); !ok || v["agentrt"] == nil || v["go"] == nil {
				t.Errorf("versions = %v, want agentrt and go at least", res["versions"])
			}
			if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
				t.Errorf("-dir holds %v after the run (%v), want it cleaned up", names(left), err)
			}
		})
	}
}

func names(es []os.DirEntry) []string {
	var n []string
	for _, e := range es {
		n = append(n, e.Name())
	}
	return slices.Sorted(slices.Values(n))
}

// TestBenchLoopRejects: variants this build cannot run and bad flags exit
// 2, print no RESULT line, and say why.
func TestBenchLoopRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"pg without a server", []string{"-variant", "pg"}, "agentrt: invalid benchmark options: variant pg needs a PostgreSQL server: --dsn or AGENTRT_STORE_URL"},
		{"nodes without pg", []string{"-variant", "sqlite", "--nodes", "2"}, "--nodes needs the pg variant"},
		{"unknown variant", []string{"-variant", "redis"}, `variant "redis" (want mem, sqlite or pg)`},
		{"unknown flag", []string{"--tools", "5"}, "unknown flag: --tools (see agentrt bench loop --help)"},
		{"unknown flag, one dash", []string{"-tools", "5"}, `invalid argument "ools" for "-t, --tool-calls" flag`},
		{"bad number", []string{"-s", "many"}, `invalid argument "many" for "-s, --sessions" flag`},
		{"extra argument", []string{"-s", "1", "now"}, `unknown command "now" for "agentrt bench loop"`},
		{"no sessions", []string{"-s", "0"}, "need -s ≥ 1"},
		{"negative tool calls", []string{"-t", "-1"}, "-t ≥ 0"},
		{"no concurrency", []string{"-c", "0"}, "-c ≥ 1"},
		{"profile in a missing directory", []string{"-s", "1", "--cpuprofile", "/nonexistent/dir/cpu.out"}, "creating CPU profile: open /nonexistent/dir/cpu.out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, "", append([]string{"bench", "loop"}, tt.args...)...)
			if r.code != cli.ExitUsage {
				t.Errorf("exit %d, want %d", r.code, cli.ExitUsage)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr = %q, want it to contain %q", r.stderr, tt.want)
			}
			if strings.Contains(r.stdout, "RESULT") {
				t.Errorf("stdout = %q, want no RESULT", r.stdout)
			}
		})
	}
}

// TestBenchStore fills a small store, keeps it, and times the reads
// again on it: both print one RESULT line whose reads found the failed
// requests and pending approvals the fill made (bench.Store checks).
func TestBenchStore(t *testing.T) {
	t.Parallel()
	r := runOK(t, "", "bench", "store", "-sessions", "150", "--reads", "2", "--dir", t.TempDir(), "--keep")
	var res struct {
		Sessions   int     `json:"sessions"`
		Failed     int     `json:"failed"`
		OverviewMs float64 `json:"overview_ms"`
		DataDir    string  `json:"data_dir"`
		BytesPer   float64 `json:"bytes_per_session"`
	}
	line, ok := strings.CutPrefix(strings.TrimSuffix(r.stdout, "\n"), "RESULT ")
	if !ok || strings.Contains(line, "\n") {
		t.Fatalf("stdout = %q, want one RESULT line", r.stdout)
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		t.Fatalf("RESULT is not JSON: %v", err)
	}
	if res.Sessions != 150 || res.Failed != 2 || res.OverviewMs <= 0 || res.DataDir == "" || res.BytesPer <= 0 {
		t.Errorf("RESULT = %s", line)
	}
	again := runOK(t, "", "bench", "store", "--sessions", "150", "--reads", "1", "--reuse", res.DataDir)
	if !strings.HasPrefix(again.stdout, `RESULT {"bench":"store"`) || !strings.Contains(again.stdout, `"fill_s":0,`) {
		t.Errorf("reused: stdout = %q", again.stdout)
	}
}

// TestBenchSession runs a short long session through the command, with
// both flag spellings, and checks its one RESULT line.
func TestBenchSession(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--variant", "mem", "--turns", "3", "-t", "1", "-w", "0"},
		{"-variant", "sqlite", "-turns", "3", "-t", "1", "-w", "1", "-dir", "DIR"},
	} {
		t.Run(args[1], func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args = append([]string{"bench", "session"}, args...)
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, "DIR", dir)
			}
			r := runOK(t, "", args...)
			line, ok := strings.CutPrefix(strings.TrimSuffix(r.stdout, "\n"), "RESULT ")
			if !ok || strings.Contains(line, "\n") {
				t.Fatalf("stdout = %q, want exactly one RESULT line", r.stdout)
			}
			var res struct {
				Bench, Variant string
				Turns, Steps   int
				At             []struct{ Turn int }
			}
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				t.Fatalf("RESULT is not JSON: %v", err)
			}
			want := struct {
				Bench, Variant string
				Turns, Steps   int
				At             []struct{ Turn int }
			}{"session", args[3], 3, 9, []struct{ Turn int }{{1}, {3}}}
			if diff := cmp.Diff(want, res); diff != "" {
				t.Errorf("RESULT (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBenchDelegation runs the delegation benchmark small through the
// command, with --check: its one RESULT line carries the commits a
// delegation costs, within the target.
func TestBenchDelegation(t *testing.T) {
	t.Parallel()
	r := runOK(t, "", "bench", "delegation", "-variant", "sqlite", "-n", "3", "-t", "1", "-w", "1", "-dir", t.TempDir(), "--check")
	line, ok := strings.CutPrefix(strings.TrimSuffix(r.stdout, "\n"), "RESULT ")
	if !ok || strings.Contains(line, "\n") {
		t.Fatalf("stdout = %q, want exactly one RESULT line", r.stdout)
	}
	var res struct {
		Bench, Variant       string
		N                    int
		CommitsPerDelegation float64 `json:"commits_per_delegation"`
		CommitsOK            bool    `json:"commits_ok"`
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		t.Fatalf("RESULT is not JSON: %v", err)
	}
	if res.Bench != "delegation" || res.Variant != "sqlite" || res.N != 3 || !res.CommitsOK || res.CommitsPerDelegation <= 0 {
		t.Errorf("RESULT = %+v, want 3 sqlite delegations within the target", res)
	}
}

// TestBenchSchedules runs the schedules benchmark small through the
// command: its one RESULT line says every schedule fired and completed.
// The lead leaves room to create them under the race detector on a busy
// machine (5 once took 2 s there).
func TestBenchSchedules(t *testing.T) {
	t.Parallel()
	r := runOK(t, "", "bench", "schedules", "-variant", "sqlite", "-n", "5", "-lead", "10s", "-dir", t.TempDir())
	line, ok := strings.CutPrefix(strings.TrimSuffix(r.stdout, "\n"), "RESULT ")
	if !ok || strings.Contains(line, "\n") {
		t.Fatalf("stdout = %q, want exactly one RESULT line", r.stdout)
	}
	var res struct {
		Bench, Variant string
		N              int
		Fired          int     `json:"fired"`
		Completed      int     `json:"completed"`
		AllFiredS      float64 `json:"all_fired_s"`
		FiredOK        bool    `json:"fired_ok"`
		PeakRSSMB      float64 `json:"peak_rss_mb"`
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		t.Fatalf("RESULT is not JSON: %v", err)
	}
	if res.Bench != "schedules" || res.Variant != "sqlite" || res.N != 5 || res.Fired != 5 || res.Completed != 5 || !res.FiredOK || res.AllFiredS <= 0 || res.PeakRSSMB <= 0 {
		t.Errorf("RESULT = %+v, want 5 sqlite schedules fired and completed within the target", res)
	}
}

// TestBenchSessionAndStoreReject: bad options of bench session and bench
// store are usage errors (exit 2) that say what is wrong, and run nothing.
func TestBenchSessionAndStoreReject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"session variant", []string{"session", "--variant", "pg"}, `variant "pg" (want mem or sqlite)`},
		{"session no turns", []string{"session", "--turns", "0"}, "need --turns ≥ 1"},
		{"session bad number", []string{"session", "--turns", "many"}, `invalid argument "many"`},
		{"store variant", []string{"store", "--variant", "redis"}, `variant "redis" (want mem or sqlite)`},
		{"store too few sessions", []string{"store", "--sessions", "2"}, "need --sessions ≥ 3"},
		{"store keep in memory", []string{"store", "--variant", "mem", "--sessions", "3", "--keep"}, "--keep and --reuse need the sqlite variant"},
		{"store extra argument", []string{"store", "now"}, `unknown command "now"`},
		{"delegation variant", []string{"delegation", "--variant", "pg"}, `variant "pg" (want mem or sqlite)`},
		{"delegation no turns", []string{"delegation", "-n", "0"}, "need --turns ≥ 1"},
		{"schedules variant", []string{"schedules", "--variant", "pg"}, `variant "pg" (want mem or sqlite)`},
		{"schedules none", []string{"schedules", "-n", "0"}, "need -n ≥ 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, "", append([]string{"bench"}, tt.args...)...)
			if r.code != cli.ExitUsage {
				t.Errorf("exit %d, want %d", r.code, cli.ExitUsage)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr = %q, want it to contain %q", r.stderr, tt.want)
			}
			if strings.Contains(r.stdout, "RESULT") {
				t.Errorf("stdout = %q, want no RESULT", r.stdout)
			}
		})
	}
}

// TestBenchConsole runs the console benchmark small against a real
// agentrt serve: the timeline of a request of 5 hops is served, 6 streams
// open, and a turn's completion reaches every event stream.
func TestBenchConsole(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := buildAgentrt(t)
	r := runOK(t, "", "bench", "console", "--hops", "5", "--renders", "2", "--streams", "6", "--agentrt", bin, "--dir", t.TempDir())
	var res struct {
		Hops          int     `json:"hops"`
		TimelineMS    float64 `json:"timeline_ms"`
		TimelineBytes int     `json:"timeline_bytes"`
		Streams       int     `json:"streams"`
		RSSStreamsMB  float64 `json:"rss_streams_mb"`
		FanoutMS      float64 `json:"fanout_ms"`
	}
	line, ok := strings.CutPrefix(strings.TrimSuffix(r.stdout, "\n"), "RESULT ")
	if !ok || strings.Contains(line, "\n") {
		t.Fatalf("stdout = %q, want one RESULT line", r.stdout)
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		t.Fatalf("RESULT is not JSON: %v", err)
	}
	if res.Hops != 5 || res.TimelineMS <= 0 || res.TimelineBytes < 1000 || res.Streams != 6 || res.RSSStreamsMB <= 0 || res.FanoutMS <= 0 {
		t.Errorf("RESULT = %s", line)
	}
}
