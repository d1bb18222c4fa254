package agentrt_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

const crashScript = `
responses:
  - tool_calls: [{name: read_file, input: {path: a.txt}}]
  - tool_calls: [{name: hang, input: {}}]
  - text: recovered
`

// crashConfig is the runtime both the child and the parent open on dir.
// The lease is short so that the parent takes the child's work up soon.
func crashConfig(t testing.TB, dir string, hang tool.Tool) agentrt.Config {
	s, err := replay.Parse("crash.replay.yaml", []byte(crashScript))
	if err != nil {
		t.Fatal(err)
	}
	return agentrt.Config{
		DataDir:  filepath.Join(dir, "data"), // hidden from the tools working in dir
		Tools:    []tool.Tool{hang},
		LeaseTTL: 300 * time.Millisecond,
		Agents: map[string]*agentrt.Agent{"a": {
			Provider: replay.New(s), Tools: []string{"read_file", "hang"}, Workspace: dir,
		}},
	}
}

// TestCrashChild is the process TestCrashRecovery kills: it runs a turn
// whose second tool call hangs, says "ready" once that tool has started,
// and waits to be killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("AGENTRT_CRASH_DIR")
	if dir == "" {
		t.Skip("run by TestCrashRecovery")
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
	if _, err := rt.SubmitTurn(context.Background(), &apitype.SubmitTurnParams{Agent: "a", Input: "go", SessionID: "crash-1"}); err != nil {
		t.Fatal(err)
	}
	select {}
}

// TestCrashRecovery kills a runtime (SIGKILL) while a tool that may not
// run twice is running, then starts another on its data directory: every
// fact committed before the crash is there, the lost attempt is recorded
// lost, a new attempt goes on from the last recorded step without asking
// the model again, and the call that may or may not have happened is put
// to an operator (side_effect_unknown) instead of run again. Marking it
// done with a result lets the turn complete.
func TestCrashRecovery(t *testing.T) {
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

	ran := 0
	hang := tool.Func("hang", "Must not run again.", tool.Annotations{}, func(ctx context.Context, c *tool.Call, in struct{}) (string, error) {
		ran++
		return "", nil
	})
	rt, err := agentrt.New(crashConfig(t, dir, hang))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rt.Start(ctx); err != nil {
		t.Fatalf("reopening after the crash: %v", err)
	}
	defer rt.Stop(ctx)
	b := &testBundle{rt: rt}

	// The turn was running: once the dead worker's lease runs out, a
	// worker of this runtime takes it up and parks it on the unknown call.
	snap, err := rt.GetSession(ctx, runtype.Owner{}, "crash-1")
	if err != nil {
		t.Fatal(err)
	}
	turnID := snap.Threads[0].Turns[0].TurnID
	var turn *runtype.Turn
	for turn == nil || turn.Status == runtype.StatusRunning {
		if turn, err = rt.WaitTurn(ctx, runtype.Owner{}, turnID); err != nil {
			t.Fatal(err)
		}
	}
	if turn.Status != runtype.StatusWaitingPermission {
		t.Fatalf("recovered turn = %s (%s), want waiting_permission", turn.Status, turn.StatusReason)
	}
	acts, err := rt.ListActions(ctx, &apitype.ListActionsParams{SessionID: "crash-1", Status: runtype.ActionPending})
	if err != nil || len(acts) != 1 || acts[0].Type != "side_effect_unknown" || acts[0].ToolName != "hang" {
		t.Fatalf("pending actions = %+v, %v; want one side_effect_unknown for hang", acts, err)
	}
	if want := []string{runtype.DecisionRetry, runtype.DecisionMarkDone, runtype.DecisionFail}; !slices.Equal(acts[0].Decisions, want) {
		t.Errorf("decisions = %v, want %v", acts[0].Decisions, want)
	}
	res, err := rt.RespondAction(ctx, &apitype.RespondActionParams{ActionID: acts[0].ActionID, Decision: runtype.DecisionMarkDone, Message: "the job did run"})
	if err != nil || !res.Resumed {
		t.Fatalf("RespondAction(mark_done) = %+v, %v", res, err)
	}
	if turn, err = rt.WaitTurn(ctx, runtype.Owner{}, turnID); err != nil || turn.Status != runtype.StatusCompleted || turn.Result != "recovered" {
		t.Fatalf("turn after mark_done = %+v, %v; want completed with the third response", turn, err)
	}
	if ran != 0 {
		t.Errorf("the call that may have happened ran %d more times, want none", ran)
	}

	evs := b.sessionEvents(t, runtype.Owner{}, "crash-1") // validates and checks for gaps
	count := map[event.Type]int{}
	var toolResults []string
	for _, e := range evs {
		count[e.Type]++
		if e.Type == event.ToolResult {
			toolResults = append(toolResults, e.Payload.(*event.ToolResultPayload).Name)
		}
	}
	// Three model responses in all: the two before the crash are never
	// requested again. read_file ran once; hang's result is the operator's.
	if count[event.ModelCompleted] != 3 || !slices.Equal(toolResults, []string{"read_file", "hang"}) {
		t.Errorf("%d model.completed and tool results %v, want 3 and [read_file hang]", count[event.ModelCompleted], toolResults)
	}
	if count[event.TaskLost] != 1 || count[event.TaskAttemptStarted] != 2 {
		t.Errorf("%d task.lost and %d task.attempt.started, want 1 and 2", count[event.TaskLost], count[event.TaskAttemptStarted])
	}
	task, err := rt.GetTask(ctx, runtype.Owner{}, turn.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for _, a := range task.Attempts {
		statuses = append(statuses, a.Status)
	}
	if !slices.Equal(statuses, []string{"stale", "completed"}) {
		t.Errorf("attempts = %v, want the lost one (stale) and the completed one", statuses)
	}
	if v, err := rt.VerifySession(ctx, runtype.Owner{}, "crash-1"); err != nil || !v.OK {
		t.Errorf("receipt chain after the crash: %+v, %v", v, err)
	}
}
