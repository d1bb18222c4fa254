package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentrt/agentrt/internal/proc"
)

// A root daemon runs sandboxed commands (every profile but full_access)
// as an unprivileged user, Options.UID and GID: never as root on the
// host, whatever user namespace bubblewrap makes. The workspace and the
// other roots are usually the daemon's, so the helper, still root, makes
// a mount namespace of its own and clones each root there idmapped
// through a user namespace mapping the daemon's ids (0) to the user's:
// inside, the daemon's files are the user's, and what the user creates
// is the daemon's on disk. Then it becomes the user and executes bwrap
// (which makes its namespaces unprivileged) or, under Landlock, the
// command.
//
// Under bubblewrap the clones are attached in a tmpfs over /tmp (bwrap
// makes its own /tmp) and bound from there: the user could not reach a
// workspace below a directory only root may search, such as /root or a
// test's temporary directory. Under Landlock the command sees the real
// paths, so each clone is attached over its root, and a directory on the
// way to a root that the user cannot search is covered with a tmpfs
// holding only the way down. The private /tmp is a tmpfs of
// Limits.TmpBytes owned by the user.

// smallTmpfs is the size of a tmpfs that holds only mount points.
const smallTmpfs = 1 << 20

// stageDir is where, in the helper's mount namespace, the roots are
// attached for bubblewrap to bind.
const stageDir = "/tmp"

// stagedRoot is where the i-th root is attached for bubblewrap.
func stagedRoot(i int) string { return stageDir + "/agentrt-root-" + strconv.Itoa(i) }

// profileRoot is a root of a layout and whether it is writable.
type profileRoot struct {
	root
	rw bool
}

// roots returns l's roots beyond the system directories, read-only ones
// first.
func (l *layout) roots() []profileRoot {
	var out []profileRoot
	for _, r := range l.ro {
		out = append(out, profileRoot{r, false})
	}
	for _, r := range l.rw {
		out = append(out, profileRoot{r, true})
	}
	return out
}

// user returns the user a root daemon's commands run as.
func (o Options) user() userConfig {
	u := userConfig{UID: o.UID, GID: o.GID}
	if u.UID == 0 {
		u.UID = DefaultUser
	}
	if u.GID == 0 {
		u.GID = DefaultUser
	}
	return u
}

// idmapUserns returns a user namespace whose maps take id 0 to u's ids:
// the one an idmapped mount of the daemon's files as u's needs. A user
// namespace needs a process to make it; the helper, started in a new one,
// waits for its stdin to close while its namespace is opened.
func idmapUserns(helper string, u userConfig) (*os.File, error) {
	if err := unix.MountSetattr(-1, "", unix.AT_EMPTY_PATH, &unix.MountAttr{}); errors.Is(err, unix.ENOSYS) {
		return nil, errors.New("the kernel has no idmapped mounts (they need Linux 5.12)")
	}
	cmd := exec.Command(helper)
	cmd.Args[0] = helperArg0
	cmd.Env = helperEnv([]byte(`{"hold":true}`), nil)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: u.UID, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: u.GID, Size: 1}},
	}
	cmd.WaitDelay = proc.WaitDelay
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("making a user namespace: %w", err)
	}
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	_ = stdin.Close()
	if werr := cmd.Wait(); err == nil && werr != nil {
		_ = ns.Close()
		err = werr
	}
	if err != nil {
		return nil, fmt.Errorf("opening the user namespace: %w", err)
	}
	return ns, nil
}

// stagePlan returns the mounts that let bubblewrap, run as the user,
// bind l's roots: each is staged at stagedRoot, which l.sources records.
func stagePlan(l *layout) *mountConfig {
	m := &mountConfig{Tmpfs: []mountTmpfs{{At: stageDir, Size: smallTmpfs, Mode: 0o755}}, Chdir: "/"}
	l.sources = make(map[string]string)
	for i, r := range l.roots() {
		at := stagedRoot(i)
		m.Roots = append(m.Roots, mountRoot{Path: r.path, At: at, File: r.file, ReadOnly: !r.rw})
		l.sources[r.path] = at
	}
	return m
}

// landlockPlan returns the mounts that give a command run as u under
// Landlock its roots, idmapped at their own paths, and its private
// temporary directory tmp ("" for none), a tmpfs of tmpBytes (negative:
// unbounded).
func landlockPlan(l *layout, u userConfig, tmp string, tmpBytes int64) *mountConfig {
	m := &mountConfig{Chdir: l.cwd}
	var paths []string
	for _, r := range l.roots() {
		m.Roots = append(m.Roots, mountRoot{Path: r.path, At: r.path, File: r.file, ReadOnly: !r.rw})
		paths = append(paths, r.path)
	}
	targets := slices.Clone(paths)
	if tmp != "" {
		targets = append(targets, tmp)
	}
	for _, d := range unsearchable(targets, paths, u) {
		m.Tmpfs = append(m.Tmpfs, mountTmpfs{At: d, Size: smallTmpfs, Mode: 0o755})
	}
	if tmp != "" {
		m.Tmpfs = append(m.Tmpfs, mountTmpfs{At: tmp, Size: max(tmpBytes, 0), Mode: 0o700, UID: u.UID, GID: u.GID})
	}
	return m
}

// unsearchable returns the directories on the way to targets that u
// cannot search, shallowest first, leaving out those below another: a
// tmpfs hides each, holding only the way down. roots are attached
// idmapped, so the daemon's ids in them are u's.
func unsearchable(targets, roots []string, u userConfig) []string {
	var hidden []string
	slices.SortStableFunc(targets, func(x, y string) int { return depth(x) - depth(y) })
	for _, t := range targets {
		var ancestors []string
		for d := filepath.Dir(t); d != "/" && d != "."; d = filepath.Dir(d) {
			ancestors = append(ancestors, d)
		}
		slices.Reverse(ancestors)
		for _, d := range ancestors {
			if !searchable(d, hidden, roots, u) {
				hidden = append(hidden, d)
			}
		}
	}
	return hidden
}

// searchable reports whether u may search directory d, given the tmpfs
// mounts hidden (whose directories are made 0755) and the idmapped
// roots.
func searchable(d string, hidden, roots []string, u userConfig) bool {
	inHidden, inRoot := -1, -1
	for _, h := range hidden {
		if within(d, h) {
			inHidden = max(inHidden, depth(h))
		}
	}
	for _, r := range roots {
		if within(d, r) {
			inRoot = max(inRoot, depth(r))
		}
	}
	if inHidden >= 0 && inHidden >= inRoot {
		return true
	}
	fi, err := os.Stat(d)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	uid, gid := int64(st.Uid), int64(st.Gid)
	if inRoot >= 0 {
		// Through the idmapped mount: the daemon's ids are u's, and
		// every other id is unmapped (matches nobody).
		uid, gid = mappedID(uid, u.UID), mappedID(gid, u.GID)
	}
	mode := fi.Mode().Perm()
	switch {
	case uid == int64(u.UID):
		return mode&0o100 != 0
	case gid == int64(u.GID):
		return mode&0o010 != 0
	}
	return mode&0o001 != 0
}

// setUpMounts makes c's mounts in a new mount namespace of the calling
// thread (the one that executes the target), which must be root.
func setUpMounts(c *mountConfig) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("making a mount namespace: %w", err)
	}
	// Nothing mounted here reaches the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	clones := make([]int, len(c.Roots))
	defer func() {
		for _, fd := range clones {
			if fd > 0 {
				_ = unix.Close(fd)
			}
		}
	}()
	// Clone every root before mounting anything, from the host's paths.
	for i, r := range c.Roots {
		fd, err := cloneIdmapped(r, c.UsernsFD)
		if err != nil {
			return err
		}
		clones[i] = fd
	}
	_ = unix.Close(c.UsernsFD)

	// Then mount, parents before children.
	type op struct {
		at   string
		root int // index in c.Roots, or -1 for a tmpfs
		fs   mountTmpfs
	}
	var ops []op
	for _, t := range c.Tmpfs {
		ops = append(ops, op{at: t.At, root: -1, fs: t})
	}
	for i, r := range c.Roots {
		ops = append(ops, op{at: r.At, root: i})
	}
	slices.SortStableFunc(ops, func(x, y op) int { return depth(x.at) - depth(y.at) })
	for _, o := range ops {
		var err error
		if o.root < 0 {
			err = mountTmpfsAt(o.fs)
		} else {
			err = attach(clones[o.root], c.Roots[o.root])
		}
		if err != nil {
			return err
		}
	}
	if c.Chdir != "" {
		fd, err := openNoSymlinks(c.Chdir)
		if err != nil {
			return fmt.Errorf("entering %s: %w", c.Chdir, err)
		}
		defer unix.Close(fd)
		if err := unix.Fchdir(fd); err != nil {
			return fmt.Errorf("entering %s: %w", c.Chdir, err)
		}
	}
	return nil
}

// openNoSymlinks opens path as an O_PATH descriptor, refusing symbolic
// links anywhere on the way: the roots were resolved by the daemon, so a
// link there now was put there since, perhaps by a sandboxed process
// sharing the workspace, to point the mount elsewhere.
func openNoSymlinks(path string) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// cloneIdmapped returns a detached copy of the mounts at r.Path, idmapped
// through the user namespace userns, without set-user-ID programs and
// devices, read-only unless r is writable.
func cloneIdmapped(r mountRoot, userns int) (int, error) {
	fd, err := openNoSymlinks(r.Path)
	if err != nil {
		return -1, fmt.Errorf("opening root %s: %w", r.Path, err)
	}
	defer unix.Close(fd)
	tree, err := unix.OpenTree(fd, "", unix.AT_EMPTY_PATH|unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return -1, fmt.Errorf("cloning root %s: %w", r.Path, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Userns_fd: uint64(userns)}
	if r.ReadOnly {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		_ = unix.Close(tree)
		return -1, fmt.Errorf("idmapping root %s: %w (its file system may not support idmapped mounts; run the daemon as a user other than root)", r.Path, err)
	}
	return tree, nil
}

// attach attaches the clone of r at r.At, making the mount point (in a
// tmpfs of the helper's) if it is missing.
func attach(clone int, r mountRoot) error {
	at, err := openNoSymlinks(r.At)
	if errors.Is(err, unix.ENOENT) {
		err = makeMountPoint(r.At, r.File)
		if err == nil {
			at, err = openNoSymlinks(r.At)
		}
	}
	if err != nil {
		return fmt.Errorf("making mount point %s: %w", r.At, err)
	}
	defer unix.Close(at)
	if err := unix.MoveMount(clone, "", at, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("attaching root %s at %s: %w", r.Path, r.At, err)
	}
	return nil
}

// makeMountPoint makes path, a directory or an empty file, and the
// directories leading to it, following no symbolic link.
func makeMountPoint(path string, file bool) error {
	parent, base := filepath.Dir(path), filepath.Base(path)
	dir, err := openNoSymlinks(parent)
	if errors.Is(err, unix.ENOENT) {
		if err := makeMountPoint(parent, false); err != nil {
			return err
		}
		dir, err = openNoSymlinks(parent)
	}
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if !file {
		return unix.Mkdirat(dir, base, 0o755)
	}
	fd, err := unix.Openat(dir, base, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// mountTmpfsAt mounts the tmpfs t.
func mountTmpfsAt(t mountTmpfs) error {
	fd, err := openNoSymlinks(t.At)
	if err != nil {
		return fmt.Errorf("opening %s: %w", t.At, err)
	}
	defer unix.Close(fd)
	opts := []string{"mode=" + strconv.FormatUint(uint64(t.Mode), 8)}
	if t.Size > 0 {
		opts = append(opts, "size="+strconv.FormatInt(t.Size, 10))
	}
	if t.UID != 0 || t.GID != 0 {
		opts = append(opts, "uid="+strconv.Itoa(t.UID), "gid="+strconv.Itoa(t.GID))
	}
	target := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, strings.Join(opts, ",")); err != nil {
		return fmt.Errorf("mounting a tmpfs at %s: %w", t.At, err)
	}
	return nil
}

// becomeUser makes the calling thread, the one that executes the target,
// u, without supplementary groups or capabilities. The system calls are
// the raw, per-thread ones: Go's own act on every thread, which cgo
// forbids.
func becomeUser(u *userConfig) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("dropping supplementary groups: %w", e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, uintptr(u.GID), uintptr(u.GID), uintptr(u.GID)); e != 0 {
		return fmt.Errorf("becoming group %d: %w", u.GID, e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, uintptr(u.UID), uintptr(u.UID), uintptr(u.UID)); e != 0 {
		return fmt.Errorf("becoming user %d: %w", u.UID, e)
	}
	return nil
}
