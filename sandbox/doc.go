// Package sandbox runs a tool's processes inside a profile: what they may
// read and write, whether they reach the network, and how many processes,
// how much memory, file size and CPU time they get. A profile that cannot
// be enforced is an error wrapping ErrUnenforceable: the caller fails
// closed and the call does not run.
//
// # Profiles
//
// Every profile may read the system directories (/usr, /bin, /sbin,
// /lib, /lib32, /lib64, /libx32, /etc, those that exist), the workspace
// and its ReadRoots, and gets a fresh /proc, a minimal /dev and a private
// /tmp (TMPDIR points at it). Nothing else of the host is visible:
// /root, /home, /var and other temporary directories are not.
// read_only writes only the private /tmp; workspace_write also writes
// the workspace and WriteRoots; full_access sees and writes the whole
// file system as the daemon does. Network none leaves only a loopback of
// the sandbox's own. Builtin returns the three with their usual network
// and default limits; Escalation names the wider profile to offer after a
// refusal.
//
// # Enforcers
//
// Bubblewrap, where bwrap runs, is preferred: the command gets a new
// mount namespace holding only its roots (the rest of / is a read-only
// tmpfs), new PID, IPC, UTS and cgroup namespaces, a new network
// namespace for network none, a new session, and no capabilities. Killing
// bwrap kills everything in its PID namespace.
//
// Landlock is the fallback (or Options.NoBubblewrap): the command may
// read the readable roots (plus /proc and a few device files) and write
// the writable ones, cannot link or move files in from elsewhere, cannot
// signal processes outside the sandbox (ABI 6), and with network none
// cannot bind or connect TCP sockets (ABI 4). It has no capabilities,
// even under a root daemon. Landlock does not hide paths (they exist but
// are refused), its private /tmp is a fresh directory removed after Wait,
// and network none does not cover UDP before ABI 10 nor Multipath TCP.
//
// # Limits
//
// RLIMIT_NPROC, RLIMIT_AS, RLIMIT_FSIZE and RLIMIT_CPU (soft; the hard
// limit is a second later) are set in the child, never in the daemon,
// and core dumps are off. The kernel does not apply RLIMIT_NPROC to root,
// so a root daemon bounds processes with a per-command pids cgroup
// (agentrt/cmd-* under its own cgroup in cgroup v1's pids hierarchy, or
// cgroup v2 with the pids controller); without one, Command refuses
// profiles with a process limit. Under bubblewrap, bwrap's own two
// processes count against the limit.
//
// # The helper
//
// The child-side set-up (joining the cgroup, dropping capabilities,
// Landlock, rlimits) runs in a re-execution of the program itself
// (Options.Helper), which then executes bwrap or the command. A program
// that embeds the package must call Main first thing in main (tests: in
// TestMain); New checks that it does, and fails closed otherwise. The
// helper gets its configuration and the command's environment in
// variables of its own and runs bwrap with an empty environment, passing
// the command's as --clearenv and --setenv through bwrap's --args file
// descriptor: nothing of the command's environment (LD_PRELOAD, say)
// acts before the sandbox exists, and none of it shows in an argv. When
// the helper cannot set the sandbox up it exits with status 125 and says
// why on stderr; the command has not run.
//
// # Processes
//
// A command runs as the leader of a new session and process group. When
// its context ends the group is killed with SIGKILL, and so is the
// command when the daemon dies (under bubblewrap, bwrap's
// --die-with-parent then kills what runs in it). It holds standard input,
// output and error and no other descriptor of the daemon's: the helper
// marks every other one close-on-exec, those the daemon inherited too (a
// listening socket handed to it, which a command outliving the daemon
// would otherwise keep, and the port with it). Wait kills what the
// command left in its group and cgroup as soon as its main process has
// exited, removes the cgroup, and returns once nothing of it runs.
// Without a cgroup (a daemon not running as root) Wait finds what is
// left by process group and, on cancellation, by descent (bubblewrap's
// PID namespace is in a session of its own); under Landlock a process
// that leaves both the session and its parent can then outlive Wait.
//
// # Violations
//
// Cmd.Violation reads how a failed command ended and its stderr to say
// which refusal or limit made it fail. The reading is heuristic: it knows
// the messages of the shells, coreutils and common runtimes, and returns
// nil when it cannot tell.
package sandbox
