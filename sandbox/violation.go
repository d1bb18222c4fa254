package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// ViolationKind names what the sandbox refused.
type ViolationKind string

// Violation kinds.
const (
	WriteDenied   ViolationKind = "write_denied"
	ReadDenied    ViolationKind = "read_denied"
	NetworkDenied ViolationKind = "network_denied"
	// SyscallDenied: the seccomp filter refused a system call (ptrace,
	// mount, unshare, …); no wider profile allows it.
	SyscallDenied ViolationKind = "syscall_denied"
	ProcessLimit  ViolationKind = "process_limit"
	MemoryLimit   ViolationKind = "memory_limit"
	FileSizeLimit ViolationKind = "file_size_limit"
	CPULimit      ViolationKind = "cpu_limit"
	// TmpLimit: the private /tmp is full (Limits.TmpBytes).
	TmpLimit ViolationKind = "tmp_limit"
	// WriteLimit: the writable roots grew by more than Limits.WriteBytes
	// in one command, or a file reached that size.
	WriteLimit ViolationKind = "write_limit"
)

// Violation is a refusal or hit limit.
type Violation struct {
	Kind ViolationKind
	// Detail is a short explanation, e.g. the refused path.
	Detail string
	// Profile is the name of the profile that refused.
	Profile string
}

// Limit reports whether v is a hit resource limit rather than a refusal.
func (v *Violation) Limit() bool {
	if v == nil {
		return false
	}
	switch v.Kind {
	case ProcessLimit, MemoryLimit, FileSizeLimit, CPULimit, TmpLimit, WriteLimit:
		return true
	}
	return false
}

// deniedFS is what Violation needs to know of a command's file system.
type deniedFS struct {
	restricted bool
	cwd        string
	readable   []string
	writable   []string
	hidden     []string // refusals there are no violation: no profile but full_access would lift them
	// tmp is the private temporary directory as the command names it,
	// "" when it has none.
	tmp string
	// reader is who the command read files as, nil for root.
	reader *fileReader
}

// fileReader is a user files are read as: the sandbox's user of a root
// daemon, for which the roots, mapped, are idmapped (a file only it
// cannot read is the sandbox's refusal), or the daemon's own user (a file
// it cannot read is not).
type fileReader struct {
	uid     int
	gids    []int
	mapped  []string
	sandbox bool
}

// maxDetail bounds Violation.Detail.
const maxDetail = 160

// Violation explains, after Wait, a refusal or hit limit that made the
// command fail, from how it ended and what it wrote on stderr (the caller
// passes the start and end of stderr it kept); nil when the failure does
// not look like the sandbox's doing.
//
// In order: a file size limit (SIGXFSZ, status 153, "File too large"); a
// CPU limit (SIGXCPU, status 152); the process limit (forks the pids
// cgroup refused, or a fork failing with "Resource temporarily
// unavailable"); a memory limit ("Cannot allocate memory" and the like);
// with network none, a refused connection or name lookup; then, under a
// restricted profile, the first stderr line naming a path that the
// profile hides or keeps read-only, resolved against the working
// directory and, on the host, through symbolic links: write_denied for
// "Read-only file system", for a write ("cannot touch", "cannot create",
// "ln: "…) and for "Permission denied" on a readable path; read_denied
// for "No such file or directory" or "Permission denied" on a path
// outside the readable roots that exists on the host; nothing for a path
// the Sandbox hides (Options.Hidden), which no escalation short of
// full_access would reach. Detail is the path as stderr names it, or the
// refused operation.
func (c *Cmd) Violation(waitErr error, stderr []byte) *Violation {
	if waitErr == nil {
		return nil
	}
	c.mu.Lock()
	refused, over := c.pidsMax, c.over
	c.mu.Unlock()
	if over != nil {
		v := *over
		v.Profile = c.Applied.Profile
		return &v
	}
	v := classify(waitErr, string(stderr), c.Applied, refused, c.denied)
	if v != nil {
		v.Profile = c.Applied.Profile
	}
	return v
}

func classify(waitErr error, stderr string, a Applied, refusedForks int64, fs deniedFS) *Violation {
	sig, status := syscall.Signal(-1), -1
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			if ws.Signaled() {
				sig = ws.Signal()
			} else {
				status = ws.ExitStatus()
			}
		}
	}
	lim := a.Limits
	switch {
	case fileCap(lim) > 0 && fileCap(lim) != lim.FileBytes && (sig == syscall.SIGXFSZ || status == 128+int(syscall.SIGXFSZ) ||
		containsAny(stderr, "File too large", "File size limit exceeded")):
		return &Violation{Kind: WriteLimit, Detail: "a file reached the write limit"}
	case lim.FileBytes > 0 && (sig == syscall.SIGXFSZ || status == 128+int(syscall.SIGXFSZ) ||
		containsAny(stderr, "File too large", "File size limit exceeded")):
		return &Violation{Kind: FileSizeLimit, Detail: "file size limit exceeded"}
	case sig == syscall.SIGSYS:
		return &Violation{Kind: SyscallDenied, Detail: "a system call of another architecture"}
	case lim.CPUSeconds > 0 && (sig == syscall.SIGXCPU || status == 128+int(syscall.SIGXCPU) ||
		containsAny(stderr, "CPU time limit exceeded")):
		return &Violation{Kind: CPULimit, Detail: "CPU time limit exceeded"}
	case lim.Processes > 0 && (refusedForks > 0 || forkFailed(stderr)):
		return &Violation{Kind: ProcessLimit, Detail: "process limit reached"}
	case lim.MemoryBytes > 0 && containsAny(stderr, "Cannot allocate memory", "out of memory", "Out of memory",
		"MemoryError", "std::bad_alloc", "memory exhausted"):
		return &Violation{Kind: MemoryLimit, Detail: "memory limit reached"}
	}
	if lim.TmpBytes > 0 && fs.tmp != "" {
		if v := fs.tmpFull(stderr); v != nil {
			return v
		}
	}
	if a.Network == NetworkNone {
		for _, m := range []string{"Network is unreachable", "Connection refused", "Could not resolve host",
			"Temporary failure in name resolution", "connect: ", "socket: " + errPerm} {
			if strings.Contains(stderr, m) {
				detail := strings.ToLower(m)
				switch m {
				case "connect: ":
					detail = "connect refused"
				case "socket: " + errPerm:
					detail = "socket refused"
				}
				return &Violation{Kind: NetworkDenied, Detail: detail}
			}
		}
	}
	if v := syscallRefused(stderr); v != nil {
		return v
	}
	if fs.restricted {
		for line := range strings.Lines(stderr) {
			if v := fs.classifyLine(strings.TrimSpace(line)); v != nil {
				return v
			}
		}
	}
	return nil
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// forkFailed reports a shell's, program's or bwrap's failing fork.
func forkFailed(stderr string) bool {
	for line := range strings.Lines(stderr) {
		if strings.Contains(line, "Resource temporarily unavailable") &&
			containsAny(line, "fork", "clone", "new namespace", "thread") ||
			containsAny(line, "Cannot fork", "can't fork") {
			return true
		}
	}
	return false
}

// File errors, as strerror spells them.
const (
	errROFS   = "Read-only file system"
	errAccess = "Permission denied"
	errPerm   = "Operation not permitted"
	errNoEnt  = "No such file or directory"
	errXDev   = "Invalid cross-device link"
	// errNoDir is dash's ENOENT for a redirection into a missing
	// directory: "cannot create /x/f: Directory nonexistent".
	errNoDir = "Directory nonexistent"
)

// writeMarks are what a line about a refused write says.
var writeMarks = []string{
	"cannot touch", "cannot create", "can't create", "failed to create", "cannot remove",
	"cannot move", "cannot overwrite", "cannot make directory", "for writing", "hard link",
	"symbolic link", "cannot link", "ln: ", "tee: ", "mkdir: ", "rm: ", "mv: ",
}

// classifyLine classifies one stderr line naming a path.
func (fs deniedFS) classifyLine(line string) *Violation {
	var errMsg string
	for _, e := range []string{errROFS, errAccess, errPerm, errNoEnt, errXDev, errNoDir} {
		if strings.Contains(line, e) {
			errMsg = e
			break
		}
	}
	if errMsg == "" {
		return nil
	}
	paths := linePaths(line, errMsg)
	if errMsg == errNoDir {
		errMsg = errNoEnt
	}
	write := errMsg == errROFS || containsAny(line, writeMarks...)
	for _, p := range paths {
		if strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/") {
			continue
		}
		abs := p
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(fs.cwd, abs)
		}
		real, onHost := hostPath(filepath.Clean(abs))
		if withinAny(real, fs.hidden) {
			continue
		}
		writable := withinAny(real, fs.writable)
		readable := withinAny(real, fs.readable)
		switch {
		case errMsg == errROFS:
			return &Violation{Kind: WriteDenied, Detail: short(p)}
		case write && !writable && onHost:
			return &Violation{Kind: WriteDenied, Detail: short(p)}
		case !write && readable && !writable && errMsg == errAccess && fs.reader != nil && !fs.reader.mayRead(real):
			// The file's own permissions keep the reader out: the
			// sandbox's doing when it chose the reader.
			if fs.reader.sandbox {
				return &Violation{Kind: ReadDenied, Detail: short(p)}
			}
		case !write && readable && !writable && (errMsg == errAccess || errMsg == errPerm):
			// Reading there is allowed: the refusal was of a write.
			return &Violation{Kind: WriteDenied, Detail: short(p)}
		case !write && !readable && onHost && (errMsg == errAccess || errMsg == errNoEnt):
			return &Violation{Kind: ReadDenied, Detail: short(p)}
		}
	}
	return nil
}

// errNoSpace is ENOSPC, as strerror spells it.
const errNoSpace = "No space left on device"

// tmpFull reports a write the full private /tmp refused: a line saying
// so that names a path in it (and in no writable root), or no path at
// all (a redirection's "error writing 'standard output'").
func (fs deniedFS) tmpFull(stderr string) *Violation {
	for line := range strings.Lines(stderr) {
		if !strings.Contains(line, errNoSpace) {
			continue
		}
		paths := linePaths(strings.TrimSpace(line), errNoSpace)
		if len(paths) == 0 {
			return &Violation{Kind: TmpLimit, Detail: "the private /tmp is full"}
		}
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				p = filepath.Join(fs.cwd, p)
			}
			// A root below /tmp is bound over the private one.
			p = filepath.Clean(p)
			inRoot := slices.ContainsFunc(fs.writable, func(w string) bool { return w != fs.tmp && within(p, w) })
			if within(p, fs.tmp) && !inRoot {
				return &Violation{Kind: TmpLimit, Detail: "the private /tmp is full"}
			}
		}
	}
	return nil
}

// refusedOps name, in error messages, what the seccomp filter refuses:
// a word of a line saying "Operation not permitted" that starts with one
// of them ("unshare: unshare failed", "ptrace(PTRACE_ATTACH, …)",
// "io_uring_setup: …"), outside a quoted path.
var refusedOps = []string{"ptrace", "process_vm_", "unshare", "setns", "clone", "mount", "umount", "pivot_root",
	"fsopen", "fsmount", "move_mount", "open_tree", "keyctl", "add_key", "request_key", "bpf", "perf_event_open",
	"kexec", "init_module", "finit_module", "delete_module", "io_uring", "userfaultfd", "personality"}

// syscallRefused reports a system call the seccomp filter refused, from
// the first stderr line naming one.
func syscallRefused(stderr string) *Violation {
	for line := range strings.Lines(stderr) {
		if !strings.Contains(line, errPerm) {
			continue
		}
		for _, w := range strings.Fields(line) {
			if strings.ContainsAny(w[:1], "'\"‘/.") {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimRight(w, ":,."), "(")
			for _, op := range refusedOps {
				if strings.HasPrefix(name, op) {
					return &Violation{Kind: SyscallDenied, Detail: short(name)}
				}
			}
		}
	}
	return nil
}

// mayRead reports whether the file at path (on the host, resolved) is
// readable by r by its mode bits, seen through the idmapping of r.mapped.
func (r *fileReader) mayRead(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return true // cannot tell: not a refusal of the file's own
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	uid, gid := int64(st.Uid), int64(st.Gid)
	if withinAny(path, r.mapped) && len(r.gids) > 0 {
		uid, gid = mappedID(uid, r.uid), mappedID(gid, r.gids[0])
	}
	mode := fi.Mode().Perm()
	switch {
	case uid == int64(r.uid):
		return mode&0o400 != 0
	case slices.Contains(r.gids, int(gid)):
		return mode&0o040 != 0
	}
	return mode&0o004 != 0
}

// mappedID is on-disk id through the idmapping of 0 to to: to, or -1
// (unmapped).
func mappedID(id int64, to int) int64 {
	if id == 0 {
		return int64(to)
	}
	return -1
}

// linePaths returns the paths a line names: quoted ones, else the field
// before the error message ("cat: /x: No such file or directory"), and a
// quoted one after it ("PermissionError: [Errno 13] Permission denied:
// '/x'").
func linePaths(line, errMsg string) []string {
	var out []string
	for _, q := range [][2]string{{"'", "'"}, {"‘", "’"}, {"\"", "\""}} {
		rest := line
		for {
			_, after, ok := strings.Cut(rest, q[0])
			if !ok {
				break
			}
			inner, next, ok := strings.Cut(after, q[1])
			if !ok {
				break
			}
			if looksLikePath(inner) {
				out = append(out, inner)
			}
			rest = next
		}
	}
	if len(out) > 0 {
		return out
	}
	before, _, _ := strings.Cut(line, ": "+errMsg)
	if i := strings.LastIndex(before, ": "); i >= 0 {
		before = before[i+2:]
	}
	if looksLikePath(before) {
		out = append(out, before)
	} else if i := strings.LastIndexByte(before, ' '); i >= 0 && looksLikePath(before[i+1:]) &&
		(strings.ContainsRune(before[i+1:], '/') || strings.HasSuffix(before[:i], "create") || strings.HasSuffix(before[:i], "open")) {
		// dash: "/bin/sh: 1: cannot create out.txt: Read-only file system".
		out = append(out, before[i+1:])
	}
	return out
}

func looksLikePath(s string) bool {
	switch {
	case s == "" || len(s) > 4096 || strings.ContainsAny(s, "\n\x00"):
		return false
	case s == "." || s == ".." || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../"):
		return true
	}
	// A bare relative name is one word, and not a shell's or program's
	// own prefix ("bash", "line 1", "connect").
	return !strings.ContainsAny(s, " \t:") && !isShellWord(s)
}

func isShellWord(s string) bool {
	switch s {
	case "bash", "sh", "dash", "zsh", "connect", "open", "write", "read", "cd", "exec":
		return true
	}
	return false
}

// hostPath resolves p's symbolic links on the host, following a dangling
// link to where it points, and reports whether p, or the directory it
// would be made in, exists there: a path that does not exist on the host
// was not hidden by the sandbox.
func hostPath(p string) (string, bool) {
	for range 8 {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r, true
		}
		t, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = filepath.Clean(t)
	}
	dir, base := filepath.Split(p)
	if r, err := filepath.EvalSymlinks(filepath.Clean(dir)); err == nil {
		if fi, err := os.Stat(r); err == nil && fi.IsDir() {
			return filepath.Join(r, base), true
		}
	}
	return p, false
}

// short bounds a detail.
func short(s string) string {
	if len(s) <= maxDetail {
		return s
	}
	return "…" + s[len(s)-maxDetail+len("…"):]
}
