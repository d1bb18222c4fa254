package agentrt_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

const crashScript = `
responses:
  - tool_calls: [{name: read_file, input: {path: a.txt}}]
  - tool_calls: [{name: hang, input: {}}]
`

// crashConfig is the runtime both the child and the parent open on dir.
func crashConfig(t testing.TB, dir string, hang tool.Tool) agentrt.Config {
	s, err := replay.Parse("crash.replay.yaml", []byte(crashScript))
	if err != nil {
		t.Fatal(err)
	}
	return agentrt.Config{
		DataDir: dir,
		Tools:   []tool.Tool{hang},
		Agents: map[string]*agentrt.Agent{"a": {
			Provider: replay.New(s), Tools: []string{"read_file", "hang"}, Workspace: dir,
		}},
	}
}

// TestCrashChild is the process TestCrashMidStepKeepsCommittedFacts kills:
// it runs a turn whose second tool call hangs, says "ready" once that tool
// has started, and waits to be killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("AGENTRT_CRASH_DIR")
	if dir == "" {
		t.Skip("run by TestCrashMidStepKeepsCommittedFacts")
	}
	hang := tool.Func("hang", "Never returns.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		os.Stdout.WriteString("ready\n")
		select {}
	})
	rt, err := agentrt.New(crashConfig(t, dir, hang))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.SubmitTurn(context.Background(), &agentrt.SubmitTurnParams{Agent: "a", Input: "go", SessionID: "crash-1"}); err != nil {
		t.Fatal(err)
	}
	select {}
}

// TestCrashMidStepKeepsCommittedFacts kills a runtime (SIGKILL) while a
// tool runs, then reopens its data directory: every fact committed before
// the crash is there, the log has no gaps, and the read model says the
// cut-off turn is stale rather than running.
func TestCrashMidStepKeepsCommittedFacts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/a.txt", []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AGENTRT_CRASH_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		if sc.Text() == "ready" {
			ready = true
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if !ready {
		t.Fatal("the child never reached the hanging tool")
	}

	never := tool.Func("hang", "Never called.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		return "", nil
	})
	rt, err := agentrt.New(crashConfig(t, dir, never))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rt.Start(ctx); err != nil {
		t.Fatalf("reopening after the crash: %v", err)
	}
	defer rt.Stop(ctx)
	b := &testBundle{rt: rt}
	evs := b.sessionEvents(t, runtype.Owner{}, "crash-1") // validates and checks for gaps
	count := map[event.Type]int{}
	for _, e := range evs {
		count[e.Type]++
	}
	// Committed before the crash: the first tool's result, and the second
	// model response that requested the hanging tool (a model response is
	// durable before any tool it requests runs).
	if count[event.ToolResult] != 1 || count[event.ModelCompleted] != 2 {
		t.Errorf("after the crash: %d tool.result and %d model.completed events, want 1 and 2", count[event.ToolResult], count[event.ModelCompleted])
	}
	snap, err := rt.GetSession(ctx, runtype.Owner{}, "crash-1")
	if err != nil {
		t.Fatal(err)
	}
	th := snap.Threads[0]
	if th.Status != runtype.ThreadStale || len(th.Incidents) != 1 || th.Incidents[0].Reason != "stale" {
		t.Errorf("thread after the crash = %s with incidents %+v, want stale with one stale incident", th.Status, th.Incidents)
	}
	if got := th.Turns[0].Status; got != runtype.StatusRunning {
		t.Errorf("stored turn status = %s, want running (as recorded)", got)
	}
}
