package agentrt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/hook"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tool/process"
)

// setUpExecution builds the execution layer: the sandbox, the output
// store and redactor, the hook runner and the process tools.
func (rt *Runtime) setUpExecution() error {
	cfg := &rt.cfg
	dir := ""
	if cfg.DataDir != "" {
		dir = filepath.Join(cfg.DataDir, "outputs")
	} else {
		tmp, err := os.MkdirTemp("", "agentrt-outputs-")
		if err != nil {
			return fmt.Errorf("creating the output store: %w", err)
		}
		dir, rt.outputTmp = tmp, tmp
	}
	if err := rt.setUpSandbox(dir); err != nil {
		return err
	}
	st, err := output.NewStore(dir)
	if err != nil {
		return fmt.Errorf("creating the output store: %w", err)
	}
	rt.outputs = st
	if len(cfg.Hooks) > 0 {
		h, err := hook.New(cfg.Hooks, hook.Options{})
		if err != nil {
			return fmt.Errorf("config: hooks: %w", err)
		}
		rt.hooks = h
	}
	rt.procs = process.NewManager(process.Options{EnvAllow: cfg.ProcessEnvAllow, Emit: rt.processEvent, Now: cfg.Now})
	return nil
}

// setUpSandbox makes the runtime's sandbox, which hides from every
// sandboxed process the data directory (the API token, the database and
// its WAL, the runtime id) and the output store (every session's tool
// output), besides what Config.Sandbox.Hidden names.
func (rt *Runtime) setUpSandbox(outputs string) error {
	opts := rt.cfg.Sandbox
	opts.Hidden = slices.Clone(opts.Hidden)
	for _, dir := range []string{rt.cfg.DataDir, outputs} {
		if dir == "" {
			continue
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("resolving the data dir: %w", err)
		}
		opts.Hidden = append(opts.Hidden, abs)
	}
	rt.sandbox = sandbox.New(opts)
	return nil
}

// safePreview makes text safe to show: the runtime's redactor replaces
// its secrets, as it does in everything the runtime writes.
func (rt *Runtime) safePreview(s string) string { return rt.redactor.Text(s) }

// closeExecution ends every process and removes a temporary output
// store.
func (rt *Runtime) closeExecution() {
	if rt.procs != nil {
		rt.procs.Close()
	}
	if rt.outputTmp != "" {
		os.RemoveAll(rt.outputTmp)
		rt.outputTmp = ""
	}
}

// processEvent records an event of a background process, after the call
// that started it returned.
func (rt *Runtime) processEvent(ref process.Ref, t event.Type, p event.Payload) {
	tenant, _ := rt.tenants.Load(ref.SessionID)
	tenantID, _ := tenant.(string)
	e := &event.Event{
		Type: t, EventID: rt.ids.New(runtype.PrefixEvent), Timestamp: rt.cfg.Now().UTC(), SchemaVersion: event.SchemaVersion,
		RuntimeID: rt.runtimeID, SessionID: ref.SessionID, TurnID: ref.TurnID, RunID: ref.RunID, AttemptID: ref.RunID,
		ToolCallID: ref.ToolCallID, TenantID: tenantID, Payload: p,
	}
	if err := rt.writer.Write(context.Background(), &store.Batch{Events: []*event.Event{e}}); err != nil {
		rt.cfg.Logger.Error("recording a process event", "type", t, "sessionId", ref.SessionID, "err", err)
	}
}

// runStarting notes whose a session's runs are, for the events of their
// background processes.
func (rt *Runtime) runStarting(t *runtype.Turn) { rt.tenants.Store(t.SessionID, t.TenantID) }

// runEnded ends the processes of a run that reached a terminal status: a
// killed or finished run leaves nothing running.
func (rt *Runtime) runEnded(status runtype.TaskStatus, runID string) {
	if status.Terminal() && runID != "" {
		rt.procs.KillRun(runID)
	}
}

// ListProcesses returns the live processes of a session.
func (rt *Runtime) ListProcesses(ctx context.Context, owner runtype.Owner, sessionID string) ([]apitype.ProcessInfo, error) {
	owner = ownerOrDefault(owner)
	if _, err := rt.store.SessionGet(ctx, &store.SessionGetParams{TenantID: owner.TenantID, ID: sessionID}); err != nil {
		return nil, fmt.Errorf("reading session %s: %w", sessionID, err)
	}
	procs := rt.procs.List(sessionID)
	out := make([]apitype.ProcessInfo, len(procs))
	for i, p := range procs {
		out[i] = apitype.ProcessInfo{ProcessID: p.ID, RunID: p.RunID, Command: p.Command, Pid: p.Pid, StartedAt: p.Started.UTC(), Background: p.Background}
	}
	return out, nil
}

// WriteProcessStdin writes data to the stdin of a live process of the
// session (write_process_stdin through the control plane); closeStdin
// closes it after.
func (rt *Runtime) WriteProcessStdin(ctx context.Context, owner runtype.Owner, sessionID, processID, data string, closeStdin bool) error {
	if err := rt.ownProcess(ctx, owner, sessionID, processID); err != nil {
		return err
	}
	return processErr(rt.procs.Write(ctx, processID, data, closeStdin))
}

// processErr maps the process manager's errors to the runtime's: a
// process that ended meanwhile is not found, one that takes no input a
// conflict.
func processErr(err error) error {
	switch {
	case errors.Is(err, process.ErrUnknownProcess):
		return errors.Join(err, store.ErrNotFound)
	case errors.Is(err, process.ErrNoInput):
		return errors.Join(err, store.ErrConflict)
	case errors.Is(err, process.ErrLineTooLong):
		return invalid("data", "%v", err)
	}
	return err
}

// TerminateProcess ends a live process of the session: SIGTERM, then
// SIGKILL after a grace period (terminate_process through the control
// plane).
func (rt *Runtime) TerminateProcess(ctx context.Context, owner runtype.Owner, sessionID, processID string) error {
	if err := rt.ownProcess(ctx, owner, sessionID, processID); err != nil {
		return err
	}
	return processErr(rt.procs.Terminate(ctx, processID, "terminated"))
}

// ownProcess checks that the caller's tenant owns the session and that
// the process is the session's.
func (rt *Runtime) ownProcess(ctx context.Context, owner runtype.Owner, sessionID, processID string) error {
	procs, err := rt.ListProcesses(ctx, owner, sessionID)
	if err != nil {
		return err
	}
	for _, p := range procs {
		if p.ProcessID == processID {
			return nil
		}
	}
	return fmt.Errorf("process %s of session %s: %w", processID, sessionID, errors.Join(apitype.ErrUnknownProcess, store.ErrNotFound))
}
