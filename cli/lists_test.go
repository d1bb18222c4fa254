package cli_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/cli"
)

// ids decodes JSON Lines and returns each line's field.
func ids(t *testing.T, out, field string) []string {
	t.Helper()
	var got []string
	for line := range strings.Lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		s, _ := m[field].(string)
		got = append(got, s)
	}
	return got
}

// TestStatusAllSameInCLIAndAPI: --status all lists what no filter lists,
// on the data directory and on a daemon, and what the API's status=all
// answers; a status filters the same everywhere.
func TestStatusAllSameInCLIAndAPI(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	// One request completes (its ticket denied), another waits.
	first := b.parkJSON(t)
	acts := actions(t, runOK(t, "", "approvals", "list", "--config", b.config, "--json").stdout)
	if len(acts) != 1 {
		t.Fatalf("pending actions %+v, want one", acts)
	}
	runOK(t, "", "approvals", "deny", acts[0].ActionID, "--config", b.config, "--message", "no")
	parked := b.parkJSON(t)
	d := b.serve(t)
	api := func(path, field string) []string {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, d.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+d.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var page map[string]json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d (%v)", path, resp.StatusCode, err)
		}
		var out []string
		for k, v := range page {
			if k == "nextCursor" {
				continue
			}
			var items []map[string]any
			if err := json.Unmarshal(v, &items); err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				out = append(out, it[field].(string))
			}
		}
		return out
	}
	for _, tt := range []struct {
		cli   []string
		path  string
		field string
	}{
		{[]string{"requests", "list"}, "/v1/requests", "requestId"},
		{[]string{"tasks", "list"}, "/v1/tasks", "taskId"},
		{[]string{"approvals", "list"}, "/v1/actions", "actionId"},
	} {
		all := api(tt.path+"?status=all", tt.field)
		if d := cmp.Diff(api(tt.path, tt.field), all); d != "" {
			t.Errorf("GET %s?status=all differs from no status (-none +all):\n%s", tt.path, d)
		}
		for mode, flags := range b.modes(d) {
			got := ids(t, runOK(t, "", append(append(tt.cli, "--status", "all"), flags...)...).stdout, tt.field)
			if d := cmp.Diff(all, got); d != "" || len(got) == 0 {
				t.Errorf("%s: agentrt %s --status all differs from GET %s?status=all (-api +cli):\n%s", mode, strings.Join(tt.cli, " "), tt.path, d)
			}
		}
	}
	for mode, flags := range b.modes(d) {
		got := ids(t, runOK(t, "", append([]string{"requests", "list", "--status", "waiting_permission"}, flags...)...).stdout, "requestId")
		if d := cmp.Diff([]string{parked.TurnID}, got); d != "" {
			t.Errorf("%s: requests list --status waiting_permission (-want +got):\n%s", mode, d)
		}
		got = ids(t, runOK(t, "", append([]string{"tasks", "list", "--status", "completed"}, flags...)...).stdout, "taskId")
		if d := cmp.Diff([]string{first.TaskID}, got); d != "" {
			t.Errorf("%s: tasks list --status completed (-want +got):\n%s", mode, d)
		}
		sessions := ids(t, runOK(t, "", append([]string{"sessions", "list"}, flags...)...).stdout, "sessionId")
		if len(sessions) != 2 || !strings.Contains(strings.Join(sessions, " "), parked.SessionID) {
			t.Errorf("%s: sessions list = %v, want two, the parked one's among them", mode, sessions)
		}
		got = ids(t, runOK(t, "", append([]string{"requests", "tail", "--once", "--json", "--status", "all"}, flags...)...).stdout, "requestId")
		if len(got) != 2 {
			t.Errorf("%s: requests tail --status all listed %v, want both requests", mode, got)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"requests", "list", "--status", "napping"}, `invalid --status "napping"`},
		{[]string{"tasks", "list", "--status", "failed,completed"}, "tasks list takes one status, or all"},
		{[]string{"sessions", "list", "--limit", "0"}, "invalid --limit 0: use 1 to 1000"},
		{[]string{"requests", "list", "--limit", "1001"}, "invalid --limit 1001"},
	} {
		r := run(t, "", append(tt.args, "--config", b.config)...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("agentrt %s: exit %d, %q; want 2 and %q", strings.Join(tt.args, " "), r.code, r.stderr, tt.want)
		}
	}
}
