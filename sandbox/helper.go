package sandbox

// The helper is the daemon's own executable started with helperArg0 as
// argv[0], the target argv after it, and an environment of envConfig (the
// JSON helperConfig) and the command's environment, one envPrefix<n>
// variable per entry. Main recognises it, applies the configuration in
// the child and executes the target. Nothing of the command's
// environment acts on the helper or on bwrap (LD_PRELOAD would run code
// in them before the sandbox exists), and none of it shows in an argv.
const (
	helperArg0 = "agentrt-sandbox-helper"
	envConfig  = "AGENTRT_SANDBOX_CONFIG"
	envPrefix  = "AGENTRT_SANDBOX_ENV_"
	// helperExit is the helper's exit status when it cannot set the
	// sandbox up: the command did not run.
	helperExit = 125
	// probeReply is what the helper prints for a probe.
	probeReply = "agentrt sandbox helper ok\n"
)

// helperConfig is what the helper applies before it executes the target.
type helperConfig struct {
	// Probe asks the helper to print probeReply and exit.
	Probe bool `json:"probe,omitempty"`
	// Hold asks the helper to wait until its stdin closes, then exit:
	// a process in a new user namespace, for the daemon to open it.
	Hold bool `json:"hold,omitempty"`
	// Started is set by Cmd.Start; without it the helper refuses.
	Started bool `json:"started,omitempty"`
	// Exec is the executable to run; "" looks the target's argv[0] up
	// in the PATH of the command's environment.
	Exec string `json:"exec,omitempty"`
	// EnvArgs hands the environment to bwrap as --clearenv and --setenv
	// arguments read from a file descriptor (bwrap's --args), and runs
	// bwrap itself with an empty environment.
	EnvArgs bool `json:"envArgs,omitempty"`
	// Cgroup is the cgroup directory to join.
	Cgroup string `json:"cgroup,omitempty"`
	// Rlimits are set last, just before exec.
	Rlimits []rlimit `json:"rlimits,omitempty"`
	// DropCaps drops every capability (the Landlock enforcer: root with
	// capabilities could undo Landlock, e.g. by loading a module).
	DropCaps bool `json:"dropCaps,omitempty"`
	// Landlock, when set, restricts the helper and so the target.
	Landlock *landlockConfig `json:"landlock,omitempty"`
	// Seccomp is the system call filter: bwrap applies it (--seccomp)
	// when EnvArgs is set, the helper itself otherwise.
	Seccomp seccompConfig `json:"seccomp"`
	// Mounts, when set, are made in a private mount namespace before the
	// helper becomes User.
	Mounts *mountConfig `json:"mounts,omitempty"`
	// User, when set, is the unprivileged user the helper (a root
	// daemon's) becomes before it executes the target.
	User *userConfig `json:"user,omitempty"`
}

// seccompConfig says what the filter refuses beyond the base set.
type seccompConfig struct {
	// NetworkNone refuses sockets other than TCP ones of AF_INET and
	// AF_INET6, and, without Local, AF_UNIX and AF_NETLINK ones.
	NetworkNone bool `json:"networkNone,omitempty"`
	// Local allows AF_UNIX and AF_NETLINK sockets with NetworkNone.
	Local bool `json:"local,omitempty"`
}

// userConfig is an unprivileged user and group id. The helper drops its
// supplementary groups.
type userConfig struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// mountConfig is the file system a root daemon's helper makes, in a
// mount namespace of its own, for a command that runs as User: each root
// the profile names is cloned idmapped (files the daemon's user and group
// own on disk appear as User's, and what User creates is the daemon's on
// disk) and attached At a path User can reach; tmpfs mounts hold the
// private /tmp and the staging directory, or hide directories User could
// not search on the way to a root.
type mountConfig struct {
	// UsernsFD is the helper's descriptor of the user namespace whose
	// maps (the daemon's ids to User's) idmap the roots.
	UsernsFD int          `json:"usernsFd"`
	Roots    []mountRoot  `json:"roots,omitempty"`
	Tmpfs    []mountTmpfs `json:"tmpfs,omitempty"`
	// Chdir is the working directory to take once everything is
	// mounted, so that the target's is the idmapped one.
	Chdir string `json:"chdir"`
}

// mountRoot is a root to clone from Path and attach at At.
type mountRoot struct {
	Path     string `json:"path"`
	At       string `json:"at"`
	File     bool   `json:"file,omitempty"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// mountTmpfs is a tmpfs to mount at At: Size bytes at most (0: the
// kernel's default), its root with mode Mode and owned by UID and GID.
type mountTmpfs struct {
	At   string `json:"at"`
	Size int64  `json:"size,omitempty"`
	Mode uint32 `json:"mode"`
	UID  int    `json:"uid,omitempty"`
	GID  int    `json:"gid,omitempty"`
}

type rlimit struct {
	Resource int    `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

type landlockConfig struct {
	ABI int `json:"abi"`
	// FS restricts the file system to the listed paths.
	FS      bool     `json:"fs,omitempty"`
	RODirs  []string `json:"roDirs,omitempty"`
	ROFiles []string `json:"roFiles,omitempty"`
	RWDirs  []string `json:"rwDirs,omitempty"`
	RWFiles []string `json:"rwFiles,omitempty"`
	// TCP refuses TCP bind and connect.
	TCP bool `json:"tcp,omitempty"`
}
