package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"sync"

	"github.com/agentrt/agentrt/event"
)

// ErrUnenforceable is the error, wrapped, that Command and Enforcer return
// when a profile cannot be enforced: the call must not run.
var ErrUnenforceable = errors.New("sandbox profile cannot be enforced")

// ErrLimitExceeded is the error, wrapped, that Wait returns when the
// command went over a limit the sandbox checks once it has ended (the
// growth of the writable roots, Limits.WriteBytes; the private /tmp
// under Landlock in a daemon that is not root): Violation says which.
var ErrLimitExceeded = errors.New("sandbox limit exceeded")

// DefaultUser is the user and group id a root daemon's sandboxed
// processes run as when Options set none (nobody and nogroup on most
// distributions).
const DefaultUser = 65534

// Enforcer names what enforces a profile.
type Enforcer string

// Enforcers.
const (
	Bubblewrap Enforcer = "bubblewrap"
	Landlock   Enforcer = "landlock"
)

// Options configure a Sandbox.
type Options struct {
	// Bubblewrap is the bwrap executable; "" looks it up in PATH.
	Bubblewrap string
	// NoBubblewrap forces the Landlock fallback (for tests).
	NoBubblewrap bool
	// Hidden are absolute paths, files or directories, that no
	// sandboxed process sees whatever its profile short of full_access,
	// even where a root (the workspace, a read root, a system directory)
	// holds them: a runtime's data directory, its configuration, key
	// files. Paths that do not exist are skipped. See the package doc.
	Hidden []string
	// Helper is the executable that does the child-side set-up (limits,
	// cgroup, Landlock) before it executes the command; it must call
	// Main first thing in main. "" is the running program
	// (os.Executable).
	Helper string
	// UID and GID are the unprivileged user and group a daemon running
	// as root runs sandboxed processes as (every profile but
	// full_access); 0 means DefaultUser. A daemon that is not root runs
	// them as itself.
	UID, GID int

	// noLandlock pretends the kernel has no Landlock (for tests).
	noLandlock bool
}

// Sandbox makes sandboxed commands. It is safe for concurrent use.
type Sandbox struct {
	opts Options
	once sync.Once
	// The rest is set by detect, once, on first use, and immutable
	// afterwards.

	helper   string
	bwrap    string // "" unless bubblewrap is the enforcer
	enforcer Enforcer
	err      error // why nothing can be enforced; nil when enforcer is set
	abi      int   // Landlock ABI version, 0 when unavailable
	root     bool  // the daemon runs as root: RLIMIT_NPROC does not bind
	cgroups  *cgroups
	cgErr    error // why cgroups is nil (root only)
	// user is who a root daemon's commands run as; userns maps the
	// daemon's ids to it, for idmapped mounts (root only).
	user    userConfig
	userns  *os.File
	userErr error       // why userns is nil (root only)
	self    *fileReader // the daemon's user, for Violation (not root)
}

// Spec is what to run.
type Spec struct {
	Argv []string
	// Dir is the working directory (inside the workspace, usually).
	Dir string
	// Workspace is the workspace root ("" when the agent has none).
	Workspace string
	// Env is the whole environment, KEY=value.
	Env []string
}

// Applied is the profile as actually applied, for sandbox.applied.
// ReadRoots are the paths made readable but not writable (the system
// directories, resolved, come first); WriteRoots are the paths made
// writable. Paths are absolute with symbolic links resolved; roots that
// do not exist are left out. Both leave out the private /tmp, /dev and
// /proc every restricted profile gets. Under full_access WriteRoots is
// ["/"]. Limits are resolved: DefaultLimits for zero fields, -1 for
// unlimited.
type Applied struct {
	Profile    string
	Mode       Mode
	Network    Network
	Enforcer   Enforcer
	Cwd        string
	ReadRoots  []string
	WriteRoots []string
	Limits     Limits
}

// Cmd is a sandboxed command: an *exec.Cmd in its own process group,
// killed as a group when its context ends, nothing of it left running
// after Wait.
//
// Use Cmd's Start, Run and Wait, not the embedded exec.Cmd's (nor its
// Output or CombinedOutput): Start creates what the sandbox holds for
// the command (a pids cgroup, a private temporary directory) and Wait
// kills what is left and releases it. The helper refuses to run a
// command started through exec.Cmd.Start.
type Cmd struct {
	*exec.Cmd
	Applied Applied

	s       *Sandbox
	cfg     helperConfig
	env     []string // the command's environment
	cgroup  bool     // limit processes with a pids cgroup
	private bool     // make a private temporary directory (Landlock)
	denied  deniedFS // for Violation
	// layout is the command's file system, which Start completes;
	// writable are the roots whose growth WriteBytes bounds.
	layout   *layout
	writable []string

	mu      sync.Mutex // guards what follows
	cgDir   string     // the command's cgroup, "" when none
	tmpDir  string     // the private temporary directory, "" when none
	pidsMax int64      // times the pids limit refused a fork
	pinned  []int      // pidfds of processes cancel killed, for Wait
	// writeBase is the writable roots' size before the command, over a
	// limit found exceeded after it.
	writeBase int64
	over      *Violation
	started   bool
	waited    bool
}

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Payload is the sandbox.applied payload for a (limits that are
// unlimited show as 0).
func (a Applied) Payload() *event.SandboxPayload {
	return &event.SandboxPayload{
		Profile: a.Profile, Mode: string(a.Mode), Network: string(a.Network), Enforcer: string(a.Enforcer),
		Cwd: a.Cwd, ReadRoots: a.ReadRoots, WriteRoots: a.WriteRoots,
		Limits: event.SandboxLimits{
			Processes: max(a.Limits.Processes, 0), MemoryBytes: max(a.Limits.MemoryBytes, 0),
			FileBytes: max(a.Limits.FileBytes, 0), CPUSeconds: max(a.Limits.CPUSeconds, 0),
			TmpBytes: max(a.Limits.TmpBytes, 0), WriteBytes: max(a.Limits.WriteBytes, 0),
		},
	}
}
