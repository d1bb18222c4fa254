package cli_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/cli"
)

// TestBenchParked runs the parked-sessions benchmark small and checks the
// one RESULT line it prints; with -check, the exit code follows the
// targets the line reports.
func TestBenchParked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		variant string
		check   bool
	}{
		{"mem", []string{"-variant", "mem", "-n", "40", "-r", "3", "-c", "4"}, "mem", false},
		{"sqlite, -check", []string{"-variant=sqlite", "-n=30", "-r=2", "-dir", "DIR", "-check"}, "sqlite", true},
		{"mem, double dashes", []string{"--variant", "mem", "--sessions", "20", "--resumes", "2", "--concurrency", "4", "--check=false"}, "mem", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := append([]string{"bench", "parked"}, tt.args...)
			for i, a := range args {
				if a == "DIR" {
					args[i] = dir
				}
			}
			r := run(t, "", args...)
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "RESULT {") {
				t.Fatalf("exit %d, stdout = %q, want exactly one line starting with RESULT {\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			var res map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[0], "RESULT ")), &res); err != nil {
				t.Fatalf("RESULT is not JSON: %v", err)
			}
			var missing []string
			for _, k := range []string{"bench", "variant", "sessions", "resumes", "idle_rss_mb", "parked_rss_mb",
				"parked_cost_mb", "heap_idle_mb", "heap_parked_mb", "goroutines_idle", "goroutines_parked",
				"resume_ms_p50", "resume_ms_p90", "resume_ms_p99", "resume_ms_max", "complete_ms_p50",
				"complete_ms_p99", "cost_ok", "resume_ok", "versions"} {
				if _, ok := res[k]; !ok {
					missing = append(missing, k)
				}
			}
			if len(missing) > 0 {
				t.Errorf("RESULT lacks %v: %s", missing, lines[0])
			}
			if diff := cmp.Diff(map[string]any{"bench": "parked", "variant": tt.variant},
				map[string]any{"bench": res["bench"], "variant": res["variant"]}); diff != "" {
				t.Errorf("RESULT (-want +got):\n%s", diff)
			}
			want := cli.ExitOK
			if tt.check && (res["cost_ok"] != true || res["resume_ok"] != true) {
				want = cli.ExitFailed
			}
			if r.code != want {
				t.Errorf("exit %d, want %d (cost_ok %v, resume_ok %v); stderr: %s", r.code, want, res["cost_ok"], res["resume_ok"], r.stderr)
			}
			if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
				t.Errorf("-dir holds %v after the run (%v), want it cleaned up", names(left), err)
			}
		})
	}
}

// TestBenchParkedRejects: bad flags exit 2, print no RESULT line, and
// say why.
func TestBenchParkedRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"pg", []string{"-variant", "pg"}, `variant "pg" (want mem or sqlite)`},
		{"no sessions", []string{"-n", "0"}, "need -n, -r and -c ≥ 1"},
		{"more resumes than sessions", []string{"-n", "5", "-r", "6"}, "need 1 ≤ -r ≤ -n (5), got 6"},
		{"negative concurrency", []string{"-c", "-1"}, "need -c ≥ 1"},
		{"unknown flag", []string{"-s", "5"}, "unknown shorthand flag: 's' in -s"},
		{"extra argument", []string{"-n", "1", "now"}, `unknown command "now" for "agentrt bench parked"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, "", append([]string{"bench", "parked"}, tt.args...)...)
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
