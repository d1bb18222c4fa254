package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/runtype"
)

// TestScheduleUsageErrors: the schedules commands refuse bad arguments
// and flags with exit 2 and a message saying what is wrong, before
// asking the runtime anything.
func TestScheduleUsageErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.makeStore(t)
	empty := b.write(t, "empty.txt", "  \n")
	big := b.write(t, "big.txt", strings.Repeat("x", apitype.MaxScheduleInputBytes+1))
	create := []string{"schedules", "create", "--agent", "support", "--input", "digest"}
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  string // in stderr
	}{
		{"create without an agent", []string{"schedules", "create", "--every", "1h", "--input", "x"}, "", "--agent is required"},
		{"create without when", create, "", "give one of --cron, --every and --at"},
		{"create with two whens", append(create, "--cron", "0 2 * * *", "--every", "1h"), "", "not --cron and --every"},
		{"create with three whens", append(create, "--cron", "0 2 * * *", "--every", "1h", "--at", "2030-01-01T00:00:00Z"), "", "not --cron and --every and --at"},
		{"tz without cron", append(create, "--every", "1h", "--tz", "Europe/Berlin"), "", "--tz is the time zone of --cron"},
		{"start without every", append(create, "--cron", "0 2 * * *", "--start", "2030-01-01T00:00:00Z"), "", "--start is the first fire of --every"},
		{"a bad interval", append(create, "--every", "daily"), "", `invalid --every "daily"`},
		{"a negative interval", append(create, "--every", "-1h"), "", `invalid --every "-1h"`},
		{"a bad catch-up", append(create, "--every", "1h", "--catchup", "soon"), "", `invalid --catchup "soon"`},
		{"a bad inactivity", append(create, "--every", "1h", "--inactivity", "0s"), "", `invalid --inactivity "0s"`},
		{"a bad time", append(create, "--at", "tomorrow"), "", `invalid --at "tomorrow": want an RFC 3339 time`},
		{"a bad start", append(create, "--every", "1h", "--start", "2030-01-01"), "", `invalid --start "2030-01-01"`},
		{"negative pause", append(create, "--every", "1h", "--pause-after", "-1"), "", "--pause-after -1 is negative"},
		{"params not an object", append(create, "--every", "1h", "--params", "[1,2]"), "", "--params is no JSON object"},
		{"params not JSON", append(create, "--every", "1h", "--params", "{team: ops}"), "", "--params is no JSON object"},
		{"pre-run input without tool", append(create, "--every", "1h", "--pre-run-input", "{}"), "", "--pre-run-input needs --pre-run-tool"},
		{"pre-run input not JSON", append(create, "--every", "1h", "--pre-run-tool", "fetch", "--pre-run-input", "{"), "", "--pre-run-input is no JSON value"},
		{"an empty tool", append(create, "--every", "1h", "--tool", ""), "", "--tool is empty"},
		{"no input", []string{"schedules", "create", "--agent", "support", "--every", "1h"}, "", "--input or --input-file is required"},
		{"two inputs", append(create, "--every", "1h", "--input-file", "x.txt"), "", "give --input or --input-file, not both"},
		{"a missing input file", []string{"schedules", "create", "--agent", "support", "--every", "1h", "--input-file", "nope.txt"}, "", "reading --input-file: open nope.txt"},
		{"an empty input file", []string{"schedules", "create", "--agent", "support", "--every", "1h", "--input-file", empty}, "", empty + " is empty"},
		{"an empty standard input", []string{"schedules", "create", "--agent", "support", "--every", "1h", "--input-file", "-"}, "\n", "--input-file - is empty"},
		{"a big input file", []string{"schedules", "create", "--agent", "support", "--every", "1h", "--input-file", big}, "", "more than 65536 bytes"},
		{"list of a bad status", []string{"schedules", "list", "--status", "sleeping"}, "", `--status "sleeping" is not a schedule status`},
		{"list too many", []string{"schedules", "list", "--limit", "1001"}, "", "invalid --limit 1001"},
		{"show without an id", []string{"schedules", "show"}, "", "show takes one SCHEDULE_ID, got 0 arguments"},
		{"pause two", []string{"schedules", "pause", "sch_a", "sch_b"}, "", "pause takes one SCHEDULE_ID, got 2 arguments"},
		{"pause for too long", []string{"schedules", "pause", "sch_a", "--reason", strings.Repeat("r", 201)}, "", "--reason is 201 bytes"},
		{"resume without an id", []string{"schedules", "resume"}, "", "resume takes one SCHEDULE_ID"},
		{"trigger without an id", []string{"schedules", "trigger"}, "", "trigger takes one SCHEDULE_ID"},
		{"history without an id", []string{"schedules", "history"}, "", "history takes one SCHEDULE_ID"},
		{"history of a bad status", []string{"schedules", "history", "sch_a", "--status", "ok"}, "", `--status "ok" is not a fire status`},
		{"history none", []string{"schedules", "history", "sch_a", "--limit", "0"}, "", "invalid --limit 0"},
		{"delete without an id", []string{"schedules", "delete"}, "", "delete takes one SCHEDULE_ID"},
		{"retry-delivery without a fire", []string{"schedules", "retry-delivery"}, "", "retry-delivery takes one FIRE_ID, got 0 arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, tt.stdin, append(tt.args, "--config", b.config)...)
			if r.code != cli.ExitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, cli.ExitUsage, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

// TestSchedulesCommands: a schedule created on a daemon is listed, shown,
// paused, resumed, triggered (its fire in its history) and deleted, the
// same on the data directory and on the daemon; a missing schedule exits
// 1 naming it, and a value the runtime refuses is a usage error.
func TestSchedulesCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.useScript(t, completesScript(10))
	d := b.serve(t)

	r := runOK(t, "", "schedules", "create", "--server", d.url, "--token", d.token, "--agent", "support", "--name", "hourly",
		"--every", "1h", "--input", "digest {{.FireTime}}", "--params", `{"team":"ops"}`, "--pause-after", "3", "--json")
	var sch apitype.ScheduleRead
	if err := json.Unmarshal([]byte(r.stdout), &sch); err != nil || sch.Kind != "interval" || sch.PauseAfterFailures != 3 {
		t.Fatalf("create --json = %q (%v), want an hourly interval schedule", r.stdout, err)
	}
	for name, flags := range b.modes(d) {
		t.Run(name, func(t *testing.T) {
			list := runOK(t, "", append([]string{"schedules", "list"}, flags...)...)
			var listed apitype.ScheduleRead
			if err := json.Unmarshal([]byte(strings.TrimSpace(list.stdout)), &listed); err != nil || listed.ScheduleID != sch.ScheduleID {
				t.Errorf("list = %q (%v), want the one schedule", list.stdout, err)
			}
			show := runOK(t, "", append([]string{"schedules", "show", sch.ScheduleID}, flags...)...)
			for _, want := range []string{"schedule " + sch.ScheduleID + "  agent support", "name       hourly\n", "when       every 1h\n",
				"status     active\n", "next fire  in ", "failures   0 in a row (pauses after 3)\n"} {
				if !strings.Contains(show.stdout, want) {
					t.Errorf("show does not say %q:\n%s", want, show.stdout)
				}
			}
		})
	}
	// The overview shows it firing next, the same in both modes.
	for name, flags := range b.modes(d) {
		r := runOK(t, "", append([]string{"overview", "--json"}, flags...)...)
		var ov struct {
			Schedules struct {
				NextFires []struct{ ScheduleID, When string }
				Failing   []struct{ ScheduleID string }
			}
		}
		if err := json.Unmarshal([]byte(r.stdout), &ov); err != nil || len(ov.Schedules.NextFires) != 1 ||
			ov.Schedules.NextFires[0].ScheduleID != sch.ScheduleID || ov.Schedules.NextFires[0].When != "every 1h" || len(ov.Schedules.Failing) != 0 {
			t.Errorf("%s: overview --json schedules = %+v (%v), want %s firing next, none failing", name, ov.Schedules, err, sch.ScheduleID)
		}
		r = runOK(t, "", append([]string{"overview"}, flags...)...)
		if !strings.Contains(r.stdout, "schedules  1 schedule firing next, 0 failing\n") || !strings.Contains(r.stdout, sch.ScheduleID+"  hourly") {
			t.Errorf("%s: overview does not show the schedule:\n%s", name, r.stdout)
		}
	}
	flags := []string{"--server", d.url, "--token", d.token}
	r = runOK(t, "", append([]string{"schedules", "pause", sch.ScheduleID, "--reason", "maintenance"}, flags...)...)
	if !strings.Contains(r.stdout, "status     paused") {
		t.Errorf("pause = %q", r.stdout)
	}
	r = runOK(t, "", append([]string{"schedules", "list", "--status", "paused"}, flags...)...)
	if !strings.Contains(r.stdout, sch.ScheduleID) {
		t.Errorf("list --status paused = %q, want the schedule", r.stdout)
	}
	r = runOK(t, "", append([]string{"schedules", "resume", sch.ScheduleID}, flags...)...)
	if !strings.Contains(r.stdout, "status     active") {
		t.Errorf("resume = %q", r.stdout)
	}
	r = runOK(t, "", append([]string{"schedules", "trigger", sch.ScheduleID, "--json"}, flags...)...)
	var fire apitype.FireRead
	if err := json.Unmarshal([]byte(r.stdout), &fire); err != nil || !fire.Manual || fire.ScheduleID != sch.ScheduleID {
		t.Fatalf("trigger --json = %q (%v), want a manual fire", r.stdout, err)
	}
	for name, flags := range b.modes(d) {
		r := runOK(t, "", append([]string{"schedules", "history", sch.ScheduleID}, flags...)...)
		var got apitype.FireRead
		if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &got); err != nil || got.FireID != fire.FireID {
			t.Errorf("%s: history = %q (%v), want the manual fire", name, r.stdout, err)
		}
	}
	r = run(t, "", append([]string{"schedules", "retry-delivery", fire.FireID}, flags...)...)
	if r.code != cli.ExitFailed {
		t.Errorf("retry-delivery of a fire without a delivery: exit %d, %q; want 1", r.code, r.stderr)
	}
	r = runOK(t, "", append([]string{"schedules", "delete", sch.ScheduleID, "--json"}, flags...)...)
	var deleted apitype.ScheduleRead
	if err := json.Unmarshal([]byte(r.stdout), &deleted); err != nil || deleted.Status != runtype.ScheduleDeleted {
		t.Errorf("delete --json = %q (%v), want it deleted", r.stdout, err)
	}
	r = run(t, "", "schedules", "show", "sch_nope", "--config", b.config)
	if r.code != cli.ExitFailed || r.stderr != "agentrt: no schedule sch_nope\n" {
		t.Errorf("show of no schedule: exit %d, %q", r.code, r.stderr)
	}
	r = run(t, "", "schedules", "create", "--config", b.config, "--agent", "nobody", "--every", "1h", "--input", "x")
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "nobody") {
		t.Errorf("create for an unknown agent: exit %d, %q; want a usage error naming it", r.code, r.stderr)
	}
}
