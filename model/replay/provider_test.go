package replay_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/model"
	"github.com/agentrt/agentrt/model/replay"
	"github.com/agentrt/agentrt/runtype"
)

// newProvider parses script and returns a Provider playing it.
func newProvider(t testing.TB, script string) *replay.Provider {
	t.Helper()
	s, err := replay.Parse("t.replay.yaml", []byte(script))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return replay.New(s)
}

// numbered returns a script of n text responses "1" to "n".
func numbered(n int) string {
	var b strings.Builder
	b.WriteString("responses:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - text: %q\n", strconv.Itoa(i+1))
	}
	return b.String()
}

func TestGenerateSupportScript(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, err := replay.Load("testdata/support.replay.yaml")
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		p := replay.New(s)
		start := time.Now()
		var got []result
		for range 6 {
			resp, err := p.Generate(t.Context(), &model.Request{SessionID: "ses_1"})
			got = append(got, result{resp, err})
		}
		exhausted := &model.Error{
			Kind:    model.ErrScriptExhausted,
			Message: `replay script "testdata/support.replay.yaml" has no response 5 for this session (it holds 4)`,
		}
		want := []result{
			{Resp: &model.Response{
				Text:         "Let me look that up.",
				ToolCalls:    []runtype.MessageToolCall{{Name: "lookup_order", Arguments: `{"order_id":"1042"}`}},
				FinishReason: model.FinishToolCalls,
				Usage:        runtype.Usage{InputTokens: 120, OutputTokens: 30, CachedInputTokens: 100},
				Raw:          []byte(`{"text":"Let me look that up.","tool_calls":[{"name":"lookup_order","input":{"order_id":"1042"}}],"usage":{"input_tokens":120,"output_tokens":30,"cached_input_tokens":100}}`),
			}},
			{Err: &model.Error{Kind: model.ErrRateLimit, Message: "slow down", RetryAfter: 200 * time.Millisecond}},
			{Resp: &model.Response{
				ToolCalls:    []runtype.MessageToolCall{{ID: "call_abc", Name: "open_ticket", Arguments: `{"order_id": 10`}},
				FinishReason: model.FinishToolCalls,
				Raw:          []byte(`{"tool_calls":[{"name":"open_ticket","id":"call_abc","raw_input":"{\"order_id\": 10"}],"finish_reason":"tool_calls"}`),
			}},
			{Resp: &model.Response{
				ToolCalls:    []runtype.MessageToolCall{{Name: "complete_task", Arguments: `{"result":"done"}`}},
				FinishReason: model.FinishToolCalls,
				Raw:          []byte(`{"tool_calls":[{"name":"complete_task","input":{"result":"done"}}],"delay_ms":50}`),
			}},
			{Err: exhausted},
			{Err: exhausted},
		}
		if diff := cmp.Diff(want, got, cmpResult); diff != "" {
			t.Errorf("responses mismatch (-want +got):\n%s", diff)
		}
		if elapsed := time.Since(start); elapsed != 50*time.Millisecond {
			t.Errorf("playing the script took %v, want the scripted 50ms", elapsed)
		}
		retryable := []bool{model.AsError(got[1].Err).Retryable(), model.AsError(got[4].Err).Retryable()}
		if diff := cmp.Diff([]bool{true, false}, retryable); diff != "" {
			t.Errorf("Retryable of rate limit and exhaustion mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestInfo(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "model: support-bot-v1\nresponses: [{text: hi}]\n")
	want := model.Info{Kind: "replay", Model: "support-bot-v1"}
	if diff := cmp.Diff(want, p.Info()); diff != "" {
		t.Errorf("Info mismatch (-want +got):\n%s", diff)
	}
}

func TestGenerateErrorEntryIsConsumed(t *testing.T) {
	t.Parallel()
	got := play(t, lines(
		"responses:",
		"  - error: {kind: overloaded}",
		"  - error: {kind: server, message: boom, retry_after_ms: 0}",
		"  - text: recovered",
	), 3)
	want := []result{
		{Err: &model.Error{Kind: model.ErrOverloaded, Message: "scripted error (replay response 1)"}},
		{Err: &model.Error{Kind: model.ErrServer, Message: "boom"}},
		{Resp: &model.Response{Text: "recovered", FinishReason: model.FinishStop, Raw: []byte(`{"text":"recovered"}`)}},
	}
	if diff := cmp.Diff(want, got, cmpResult); diff != "" {
		t.Errorf("responses mismatch (-want +got):\n%s", diff)
	}
}

// TestGenerateSessionsAreIndependent runs several sessions at once, each
// calling Generate from its own goroutine; every session must see the
// whole script in order. Run it with -race.
func TestGenerateSessionsAreIndependent(t *testing.T) {
	t.Parallel()
	const n, sessions = 40, 4
	p := newProvider(t, numbered(n))
	ctx := t.Context()

	got := make([][]string, sessions)
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Go(func() {
			req := &model.Request{SessionID: "ses_" + strconv.Itoa(s)}
			for range n {
				resp, err := p.Generate(ctx, req)
				if err != nil {
					got[s] = append(got[s], "error: "+err.Error())
					continue
				}
				got[s] = append(got[s], resp.Text)
			}
		})
	}
	wg.Wait()

	want := make([][]string, sessions)
	for s := range sessions {
		for i := range n {
			want[s] = append(want[s], strconv.Itoa(i+1))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("per-session responses mismatch (-want +got):\n%s", diff)
	}
	for s := range sessions {
		_, err := p.Generate(ctx, &model.Request{SessionID: "ses_" + strconv.Itoa(s)})
		if kind := model.AsError(err).Kind; kind != model.ErrScriptExhausted {
			t.Errorf("session %d after the script: error kind %q, want %q", s, kind, model.ErrScriptExhausted)
		}
	}
}

// TestGenerateOneSessionConcurrently checks that concurrent calls of one
// session each get a different response and together get all of them.
func TestGenerateOneSessionConcurrently(t *testing.T) {
	t.Parallel()
	const n, workers = 120, 6
	p := newProvider(t, numbered(n))
	ctx := t.Context()
	req := &model.Request{SessionID: "ses_shared"}

	var mu sync.Mutex
	var got []int
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range n / workers {
				resp, err := p.Generate(ctx, req)
				if err != nil {
					t.Errorf("Generate: %v", err)
					return
				}
				i, _ := strconv.Atoi(resp.Text)
				mu.Lock()
				got = append(got, i)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(got)

	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("responses handed out mismatch (-want +got):\n%s", diff)
	}
}

func TestGenerateReturnsCopies(t *testing.T) {
	t.Parallel()
	p := newProvider(t, lines(
		"responses:",
		"  - tool_calls: [{name: a}]",
		"  - error: {kind: server, message: boom}",
	))
	ctx := t.Context()
	first := func(session string) []result {
		var rs []result
		for range 2 {
			resp, err := p.Generate(ctx, &model.Request{SessionID: session})
			rs = append(rs, result{resp, err})
		}
		return rs
	}
	a := first("ses_a")
	// The coordinator fills in empty tool call ids; a caller may scribble on
	// anything it was given.
	a[0].Resp.ToolCalls[0].ID = "call_1"
	a[0].Resp.Raw[0] = 'X'
	model.AsError(a[1].Err).Message = "changed"

	want := []result{
		{Resp: &model.Response{
			ToolCalls:    []runtype.MessageToolCall{{Name: "a", Arguments: "{}"}},
			FinishReason: model.FinishToolCalls,
			Raw:          []byte(`{"tool_calls":[{"name":"a"}]}`),
		}},
		{Err: &model.Error{Kind: model.ErrServer, Message: "boom"}},
	}
	if diff := cmp.Diff(want, first("ses_b"), cmpResult); diff != "" {
		t.Errorf("second session saw the first session's changes (-want +got):\n%s", diff)
	}
}

func TestGenerateDelay(t *testing.T) {
	t.Parallel()
	const script = "responses:\n  - {delay_ms: 50, text: slow}\n  - {delay_ms: 20, error: {kind: timeout}}\n"
	slow := &model.Response{Text: "slow", FinishReason: model.FinishStop, Raw: []byte(`{"text":"slow","delay_ms":50}`)}

	t.Run("waits before answering", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			p := newProvider(t, script)
			req := &model.Request{SessionID: "ses_1"}
			var got []result
			var took []time.Duration
			for range 2 {
				start := time.Now()
				resp, err := p.Generate(t.Context(), req)
				took = append(took, time.Since(start))
				got = append(got, result{resp, err})
			}
			want := []result{{Resp: slow}, {Err: &model.Error{Kind: model.ErrTimeout, Message: "scripted error (replay response 2)"}}}
			if diff := cmp.Diff(want, got, cmpResult); diff != "" {
				t.Errorf("responses mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]time.Duration{50 * time.Millisecond, 20 * time.Millisecond}, took); diff != "" {
				t.Errorf("delays mismatch (-want +got):\n%s", diff)
			}
		})
	})

	t.Run("stops at the deadline without consuming", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			p := newProvider(t, script)
			req := &model.Request{SessionID: "ses_1"}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
			defer cancel()

			start := time.Now()
			resp, err := p.Generate(ctx, req)
			if !errors.Is(err, context.DeadlineExceeded) || resp != nil {
				t.Errorf("Generate = %v, %v; want context.DeadlineExceeded", resp, err)
			}
			if took := time.Since(start); took != 10*time.Millisecond {
				t.Errorf("Generate returned after %v, want at the 10ms deadline", took)
			}

			resp, err = p.Generate(t.Context(), req)
			if diff := cmp.Diff(result{Resp: slow}, result{resp, err}, cmpResult); diff != "" {
				t.Errorf("the retried call did not get the interrupted response (-want +got):\n%s", diff)
			}
		})
	})

	t.Run("stops when cancelled", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			p := newProvider(t, script)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := p.Generate(ctx, &model.Request{SessionID: "ses_1"})
				done <- err
			}()
			synctest.Wait() // Generate is now blocked in its delay
			select {
			case err := <-done:
				t.Fatalf("Generate returned %v before its delay or cancellation", err)
			default:
			}
			start := time.Now()
			cancel()
			err := <-done
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Generate error = %v, want context.Canceled", err)
			}
			if took := time.Since(start); took != 0 {
				t.Errorf("Generate returned %v after cancellation, want at once", took)
			}
		})
	})

	t.Run("does nothing with a done context", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t, numbered(1))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		req := &model.Request{SessionID: "ses_1"}
		if _, err := p.Generate(ctx, req); !errors.Is(err, context.Canceled) {
			t.Errorf("Generate error = %v, want context.Canceled", err)
		}
		resp, err := p.Generate(t.Context(), req)
		if err != nil || resp.Text != "1" {
			t.Errorf("Generate after a cancelled call = %v, %v; want the first response", resp, err)
		}
	})
}

func BenchmarkGenerate(b *testing.B) {
	const n = 1000
	var sb strings.Builder
	sb.WriteString("responses:\n")
	for range n {
		sb.WriteString("  - text: Let me look that up.\n")
		sb.WriteString("    tool_calls: [{name: lookup_order, input: {order_id: \"1042\"}}, {name: open_ticket, input: {order_id: 1042, priority: high}}]\n")
		sb.WriteString("    usage: {input_tokens: 120, output_tokens: 30}\n")
	}
	p := newProvider(b, sb.String())
	ctx := b.Context()
	req := &model.Request{}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%n == 0 {
			req = &model.Request{SessionID: "ses_" + strconv.Itoa(i/n)}
		}
		i++
		if _, err := p.Generate(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGenerateResumesFromTheConversation: a provider that has not served
// a session yet starts after the answers the current turn holds (as after
// a restart), and at the top for a new turn.
func TestGenerateResumesFromTheConversation(t *testing.T) {
	t.Parallel()
	p := newProvider(t, numbered(5))
	req := &model.Request{SessionID: "ses_resumed", Messages: []runtype.Message{
		{Role: runtype.RoleUser, Content: "earlier turn"}, {Role: runtype.RoleAssistant, Content: "1"},
		{Role: runtype.RoleUser, Content: "go"}, {Role: runtype.RoleAssistant, Content: "1"},
		{Role: runtype.RoleTool, Content: "x"}, {Role: runtype.RoleAssistant, Content: "2"}, {Role: runtype.RoleTool, Content: "y"},
	}}
	var got []string
	for range 2 {
		resp, err := p.Generate(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Text)
	}
	if diff := cmp.Diff([]string{"3", "4"}, got); diff != "" {
		t.Errorf("responses after two recorded answers (-want +got):\n%s", diff)
	}
}

func TestGenerateNewTurnStartsAtTheTop(t *testing.T) {
	t.Parallel()
	p := newProvider(t, numbered(5))
	resp, err := p.Generate(t.Context(), &model.Request{SessionID: "ses_new_turn", Messages: []runtype.Message{
		{Role: runtype.RoleUser, Content: "earlier"}, {Role: runtype.RoleAssistant, Content: "1"}, {Role: runtype.RoleUser, Content: "again"},
	}})
	if err != nil || resp.Text != "1" {
		t.Errorf("a new turn in a fresh process got %v, %v; want the first entry", resp, err)
	}
}
