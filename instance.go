package agentrt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/loop"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool"
)

// This file holds named agent instances (docs/instances.md): an agent's
// durable state, the instance_state tool that changes it, the state
// migration and the prelude that gives a turn the state. Nothing of an
// instance is kept in memory: every use reads the store.

// StateSchema declares the durable state of an agent's named instances.
type StateSchema struct {
	// Version is the schema's version (1 or more); raising it migrates
	// each instance's state once, on its next turn, with Migrate.
	Version int
	// Schema is the JSON Schema the state (a JSON object) must match.
	Schema json.RawMessage
	// Initial is a new instance's state; default {}.
	Initial json.RawMessage
	// Migrate names a tool of the agent (a command tool) that migrates a
	// state: input {"from": n, "to": m, "state": {...}}, output the new
	// state as a JSON object. Required once Version is above 1.
	Migrate string
}

// InstanceStateTool is the built-in tool an agent with a state schema
// uses to read and change its instance's state.
const InstanceStateTool = "instance_state"

// instanceStateRetries bounds the re-reads of a state change that lost a
// race with another change.
const instanceStateRetries = 5

var instanceNamePattern = regexp.MustCompile(`^[A-Za-z0-9/_.:-]{1,200}$`)

// validInstanceName checks an instance's name, as field in errors.
func validInstanceName(field, name string) error {
	switch {
	case !instanceNamePattern.MatchString(name):
		return invalid(field, "%q is not 1 to 200 letters, digits, '/', '_', '-', '.' or ':'", name)
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/"):
		return invalid(field, "%q must not begin or end with '/'", name)
	case strings.Contains(name, ".."):
		return invalid(field, "%q must not contain '..'", name)
	}
	return nil
}

// checkState checks an agent's state schema: it compiles, and its initial
// state matches it.
func checkState(st *StateSchema) error {
	if st == nil {
		return nil
	}
	if st.Version < 1 {
		return fmt.Errorf("state version %d: use 1 or more", st.Version)
	}
	if len(st.Schema) == 0 {
		return errors.New("state needs a schema")
	}
	s, err := tool.CompileSchema("state schema", st.Schema)
	if err != nil {
		return fmt.Errorf("state schema: %w", err)
	}
	if err := checkStateDoc(s, initialState(st)); err != nil {
		return fmt.Errorf("initial state: %w", err)
	}
	if st.Version > 1 && st.Migrate == "" {
		return fmt.Errorf("state version %d needs a migrate tool", st.Version)
	}
	return nil
}

func initialState(st *StateSchema) json.RawMessage {
	if len(bytes.TrimSpace(st.Initial)) == 0 {
		return json.RawMessage(`{}`)
	}
	return st.Initial
}

// checkStateDoc checks that doc is a JSON object s accepts.
func checkStateDoc(s *tool.Schema, doc []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(doc, &obj); err != nil || obj == nil {
		return errors.New("the state must be a JSON object")
	}
	return s.Check(doc)
}

// stateSchema returns the agent's state declaration and its compiled
// schema (nil, nil when it has none).
func (rt *Runtime) stateSchema(agent string) (*StateSchema, *tool.Schema, error) {
	a := rt.cfg.Agents[baseAgent(agent)]
	if a == nil || a.State == nil {
		return nil, nil, nil
	}
	s, err := tool.CompileSchema("state schema", a.State.Schema)
	if err != nil {
		return nil, nil, err
	}
	return a.State, s, nil
}

// stateChange says who changes an instance's state.
type stateChange struct {
	by                        string // tool, api, migration
	runID, toolCallID, turnID string
	taskID                    string
	// expected, when set, is the state version the change must find.
	expected *int64
}

// errStateInvalid wraps a state the schema refuses.
var errStateInvalid = errors.New("the state does not match the agent's state schema")

// changeState applies next (the new state, from the current instance) to
// the instance find returns, conditional on its version: a change that
// lost a race reads it again and applies next again, a few times. The
// write carries a session.updated naming the change. It returns the
// instance as written.
func (rt *Runtime) changeState(ctx context.Context, find func() (*runtype.Instance, error), ch stateChange,
	next func(cur *runtype.Instance) (json.RawMessage, int, error),
) (*runtype.Instance, error) {
	for try := 0; ; try++ {
		cur, err := find()
		if err != nil {
			return nil, err
		}
		if ch.expected != nil && cur.StateVersion != *ch.expected {
			return nil, fmt.Errorf("%w: instance %s is at state version %d, not %d", store.ErrConflict, cur.Name, cur.StateVersion, *ch.expected)
		}
		state, schemaVersion, err := next(cur)
		if err != nil {
			return nil, err
		}
		if state == nil {
			return cur, nil // nothing to change
		}
		now := rt.cfg.Now().UTC()
		w := *cur
		w.State, w.StateVersion, w.SchemaVersion, w.UpdatedAt = string(state), cur.StateVersion+1, schemaVersion, now
		p := &event.InstancePayload{
			InstanceID: w.ID, Name: w.Name, StateVersion: w.StateVersion, SchemaVersion: w.SchemaVersion,
			ChangedBy: ch.by, RunID: ch.runID, ToolCallID: ch.toolCallID, Keys: changedKeys(cur.State, w.State),
		}
		if ch.by == "migration" {
			p.FromSchemaVersion = cur.SchemaVersion
		}
		e := &event.Event{
			Type: event.SessionUpdated, EventID: rt.ids.New(runtype.PrefixEvent), Timestamp: now, SchemaVersion: event.SchemaVersion,
			RuntimeID: rt.runtimeID, SessionID: w.SessionID, TenantID: w.TenantID, RunID: ch.runID, TurnID: ch.turnID, TaskID: ch.taskID,
			Payload: &event.SessionPayload{Agent: w.Agent, Instance: p},
		}
		err = rt.writer.Write(context.WithoutCancel(ctx), &store.Batch{Instances: []*runtype.Instance{&w}, Events: []*event.Event{e}})
		switch {
		case err == nil:
			w.Version++
			return &w, nil
		case errors.Is(err, store.ErrConflict) && try < instanceStateRetries:
			continue // changed meanwhile: apply the change to what is there now
		default:
			return nil, fmt.Errorf("recording the state of instance %s: %w", cur.Name, err)
		}
	}
}

// changedKeys names the top-level keys whose values differ between two
// JSON objects, sorted.
func changedKeys(before, after string) []string {
	var a, b map[string]json.RawMessage
	_ = json.Unmarshal([]byte(before), &a)
	_ = json.Unmarshal([]byte(after), &b)
	var keys []string
	for k, v := range a {
		if w, ok := b[k]; !ok || !jsonEqual(v, w) {
			keys = append(keys, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func jsonEqual(a, b json.RawMessage) bool {
	ca, err1 := tool.CanonicalJSON(a)
	cb, err2 := tool.CanonicalJSON(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

// mergePatch applies an RFC 7386 JSON merge patch to target.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	} else {
		t = maps.Clone(t)
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// validState checks state against the agent's schema; the error names
// what is wrong (the path) and wraps errStateInvalid.
func validState(s *tool.Schema, state json.RawMessage) error {
	if err := checkStateDoc(s, state); err != nil {
		return fmt.Errorf("%w: %v", errStateInvalid, err)
	}
	return nil
}

// instanceStateInput is the instance_state tool's input.
type instanceStateInput struct {
	Op    string          `json:"op"`
	State json.RawMessage `json:"state,omitempty"`
	Patch json.RawMessage `json:"patch,omitempty"`
}

// instanceStateTool returns the instance_state tool: it reads or changes
// the state of the instance whose session the call runs in.
func (rt *Runtime) instanceStateTool() tool.Tool {
	return &stateTool{rt: rt}
}

type stateTool struct{ rt *Runtime }

func (t *stateTool) Spec() tool.Spec {
	return tool.Spec{
		Name: InstanceStateTool, Source: "builtin",
		Description: "Read or change the durable state of the named instance this conversation belongs to. " +
			`{"op":"get"} returns it; {"op":"set","state":{...}} replaces it; {"op":"merge","patch":{...}} applies a JSON merge patch ` +
			"(null removes a key). A new state must match the instance's state schema.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"op":{"type":"string","enum":["get","set","merge"]},` +
			`"state":{"type":"object"},"patch":{"type":"object"}},"required":["op"],"additionalProperties":false}`),
		Annotations: tool.Annotations{Idempotent: true},
	}
}

func (t *stateTool) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	rt := t.rt
	fail := func(format string, args ...any) (*tool.Result, error) {
		return &tool.Result{Content: InstanceStateTool + ": " + fmt.Sprintf(format, args...), IsError: true}, nil
	}
	var in instanceStateInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return fail("decoding input: %v", err)
	}
	find := func() (*runtype.Instance, error) {
		return rt.store.InstanceGetBySession(ctx, &store.InstanceGetBySessionParams{TenantID: call.TenantID, SessionID: call.SessionID})
	}
	if in.Op == "get" {
		cur, err := find()
		if err != nil {
			return fail("this conversation is no named instance's (%v)", err)
		}
		return &tool.Result{Content: stateResult(cur)}, nil
	}
	st, schema, err := rt.stateSchema(call.Agent)
	if err != nil || st == nil {
		return fail("agent %s has no state schema", call.Agent)
	}
	switch in.Op {
	case "set":
		if len(in.State) == 0 {
			return fail(`op "set" needs "state"`)
		}
	case "merge":
		if len(in.Patch) == 0 {
			return fail(`op "merge" needs "patch"`)
		}
	default:
		return fail("unknown op %q: use get, set or merge", in.Op)
	}
	w, err := rt.changeState(ctx, find, stateChange{by: "tool", runID: call.RunID, toolCallID: call.ID, turnID: call.TurnID, taskID: call.TaskID},
		func(cur *runtype.Instance) (json.RawMessage, int, error) {
			next := in.State
			if in.Op == "merge" {
				var target, patch any
				if err := json.Unmarshal([]byte(cur.State), &target); err != nil {
					return nil, 0, fmt.Errorf("decoding the stored state: %w", err)
				}
				if err := json.Unmarshal(in.Patch, &patch); err != nil {
					return nil, 0, fmt.Errorf("decoding the patch: %w", err)
				}
				b, err := json.Marshal(mergePatch(target, patch))
				if err != nil {
					return nil, 0, err
				}
				next = b
			}
			if err := validState(schema, next); err != nil {
				return nil, 0, err
			}
			return next, st.Version, nil
		})
	if err != nil {
		if errors.Is(err, errStateInvalid) {
			return fail("%v; nothing changed", err)
		}
		return fail("%v", err)
	}
	return &tool.Result{Content: stateResult(w)}, nil
}

// stateResult is what instance_state answers: the state and its version.
func stateResult(in *runtype.Instance) string {
	b, _ := json.Marshal(map[string]any{
		"instance": in.Name, "stateVersion": in.StateVersion, "schemaVersion": in.SchemaVersion, "state": json.RawMessage(in.State),
	})
	return string(b)
}

// instanceContext is how a turn of an instance sees its state: it
// follows the turn's input in its first message.
func instanceContext(in *runtype.Instance) string {
	return fmt.Sprintf("<instance name=%q stateVersion=\"%d\" schemaVersion=\"%d\">\n%s\n</instance>",
		in.Name, in.StateVersion, in.SchemaVersion, in.State)
}

// instancePrelude is the prelude of a turn of a named instance: it runs
// inner first (a schedule's pre-run, when the turn is a fire), then
// migrates the instance's state when its schema version is behind the
// agent's, and adds the state to the turn's first message.
func (rt *Runtime) instancePrelude(c *claim, a *loop.Agent, inner loop.Prelude) loop.Prelude {
	turn := c.turn
	return func(ctx context.Context) (*loop.PreludeResult, error) {
		res := &loop.PreludeResult{Name: InstanceStateTool}
		if inner != nil {
			r, err := inner(ctx)
			if err != nil || r.Failure != nil || r.Skip != "" {
				return r, err
			}
			res = r
		}
		start := time.Now()
		find := func() (*runtype.Instance, error) {
			return rt.store.InstanceGetBySession(ctx, &store.InstanceGetBySessionParams{TenantID: turn.TenantID, SessionID: turn.SessionID})
		}
		in, err := find()
		if errors.Is(err, store.ErrNotFound) {
			return res, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the turn's instance: %w", err)
		}
		st, schema, err := rt.stateSchema(turn.Agent)
		if err != nil {
			return nil, err
		}
		if st != nil && in.SchemaVersion < st.Version {
			in, err = rt.migrateState(ctx, c, a, st, schema, find)
			if err != nil {
				var f *runtype.Failure
				if errors.As(err, &f) {
					res.Failure, res.Duration = f, res.Duration+time.Since(start)
					return res, nil
				}
				return nil, err
			}
		}
		res.Context = strings.TrimSpace(res.Context + "\n" + instanceContext(in))
		res.Duration += time.Since(start)
		return res, nil
	}
}

// migrateState runs the agent's migrate tool on the instance's state and
// records the new state at the agent's schema version, conditional on
// the instance's version: a migration another process recorded first
// wins, and this one is dropped. A failure is a *runtype.Failure.
func (rt *Runtime) migrateState(ctx context.Context, c *claim, a *loop.Agent, st *StateSchema, schema *tool.Schema,
	find func() (*runtype.Instance, error),
) (*runtype.Instance, error) {
	turn := c.turn
	fail := func(from int, format string, args ...any) error {
		return &runtype.Failure{Kind: runtype.FailureToolError,
			Message: fmt.Sprintf("migrating the state of instance from schema version %d to %d with %s: ", from, st.Version, st.Migrate) + fmt.Sprintf(format, args...)}
	}
	base := rt.agents[baseAgent(turn.Agent)]
	if base == nil {
		base = a
	}
	i := slices.IndexFunc(base.Tools, func(t tool.Tool) bool { return t.Spec().Name == st.Migrate })
	var from int
	ch := stateChange{by: "migration", turnID: turn.ID, taskID: c.task.ID}
	w, err := rt.changeState(ctx, find, ch, func(cur *runtype.Instance) (json.RawMessage, int, error) {
		if cur.SchemaVersion >= st.Version {
			return nil, 0, nil // migrated meanwhile
		}
		from = cur.SchemaVersion
		if i < 0 {
			return nil, 0, fail(from, "it is not a tool of agent %s", turn.Agent)
		}
		t := base.Tools[i]
		input, _ := json.Marshal(map[string]any{"from": cur.SchemaVersion, "to": st.Version, "state": json.RawMessage(cur.State)})
		if err := rt.registry.Validate(t.Spec().Name, input); err != nil {
			return nil, 0, fail(from, "it does not take the migration's input: %v", err)
		}
		out, err := t.Call(ctx, &tool.Call{
			ID: "migrate_" + c.task.ID, TenantID: turn.TenantID, PrincipalID: turn.PrincipalID, Agent: turn.Agent,
			SessionID: turn.SessionID, TurnID: turn.ID, TaskID: c.task.ID,
			IdempotencyKey: fmt.Sprintf("migrate/%s/%d/%d", cur.ID, cur.SchemaVersion, st.Version), Input: input,
			Workspace: base.Workspace, WorkspaceDir: base.WorkspaceDir,
			Sandbox: rt.sandbox, Profile: base.Sandbox, Outputs: rt.outputs, Redactor: rt.redactor, OutputLimits: rt.cfg.Output,
		})
		if ctx.Err() != nil {
			return nil, 0, context.Cause(ctx)
		}
		switch {
		case err != nil:
			return nil, 0, fail(from, "it failed: %v", rt.redactor.Text(err.Error()))
		case out.IsError:
			return nil, 0, fail(from, "it failed: %s", preview(rt.redactor.Text(out.Content), 500))
		}
		next := json.RawMessage(strings.TrimSpace(out.Content))
		if err := validState(schema, next); err != nil {
			return nil, 0, fail(from, "its output is refused: %v", err)
		}
		return next, st.Version, nil
	})
	if err != nil {
		return nil, err
	}
	if from != 0 {
		rt.cfg.Logger.Info("migrated instance state", "instance", w.Name, "from", from, "to", st.Version)
	}
	return w, nil
}

// instanceThread is the main thread of the session of an instance's
// schedule (its newest thread of its own), and whether a turn of it is
// open, so that a fire waits in its queue.
func (rt *Runtime) instanceThread(ctx context.Context, s *runtype.Schedule) (string, bool, error) {
	threads, err := rt.store.ThreadList(ctx, &store.ThreadListParams{TenantID: s.TenantID, SessionID: s.SessionID})
	if err != nil {
		return "", false, fmt.Errorf("listing the threads of instance %s: %w", s.Instance, err)
	}
	for i := len(threads) - 1; i >= 0; i-- {
		if !threads[i].Lineage.Delegated() {
			open, err := rt.openTasks(ctx, s.TenantID, s.SessionID, threads[i].ID)
			if err != nil {
				return "", false, err
			}
			return threads[i].ID, len(open) > 0, nil
		}
	}
	return "", false, fmt.Errorf("the session of instance %s has no thread of its own", s.Instance)
}
