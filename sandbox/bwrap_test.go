package sandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBwrapArgs: the bwrap argv for a restricted profile: system
// directories read-only (symbolic links as links), fresh /proc, /dev and
// /tmp, roots parents first, read-only tmpfs over the parents of roots in
// /tmp, everything else read-only.
func TestBwrapArgs(t *testing.T) {
	t.Parallel()
	l := &layout{
		mode: WorkspaceWrite,
		cwd:  "/tmp/a/ws/sub",
		system: []sysEntry{
			{path: "/usr"}, {path: "/bin", link: "usr/bin"}, {path: "/etc"},
		},
		extra: []string{"/run/resolv.conf"},
		ro:    []root{{path: "/data/ro/deep"}, {path: "/data/file", file: true}, {path: "/tmp/a/ws/ro"}},
		rw:    []root{{path: "/tmp/a/ws"}, {path: "/tmp/b/c/out"}},
	}
	got := bwrapArgs("/usr/bin/bwrap", l, NetworkNone, true, []string{"make", "test"})
	want := []string{"/usr/bin/bwrap",
		"--die-with-parent", "--new-session",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net",
		"--cap-drop", "ALL",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--ro-bind", "/etc", "/etc",
		"--ro-bind-try", "/run/resolv.conf", "/run/resolv.conf",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--tmpfs", "/tmp/a", "--tmpfs", "/tmp/b/c",
		"--ro-bind", "/data/file", "/data/file",
		"--ro-bind", "/data/ro/deep", "/data/ro/deep",
		"--bind", "/tmp/a/ws", "/tmp/a/ws",
		"--ro-bind", "/tmp/a/ws/ro", "/tmp/a/ws/ro",
		"--bind", "/tmp/b/c/out", "/tmp/b/c/out",
		"--remount-ro", "/tmp/a", "--remount-ro", "/tmp/b/c",
		"--remount-ro", "/",
		"--chdir", "/tmp/a/ws/sub", "--", "make", "test",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bwrapArgs (-want +got):\n%s", diff)
	}

	full := &layout{mode: FullAccess, cwd: "/srv"}
	got = bwrapArgs("bwrap", full, NetworkFull, false, []string{"true"})
	want = []string{"bwrap",
		"--die-with-parent", "--new-session",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
		"--chdir", "/srv", "--", "true",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("full_access bwrapArgs (-want +got):\n%s", diff)
	}
}

// TestBwrapArgsStaged: a root daemon's roots are bound from where its
// helper staged them, and the private /tmp has its size.
func TestBwrapArgsStaged(t *testing.T) {
	t.Parallel()
	l := &layout{
		mode:     WorkspaceWrite,
		cwd:      "/root/ws",
		system:   []sysEntry{{path: "/usr"}},
		ro:       []root{{path: "/srv/ref", file: true}},
		rw:       []root{{path: "/root/ws"}},
		tmpBytes: 64 << 20,
		sources:  map[string]string{"/srv/ref": "/tmp/agentrt-root-0", "/root/ws": "/tmp/agentrt-root-1"},
	}
	got := bwrapArgs("bwrap", l, NetworkFull, false, []string{"true"})
	want := []string{"bwrap",
		"--die-with-parent", "--new-session",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--ro-bind", "/usr", "/usr",
		"--proc", "/proc", "--dev", "/dev", "--size", "67108864", "--tmpfs", "/tmp",
		"--ro-bind", "/tmp/agentrt-root-0", "/srv/ref",
		"--bind", "/tmp/agentrt-root-1", "/root/ws",
		"--remount-ro", "/",
		"--chdir", "/root/ws", "--", "true",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bwrapArgs (-want +got):\n%s", diff)
	}
	// A directory inside a staged root is bound from inside its stage.
	for path, want := range map[string]string{
		"/root/ws/sub/dir": "/tmp/agentrt-root-1/sub/dir",
		"/root/ws":         "/tmp/agentrt-root-1",
		"/root/wsx":        "/root/wsx",
		"/usr":             "/usr",
	} {
		if got := l.source(path); got != want {
			t.Errorf("source(%s) = %s, want %s", path, got, want)
		}
	}
}
