package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/client"
	"github.com/agentrt/agentrt/configure"
	"github.com/agentrt/agentrt/httpapi"
	"github.com/agentrt/agentrt/runtype"
)

// followTimeout bounds a test's wait for a line of a following command,
// so that one that never prints fails with what it did print.
const followTimeout = 60 * time.Second

// daemon is agentrt serve on the bundle's data directory, in this
// process: its runtime (with workers) behind the HTTP API.
type daemon struct {
	url, token string
	rt         *agentrt.Runtime
}

// serve starts a daemon on the bundle's data directory; the API token is
// in the data directory's api-token file, as agentrt serve leaves it.
func (b *testBundle) serve(t *testing.T) *daemon {
	t.Helper()
	cfg, _, err := configure.Load(b.config)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := agentrt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	token, _, err := httpapi.LoadOrCreateToken(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := httpapi.RegisterFileToken(context.Background(), rt, token); err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(rt, httpapi.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return &daemon{url: srv.URL, token: token, rt: rt}
}

// modes are the flags that point a command at the data directory, and at
// the daemon (whose token the command reads from the data directory).
func (b *testBundle) modes(d *daemon) map[string][]string {
	return map[string][]string{
		"data dir": {"--config", b.config},
		"server":   {"--server", d.url, "--config", b.config},
	}
}

// TestCommandsSameInBothModes runs each ported command on the data
// directory and on a daemon serving it, and checks that --json prints
// the same.
func TestCommandsSameInBothModes(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	p := b.parkJSON(t)
	// A follow-up waits behind the parked turn: the thread's queue lists it.
	b.withRuntime(t, func(ctx context.Context, rt *agentrt.Runtime) {
		if _, err := rt.SubmitTurn(ctx, &apitype.SubmitTurnParams{SessionID: p.SessionID, Input: "and then?"}); err != nil {
			t.Fatal(err)
		}
	})
	d := b.serve(t)
	acts := actions(t, runOK(t, "", "approvals", "list", "--config", b.config, "--json").stdout)
	if len(acts) != 1 {
		t.Fatalf("pending actions %+v, want one", acts)
	}
	for _, args := range [][]string{
		{"approvals", "list", "--status", "all", "--json"},
		{"approvals", "watch", "--once", "--json"},
		{"tasks", "show", p.TaskID, "--json"},
		{"queue", "list", "--session", p.SessionID, "--thread", p.ThreadID},
		{"verify", "--session", p.SessionID, "--json"},
		{"requests", "tail", "--once", "--json"},
		{"requests", "list", "--status", "all"},
		{"sessions", "list"},
		{"tasks", "list", "--json"},
		{"requests", "tail", "--once", "--session", p.SessionID, "--status", "waiting_permission"},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			local := runOK(t, "", append(args, "--config", b.config)...)
			remote := runOK(t, "", append(args, "--server", d.url, "--token", d.token)...)
			if local.stdout == "" {
				t.Fatalf("agentrt %s printed nothing", strings.Join(args, " "))
			}
			if d := cmp.Diff(local.stdout, remote.stdout); d != "" {
				t.Errorf("agentrt %s: --server differs from the data directory (-local +server):\n%s", strings.Join(args, " "), d)
			}
		})
	}

	// Resuming a task that is not paused is a conflict either way; a
	// pause over HTTP answers as it does on the data directory.
	for mode, flags := range b.modes(d) {
		r := run(t, "", append([]string{"tasks", "resume", p.TaskID}, flags...)...)
		if r.code != cli.ExitFailed || r.stderr != "agentrt: conflict: task "+p.TaskID+" is not paused\n" {
			t.Errorf("%s: resuming a task not paused: exit %d, stderr %q; want 1, a conflict", mode, r.code, r.stderr)
		}
	}
	r := runOK(t, "", "tasks", "pause", p.TaskID, "--server", d.url, "--config", b.config, "--json")
	if r.stdout != `{"taskId":"`+p.TaskID+`","status":"waiting_permission"}`+"\n" {
		t.Errorf("tasks pause --server --json = %q", r.stdout)
	}
	runOK(t, "", "tasks", "resume", p.TaskID, "--no-wait", "--server", d.url, "--config", b.config)
}

// TestApproveOverServer approves the pending call on the daemon: the
// daemon runs the resumed turn and the command follows it over the event
// stream to its end, exiting as run does.
func TestApproveOverServer(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	id, _ := b.park(t)
	d := b.serve(t)
	r := runOK(t, "", "approvals", "approve", id, "--server", d.url, "--token", d.token)
	if !regexp.MustCompile(`(?m)^action ` + id + ` approved \(approve by operator\): open_ticket`).MatchString(r.stdout) {
		t.Errorf("approve printed no resolution:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "Ticket opened for order 1042.") {
		t.Errorf("approve did not follow the turn to its result:\n%s", r.stdout)
	}
	acts := actions(t, runOK(t, "", "approvals", "list", "--status", "all", "--json", "--server", d.url, "--token", d.token).stdout)
	if len(acts) != 1 || acts[0].Status != runtype.ActionApproved || acts[0].ResolvedBy != apitype.APIPrincipal {
		t.Errorf("actions after approving %+v, want approved by the daemon's principal", acts)
	}
	r = run(t, "", "approvals", "deny", id, "--server", d.url, "--token", d.token, "--principal", "viewer")
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--principal applies to a data directory") {
		t.Errorf("--principal with --server: exit %d, stderr %q; want 2", r.code, r.stderr)
	}
}

// TestServerErrors: what goes wrong reaching a daemon is said clearly,
// with the exit code of its kind.
func TestServerErrors(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	d := b.serve(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "http://" + l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"wrong token", []string{"approvals", "list", "--server", d.url, "--token", "wrong-0123456789abcdef"}, cli.ExitFailed,
			"agentrt: the server refused the token (wrong bearer token): give the daemon's token with --token or AGENTRT_TOKEN"},
		{"nobody listens", []string{"overview", "--server", nobody, "--token", d.token}, cli.ExitFailed,
			"agentrt: connecting to agentrt at " + nobody + ": connection refused"},
		{"unknown task", []string{"tasks", "show", "task_nope", "--server", d.url, "--token", d.token}, cli.ExitFailed,
			"agentrt: no task task_nope"},
		{"bad url", []string{"overview", "--server", "localhost:1", "--token", d.token}, cli.ExitUsage,
			"agentrt: invalid server URL"},
		{"no token", []string{"overview", "--server", d.url, "--config", filepath.Join(b.dir, "missing.yaml")}, cli.ExitUsage,
			"agentrt: no API token for " + d.url},
		{"queue without session", []string{"queue", "list", "--thread", "thr_x", "--server", d.url, "--token", d.token}, cli.ExitUsage,
			"agentrt: invalid --session: required with --server"},
		{"local only", []string{"run", "--server", d.url, "--config", b.config, question}, cli.ExitUsage,
			"agentrt: agentrt run works on a data directory in this process; it cannot use --server"},
		{"replay of an unknown request", []string{"replay", "--server", d.url, "--token", d.token, "--config", b.config, "--session", "ses_x", "--request", "turn_x"}, cli.ExitFailed,
			"agentrt: no request turn_x in session ses_x"},
		{"local only subcommand", []string{"policy", "lint", "--server", d.url, "x.yaml"}, cli.ExitUsage,
			"agentrt: agentrt policy lint works on a data directory"},
		{"bad status", []string{"requests", "tail", "--once", "--status", "sleeping", "--server", d.url, "--token", d.token}, cli.ExitUsage,
			`agentrt: invalid --status "sleeping"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, "", tc.args...)
			if r.code != tc.code || !strings.HasPrefix(r.stderr, tc.want) {
				t.Errorf("agentrt %s: exit %d, stderr %q; want %d, %q…", strings.Join(tc.args, " "), r.code, r.stderr, tc.code, tc.want)
			}
		})
	}
}

// following runs a command that follows events until its context is
// cancelled, and hands its output over line by line.
type following struct {
	lines  chan string
	cancel context.CancelFunc
	done   chan int
	stderr strings.Builder
}

func follow(t *testing.T, args ...string) *following {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	f := &following{lines: make(chan string, 100), cancel: cancel, done: make(chan int, 1)}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
		close(f.lines)
	}()
	var stderr syncBuilder
	go func() {
		code := cli.MainContext(ctx, args, strings.NewReader(""), pw, &stderr)
		pw.Close()
		f.stderr.WriteString(stderr.String())
		f.done <- code
	}()
	t.Cleanup(func() {
		cancel()
		for range f.lines {
		}
	})
	return f
}

// syncBuilder is a strings.Builder written from one goroutine and read
// after it is done.
type syncBuilder struct{ strings.Builder }

// until returns the lines up to the first that matches re.
func (f *following) until(t *testing.T, re string) []string {
	t.Helper()
	m := regexp.MustCompile(re)
	var seen []string
	timeout := time.NewTimer(followTimeout)
	defer timeout.Stop()
	for {
		select {
		case line, ok := <-f.lines:
			if !ok {
				t.Fatalf("the command ended before printing a line matching %s; it printed:\n%s", re, strings.Join(seen, "\n"))
			}
			seen = append(seen, line)
			if m.MatchString(line) {
				return seen
			}
		case <-timeout.C:
			t.Fatalf("no line matching %s within %s; printed:\n%s", re, followTimeout, strings.Join(seen, "\n"))
		}
	}
}

// stop cancels the command and returns its exit code.
func (f *following) stop(t *testing.T) int {
	t.Helper()
	f.cancel()
	for range f.lines {
	}
	return <-f.done
}

// TestFollowInBothModes: requests tail and approvals watch print the
// state as it is, then follow the event stream: a turn that parks on an
// approval appears as lines, and cancelling ends the command cleanly.
func TestFollowInBothModes(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"data dir", "server"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setupGoverned(t)
			d := b.serve(t)
			flags := b.modes(d)[mode]
			if mode == "data dir" {
				// The daemon's commits wake no subscription of this
				// process's other runtime: it reads the store.
				flags = append(flags, "--interval", "20ms")
			}
			tail := follow(t, append([]string{"requests", "tail", "--json"}, flags...)...)
			watch := follow(t, append([]string{"approvals", "watch", "--json"}, flags...)...)
			// Not on a terminal, the tail prints JSON Lines without --json.
			tailPiped := follow(t, append([]string{"requests", "tail"}, flags...)...)

			c, err := client.New(d.url, d.token)
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.SubmitTurn(t.Context(), &apitype.SubmitTurnRequest{Agent: "support", Input: question})
			if err != nil {
				t.Fatal(err)
			}
			lines := tail.until(t, `"event":"task.waiting"`)
			var got []string
			for _, l := range lines {
				var rl struct {
					Event, RequestID, Agent string
					Status                  runtype.TaskStatus
				}
				if err := json.Unmarshal([]byte(l), &rl); err != nil {
					t.Fatalf("tail line %q: %v", l, err)
				}
				if rl.RequestID != res.TurnID || rl.Agent != "support" {
					t.Errorf("tail line %q: want request %s of agent support", l, res.TurnID)
				}
				got = append(got, rl.Event+" "+string(rl.Status))
			}
			want := []string{"turn.submitted queued", "turn.started running", "action.required waiting_permission", "task.waiting waiting_permission"}
			// Nothing tells the test that the JSON tail has taken its
			// cursor and listed: when the submission lands first, the
			// request is listed, and the events after the cursor follow,
			// none missing and none twice.
			if len(got) > 0 && strings.HasPrefix(got[0], "listed ") {
				got = got[1:]
				want = want[max(len(want)-len(got), 0):]
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("tail lines (-want +got):\n%s", d)
			}
			piped := tailPiped.until(t, `"event":"task.waiting"`)
			if !regexp.MustCompile(`^\{"at":"[^"]+","event":"action\.required","requestId":"` + res.TurnID + `","sessionId":"` + res.SessionID +
				`","agent":"support","status":"waiting_permission","detail":"open_ticket act_\w+","cursor":\d+\}$`).MatchString(piped[len(piped)-2]) {
				t.Errorf("piped tail line %q", piped[len(piped)-2])
			}
			wl := watch.until(t, `"status":"pending"`)
			var a apitype.ActionRead
			if err := json.Unmarshal([]byte(wl[len(wl)-1]), &a); err != nil || a.TurnID != res.TurnID || a.ToolName != "open_ticket" {
				t.Errorf("watch line %q (%v): want the pending open_ticket of %s", wl[len(wl)-1], err, res.TurnID)
			}
			// Denied elsewhere, the action is printed again with its new
			// status.
			if _, err := c.RespondAction(t.Context(), &apitype.RespondActionParams{ActionID: a.ActionID, Decision: runtype.DecisionDeny}); err != nil {
				t.Fatal(err)
			}
			watch.until(t, `"actionId":"`+a.ActionID+`".*"status":"denied"`)
			tail.until(t, `"event":"turn.completed"`)
			for name, f := range map[string]*following{"tail": tail, "watch": watch, "tail (piped)": tailPiped} {
				if code := f.stop(t); code != cli.ExitOK {
					t.Errorf("%s ended with exit %d, stderr %q; want 0 on cancel", name, code, f.stderr.String())
				}
			}
		})
	}
}

// TestOverview: the overview shows a parked request's approval and the
// session's active agent, the same in both modes; as a table without
// colour when not on a terminal.
func TestOverview(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	p := b.parkJSON(t)
	d := b.serve(t)
	type ov struct {
		Health struct {
			Status string
		}
		Approvals struct {
			Pending int
			More    bool
			Oldest  []struct{ ActionID, ToolName, SessionID, TurnID string }
		}
		Attention []struct {
			RequestID, Agent string
			Status           runtype.TaskStatus
		}
		Sessions []struct {
			SessionID       string
			ActiveRequestID *string
			ActiveAgent     *string
			Status          *runtype.TaskStatus
		}
		LastActivity *time.Time
	}
	var got []ov
	for _, mode := range []string{"data dir", "server"} {
		r := runOK(t, "", append([]string{"overview", "--json"}, b.modes(d)[mode]...)...)
		var o ov
		if err := json.Unmarshal([]byte(r.stdout), &o); err != nil {
			t.Fatalf("%s: overview --json %q: %v", mode, r.stdout, err)
		}
		got = append(got, o)
	}
	if d := cmp.Diff(got[0], got[1]); d != "" {
		t.Errorf("overview --json differs between the modes (-data dir +server):\n%s", d)
	}
	o := got[1]
	waiting := runtype.StatusWaitingPermission
	turn, agent := p.TurnID, "support"
	if o.Health.Status != "ok" || o.Approvals.Pending != 1 || o.Approvals.More || len(o.Approvals.Oldest) != 1 ||
		o.Approvals.Oldest[0].TurnID != p.TurnID || o.Approvals.Oldest[0].ToolName != "open_ticket" || o.LastActivity == nil {
		t.Errorf("overview %+v: want health ok, one pending open_ticket of %s, a last activity", o, p.TurnID)
	}
	if len(o.Attention) != 1 || o.Attention[0].RequestID != p.TurnID || o.Attention[0].Status != waiting {
		t.Errorf("attention %+v, want the parked request", o.Attention)
	}
	wantSessions := []struct {
		SessionID       string
		ActiveRequestID *string
		ActiveAgent     *string
		Status          *runtype.TaskStatus
	}{{p.SessionID, &turn, &agent, &waiting}}
	if d := cmp.Diff(wantSessions, o.Sessions); d != "" {
		t.Errorf("sessions (-want +got):\n%s", d)
	}

	r := runOK(t, "", "overview", "--server", d.url, "--token", d.token)
	if strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("the overview has colour codes off a terminal:\n%q", r.stdout)
	}
	matchLines(t, r.stdout, []string{
		"agentrt overview · " + d.url,
		"health     ok · agentrt {ANY} · {ANY} · last activity {ANY}",
		"approvals  1 pending approval",
		"           ACTION{ANY}TOOL{ANY}SESSION{ANY}AGE",
		"           act_{ID}  open_ticket  " + p.SessionID + "  {ANY}",
		"attention  1 request waiting, blocked or failed",
		"           REQUEST{ANY}STATUS{ANY}REASON{ANY}AGENT{ANY}SESSION{ANY}SINCE",
		"           " + p.TurnID + "  waiting_permission  permission_required  support  " + p.SessionID + "  {ANY}",
		"sessions   1 session (open or recent)",
		"           SESSION{ANY}ACTIVE AGENT  REQUEST{ANY}STATUS",
		"           " + p.SessionID + "  support       " + p.TurnID + "  waiting_permission",
	})
}

// TestHealthOverServer reads a daemon's health with --server: the
// daemon's own workers show, and a daemon nobody answers for is
// unhealthy (exit 1) with a failing store check.
func TestHealthOverServer(t *testing.T) {
	t.Parallel()
	b := setupGoverned(t)
	d := b.serve(t)
	r := runOK(t, "", "health", "--json", "--server", d.url, "--token", d.token)
	var h apitype.Health
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
		t.Fatalf("decoding %q: %v", r.stdout, err)
	}
	if h.Status != apitype.HealthOK || h.Workers.State != "running" || !h.Store.Reachable {
		t.Errorf("health over --server: status %q, workers %q, store reachable %v; want ok, running, true", h.Status, h.Workers.State, h.Store.Reachable)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "http://" + l.Addr().String()
	l.Close()
	r = run(t, "", "health", "--server", nobody, "--token", d.token)
	if r.code != cli.ExitFailed || !strings.HasPrefix(r.stdout, "unhealthy") || !strings.Contains(r.stdout, "store") {
		t.Errorf("health of an unreachable daemon: exit %d, stdout %q; want exit 1, unhealthy with the store check", r.code, r.stdout)
	}
}
