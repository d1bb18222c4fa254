//go:build linux

package cli

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentrt/agentrt/internal/testenv"
)

// This file gives the tests of package cli and cli_test a
// pseudo-terminal, for what agentrt does only on a terminal.

// PTY is a pseudo-terminal: the test reads from Master what a process
// writes to Slave.
type PTY struct {
	Master, Slave *os.File

	mu     sync.Mutex
	out    bytes.Buffer  // guarded by mu
	more   chan struct{} // signalled when out grows
	closed chan struct{} // closed when master reads no more
}

// OpenPTY opens a pseudo-terminal cols wide, as posix_openpt, grantpt,
// unlockpt and ptsname do.
func OpenPTY(t *testing.T, cols uint16) *PTY {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		testenv.Missing(t, "no pseudo-terminals here: %v", err)
	}
	// Non-blocking, so that reads go through the runtime's poller and
	// closing the file ends one in progress.
	if err := unix.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	master := os.NewFile(uintptr(fd), "/dev/ptmx")
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pseudo-terminal's slave: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: cols}); err != nil {
		t.Fatalf("sizing the pseudo-terminal: %v", err)
	}
	p := &PTY{Master: master, Slave: slave, more: make(chan struct{}, 1), closed: make(chan struct{})}
	go p.read()
	return p
}

// read copies what the master reads into out until it reads no more
// (EIO once every copy of the slave is closed).
func (p *PTY) read() {
	defer close(p.closed)
	buf := make([]byte, 4096)
	for {
		n, err := p.Master.Read(buf)
		p.mu.Lock()
		p.out.Write(buf[:n])
		p.mu.Unlock()
		select {
		case p.more <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

func (p *PTY) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// WaitFor waits until the terminal shows s; false if it never does.
func (p *PTY) WaitFor(s string) bool {
	timeout := time.NewTimer(60 * time.Second)
	defer timeout.Stop()
	for !strings.Contains(p.Output(), s) {
		select {
		case <-p.more:
		case <-p.closed:
			return strings.Contains(p.Output(), s)
		case <-timeout.C:
			return false
		}
	}
	return true
}

// Rest waits until the child has closed the terminal and returns all it
// wrote.
func (p *PTY) Rest() string {
	<-p.closed
	return p.Output()
}

// TestTimelineOptionsOnTerminal: on a terminal the timeline takes its
// width and colours, with a spinner when live; NO_COLOR takes the colour
// away, TERM=dumb the colour and the spinner, $COLUMNS sets the width;
// off a terminal it is plain, unfitted and still.
func TestTimelineOptionsOnTerminal(t *testing.T) {
	term := OpenPTY(t, 72)
	file, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	tests := []struct {
		name            string
		env             map[string]string
		w               *os.File
		live            bool
		width           int
		colour, spinner bool
	}{
		{"live", nil, term.Slave, true, 72, true, true},
		{"requests show", nil, term.Slave, false, 72, true, false},
		{"NO_COLOR", map[string]string{"NO_COLOR": "1"}, term.Slave, true, 72, false, true},
		{"TERM=dumb", map[string]string{"TERM": "dumb"}, term.Slave, true, 72, false, false},
		{"COLUMNS", map[string]string{"COLUMNS": "100"}, term.Slave, true, 100, true, true},
		{"a file", nil, file, true, 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"NO_COLOR", "COLUMNS"} {
				t.Setenv(k, "")
			}
			t.Setenv("TERM", "xterm-256color")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			o := timelineOptionsFor(tt.w, tt.live)
			if o.width != tt.width || o.style.on != tt.colour || (o.clock != nil) != tt.spinner {
				t.Errorf("width %d, colour %v, spinner %v; want %d, %v, %v", o.width, o.style.on, o.clock != nil, tt.width, tt.colour, tt.spinner)
			}
		})
	}
}
