package hook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/hook"
)

func TestPoints(t *testing.T) {
	t.Parallel()
	got := map[hook.Point]string{}
	for _, p := range hook.Points() {
		got[p] = p.EventName()
	}
	want := map[hook.Point]string{
		hook.SessionStart:      "SessionStart",
		hook.UserPromptSubmit:  "UserPromptSubmit",
		hook.PreToolUse:        "PreToolUse",
		hook.PermissionRequest: "PermissionRequest",
		hook.PostToolUse:       "PostToolUse",
		hook.PostToolFailure:   "PostToolUseFailure",
		hook.PreCompact:        "PreCompact",
		hook.Stop:              "Stop",
		hook.SubagentStart:     "SubagentStart",
		hook.SubagentStop:      "SubagentStop",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("points and event names (-want +got):\n%s", diff)
	}
	if len(hook.Points()) != len(want) {
		t.Errorf("Points() = %v has duplicates", hook.Points())
	}
	if got := hook.Point("on_error").EventName(); got != "" {
		t.Errorf("unknown point's EventName = %q, want \"\"", got)
	}
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	ok := hook.Config{Point: hook.PreToolUse, Command: "true"}
	with := func(f func(c *hook.Config)) []hook.Config {
		c := ok
		f(&c)
		return []hook.Config{c}
	}
	for _, tc := range []struct {
		name  string
		hooks []hook.Config
		want  []string // the error contains each
	}{
		{"unknown point", with(func(c *hook.Config) { c.Point = "before_tool" }), []string{"hook 0", `unknown point "before_tool"`, "pre_tool_use"}},
		{"empty point", with(func(c *hook.Config) { c.Point = "" }), []string{`unknown point ""`}},
		{"bad regex", with(func(c *hook.Config) { c.Name = "g"; c.Matcher = "Write(" }), []string{`hook "g"`, `invalid matcher "Write("`}},
		{"matcher at a non-tool point", with(func(c *hook.Config) { c.Point = hook.Stop; c.Matcher = "Bash" }), []string{"only tool points"}},
		{"neither command nor url", with(func(c *hook.Config) { c.Command = "" }), []string{"neither command nor url"}},
		{"both command and url", with(func(c *hook.Config) { c.URL = "http://localhost/h" }), []string{"both command and url"}},
		{"file url", with(func(c *hook.Config) { c.Command, c.URL = "", "file:///etc/passwd" }), []string{"not http or https"}},
		{"url without scheme", with(func(c *hook.Config) { c.Command, c.URL = "", "localhost:8080/h" }), []string{"not http or https"}},
		{"url without host", with(func(c *hook.Config) { c.Command, c.URL = "", "http:///h" }), []string{"has no host"}},
		{"unparsable url", with(func(c *hook.Config) { c.Command, c.URL = "", "http://[::1" }), []string{"invalid url"}},
		{"bad fail mode", with(func(c *hook.Config) { c.FailMode = "fail_maybe" }), []string{`unknown fail mode "fail_maybe"`, "fail_open", "fail_closed"}},
		{"negative timeout", with(func(c *hook.Config) { c.Timeout = -time.Second }), []string{"negative timeout"}},
		{"bad env", with(func(c *hook.Config) { c.Env = map[string]string{"A=B": "x"} }), []string{`invalid environment variable "A=B"`}},
		{"headers on a command", with(func(c *hook.Config) { c.Headers = map[string]string{"X": "y"} }), []string{"url hooks only"}},
		{"bad header name", with(func(c *hook.Config) {
			c.Command, c.URL, c.Headers = "", "https://h.example", map[string]string{"Bad Header": "y"}
		}), []string{`invalid header name "Bad Header"`}},
		{"header value with a line break", with(func(c *hook.Config) {
			c.Command, c.URL, c.Headers = "", "https://h.example", map[string]string{"X-A": "a\r\nX-B: b"}
		}), []string{"line break"}},
		{"duplicate name", []hook.Config{
			{Name: "guard", Point: hook.PreToolUse, Command: "true"},
			{Name: "guard", Point: hook.Stop, Command: "true"},
		}, []string{"hook 1", `duplicate name "guard"`, "hook 0"}},
		{"explicit name clashing with a default", []hook.Config{
			{Point: hook.PreToolUse, Command: "true"},
			{Name: "pre_tool_use-0", Point: hook.Stop, Command: "true"},
		}, []string{`duplicate name "pre_tool_use-0"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := hook.New(tc.hooks, hook.Options{})
			if err == nil {
				t.Fatalf("New = %v, nil; want an error", r)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}

	if _, err := hook.New(nil, hook.Options{}); err != nil {
		t.Errorf("New(nil) = %v, want no error", err)
	}
}

// TestDefaults checks names, timeouts and fail modes a Config leaves out,
// as the reports show them.
func TestDefaults(t *testing.T) {
	t.Parallel()
	var hooks []hook.Config
	for _, p := range hook.Points() {
		hooks = append(hooks, hook.Config{Point: p, Command: "cat >/dev/null"})
	}
	hooks = append(hooks, hook.Config{Name: "custom", Point: hook.Stop, Command: "true", Timeout: time.Second, FailMode: hook.FailOpen})
	r := newRunner(t, hook.Options{}, hooks...)

	type defaults struct {
		Hook     string
		Timeout  time.Duration
		FailMode hook.FailMode
	}
	got := map[hook.Point][]defaults{}
	for _, p := range hook.Points() {
		_, reports := run(t, r, p, hook.Input{ToolName: "Bash"})
		for _, rep := range final(reports) {
			got[p] = append(got[p], defaults{rep.Hook, rep.Timeout, rep.FailMode})
		}
	}
	d := func(i int, p hook.Point, mode hook.FailMode) []defaults {
		return []defaults{{fmt.Sprintf("%s-%d", p, i), 60 * time.Second, mode}}
	}
	want := map[hook.Point][]defaults{
		hook.SessionStart:      d(0, hook.SessionStart, hook.FailOpen),
		hook.UserPromptSubmit:  d(1, hook.UserPromptSubmit, hook.FailClosed),
		hook.PreToolUse:        d(2, hook.PreToolUse, hook.FailClosed),
		hook.PermissionRequest: d(3, hook.PermissionRequest, hook.FailClosed),
		hook.PostToolUse:       d(4, hook.PostToolUse, hook.FailOpen),
		hook.PostToolFailure:   d(5, hook.PostToolFailure, hook.FailOpen),
		hook.PreCompact:        d(6, hook.PreCompact, hook.FailOpen),
		hook.Stop:              append(d(7, hook.Stop, hook.FailClosed), defaults{"custom", time.Second, hook.FailOpen}),
		hook.SubagentStart:     d(8, hook.SubagentStart, hook.FailOpen),
		hook.SubagentStop:      d(9, hook.SubagentStop, hook.FailOpen),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestMatcher(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		matcher string
		matches []string
		misses  []string
	}{
		{"", []string{"Bash", "Write", "mcp__github__create_issue"}, nil},
		{"*", []string{"Bash", "Write"}, nil},
		{"Bash", []string{"Bash"}, []string{"BashOutput", "bash", "MyBash"}},
		{"Write|Edit", []string{"Write", "Edit"}, []string{"MultiEdit", "WriteFile", "Read"}},
		{"Notebook.*", []string{"NotebookEdit", "Notebook"}, []string{"ReadNotebook"}},
		{"mcp__memory__.*", []string{"mcp__memory__create_entities"}, []string{"mcp__github__search"}},
	} {
		t.Run("matcher "+tc.matcher, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, hook.Options{}, hook.Config{Point: hook.PostToolUse, Matcher: tc.matcher, Command: "cat >/dev/null"})
			for _, name := range tc.matches {
				if !r.Has(hook.PostToolUse, name) {
					t.Errorf("Has(post_tool_use, %q) = false, want true", name)
				}
			}
			for _, name := range tc.misses {
				if r.Has(hook.PostToolUse, name) {
					t.Errorf("Has(post_tool_use, %q) = true, want false", name)
				}
			}
			if r.Has(hook.PreToolUse, "Bash") {
				t.Error("Has(pre_tool_use) = true for a hook at post_tool_use")
			}
		})
	}

	t.Run("no match runs nothing", func(t *testing.T) {
		t.Parallel()
		r := newRunner(t, hook.Options{}, hook.Config{Point: hook.PreToolUse, Matcher: "Write", Command: "exit 2"})
		out, reports := run(t, r, hook.PreToolUse, bashInput(t, "ls"))
		if diff := cmp.Diff(hook.Outcome{Continue: true}, out); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if len(reports) != 0 {
			t.Errorf("reports = %+v, want none", reports)
		}
		if out, _ := run(t, r, hook.Stop, hook.Input{}); out.Ran != 0 {
			t.Errorf("Run at a point without hooks ran %d", out.Ran)
		}
	})

	t.Run("non-tool points ignore the tool name", func(t *testing.T) {
		t.Parallel()
		r := newRunner(t, hook.Options{}, hook.Config{Point: hook.Stop, Matcher: "*", Command: "true"})
		if !r.Has(hook.Stop, "") || !r.Has(hook.Stop, "Bash") {
			t.Error("Has(stop) = false, want true")
		}
	})
}

// TestMerge runs several hooks at one point and checks how their answers
// combine: the strictest permission decision wins, the last updated input
// wins, and contexts, messages and reasons keep config order.
func TestMerge(t *testing.T) {
	t.Parallel()
	answer := func(name, decision, reason, input, context string) hook.Config {
		var fields []string
		if decision != "" {
			fields = append(fields, `"permissionDecision":"`+decision+`","permissionDecisionReason":"`+reason+`"`)
		}
		if input != "" {
			fields = append(fields, `"updatedInput":`+input)
		}
		if context != "" {
			fields = append(fields, `"additionalContext":"`+context+`"`)
		}
		out := `{"systemMessage":"` + name + ` ran","hookSpecificOutput":{"hookEventName":"PreToolUse",` + strings.Join(fields, ",") + `}}`
		return hook.Config{Name: name, Point: hook.PreToolUse, Command: "cat >/dev/null; echo '" + out + "'"}
	}
	for _, tc := range []struct {
		name  string
		hooks []hook.Config
		want  hook.Outcome
	}{
		{"deny beats allow and ask", []hook.Config{
			answer("a", "allow", "fine", "", "ctx a"),
			answer("b", "deny", "no way", "", ""),
			answer("c", "ask", "unsure", "", "ctx c"),
			answer("d", "deny", "never", "", ""),
		}, hook.Outcome{Ran: 4, Continue: true, PermissionDecision: "deny", PermissionReason: "no way\nnever",
			AdditionalContext: []string{"ctx a", "ctx c"}, SystemMessages: []string{"a ran", "b ran", "c ran", "d ran"}}},
		{"ask beats allow", []hook.Config{
			answer("a", "allow", "fine", "", ""),
			answer("b", "ask", "check", "", ""),
			answer("c", "allow", "ok", "", ""),
		}, hook.Outcome{Ran: 3, Continue: true, PermissionDecision: "ask", PermissionReason: "check",
			SystemMessages: []string{"a ran", "b ran", "c ran"}}},
		{"last updated input wins", []hook.Config{
			answer("a", "", "", `{"command":"first"}`, ""),
			answer("b", "allow", "", `{"command":"second"}`, ""),
			answer("c", "", "", "", "no input"),
		}, hook.Outcome{Ran: 3, Continue: true, PermissionDecision: "allow", UpdatedInput: json.RawMessage(`{"command":"second"}`),
			AdditionalContext: []string{"no input"}, SystemMessages: []string{"a ran", "b ran", "c ran"}}},
		{"blocks after a block still run", []hook.Config{
			{Name: "a", Point: hook.PreToolUse, Command: "echo first >&2; exit 2"},
			{Name: "b", Point: hook.PreToolUse, Command: "exit 1", FailMode: hook.FailClosed},
			{Name: "c", Point: hook.PreToolUse, Command: "exit 1", FailMode: hook.FailOpen},
			answer("d", "allow", "fine", "", ""),
		}, hook.Outcome{Ran: 4, Continue: true, Blocked: true, Reason: "first\nhook b failed: exit code 1",
			PermissionDecision: "allow", PermissionReason: "fine", SystemMessages: []string{"d ran"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, hook.Options{}, tc.hooks...)
			out, _ := run(t, r, hook.PreToolUse, bashInput(t, "ls"))
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReports(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r := newRunner(t, hook.Options{Now: clock.Now},
		hook.Config{Name: "ok", Point: hook.PreToolUse, Command: "cat >/dev/null"},
		hook.Config{Name: "ctx", Point: hook.PreToolUse, Matcher: "Bash", Timeout: 5 * time.Second,
			Command: `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"why not","additionalContext":"note"}}'`},
		hook.Config{Name: "block", Point: hook.PreToolUse, Command: "echo nope >&2; exit 2"},
		hook.Config{Name: "broken", Point: hook.PreToolUse, FailMode: hook.FailOpen, Command: "echo oops >&2; exit 3"},
		hook.Config{Name: "other", Point: hook.PreToolUse, Matcher: "Write", Command: "true"},
	)
	_, got := run(t, r, hook.PreToolUse, bashInput(t, "ls"))

	started := func(name string, timeout time.Duration, mode hook.FailMode) hook.Report {
		return hook.Report{Phase: "started", Hook: name, Handler: "command", Point: hook.PreToolUse, ToolName: "Bash",
			Timeout: timeout, FailMode: mode}
	}
	ended := func(r hook.Report, phase, status string) hook.Report {
		r.Phase, r.Status, r.Duration = phase, status, time.Second // the fake clock's step
		return r
	}
	ctxDone := ended(started("ctx", 5*time.Second, hook.FailClosed), "completed", "ok")
	ctxDone.Decision, ctxDone.Reason, ctxDone.AddedContext = "ask", "why not", true
	blockDone := ended(started("block", time.Minute, hook.FailClosed), "completed", "blocked")
	blockDone.Decision, blockDone.Reason = "block", "nope"
	brokenDone := ended(started("broken", time.Minute, hook.FailOpen), "failed", "failed")
	brokenDone.ErrorCategory, brokenDone.Message = "exit", "exit code 3; stderr: oops"
	want := []hook.Report{
		started("ok", time.Minute, hook.FailClosed),
		ended(started("ok", time.Minute, hook.FailClosed), "completed", "ok"),
		started("ctx", 5*time.Second, hook.FailClosed),
		ctxDone,
		started("block", time.Minute, hook.FailClosed),
		blockDone,
		started("broken", time.Minute, hook.FailOpen),
		brokenDone,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}

	// A nil report function is allowed.
	ctx, cancel := context.WithTimeout(t.Context(), promptly)
	defer cancel()
	if out := r.Run(ctx, hook.PreToolUse, bashInput(t, "ls"), nil); out.Ran != 4 || !out.Blocked {
		t.Errorf("Run with a nil report = %+v, want 4 hooks run and blocked", out)
	}
}

// TestRunCancelled: hooks run under an ended context fail at once, and
// their fail modes apply.
func TestRunCancelled(t *testing.T) {
	t.Parallel()
	srv, _ := serve(t, http.StatusOK, "")
	r := newRunner(t, hook.Options{},
		hook.Config{Name: "cmd", Point: hook.PreToolUse, Command: "sleep 30"},
		hook.Config{Name: "web", Point: hook.PreToolUse, URL: srv.URL, FailMode: hook.FailOpen},
	)
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(errors.New("run stopped"))
	var reports []hook.Report
	out := r.Run(ctx, hook.PreToolUse, bashInput(t, "ls"), func(rep hook.Report) { reports = append(reports, rep) })
	want := hook.Outcome{Ran: 2, Continue: true, Blocked: true, Reason: "hook cmd failed: interrupted: run stopped"}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	for _, rep := range final(reports) {
		if rep.ErrorCategory != "cancelled" {
			t.Errorf("report = %+v, want category cancelled", rep)
		}
	}
}
