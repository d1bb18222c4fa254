package storetest

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
)

// BenchmarkApply measures what one agent step costs a driver: the Batch of
// a tool hop (an assistant message, the run's update, a tool call and
// three events) applied and committed. "step" commits each batch alone (one
// session's latency); "group16" commits 16 sessions' steps per transaction,
// as the Writer does under load, and reports ns/step. Building the batches
// is not timed.
//
// newStore returns an empty, migrated store that it closes in b.Cleanup.
func BenchmarkApply(b *testing.B, newStore func(b *testing.B) store.Store) {
	const chunk = 256 // batches built per pause of the timer
	b.Run("step", func(b *testing.B) {
		s := newStore(b)
		st := newStepper(runtype.NewIDGen(nil), tenantA)
		commit(b, s, st.start())
		b.ReportAllocs()
		b.ResetTimer()
		batches := make([]*store.Batch, 0, chunk)
		for i := range b.N {
			if i%chunk == 0 {
				b.StopTimer()
				batches = batches[:0]
				for range min(chunk, b.N-i) {
					batches = append(batches, st.step(true))
				}
				b.StartTimer()
			}
			commit(b, s, batches[i%chunk])
		}
	})
	b.Run("group16", func(b *testing.B) {
		s := newStore(b)
		ids := runtype.NewIDGen(nil)
		steppers := make([]*stepper, 16)
		for i := range steppers {
			steppers[i] = newStepper(ids, tenantA)
			commit(b, s, steppers[i].start())
		}
		b.ReportAllocs()
		b.ResetTimer()
		groups := make([][]*store.Batch, 0, chunk/len(steppers))
		for i := range b.N {
			if i%cap(groups) == 0 {
				b.StopTimer()
				groups = groups[:0]
				for range min(cap(groups), b.N-i) {
					g := make([]*store.Batch, len(steppers))
					for k, st := range steppers {
						g[k] = st.step(true)
					}
					groups = append(groups, g)
				}
				b.StartTimer()
			}
			commit(b, s, groups[i%cap(groups)]...)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(steppers)), "ns/step")
	})
}

// BenchmarkWrite measures durable agent steps through a Writer: "sessions=1"
// is one run writing step after step (latency per step); "sessions=16" is
// 16 runs writing concurrently, sharing commits (throughput, in steps/s).
func BenchmarkWrite(b *testing.B, newStore func(b *testing.B) store.Store) {
	ctx := context.Background()
	b.Run("sessions=1", func(b *testing.B) {
		s := newStore(b)
		w := startWriter(b, s)
		st := newStepper(runtype.NewIDGen(nil), tenantA)
		if err := w.Write(ctx, st.start()); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := w.Write(ctx, st.step(false)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
	})
	b.Run("sessions=16", func(b *testing.B) {
		s := newStore(b)
		w := startWriter(b, s)
		ids := runtype.NewIDGen(nil)
		b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
		b.ReportAllocs()
		b.ResetTimer()
		var steps atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			st := newStepper(ids, tenantA)
			if err := w.Write(ctx, st.start()); err != nil {
				b.Error(err)
				return
			}
			for pb.Next() {
				if err := w.Write(ctx, st.step(false)); err != nil {
					b.Error(err)
					return
				}
				steps.Add(1)
			}
		})
		b.ReportMetric(float64(steps.Load())/b.Elapsed().Seconds(), "steps/s")
	})
}

// startWriter starts a Writer on s and stops it before s closes.
func startWriter(b *testing.B, s store.Store) *store.Writer {
	w := store.NewWriter(s, store.WriterConfig{})
	b.Cleanup(func() {
		if err := w.Stop(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return w
}

// commit applies batches in one transaction. The context is not
// cancellable: drivers would watch a cancellable one on every statement.
func commit(b *testing.B, s store.Store, batches ...*store.Batch) {
	ctx := context.Background()
	tx, err := s.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, bt := range batches {
		if err := tx.Apply(ctx, bt); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// stepper produces the batches of one run's tool hops.
type stepper struct {
	ids    *runtype.IDGen
	owner  runtype.Owner
	run    runtype.Run
	msgSeq int64
	evSeq  int64
}

func newStepper(ids *runtype.IDGen, tenant string) *stepper {
	owner := runtype.Owner{TenantID: tenant, PrincipalID: "bench"}
	return &stepper{ids: ids, owner: owner, run: runtype.Run{
		ID: ids.New(runtype.PrefixRun), TaskID: ids.New(runtype.PrefixTask), TurnID: ids.New(runtype.PrefixTurn),
		SessionID: ids.New(runtype.PrefixSession), ThreadID: ids.New(runtype.PrefixThread), Owner: owner,
		Attempt: 1, Status: runtype.StatusRunning, StartedAt: time.Now(),
	}}
}

// start returns the batch that opens the run: session, thread, turn, task.
func (st *stepper) start() *store.Batch {
	now := time.Now()
	r := &st.run
	return &store.Batch{
		Sessions: []*runtype.Session{{ID: r.SessionID, Owner: st.owner, Agent: "bench", CreatedAt: now, UpdatedAt: now}},
		Threads:  []*runtype.Thread{{ID: r.ThreadID, SessionID: r.SessionID, Owner: st.owner, CreatedAt: now}},
		Turns: []*runtype.Turn{{ID: r.TurnID, SessionID: r.SessionID, ThreadID: r.ThreadID, Owner: st.owner, Agent: "bench",
			Input: "triage the incident", Status: runtype.StatusRunning, TaskID: r.TaskID, RunID: r.ID, CreatedAt: now, StartedAt: now}},
		Tasks: []*runtype.Task{{ID: r.TaskID, SessionID: r.SessionID, ThreadID: r.ThreadID, TurnID: r.TurnID, Owner: st.owner,
			Objective: "triage the incident", Status: runtype.StatusRunning, CurrentRunID: r.ID, CreatedAt: now, UpdatedAt: now, StartedAt: now}},
		Runs: []*runtype.Run{st.runCopy()},
	}
}

func (st *stepper) runCopy() *runtype.Run { r := st.run; return &r }

// step returns one tool hop's batch. With seq, events carry their
// sequences (for Tx.Apply); otherwise the Writer assigns them.
func (st *stepper) step(seq bool) *store.Batch {
	now := time.Now()
	r := &st.run
	r.Hops++
	r.ToolHops++
	usage := runtype.Usage{InputTokens: 1800, CachedInputTokens: 1024, OutputTokens: 60}
	r.Usage = r.Usage.Add(usage)
	callID := "call_" + strconv.Itoa(r.Hops)
	stepID := st.ids.New(runtype.PrefixStep)
	args := `{"path":"/var/log/syslog","lines":200}`
	st.msgSeq++
	msg := &runtype.Message{
		ThreadID: r.ThreadID, Seq: st.msgSeq, SessionID: r.SessionID, TurnID: r.TurnID, RunID: r.ID, Owner: st.owner,
		Role: runtype.RoleAssistant, Content: "Let me look at the recent log lines.",
		ToolCalls: []runtype.MessageToolCall{{ID: callID, Name: "read_file", Arguments: args}},
		CreatedAt: now,
	}
	call := &runtype.ToolCall{
		ID: callID, RunID: r.ID, TurnID: r.TurnID, SessionID: r.SessionID, ThreadID: r.ThreadID, Owner: st.owner,
		StepID: stepID, Hop: r.Hops, Name: "read_file", Arguments: args,
		ArgumentsSHA256: "5e2bf57d3f40c4b6df69daf1936cb766f832374b4fc0259a7cbff06e2f70f269",
		IdempotencyKey:  r.ID + ":" + callID, Status: runtype.ToolCallCompleted, Decision: "allow",
		ResultPreview: "Mar 14 15:09:26 host kernel: eth0: link up", OutputBytes: 4096, StartedAt: now, EndedAt: now,
	}
	ev := func(t event.Type, p event.Payload) *event.Event {
		e := &event.Event{
			Type: t, EventID: st.ids.New(runtype.PrefixEvent), Timestamp: now, SchemaVersion: event.SchemaVersion,
			RuntimeID: "rt_bench", SessionID: r.SessionID, ThreadID: r.ThreadID, TurnID: r.TurnID, TaskID: r.TaskID,
			RunID: r.ID, StepID: stepID, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7",
			Payload: p, TenantID: st.owner.TenantID,
		}
		if t != event.ModelCompleted {
			e.ToolCallID = callID
		}
		if seq {
			st.evSeq++
			e.Sequence = st.evSeq
		}
		return e
	}
	return &store.Batch{
		Runs:      []*runtype.Run{st.runCopy()},
		Messages:  []*runtype.Message{msg},
		ToolCalls: []*runtype.ToolCall{call},
		Events: []*event.Event{
			ev(event.ModelCompleted, &event.ModelCompletedPayload{
				Status: "tool_request", AssistantMessage: msg.Content,
				RequestedTools: []event.RequestedTool{{ToolCallID: callID, Name: "read_file"}},
				Provider:       event.ProviderRef{Kind: "replay", Model: "bench"}, FinishReason: "tool_calls",
				Usage: usage, Hop: r.Hops, LatencyMs: 1,
			}),
			ev(event.ToolStarted, &event.ToolStartedPayload{
				Name: "read_file", Hop: r.Hops, ArgumentsPreview: args, IdempotencyKey: call.IdempotencyKey, ReadOnly: true,
			}),
			ev(event.ToolResult, &event.ToolResultPayload{
				Name: "read_file", Preview: call.ResultPreview, Bytes: call.OutputBytes, DurationMs: 1,
			}),
		},
	}
}
