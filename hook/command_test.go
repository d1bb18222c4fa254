package hook_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/hook"
)

// bashGuard is a PreToolUse hook on Bash in the style of the published
// Claude Code examples: it reads the call from stdin with jq, or python3,
// or sed (PARSER=sed forces sed), and blocks rm -rf with exit 2 and a
// message on stderr.
const bashGuard = `#!/bin/sh
# .claude/hooks/block-rm.sh: PreToolUse hook on Bash
input=$(cat)
if [ "${PARSER:-}" != sed ] && command -v jq >/dev/null 2>&1; then
  cmd=$(printf '%s' "$input" | jq -r '.tool_input.command // empty')
elif [ "${PARSER:-}" != sed ] && command -v python3 >/dev/null 2>&1; then
  cmd=$(printf '%s' "$input" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("tool_input",{}).get("command",""))')
else
  cmd=$(printf '%s' "$input" | sed -n 's/.*"command":"\([^"]*\)".*/\1/p')
fi
case "$cmd" in
  *"rm -rf"*)
    echo "Blocked: rm -rf is not allowed; delete files one by one" >&2
    exit 2
    ;;
esac
exit 0
`

func TestCommandBashGuard(t *testing.T) {
	t.Parallel()
	for _, parser := range []string{"default", "sed"} {
		t.Run(parser, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, hook.Options{}, hook.Config{
				Name:    "guard",
				Point:   hook.PreToolUse,
				Matcher: "Bash",
				Command: writeScript(t, "", "block-rm.sh", bashGuard),
				Env:     map[string]string{"PARSER": parser},
			})

			out, reports := run(t, r, hook.PreToolUse, bashInput(t, "ls -la"))
			if diff := cmp.Diff(hook.Outcome{Ran: 1, Continue: true}, out); diff != "" {
				t.Errorf("allowed command: outcome (-want +got):\n%s", diff)
			}
			if got := final(reports)[0].Status; got != "ok" {
				t.Errorf("allowed command: status %q, want ok", got)
			}

			out, reports = run(t, r, hook.PreToolUse, bashInput(t, "rm -rf /tmp/x"))
			want := hook.Outcome{Ran: 1, Continue: true, Blocked: true,
				Reason: "Blocked: rm -rf is not allowed; delete files one by one"}
			if diff := cmp.Diff(want, out); diff != "" {
				t.Errorf("rm -rf: outcome (-want +got):\n%s", diff)
			}
			rep := final(reports)[0]
			if rep.Phase != "completed" || rep.Status != "blocked" || rep.Decision != "block" || rep.Reason != want.Reason {
				t.Errorf("rm -rf: report = %+v, want completed, blocked, block, the stderr", rep)
			}
		})
	}
}

// decisionHook is a PreToolUse hook that answers with JSON: it denies
// writes to .env files, asks about git push and allows the rest.
const decisionHook = `#!/bin/sh
input=$(cat)
decide() {
  printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"%s","permissionDecisionReason":"%s"}}\n' "$1" "$2"
  exit 0
}
case "$input" in
  *'.env"'*) decide deny "writing .env files is not allowed" ;;
  *'git push'*) decide ask "pushing needs a person" ;;
esac
decide allow "read-only command"
`

func TestCommandPermissionDecision(t *testing.T) {
	t.Parallel()
	script := writeScript(t, "", "decide.sh", decisionHook)
	r := newRunner(t, hook.Options{}, hook.Config{Point: hook.PreToolUse, Command: script})
	for _, tc := range []struct {
		name, command, decision, reason string
	}{
		{"deny", "cat > .env", "deny", "writing .env files is not allowed"},
		{"ask", "git push origin main", "ask", "pushing needs a person"},
		{"allow", "ls", "allow", "read-only command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := bashInput(t, tc.command)
			if tc.name == "deny" {
				in = hook.Input{SessionID: "s", ToolName: "Write", ToolInput: json.RawMessage(`{"file_path":"/w/.env"}`)}
			}
			out, reports := run(t, r, hook.PreToolUse, in)
			want := hook.Outcome{Ran: 1, Continue: true, PermissionDecision: tc.decision, PermissionReason: tc.reason}
			if diff := cmp.Diff(want, out); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			rep := final(reports)[0]
			if rep.Status != "ok" || rep.Decision != tc.decision || rep.Reason != tc.reason {
				t.Errorf("report = %+v, want status ok, decision %s, reason %q", rep, tc.decision, tc.reason)
			}
		})
	}
}

func TestCommandLegacyDecision(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		point  hook.Point
		stdout string
		want   hook.Outcome
	}{
		{"approve at pre_tool_use", hook.PreToolUse, `{"decision":"approve","reason":"fine"}`,
			hook.Outcome{Ran: 1, Continue: true, PermissionDecision: "allow", PermissionReason: "fine"}},
		{"block at pre_tool_use", hook.PreToolUse, `{"decision":"block","reason":"no"}`,
			hook.Outcome{Ran: 1, Continue: true, Blocked: true, Reason: "no", PermissionDecision: "deny", PermissionReason: "no"}},
		{"approve elsewhere is ignored", hook.PostToolUse, `{"decision":"approve"}`,
			hook.Outcome{Ran: 1, Continue: true}},
		{"specific output wins", hook.PreToolUse,
			`{"decision":"approve","hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}`,
			hook.Outcome{Ran: 1, Continue: true, PermissionDecision: "ask"}},
		{"permission decision ignored at post_tool_use", hook.PostToolUse,
			`{"hookSpecificOutput":{"hookEventName":"PostToolUse","permissionDecision":"deny","updatedInput":{"a":1}}}`,
			hook.Outcome{Ran: 1, Continue: true}},
		{"defer is no decision", hook.PreToolUse,
			`{"hookSpecificOutput":{"permissionDecision":"defer"}}`,
			hook.Outcome{Ran: 1, Continue: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, hook.Options{}, hook.Config{Point: tc.point, Command: "cat >/dev/null; echo '" + tc.stdout + "'"})
			out, _ := run(t, r, tc.point, bashInput(t, "ls"))
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

// rewriteHook adds --dry-run to every Bash command, as a PreToolUse hook
// that allows the call with an updated input.
const rewriteHook = `#!/bin/sh
cmd=$(sed -n 's/.*"command":"\([^"]*\)".*/\1/p')
cat <<JSON
{
  "hookSpecificOutput": {
    "hookEventName": "PreToolUse",
    "permissionDecision": "allow",
    "permissionDecisionReason": "rewritten to a dry run",
    "updatedInput": { "command": "$cmd --dry-run" }
  }
}
JSON
`

func TestCommandUpdatedInput(t *testing.T) {
	t.Parallel()
	r := newRunner(t, hook.Options{}, hook.Config{Name: "dry", Point: hook.PreToolUse, Matcher: "Bash",
		Command: writeScript(t, "", "dry-run.sh", rewriteHook)})
	out, reports := run(t, r, hook.PreToolUse, bashInput(t, "make deploy"))
	want := hook.Outcome{Ran: 1, Continue: true, PermissionDecision: "allow", PermissionReason: "rewritten to a dry run",
		UpdatedInput: json.RawMessage(`{"command":"make deploy --dry-run"}`)}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if got := string(final(reports)[0].UpdatedInput); got != string(want.UpdatedInput) {
		t.Errorf("report's UpdatedInput = %s, want %s", got, want.UpdatedInput)
	}
}

func TestCommandPermissionRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, stdout string
		want         hook.Outcome
	}{
		{"allow with updated input",
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"command":"npm test"}}}}`,
			hook.Outcome{Ran: 1, Continue: true, PermissionDecision: "allow", UpdatedInput: json.RawMessage(`{"command":"npm test"}`)}},
		{"deny with message",
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"not on main"}}}`,
			hook.Outcome{Ran: 1, Continue: true, PermissionDecision: "deny", PermissionReason: "not on main"}},
		{"deny and interrupt",
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"stop now","interrupt":true}}}`,
			hook.Outcome{Ran: 1, Continue: false, StopReason: "stop now", PermissionDecision: "deny", PermissionReason: "stop now"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			script := writeScript(t, "", "perm.sh", "#!/bin/sh\ncat >/dev/null\ncat <<'JSON'\n"+tc.stdout+"\nJSON\n")
			r := newRunner(t, hook.Options{}, hook.Config{Point: hook.PermissionRequest, Matcher: "Bash", Command: script})
			out, _ := run(t, r, hook.PermissionRequest, bashInput(t, "npm run test"))
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCommandPlainStdout(t *testing.T) {
	t.Parallel()
	// A UserPromptSubmit hook as in Claude Code's docs: what it prints is
	// context for the model.
	const prompt = `#!/bin/sh
cat >/dev/null
echo "Current time: 2026-01-02 03:04"
echo "Branch: main"
`
	for _, tc := range []struct {
		point hook.Point
		want  hook.Outcome
	}{
		{hook.UserPromptSubmit, hook.Outcome{Ran: 1, Continue: true,
			AdditionalContext: []string{"Current time: 2026-01-02 03:04\nBranch: main"}}},
		{hook.SessionStart, hook.Outcome{Ran: 1, Continue: true,
			AdditionalContext: []string{"Current time: 2026-01-02 03:04\nBranch: main"}}},
		{hook.PostToolUse, hook.Outcome{Ran: 1, Continue: true}},
		{hook.Stop, hook.Outcome{Ran: 1, Continue: true}},
	} {
		t.Run(string(tc.point), func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, hook.Options{}, hook.Config{Point: tc.point, Command: writeScript(t, "", "ctx.sh", prompt)})
			out, reports := run(t, r, tc.point, hook.Input{SessionID: "s", Prompt: "hello"})
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if got, want := final(reports)[0].AddedContext, len(tc.want.AdditionalContext) > 0; got != want {
				t.Errorf("report's AddedContext = %v, want %v", got, want)
			}
		})
	}
}

func TestCommandPostToolUseContext(t *testing.T) {
	t.Parallel()
	// A PostToolUse hook on Write|Edit that reminds the model to run the
	// formatter, tells the user, and keeps itself out of the transcript.
	const lint = `#!/bin/sh
file=$(sed -n 's/.*"file_path":"\([^"]*\)".*/\1/p')
case "$file" in
  *.go) ;;
  *) exit 0 ;;
esac
cat <<JSON
{"systemMessage": "checked $file", "suppressOutput": true,
 "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "$file is not gofmt-ed; run gofmt -w $file"}}
JSON
`
	r := newRunner(t, hook.Options{}, hook.Config{Point: hook.PostToolUse, Matcher: "Write|Edit",
		Command: writeScript(t, "", "lint.sh", lint)})
	in := hook.Input{SessionID: "s", ToolName: "Edit", ToolInput: json.RawMessage(`{"file_path":"/w/main.go"}`),
		ToolResponse: json.RawMessage(`{"success":true}`)}
	out, _ := run(t, r, hook.PostToolUse, in)
	want := hook.Outcome{Ran: 1, Continue: true, SystemMessages: []string{"checked /w/main.go"}, SuppressOutput: true,
		AdditionalContext: []string{"/w/main.go is not gofmt-ed; run gofmt -w /w/main.go"}}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
}

func TestCommandStop(t *testing.T) {
	t.Parallel()
	// A Stop hook that keeps the agent going until the tests were run,
	// unless it already did so once (stop_hook_active).
	const stop = `#!/bin/sh
input=$(cat)
case "$input" in
  *'"stop_hook_active":true'*) exit 0 ;;
esac
echo '{"decision": "block", "reason": "Run the tests before you stop."}'
`
	r := newRunner(t, hook.Options{}, hook.Config{Point: hook.Stop, Command: writeScript(t, "", "stop.sh", stop)})
	out, _ := run(t, r, hook.Stop, hook.Input{SessionID: "s"})
	want := hook.Outcome{Ran: 1, Continue: true, Blocked: true, Reason: "Run the tests before you stop."}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("first stop: outcome (-want +got):\n%s", diff)
	}
	out, _ = run(t, r, hook.Stop, hook.Input{SessionID: "s", StopHookActive: true})
	if diff := cmp.Diff(hook.Outcome{Ran: 1, Continue: true}, out); diff != "" {
		t.Errorf("second stop: outcome (-want +got):\n%s", diff)
	}

	// continue: false ends the run, whatever the point.
	r = newRunner(t, hook.Options{}, hook.Config{Point: hook.PostToolUse,
		Command: `echo '{"continue": false, "stopReason": "budget spent"}'`})
	out, reports := run(t, r, hook.PostToolUse, hook.Input{ToolName: "Bash"})
	want = hook.Outcome{Ran: 1, Continue: false, StopReason: "budget spent"}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("continue false: outcome (-want +got):\n%s", diff)
	}
	if rep := final(reports)[0]; rep.Status != "ok" || rep.Reason != "budget spent" {
		t.Errorf("continue false: report = %+v, want status ok, reason the stop reason", rep)
	}
}

func TestCommandTimeout(t *testing.T) {
	t.Parallel()
	const slow = "#!/bin/sh\ncat >/dev/null\nsleep 30\necho '{\"decision\":\"block\"}'\n"
	for _, tc := range []struct {
		mode hook.FailMode
		want hook.Outcome
	}{
		{hook.FailOpen, hook.Outcome{Ran: 1, Continue: true}},
		{hook.FailClosed, hook.Outcome{Ran: 1, Continue: true, Blocked: true, Reason: "hook slow failed: timed out after 200ms"}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, hook.Options{}, hook.Config{Name: "slow", Point: hook.PreToolUse, FailMode: tc.mode,
				Timeout: 200 * time.Millisecond, Command: writeScript(t, "", "slow.sh", slow)})
			start := time.Now()
			out, reports := run(t, r, hook.PreToolUse, bashInput(t, "ls"))
			if elapsed := time.Since(start); elapsed > promptly {
				t.Errorf("Run took %v; the hook's process group was not killed", elapsed)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			rep := final(reports)[0]
			if rep.Phase != "failed" || rep.Status != "failed" || rep.ErrorCategory != "timeout" || rep.FailMode != tc.mode {
				t.Errorf("report = %+v, want failed, category timeout, fail mode %s", rep, tc.mode)
			}
		})
	}
}

func TestCommandFailures(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name, command string
		mode          hook.FailMode
		category      string // "" when the hook does not fail
		message       string // what the failure's message or the block reason contains
		blocked       bool
	}{
		{"exit 1 fail open", "echo 'config missing' >&2; exit 1", hook.FailOpen, "exit", "exit code 1; stderr: config missing", false},
		{"exit 1 fail closed", "echo 'config missing' >&2; exit 1", hook.FailClosed, "exit", "exit code 1; stderr: config missing", true},
		{"exit 127, a typo in the path", "/no/such/hook.sh", hook.FailClosed, "exit", "exit code 127", true},
		{"killed by a signal", "kill -9 $$", hook.FailOpen, "exit", "killed by signal killed", false},
		{"invalid JSON", `echo '{"decision": "block",'`, hook.FailOpen, "invalid_output", "not a valid JSON object", false},
		{"invalid JSON fail closed", `echo '{nope'`, hook.FailClosed, "invalid_output", "not a valid JSON object", true},
		{"unknown decision", `echo '{"decision":"maybe"}'`, hook.FailOpen, "invalid_output", `unknown decision "maybe"`, false},
		{"unknown permission decision", `echo '{"hookSpecificOutput":{"permissionDecision":"sure"}}'`, hook.FailOpen, "invalid_output", `"sure"`, false},
		{"wrong event name", `echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse"}}'`, hook.FailOpen, "invalid_output", `"PostToolUse", want "PreToolUse"`, false},
		{"updated input not an object", `echo '{"hookSpecificOutput":{"updatedInput":[1]}}'`, hook.FailOpen, "invalid_output", "not a JSON object", false},
		{"stdout over 1 MiB", "head -c 2000000 /dev/zero | tr '\\0' x", hook.FailOpen, "invalid_output", "stdout exceeds 1 MiB", false},
		{"exit 2 without stderr", "exit 2", hook.FailOpen, "", "hook h exited with status 2", true},
		{"exit 2 stderr bounded", "printf '%s' " + big + " >&2; exit 2", hook.FailOpen, "", "(904 more bytes)", true},
		{"exit 2 ignores stdout", `echo '{"decision":"approve"}'; echo no >&2; exit 2`, hook.FailOpen, "", "no", true},
		{"plain text is ignored at pre_tool_use", "echo all good", hook.FailClosed, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, hook.Options{}, hook.Config{Name: "h", Point: hook.PreToolUse, FailMode: tc.mode, Command: tc.command})
			out, reports := run(t, r, hook.PreToolUse, bashInput(t, "ls"))
			if out.Blocked != tc.blocked {
				t.Errorf("Blocked = %v, want %v (outcome %+v)", out.Blocked, tc.blocked, out)
			}
			rep := final(reports)[0]
			if rep.ErrorCategory != tc.category {
				t.Errorf("ErrorCategory = %q, want %q (report %+v)", rep.ErrorCategory, tc.category, rep)
			}
			msg := rep.Message
			if tc.category == "" {
				msg = out.Reason
			}
			if !strings.Contains(msg, tc.message) {
				t.Errorf("message %q does not contain %q", msg, tc.message)
			}
			if tc.category != "" && tc.blocked {
				if want := "hook h failed: " + rep.Message; out.Reason != want || rep.Reason != want {
					t.Errorf("reason = %q (report %q), want %q", out.Reason, rep.Reason, want)
				}
			}
			if tc.name == "exit 2 stderr bounded" && len(out.Reason) > 4200 {
				t.Errorf("reason is %d bytes, want about 4 KiB", len(out.Reason))
			}
		})
	}
}

func TestCommandStartFailure(t *testing.T) {
	t.Parallel()
	r := newRunner(t, hook.Options{}, hook.Config{Name: "h", Point: hook.PreToolUse, FailMode: hook.FailOpen, Command: "true"})
	in := bashInput(t, "ls")
	in.Cwd = filepath.Join(in.Cwd, "missing")
	out, reports := run(t, r, hook.PreToolUse, in)
	if diff := cmp.Diff(hook.Outcome{Ran: 1, Continue: true}, out); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if rep := final(reports)[0]; rep.ErrorCategory != "start" {
		t.Errorf("report = %+v, want category start", rep)
	}
}

// TestCommandInput checks what a hook reads on stdin and where it runs:
// the script saves its stdin, its working directory and
// CLAUDE_PROJECT_DIR, and checks the fields a PreToolUse hook relies on.
func TestCommandInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const check = `#!/bin/sh
input=$(cat)
printf '%s' "$input" > "$SAVE/stdin.json"
pwd > "$SAVE/pwd"
printf '%s' "$CLAUDE_PROJECT_DIR" > "$SAVE/project_dir"
for field in '"session_id":"sess-1"' '"hook_event_name":"PreToolUse"' '"tool_name":"Bash"' '"tool_use_id":"toolu_01"' '"tool_input":{' '"cwd":"'; do
  case "$input" in
    *"$field"*) ;;
    *) echo "missing $field" >&2; exit 2 ;;
  esac
done
`
	r := newRunner(t, hook.Options{}, hook.Config{Point: hook.PreToolUse, Command: writeScript(t, "", "check.sh", check),
		Env: map[string]string{"SAVE": dir}})
	in := bashInput(t, "ls")
	in.PermissionMode = "default"
	in.TurnID, in.RunID = "turn-1", "run-1"
	out, _ := run(t, r, hook.PreToolUse, in)
	if diff := cmp.Diff(hook.Outcome{Ran: 1, Continue: true}, out); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}

	data, err := os.ReadFile(filepath.Join(dir, "stdin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("stdin is not JSON: %v: %s", err, data)
	}
	want := map[string]any{
		"session_id":      "sess-1",
		"cwd":             in.Cwd,
		"permission_mode": "default",
		"hook_event_name": "PreToolUse",
		"tool_name":       "Bash",
		"tool_input":      map[string]any{"command": "ls"},
		"tool_use_id":     "toolu_01",
		"turn_id":         "turn-1",
		"run_id":          "run-1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stdin (-want +got):\n%s", diff)
	}
	for _, f := range []string{"pwd", "project_dir"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(b)); got != in.Cwd {
			t.Errorf("%s = %q, want the input's cwd %q", f, got, in.Cwd)
		}
	}
}

// TestCommandDirDefault: without Input.Cwd, hooks run in Options.Dir and
// are told so.
func TestCommandDirDefault(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := newRunner(t, hook.Options{Dir: dir}, hook.Config{Point: hook.UserPromptSubmit,
		Command: `echo "pwd=$(pwd) cwd=$(sed -n 's/.*"cwd":"\([^"]*\)".*/\1/p')"`})
	out, _ := run(t, r, hook.UserPromptSubmit, hook.Input{Prompt: "hi"})
	if diff := cmp.Diff([]string{"pwd=" + dir + " cwd=" + dir}, out.AdditionalContext); diff != "" {
		t.Errorf("context (-want +got):\n%s", diff)
	}
}

func TestCommandEnvironment(t *testing.T) {
	t.Parallel()
	// The hook prints its environment as context for the model.
	r := newRunner(t, hook.Options{}, hook.Config{Point: hook.UserPromptSubmit, Command: "env",
		Env: map[string]string{"HOOK_SETTING": "on", "PATH": "/custom/bin:/usr/bin:/bin"}})
	in := hook.Input{SessionID: "s", Cwd: t.TempDir(), Prompt: "hi"}
	out, _ := run(t, r, hook.UserPromptSubmit, in)
	if len(out.AdditionalContext) != 1 {
		t.Fatalf("outcome = %+v, want the environment as context", out)
	}
	env := strings.Split(out.AdditionalContext[0], "\n")
	for k, v := range daemonSecrets {
		for _, line := range env {
			if strings.HasPrefix(line, k+"=") || strings.Contains(line, v) {
				t.Errorf("the daemon's %s reached the hook: %q", k, line)
			}
		}
	}
	for _, want := range []string{
		"HOOK_SETTING=on",
		"PATH=/custom/bin:/usr/bin:/bin",
		"CLAUDE_PROJECT_DIR=" + in.Cwd,
		"AGENTRT_HOOK_POINT=user_prompt_submit",
	} {
		if !slices.Contains(env, want) {
			t.Errorf("environment lacks %q:\n%s", want, out.AdditionalContext[0])
		}
	}
}
