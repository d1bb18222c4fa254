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
// /tmp of Limits.TmpBytes (TMPDIR points at it). Nothing else of the
// host is visible:
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
// bwrap kills everything in its PID namespace. bwrap applies the seccomp
// filter (--seccomp) just before it executes the command.
//
// Landlock is the fallback (or Options.NoBubblewrap): the command may
// read the readable roots (plus /proc and a few device files) and write
// the writable ones, cannot link or move files in from elsewhere, cannot
// signal processes outside the sandbox (ABI 6), and with network none
// cannot bind or connect TCP sockets (ABI 4), while the seccomp filter
// refuses every other socket, UDP, Multipath TCP and Unix ones included.
// It has no capabilities. Landlock does not hide paths (they exist but
// are refused; see Hidden paths for what that costs), and its private
// /tmp is a fresh directory removed after Wait: a tmpfs of
// Limits.TmpBytes under a root daemon, otherwise a directory measured
// after the command.
//
// # The system call filter
//
// Every command, whatever its profile, runs under a seccomp filter (a
// classic BPF program built here, for amd64 and arm64; on other
// architectures nothing can be enforced) that refuses with EPERM ptrace
// and process_vm_readv/writev, mounting (mount, umount2, pivot_root, the
// new mount API), new namespaces (unshare and clone with CLONE_NEW*
// flags, setns), keyrings, bpf, perf_event_open, kexec, module loading,
// io_uring, userfaultfd, open_by_handle_at, personality changes, and
// set-user-ID or set-group-ID files (under a root daemon those would be
// root's on disk). clone3 and openat2 fail with ENOSYS so that libc
// falls back to clone and openat; system calls of another architecture
// kill the process. With network none it allows only TCP sockets and,
// under bubblewrap, Unix and netlink ones; socketpair stays allowed.
//
// # Root daemons
//
// A root daemon runs every command but full_access ones as the
// unprivileged user Options.UID and GID (DefaultUser by default), never
// as root on the host. Its helper, still root, makes a mount namespace
// of its own and clones the profile's roots there idmapped through a
// user namespace mapping the daemon's ids to the user's (Linux 5.12 and a
// file system that supports it), so that the daemon's files are the
// user's and what the user creates is the daemon's on disk. Under
// bubblewrap the clones are staged in a tmpfs and bound from there, and
// bwrap runs as the user, making its namespaces unprivileged; under
// Landlock they are attached over the roots, with a tmpfs over any
// directory on the way the user cannot search. full_access runs as root
// without capabilities.
//
// # Hidden paths
//
// Options.Hidden names files and directories that no sandboxed process
// sees whatever its profile short of full_access, even where a root
// holds them: a runtime hides its data directory (API token, database,
// output store), its configuration file and its key files there, so that
// a workspace or read root that contains them, a system directory (a
// config in /etc) included, does not expose them. Paths are resolved
// through symbolic links when each command is made, so a link to a
// hidden path, from any root, leads to the hidden view too. A root inside
// a hidden path grants nothing, and a working directory inside one is
// refused (ErrUnenforceable). Refusals on hidden paths are not
// violations: no escalation short of full_access would lift them.
//
// Under bubblewrap a hidden directory is covered with an empty read-only
// tmpfs and a hidden file with the host's /dev/null, read-only, after the
// roots are mounted: the process sees an empty directory, or a device
// node it cannot open (the mount is nodev), and can neither read nor
// change what is below. The
// directories between a writable root and a hidden path are bound onto
// themselves, so that, being mount points, they cannot be moved away to
// free the hidden path's name on the host for a planted token or config.
//
// Landlock can only allow, and a rule on a directory holds for everything
// below it, so a root that holds a hidden path is granted as its entries
// instead, without the hidden path, the entries on the way to it expanded
// in turn (symbolic links among them get no rule: a rule would grant the
// link's target). The directories so expanded get no right of their own:
// under Landlock a process cannot list them, nor create, remove or rename
// entries directly in them, and an entry made in one after the command
// started is out of its reach; their existing files and subdirectories
// work as before.
//
// Neither enforcer sees through what the file system does not name: a
// hard link to a hidden file elsewhere in a root, or the same directory
// mounted at a second place on the host, is not hidden; nor is a hidden
// path that does not exist yet when the command starts.
//
// # Limits
//
// RLIMIT_NPROC, RLIMIT_AS, RLIMIT_FSIZE and RLIMIT_CPU (soft; the hard
// limit is a second later) are set in the child, never in the daemon,
// and core dumps are off. The kernel does not apply RLIMIT_NPROC to root,
// and a root daemon's commands all share one user, so a root daemon
// bounds processes with a per-command pids cgroup (agentrt/cmd-* under
// its own cgroup in cgroup v1's pids hierarchy, or cgroup v2 with the
// pids controller); without one, Command refuses profiles with a process
// limit. Under bubblewrap, bwrap's own two processes count against the
// limit. Limits.TmpBytes sizes the private /tmp. Limits.WriteBytes caps
// how much the writable roots grow during one command: RLIMIT_FSIZE
// holds any file to it, and Wait measures the roots (walking them before
// Start and after the command) and returns ErrLimitExceeded when they
// grew by more, writes of other processes meanwhile included.
//
// # The helper
//
// The child-side set-up (joining the cgroup, the mounts and the user of a
// root daemon, dropping capabilities, Landlock, the seccomp filter,
// rlimits) runs in a re-execution of the program itself
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
// which refusal or limit made it fail, or reports the limit Wait found
// exceeded. The reading is heuristic: it knows the messages of the
// shells, coreutils and common runtimes, and returns nil when it cannot
// tell.
package sandbox
