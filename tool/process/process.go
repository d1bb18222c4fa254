package process

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/internal/proc"
	"github.com/agentrt/agentrt/output"
	"github.com/agentrt/agentrt/sandbox"
	"github.com/agentrt/agentrt/tool"
)

// Reasons a process was terminated (process.terminated).
const (
	reasonTimeout    = "timeout"
	reasonInactivity = "inactivity"
	reasonTerminated = "terminated"
	reasonRunEnded   = "run_ended"
	reasonCancelled  = "cancelled"
)

// Bounds on what is kept of a process's output.
const (
	// ringSize is how much of a background process's output is kept.
	ringSize = 64 << 10
	// chunkSize bounds the data of one process.output event.
	chunkSize = 4 << 10
	// eventDataMax bounds the data of a process's process.output events,
	// and eventChunksMax their number.
	eventDataMax   = 64 << 10
	eventChunksMax = 1024
	// stderrHead and stderrTail are how much of the start and end of raw
	// stderr is kept to classify a sandbox violation.
	stderrHead = 4 << 10
	stderrTail = 8 << 10
	// previewMax bounds command and input previews in events.
	previewMax = 1024
	// pendingMax bounds a background process's unfinished input line:
	// what was written since the last line end, which the policy decides
	// with the next write to a shell.
	pendingMax = 1 << 20
)

// Streams.
const (
	stdout = iota
	stderr
)

var streamNames = [2]string{"stdout", "stderr"}

// process is one command a tool started.
type process struct {
	// Immutable after start.
	m          *Manager
	id         string
	ref        Ref
	background bool
	preview    string // redacted command preview
	// cmdline is the command line as a shell reads it (the shell call's
	// command, the exec call's argv quoted), for the policy; never
	// recorded.
	cmdline  string
	cwd      string
	redactor *output.Redactor
	profile  sandbox.Profile
	timeout  time.Duration // wall clock; 0 means none
	idle     time.Duration // inactivity; 0 means none
	grace    time.Duration
	base     time.Time // monotonic origin for activity
	em       *emitter
	cmd      *sandbox.Cmd  // set before start
	stdin    *os.File      // write end of a background process's stdin; guarded by stdinMu
	done     chan struct{} // closed when the process ended and its end was recorded
	kick     chan struct{} // wakes the supervisor to act on a stop request

	started  time.Time // set at start, before the process is visible to List
	pid      int
	activity atomic.Int64 // time since base of the last output, in ns

	stdinMu sync.Mutex
	// pending is the unfinished line written to stdin (see
	// tool.UnfinishedLine); guarded by stdinMu.
	pending string

	outMu     sync.Mutex
	raw       int64                   // guarded by outMu: raw bytes read
	merged    *output.RedactWriter    // guarded by outMu: into keep
	keep      *keepWriter             // guarded by outMu: sink or ring
	ring      *ring                   // guarded by outMu: background output
	readOff   int64                   // guarded by outMu: ring offset read so far
	sink      *output.Sink            // foreground output
	limits    output.Limits           // of the sink
	counts    output.Counts           // guarded by outMu: of flushed merged writers
	ev        [2]*output.RedactWriter // guarded by outMu: per stream, into chunkers
	evBytes   int                     // guarded by outMu
	evChunks  int                     // guarded by outMu
	seq       int                     // guarded by outMu
	errHead   []byte                  // guarded by outMu
	errTail   *ring                   // guarded by outMu
	outClosed bool                    // guarded by outMu
	// partial holds a background process's unfinished line per stream:
	// its output reaches the redactors in whole lines, so that the flush
	// a read does never cuts a secret in two. Guarded by outMu.
	partial [2][]byte

	mu       sync.Mutex
	isStart  bool    // guarded by mu: started (pid known)
	reason   string  // guarded by mu: why it is being stopped, first wins
	hard     bool    // guarded by mu: kill at once
	finished bool    // guarded by mu
	end      *ending // guarded by mu; nil until finished (and for a process that never started)
}

// ending is how a process ended; set once, before done is closed.
type ending struct {
	exitCode  *int
	signal    string
	reason    string // termination reason, "" if it ended by itself
	cause     error  // the foreground call's context cause, when it ended it
	waitErr   error
	duration  time.Duration
	bytes     int64 // raw output
	spill     *output.Spill
	keepErr   error
	counts    output.Counts
	violation *sandbox.Violation
}

// emitter routes a process's events to the call that started it while
// that call runs, and to Options.Emit afterwards.
type emitter struct {
	mu   sync.Mutex
	call func(event.Type, event.Payload) // nil once detached
	ref  Ref
	m    *Manager
}

func (e *emitter) emit(t event.Type, p event.Payload) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.call != nil {
		e.call(t, p)
		return
	}
	e.m.emitDetached(e.ref, t, p)
}

// detach sends later events to Options.Emit.
func (e *emitter) detach() {
	e.mu.Lock()
	e.call = nil
	e.mu.Unlock()
}

// keepWriter passes output to the sink or ring, recording the first error
// and dropping output after it, so that the process's output keeps being
// read.
type keepWriter struct {
	w   io.Writer
	err error
}

func (k *keepWriter) Write(p []byte) (int, error) {
	if k.err == nil {
		_, k.err = k.w.Write(p)
	}
	return len(p), nil
}

// chunker turns a stream's redacted output into process.output events.
// It runs under the process's outMu.
type chunker struct {
	p      *process
	stream int
}

func (c *chunker) Write(b []byte) (int, error) {
	p := c.p
	n := len(b)
	for len(b) > 0 && p.evBytes < eventDataMax && p.evChunks < eventChunksMax {
		k := min(len(b), chunkSize, eventDataMax-p.evBytes)
		if k < len(b) {
			k = runeCut(b, k)
		}
		p.seq++
		p.evBytes += k
		p.evChunks++
		p.em.emit(event.ProcessOutput, &event.ProcessPayload{
			ProcessID: p.id,
			Stream:    streamNames[c.stream],
			Data:      string(b[:k]),
			Seq:       p.seq,
			Bytes:     int64(k),
		})
		b = b[k:]
	}
	return n, nil
}

// runeCut returns k, or less so that b[:k] does not end inside a UTF-8
// sequence (but never 0).
func runeCut(b []byte, k int) int {
	for i := k; i > k-4 && i > 0; i-- {
		if b[i]&0xC0 != 0x80 {
			return i
		}
	}
	return k
}

// streamWriter is what exec.Cmd copies one of the process's streams to.
type streamWriter struct {
	p      *process
	stream int
}

func (w streamWriter) Write(b []byte) (int, error) {
	p := w.p
	p.activity.Store(int64(time.Since(p.base)))
	p.outMu.Lock()
	defer p.outMu.Unlock()
	p.raw += int64(len(b))
	if w.stream == stderr {
		if room := stderrHead - len(p.errHead); room > 0 {
			p.errHead = append(p.errHead, b[:min(room, len(b))]...)
		}
		p.errTail.Write(b)
	}
	if p.outClosed {
		return len(b), nil
	}
	if p.ring != nil {
		// Background: hold an unfinished line back (up to maxPartial).
		buf := append(p.partial[w.stream], b...)
		cut := bytes.LastIndexByte(buf, '\n') + 1
		if cut == 0 && len(buf) < maxPartial {
			p.partial[w.stream] = buf
			return len(b), nil
		}
		if cut == 0 {
			cut = len(buf)
		}
		p.partial[w.stream] = append([]byte(nil), buf[cut:]...)
		b = buf[:cut]
	}
	p.writeOut(w.stream, b)
	return len(b), nil
}

// maxPartial bounds an unfinished line held back from the redactors.
const maxPartial = 64 << 10

// writeOut passes output of a stream to the redactors. p.outMu is held.
func (p *process) writeOut(stream int, b []byte) {
	_, _ = p.merged.Write(b) // keepWriter never fails
	if p.evBytes < eventDataMax && p.evChunks < eventChunksMax {
		_, _ = p.ev[stream].Write(b)
	}
}

// initOutput sets up the output pipeline, into sink (foreground) or a
// ring (background).
func (p *process) initOutput(sink *output.Sink) {
	if sink != nil {
		p.sink = sink
		p.keep = &keepWriter{w: sink}
	} else {
		p.ring = newRing(ringSize)
		p.keep = &keepWriter{w: p.ring}
	}
	p.counts = output.Counts{}
	p.errTail = newRing(stderrTail)
	p.merged = p.redactor.Writer(p.keep)
	for s := range p.ev {
		p.ev[s] = p.redactor.Writer(&chunker{p: p, stream: s})
	}
}

// flushLocked flushes what the redactors hold back and starts new ones
// (reopen) or not (at the end). p.outMu is held.
func (p *process) flushLocked(reopen bool) {
	if p.outClosed {
		return
	}
	if !reopen {
		// The end: unfinished lines go too.
		for s := range p.partial {
			if len(p.partial[s]) > 0 {
				p.writeOut(s, p.partial[s])
				p.partial[s] = nil
			}
		}
	}
	_ = p.merged.Close()
	p.counts.Add(p.merged.Counts())
	for s := range p.ev {
		_ = p.ev[s].Close()
	}
	if !reopen {
		p.outClosed = true
		return
	}
	p.merged = p.redactor.Writer(p.keep)
	for s := range p.ev {
		p.ev[s] = p.redactor.Writer(&chunker{p: p, stream: s})
	}
}

// readNew flushes the redactors and returns the output a background
// process printed since the last read, at most limit bytes of it (the
// last ones).
func (p *process) readNew(limit int) string {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	p.flushLocked(true)
	data, dropped := p.ring.Since(p.readOff)
	p.readOff = p.ring.Total()
	return tailPreview(data, dropped, limit)
}

// stderrForViolationLocked is the start and end of raw stderr, for
// Cmd.Violation. p.outMu is held.
func (p *process) stderrForViolationLocked() []byte {
	tail, total := p.errTail.Bytes(), int(min(p.errTail.Total(), 1<<40))
	if total <= len(tail) {
		return tail // all of it
	}
	b := make([]byte, 0, len(p.errHead)+1+len(tail))
	b = append(b, p.errHead...)
	overlap := len(p.errHead) + len(tail) - total
	if overlap < 0 {
		b = append(b, '\n') // the middle is left out
	}
	return append(b, tail[max(overlap, 0):]...)
}

// stop asks the supervisor to end the process: with SIGTERM then SIGKILL
// after the grace period, or with SIGKILL at once (hard). The first
// reason given is the one recorded.
func (p *process) stop(reason string, hard bool) {
	p.mu.Lock()
	if p.finished {
		p.mu.Unlock()
		return
	}
	if p.reason == "" {
		p.reason = reason
	}
	p.hard = p.hard || hard
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *process) isFinished() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.finished
}

func (p *process) isLive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.isStart && !p.finished
}

func (p *process) info() Info {
	return Info{
		ID:         p.id,
		SessionID:  p.ref.SessionID,
		RunID:      p.ref.RunID,
		Command:    p.preview,
		Pid:        p.pid,
		Started:    p.started,
		Background: p.background,
	}
}

// signalGroup sends sig to the process group.
func (p *process) signalGroup(sig syscall.Signal) {
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		// The group leader is not yet reaped, so the group exists: an
		// error means something is badly wrong; kill the leader at least.
		_ = p.cmd.Process.Signal(sig)
	}
}

// supervise waits for the process, enforcing its timeouts and acting on
// stop requests, then records its end. ctx is the foreground call's
// context (context.Background for a background process).
func (p *process) supervise(ctx context.Context) {
	waitc := make(chan error, 1)
	go func() { waitc <- p.cmd.Wait() }()

	ctxDone := ctx.Done()
	var wall, idle, grace <-chan time.Time
	if p.timeout > 0 {
		t := time.NewTimer(p.timeout)
		defer t.Stop()
		wall = t.C
	}
	var idleTimer *time.Timer
	if p.idle > 0 {
		idleTimer = time.NewTimer(p.idle)
		defer idleTimer.Stop()
		idle = idleTimer.C
	}
	var graceTimer *time.Timer
	defer func() {
		if graceTimer != nil {
			graceTimer.Stop()
		}
	}()
	termSent := false
	for {
		select {
		case err := <-waitc:
			p.finish(ctx, err)
			return
		case <-wall:
			wall = nil
			p.stop(reasonTimeout, false)
		case <-idle:
			since := time.Since(p.base) - time.Duration(p.activity.Load())
			if since >= p.idle {
				idle = nil
				p.stop(reasonInactivity, false)
			} else {
				idleTimer.Reset(p.idle - since)
			}
		case <-ctxDone:
			ctxDone = nil
			p.stop(ctxReason(ctx), true)
		case <-p.kick:
			p.mu.Lock()
			hard := p.hard
			p.mu.Unlock()
			switch {
			case hard:
				p.signalGroup(syscall.SIGKILL)
				grace = nil
			case !termSent:
				termSent = true
				p.signalGroup(syscall.SIGTERM)
				graceTimer = time.NewTimer(p.grace)
				grace = graceTimer.C
			}
		case <-grace:
			grace = nil
			p.signalGroup(syscall.SIGKILL)
		}
	}
}

// ctxReason is the termination reason for a foreground call's ended
// context.
func ctxReason(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return reasonTimeout
	}
	return reasonCancelled
}

// finish records how the process ended and closes done.
func (p *process) finish(ctx context.Context, waitErr error) {
	e := &ending{waitErr: waitErr, duration: p.m.opts.Now().Sub(p.started)}
	if ctx != nil && ctx.Err() != nil {
		e.cause = context.Cause(ctx)
		p.stop(ctxReason(ctx), true) // records the reason if the context ended it first
	}

	p.outMu.Lock()
	p.flushLocked(false)
	e.bytes = p.raw
	e.counts = p.counts
	if p.sink != nil {
		spill, err := p.sink.Close()
		e.spill = spill
		if err != nil && p.keep.err == nil {
			p.keep.err = err
		}
	}
	e.keepErr = p.keep.err
	stderrKept := p.stderrForViolationLocked()
	p.outMu.Unlock()

	if st := p.cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.signal = signalName(ws.Signal())
		} else {
			code := st.ExitCode()
			e.exitCode = &code
		}
	}

	p.mu.Lock()
	e.reason = p.reason
	p.finished = true
	p.end = e
	p.mu.Unlock()

	if e.reason == "" && waitErr != nil {
		e.violation = p.cmd.Violation(waitErr, stderrKept)
	}

	p.stdinMu.Lock()
	if p.stdin != nil {
		_ = p.stdin.Close()
		p.stdin = nil
	}
	p.stdinMu.Unlock()

	p.recordEnd(e)
	close(p.done)
}

// recordEnd emits the events of a process's end.
func (p *process) recordEnd(e *ending) {
	pp := &event.ProcessPayload{
		ProcessID:  p.id,
		ExitCode:   e.exitCode,
		Signal:     e.signal,
		Reason:     e.reason,
		DurationMs: e.duration.Milliseconds(),
		Bytes:      e.bytes,
	}
	switch {
	case e.reason != "":
		p.em.emit(event.ProcessTerminated, pp)
	case e.exitCode != nil && *e.exitCode == 0 && e.violation == nil:
		// A limit checked after the process (the write cap) fails it
		// even when it exited 0.
		p.em.emit(event.ProcessCompleted, pp)
	default:
		p.em.emit(event.ProcessFailed, pp)
	}
	if v := e.violation; v != nil {
		sp := &event.SandboxPayload{
			Profile:   v.Profile,
			Mode:      string(p.cmd.Applied.Mode),
			Network:   string(p.cmd.Applied.Network),
			Enforcer:  string(p.cmd.Applied.Enforcer),
			Cwd:       p.cmd.Applied.Cwd,
			Limits:    p.cmd.Applied.Payload().Limits,
			ProcessID: p.id,
			Violation: string(v.Kind),
			Detail:    v.Detail,
		}
		if sp.Profile == "" {
			sp.Profile = p.profile.Name
		}
		if wider, ok := p.profile.Escalation(v); ok {
			sp.Escalation = wider.Name
		}
		p.em.emit(event.SandboxViolation, sp)
	}
	var size int64
	if e.spill != nil {
		size = e.spill.Bytes
	} else {
		size = e.bytes
	}
	if e.counts.Total() > 0 {
		p.em.emit(event.OutputRedacted, &event.OutputPayload{Bytes: size, Redactions: e.counts, ProcessID: p.id})
	}
	if s := e.spill; s != nil {
		if s.Spilled {
			p.em.emit(event.OutputSpilled, &event.OutputPayload{
				Bytes:       s.Bytes,
				StoredBytes: s.Stored,
				InlineBytes: int64(len(s.Preview)),
				Limit:       int64(s.Inline),
				ProcessID:   p.id,
			})
		}
		if s.Truncated {
			p.em.emit(event.OutputTruncated, &event.OutputPayload{
				Bytes:       s.Bytes,
				StoredBytes: s.Stored,
				Limit:       cmp.Or(p.limits.Max, output.DefaultMax),
				ProcessID:   p.id,
			})
		}
	}
}

// writeInput writes data to a background process's stdin, and closes it
// when closeStdin is set. ctx bounds a write the process does not read.
func (p *process) writeInput(ctx context.Context, data string, closeStdin bool) error {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin == nil {
		if data == "" && closeStdin {
			return nil
		}
		return fmt.Errorf("%w: the process's input is closed", ErrNoInput)
	}
	if data != "" {
		if len(tool.UnfinishedLine(p.pending+data)) > pendingMax {
			return fmt.Errorf("%w: more than %d bytes without a newline", ErrLineTooLong, pendingMax)
		}
		stopAfter := context.AfterFunc(ctx, func() { _ = p.stdin.SetWriteDeadline(time.Now()) })
		n, err := io.WriteString(p.stdin, data)
		if !stopAfter() {
			// The deadline was (or is being) set: clear it for later writes.
			_ = p.stdin.SetWriteDeadline(time.Time{})
		}
		p.pending = tool.UnfinishedLine(p.pending + data[:n])
		switch {
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("writing input: %w", context.Cause(ctx))
		case errors.Is(err, syscall.EPIPE):
			return fmt.Errorf("%w: the process no longer reads its input", ErrNoInput)
		case err != nil:
			return fmt.Errorf("writing input: %w", err)
		}
	}
	if closeStdin {
		err := p.stdin.Close()
		p.stdin = nil
		if err != nil {
			return fmt.Errorf("closing input: %w", err)
		}
	}
	return nil
}

// target says what a write of data reaches: the process and its
// unfinished input line.
func (p *process) target(data string) tool.StdinTarget {
	p.stdinMu.Lock()
	pending := p.pending
	p.stdinMu.Unlock()
	return tool.StdinTarget{
		ProcessID: p.id, Command: p.cmdline, Pending: pending, Text: data, Profile: p.profile,
		Shell: (&runTool{m: p.m, shell: true}).Spec(),
	}
}

// inputPayload is process.input for data written to the process: a
// redacted, bounded preview.
func (p *process) inputPayload(r *output.Redactor, data string) *event.ProcessPayload {
	red, _ := r.String(data)
	return &event.ProcessPayload{
		ProcessID: p.id,
		Stream:    "stdin",
		Data:      proc.Excerpt([]byte(red), previewMax, len(red)),
		Bytes:     int64(len(data)),
	}
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGABRT: "SIGABRT", syscall.SIGALRM: "SIGALRM", syscall.SIGBUS: "SIGBUS",
	syscall.SIGFPE: "SIGFPE", syscall.SIGHUP: "SIGHUP", syscall.SIGILL: "SIGILL",
	syscall.SIGINT: "SIGINT", syscall.SIGKILL: "SIGKILL", syscall.SIGPIPE: "SIGPIPE",
	syscall.SIGQUIT: "SIGQUIT", syscall.SIGSEGV: "SIGSEGV", syscall.SIGTERM: "SIGTERM",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS", syscall.SIGTRAP: "SIGTRAP",
}

func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}
