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
