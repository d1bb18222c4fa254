package process

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
	"github.com/agentrt/agentrt/tool"
)

// ErrUnknownProcess is returned by Write and Terminate for a process id
// the manager does not know or whose process has finished. It is
// runtype.ErrUnknownProcess, which the API contract names too.
var ErrUnknownProcess = runtype.ErrUnknownProcess

// ErrNoInput is returned by Write for a process that takes no more
// input: a foreground process (its input was given when it started), or
// one whose stdin is closed or no longer read.
var ErrNoInput = errors.New("process takes no input")

// ErrLineTooLong is returned by Write for data that would leave more than
// 1 MiB on the process's input without a newline (the unfinished line the
// policy decides with the next write to a shell).
var ErrLineTooLong = errors.New("input line too long")

// errClosed refuses to start a process once the manager is closed.
var errClosed = errors.New("process manager closed")

// Defaults.
const (
	DefaultGrace   = 2 * time.Second
	DefaultMaxLive = 8
)

// Options configure a Manager.
type Options struct {
	// EnvAllow names daemon environment variables passed to processes,
	// beyond proc.BaseEnv().
	EnvAllow []string
	// Grace is how long a terminated process has between SIGTERM and
	// SIGKILL; zero means DefaultGrace.
	Grace time.Duration
	// MaxLive bounds the live background processes of a session; zero
	// means DefaultMaxLive.
	MaxLive int
	// Emit records process events that happen after the call that
	// started the process returned: a background process's output and
	// end. ref carries the ids of that call. Nil discards. It is called
	// from the manager's goroutines and must not call back into the
	// manager.
	Emit func(ref Ref, t event.Type, p event.Payload)
	// Now is the clock for start times and durations; nil means time.Now.
	Now func() time.Time
	// NewID returns a new process id; nil means "proc_" and 16 random
	// hex digits.
	NewID func() string
}

// WithDefaults returns o with zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.Grace == 0 {
		o.Grace = DefaultGrace
	}
	if o.MaxLive == 0 {
		o.MaxLive = DefaultMaxLive
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = newID
	}
	o.EnvAllow = slices.Clone(o.EnvAllow)
	return o
}

func (o *Options) validate() error {
	switch {
	case o.Grace < 0:
		return fmt.Errorf("grace %v is negative", o.Grace)
	case o.MaxLive < 0:
		return fmt.Errorf("max live processes %d is negative", o.MaxLive)
	}
	return nil
}

// Ref names the call that started a process.
type Ref struct{ SessionID, TurnID, RunID, ToolCallID string }

// Info describes a live process.
type Info struct {
	ID        string
	SessionID string
	RunID     string
	// Command is a redacted, bounded preview of the command line.
	Command    string
	Pid        int
	Started    time.Time
	Background bool
}

// Manager runs the process tools' commands and owns background processes
// after the call that started them returned. It is safe for concurrent
// use.
type Manager struct {
	opts Options

	// wg counts background processes' supervising goroutines.
	wg sync.WaitGroup

	mu     sync.Mutex
	procs  map[string]*process // guarded by mu
	closed bool                // guarded by mu
}

// NewManager returns a manager. It panics on invalid options (a negative
// Grace or MaxLive).
func NewManager(opts Options) *Manager {
	opts = opts.WithDefaults()
	if err := opts.validate(); err != nil {
		panic("process.NewManager: " + err.Error())
	}
	return &Manager{opts: opts, procs: make(map[string]*process)}
}

// Tools returns the process tools: shell, exec, write_process_stdin and
// terminate_process.
func (m *Manager) Tools() []tool.Tool {
	return []tool.Tool{
		&runTool{m: m, shell: true},
		&runTool{m: m},
		&writeTool{m: m},
		&terminateTool{m: m},
	}
}

// register adds p, not yet started, to the manager: it refuses once the
// manager is closed and, for a background process, when its session has
// MaxLive live background processes.
func (m *Manager) register(p *process) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	if p.background {
		live := 0
		for _, q := range m.procs {
			if q.background && q.ref.SessionID == p.ref.SessionID && !q.isFinished() {
				live++
			}
		}
		if live >= m.opts.MaxLive {
			return fmt.Errorf("this session has %d live background processes, the most allowed; terminate one first", live)
		}
		m.wg.Add(1)
	}
	m.procs[p.id] = p
	return nil
}

// remove forgets p.
func (m *Manager) remove(p *process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.procs[p.id] == p {
		delete(m.procs, p.id)
	}
}

// lookup returns the process id of session, or of any session when
// session is "".
func (m *Manager) lookup(session, id string) *process {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.procs[id]
	if p == nil || (session != "" && p.ref.SessionID != session) {
		return nil
	}
	return p
}

// Write writes data to the standard input of process processID, for the
// control plane, and closes it when closeStdin is set. It records
// process.input. It returns ErrUnknownProcess for an unknown or finished
// process, ErrNoInput for a foreground one.
func (m *Manager) Write(ctx context.Context, processID, data string, closeStdin bool) error {
	p := m.lookup("", processID)
	if p == nil || p.isFinished() {
		return fmt.Errorf("%w: %s", ErrUnknownProcess, processID)
	}
	if !p.background {
		return fmt.Errorf("%w: %s", ErrNoInput, processID)
	}
	if data != "" {
		p.em.emit(event.ProcessInput, p.inputPayload(p.redactor, data))
	}
	return p.writeInput(ctx, data, closeStdin)
}

// Terminate terminates process processID, for the control plane: SIGTERM
// to its process group, SIGKILL after the grace period. reason ("" means
// terminated) is recorded in process.terminated. It waits for the
// process to end or ctx to be done. It returns ErrUnknownProcess for an
// unknown or finished process.
func (m *Manager) Terminate(ctx context.Context, processID, reason string) error {
	p := m.lookup("", processID)
	if p == nil || p.isFinished() {
		return fmt.Errorf("%w: %s", ErrUnknownProcess, processID)
	}
	p.stop(cmp.Or(reason, reasonTerminated), false)
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for process %s to end: %w", processID, context.Cause(ctx))
	}
}

// KillRun terminates every process of run runID (reason run_ended) and
// waits for them to end; the run's finished background processes are
// forgotten.
func (m *Manager) KillRun(runID string) {
	m.mu.Lock()
	var ps []*process
	for _, p := range m.procs {
		if p.ref.RunID == runID {
			ps = append(ps, p)
		}
	}
	m.mu.Unlock()
	for _, p := range ps {
		p.stop(reasonRunEnded, false)
	}
	for _, p := range ps {
		<-p.done
		m.remove(p)
	}
}

// List returns the live processes of session sessionID, oldest first.
func (m *Manager) List(sessionID string) []Info {
	m.mu.Lock()
	var infos []Info
	for _, p := range m.procs {
		if p.ref.SessionID == sessionID && p.isLive() {
			infos = append(infos, p.info())
		}
	}
	m.mu.Unlock()
	slices.SortFunc(infos, func(a, b Info) int {
		return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.ID, b.ID))
	})
	return infos
}

// Close kills every process (reason cancelled) and waits for them to
// end; the manager then starts no more. Once it returns no goroutine of
// the manager remains.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	ps := make([]*process, 0, len(m.procs))
	for _, p := range m.procs {
		ps = append(ps, p)
	}
	m.mu.Unlock()
	for _, p := range ps {
		p.stop(reasonCancelled, true)
	}
	for _, p := range ps {
		<-p.done
		m.remove(p)
	}
	m.wg.Wait()
}

// emitDetached sends an event of a background process to Options.Emit.
func (m *Manager) emitDetached(ref Ref, t event.Type, p event.Payload) {
	if m.opts.Emit != nil {
		m.opts.Emit(ref, t, p)
	}
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails
	return "proc_" + hex.EncodeToString(b[:])
}
