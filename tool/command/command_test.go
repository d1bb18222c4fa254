package command_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/command"
)

// promptly bounds how long a call that must not wait for its command may
// take. It is far below the commands' 30 s sleeps.
const promptly = 10 * time.Second

// writeScript writes an executable shell script with body into a fresh
// temporary directory and returns its path.
func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tool.sh")
	// Hold ForkLock for reading while the script is open for writing: a
	// command started concurrently by another test would otherwise inherit
	// the descriptor across fork, and exec of this script would fail with
	// "text file busy".
	syscall.ForkLock.RLock()
	err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755)
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// newTool returns a command tool named "t" running a script with body.
func newTool(t *testing.T, body string, timeout time.Duration, cfg command.Config) tool.Tool {
	t.Helper()
	cfg.Argv = append([]string{writeScript(t, body)}, cfg.Argv...)
	tl, err := command.New(tool.Spec{Name: "t", Timeout: timeout}, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tl
}

// run calls tl with input and fails the test if the call takes longer
// than promptly.
func run(t *testing.T, tl tool.Tool, call *tool.Call) *tool.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), promptly)
	defer cancel()
	res, err := tl.Call(ctx, call)
	if err != nil {
		t.Fatalf("Call returned a Go error: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Call did not return within %v", promptly)
	}
	return res
}

func wantError(t *testing.T, res *tool.Result, substrs ...string) {
	t.Helper()
	if !res.IsError {
		t.Errorf("result = %+v, want an error result", res)
		return
	}
	for _, s := range substrs {
		if !strings.Contains(res.Content, s) {
			t.Errorf("error result %q does not contain %q", res.Content, s)
		}
	}
}

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		tl, err := command.New(tool.Spec{Name: "lookup_order", Description: "d"}, command.Config{Argv: []string{"/bin/true"}})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		want := tool.Spec{Name: "lookup_order", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`), Source: "command"}
		if diff := cmp.Diff(want, tl.Spec()); diff != "" {
			t.Errorf("Spec (-want +got):\n%s", diff)
		}
		if err := tool.NewRegistry().Register(tl); err != nil {
			t.Errorf("Register: %v", err)
		}
	})

	for name, cfg := range map[string]command.Config{
		"no argv":        {},
		"empty argv[0]":  {Argv: []string{""}},
		"env key with =": {Argv: []string{"/bin/true"}, Env: map[string]string{"A=B": "c"}},
		"empty env key":  {Argv: []string{"/bin/true"}, Env: map[string]string{"": "c"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if tl, err := command.New(tool.Spec{Name: "x"}, cfg); err == nil {
				t.Errorf("New = %v, want an error", tl)
			}
		})
	}
}

func TestCallSuccess(t *testing.T) {
	t.Parallel()

	t.Run("stdin received and stdout compacted", func(t *testing.T) {
		t.Parallel()
		tl := newTool(t, `cat`, 0, command.Config{})
		res := run(t, tl, &tool.Call{Input: json.RawMessage("{\"order_id\": \"A-1\",\n \"n\": [1, 2.50]}")})
		if diff := cmp.Diff(&tool.Result{Content: `{"order_id":"A-1","n":[1,2.50]}`}, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})

	t.Run("any JSON value", func(t *testing.T) {
		t.Parallel()
		tl := newTool(t, `printf '  "done"\n\n'`, 0, command.Config{})
		if diff := cmp.Diff(&tool.Result{Content: `"done"`}, run(t, tl, &tool.Call{})); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})

	t.Run("arguments", func(t *testing.T) {
		t.Parallel()
		tl := newTool(t, `printf '["%s","%s"]' "$1" "$2"`, 0, command.Config{Argv: []string{"--flag", "two words"}})
		if diff := cmp.Diff(&tool.Result{Content: `["--flag","two words"]`}, run(t, tl, &tool.Call{})); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})

	t.Run("large stderr does not fail a good call", func(t *testing.T) {
		t.Parallel()
		tl := newTool(t, `head -c 300000 /dev/zero | tr '\0' e >&2; echo '{"ok":true}'`, 0, command.Config{})
		if diff := cmp.Diff(&tool.Result{Content: `{"ok":true}`}, run(t, tl, &tool.Call{})); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})

	t.Run("output up to the limit", func(t *testing.T) {
		t.Parallel()
		// A JSON string of exactly MaxStdout bytes: quotes and 'a's.
		tl := newTool(t, `printf '"'; head -c $((1048576 - 2)) /dev/zero | tr '\0' a; printf '"'`, 0, command.Config{})
		res := run(t, tl, &tool.Call{})
		if res.IsError || len(res.Content) != command.MaxStdout {
			t.Errorf("result: IsError %v, %d bytes; want success with %d bytes", res.IsError, len(res.Content), command.MaxStdout)
		}
	})
}

func TestCallWorkingDir(t *testing.T) {
	t.Parallel()
	body := `printf '"%s"' "$(pwd -P)"`

	t.Run("workspace", func(t *testing.T) {
		t.Parallel()
		ws, fallback := t.TempDir(), t.TempDir()
		tl := newTool(t, body, 0, command.Config{Dir: fallback})
		want, err := filepath.EvalSymlinks(ws)
		if err != nil {
			t.Fatal(err)
		}
		res := run(t, tl, &tool.Call{WorkspaceDir: ws})
		if diff := cmp.Diff(&tool.Result{Content: `"` + want + `"`}, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})

	t.Run("config dir without a workspace", func(t *testing.T) {
		t.Parallel()
		fallback := t.TempDir()
		tl := newTool(t, body, 0, command.Config{Dir: fallback})
		want, err := filepath.EvalSymlinks(fallback)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&tool.Result{Content: `"` + want + `"`}, run(t, tl, &tool.Call{})); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})
}

func TestCallEnvironment(t *testing.T) {
	t.Parallel()

	call := &tool.Call{
		ID:             "call_01J0000000000000000000000",
		SessionID:      "ses_01J0000000000000000000000",
		TurnID:         "turn_01J0000000000000000000000",
		RunID:          "run_01J0000000000000000000000",
		IdempotencyKey: "idem-call_01J-attempt-stable",
	}
	cfg := command.Config{Env: map[string]string{
		"TOOL_REGION":       "eu-west",
		"LANG":              "C.UTF-8",
		"AGENTRT_TOOL_NAME": "spoofed", // the call's identity wins
	}}

	t.Run("only allowed variables", func(t *testing.T) {
		t.Parallel()
		tl := newTool(t, `
printf '['
sep=''
for name in $(env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p' | sort); do
	printf '%s"%s"' "$sep" "$name"
	sep=','
done
printf ']'`, 0, cfg)
		res := run(t, tl, call)
		var got []string
		if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
			t.Fatalf("result %+v is not a list of names: %v", res, err)
		}
		want := []string{
			"AGENTRT_IDEMPOTENCY_KEY", "AGENTRT_SESSION_ID", "AGENTRT_TOOL_CALL_ID", "AGENTRT_TOOL_NAME", "AGENTRT_TURN_ID",
			"LANG", "TOOL_REGION",
			"PWD", // set by the shell itself
		}
		for _, k := range []string{"PATH", "HOME", "LC_ALL", "TZ", "TMPDIR"} {
			if _, ok := os.LookupEnv(k); ok {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("environment variable names (-want +got):\n%s", diff)
		}
		for k := range daemonSecrets {
			if slices.Contains(got, k) {
				t.Errorf("daemon variable %s leaked to the command", k)
			}
		}
	})

	t.Run("values", func(t *testing.T) {
		t.Parallel()
		tl := newTool(t, `
printf '{"openai":"%s","name":"%s","call":"%s","session":"%s","turn":"%s","key":"%s","region":"%s","lang":"%s","path_set":%s}' \
	"${OPENAI_API_KEY-unset}" "$AGENTRT_TOOL_NAME" "$AGENTRT_TOOL_CALL_ID" "$AGENTRT_SESSION_ID" \
	"$AGENTRT_TURN_ID" "$AGENTRT_IDEMPOTENCY_KEY" "$TOOL_REGION" "$LANG" "$([ -n "$PATH" ] && echo true || echo false)"`, 0, cfg)
		res := run(t, tl, call)
		var got map[string]any
		if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
			t.Fatalf("result %+v is not an object: %v", res, err)
		}
		want := map[string]any{
			"openai":   "unset",
			"name":     "t",
			"call":     call.ID,
			"session":  call.SessionID,
			"turn":     call.TurnID,
			"key":      call.IdempotencyKey,
			"region":   "eu-west",
			"lang":     "C.UTF-8",
			"path_set": os.Getenv("PATH") != "",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("environment (-want +got):\n%s", diff)
		}
	})
}

func TestCallErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		body string
		want string // the whole error content
	}{
		{
			name: "non-zero exit",
			body: `echo '{"partial":true}'; echo 'order service unavailable' >&2; exit 3`,
			want: `t: exit code 3; stderr: order service unavailable; stdout: {"partial":true}`,
		},
		{
			name: "non-zero exit without output",
			body: `exit 1`,
			want: `t: exit code 1`,
		},
		{
			name: "killed by a signal",
			body: `kill -9 $$`,
			want: `t: killed by signal killed`,
		},
		{
			name: "invalid JSON",
			body: `echo 'order A-1 shipped'; echo 'debug: done' >&2`,
			want: `t: stdout is not valid JSON (invalid character 'o' looking for beginning of value): order A-1 shipped; stderr: debug: done`,
		},
		{
			name: "two JSON values",
			body: `echo '{} {}'`,
			want: `t: stdout is not valid JSON (invalid character '{' after top-level value): {} {}`,
		},
		{
			name: "empty stdout",
			body: `echo 'nothing to say' >&2`,
			want: `t: command wrote nothing on stdout; want a JSON value; stderr: nothing to say`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := newTool(t, tt.body, 0, command.Config{})
			if diff := cmp.Diff(&tool.Result{Content: tt.want, IsError: true}, run(t, tl, &tool.Call{})); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("previews are bounded", func(t *testing.T) {
		t.Parallel()
		tl := newTool(t, `head -c 500000 /dev/zero | tr '\0' o >&2; head -c 500000 /dev/zero | tr '\0' x; exit 2`, 0, command.Config{})
		res := run(t, tl, &tool.Call{})
		// Both streams wrote 500000 bytes; the previews show 1024 of each.
		wantError(t, res, "t: exit code 2; stderr: ooo", "; stdout: xxx")
		if n := strings.Count(res.Content, "… (498976 more bytes)"); n != 2 {
			t.Errorf("error result says %d times how much was left out, want 2", n)
		}
		if len(res.Content) > 4096 {
			t.Errorf("error result is %d bytes, want a bounded preview", len(res.Content))
		}
	})

	t.Run("invalid JSON preview is bounded", func(t *testing.T) {
		t.Parallel()
		tl := newTool(t, `head -c 100000 /dev/zero | tr '\0' x`, 0, command.Config{})
		res := run(t, tl, &tool.Call{})
		wantError(t, res, "stdout is not valid JSON", "(98976 more bytes)")
		if len(res.Content) > 2048 {
			t.Errorf("error result is %d bytes, want a bounded preview", len(res.Content))
		}
	})

	t.Run("missing executable", func(t *testing.T) {
		t.Parallel()
		for _, argv0 := range []string{filepath.Join(t.TempDir(), "nope"), "agentrt-no-such-command"} {
			tl, err := command.New(tool.Spec{Name: "t"}, command.Config{Argv: []string{argv0}})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			wantError(t, run(t, tl, &tool.Call{}), "t: starting "+argv0+": ")
		}
	})
}

func TestCallOutputLimit(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"endless": `exec yes '"spam"'`,
		"finite":  `head -c 2000000 /dev/zero | tr '\0' a; echo '{}'`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tl := newTool(t, body, 0, command.Config{})
			res := run(t, tl, &tool.Call{})
			if diff := cmp.Diff(&tool.Result{Content: "t: output exceeds 1 MiB", IsError: true}, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// holdFIFO creates a FIFO and opens its read end; a script opens it for
// writing as fd 3, which its background processes inherit. The returned
// function reports whether every writer has exited within promptly, which
// proves the background processes were killed.
func holdFIFO(t *testing.T) (path string, writersGone func() bool) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "hold")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	// Non-blocking, so opening does not wait for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return path, func() bool {
		if err := f.SetReadDeadline(time.Now().Add(promptly)); err != nil {
			t.Fatal(err)
		}
		_, err := io.ReadAll(f) // EOF once the last writer is gone
		return err == nil
	}
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()

	t.Run("kills the process group", func(t *testing.T) {
		t.Parallel()
		// The background sleeper holds stdout open; killing only the shell
		// would leave the call waiting for it.
		hold, writersGone := holdFIFO(t)
		tl := newTool(t, `exec 3>"$HOLD"; sleep 30 & sleep 30`, 200*time.Millisecond, command.Config{Env: map[string]string{"HOLD": hold}})
		res := run(t, tl, &tool.Call{})
		if diff := cmp.Diff(&tool.Result{Content: "t: timed out after 200ms", IsError: true}, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if !writersGone() {
			t.Error("the background sleeper survived the call")
		}
	})

	t.Run("escaped grandchild holding stdout", func(t *testing.T) {
		t.Parallel()
		// setsid puts the sleeper outside the process group, beyond the
		// kill; WaitDelay still closes its pipes so the call returns.
		pidFile := filepath.Join(t.TempDir(), "pid")
		t.Cleanup(func() {
			if b, err := os.ReadFile(pidFile); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
		tl := newTool(t, `setsid sleep 30 & echo $! > "$PID_FILE"; sleep 30`, 200*time.Millisecond,
			command.Config{Env: map[string]string{"PID_FILE": pidFile}})
		wantError(t, run(t, tl, &tool.Call{}), "t: timed out after 200ms")
	})

	t.Run("background process after success", func(t *testing.T) {
		t.Parallel()
		hold, writersGone := holdFIFO(t)
		tl := newTool(t, `exec 3>"$HOLD"; sleep 30 & echo '{"started":true}'`, 0, command.Config{Env: map[string]string{"HOLD": hold}})
		if diff := cmp.Diff(&tool.Result{Content: `{"started":true}`}, run(t, tl, &tool.Call{})); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if !writersGone() {
			t.Error("the background sleeper outlived the call")
		}
	})
}

func TestCallCancel(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "ready")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opened read-write so that opening does not wait for the writer.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ready := make(chan struct{})
	go func() {
		buf := make([]byte, 16)
		if n, _ := f.Read(buf); n > 0 {
			close(ready)
		}
	}()

	tl := newTool(t, `echo ready > "$READY_FIFO"; sleep 30`, 0, command.Config{Env: map[string]string{"READY_FIFO": fifo}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan *tool.Result, 1)
	go func() {
		res, _ := tl.Call(ctx, &tool.Call{})
		done <- res
	}()

	deadline := time.NewTimer(promptly)
	defer deadline.Stop()
	select {
	case <-ready:
		cancel()
	case res := <-done:
		f.Close() // release the reader
		t.Fatalf("call returned before it was cancelled: %+v", res)
	case <-deadline.C:
		f.Close()
		t.Fatal("the command never signalled readiness")
	}
	select {
	case res := <-done:
		if diff := cmp.Diff(&tool.Result{Content: "t: interrupted: context canceled", IsError: true}, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	case <-deadline.C:
		t.Fatalf("call did not return within %v of cancellation", promptly)
	}
}
