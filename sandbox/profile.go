package sandbox

import "fmt"

// Mode is what a profile lets processes write.
type Mode string

// Modes.
const (
	// ReadOnly: nothing is writable but a private /tmp.
	ReadOnly Mode = "read_only"
	// WorkspaceWrite: the workspace and the profile's write roots are
	// writable.
	WorkspaceWrite Mode = "workspace_write"
	// FullAccess: the whole file system as the daemon sees it.
	FullAccess Mode = "full_access"
)

// Network is whether processes reach the network.
type Network string

// Networks.
const (
	NetworkNone Network = "none"
	NetworkFull Network = "full"
)

// Limits bound a sandboxed command's resources. Zero fields take the
// DefaultLimits value; negative means unlimited.
type Limits struct {
	// Processes is the most processes (threads count) the command may have
	// at once.
	Processes int
	// MemoryBytes bounds each process's address space.
	MemoryBytes int64
	// FileBytes bounds the size of any file a process writes.
	FileBytes int64
	// CPUSeconds bounds each process's CPU time.
	CPUSeconds int64
	// TmpBytes bounds the private /tmp, which every profile but
	// full_access gets.
	TmpBytes int64
	// WriteBytes bounds how much the writable roots (the workspace and
	// WriteRoots) may grow during one command, and the size of any file
	// it writes. No bound by default; full_access has none.
	WriteBytes int64
}

// DefaultLimits are the limits a profile gets where it sets none.
func DefaultLimits() Limits {
	return Limits{Processes: 256, MemoryBytes: 4 << 30, FileBytes: 1 << 30, CPUSeconds: 600, TmpBytes: 256 << 20, WriteBytes: -1}
}

// resolved returns l with zero fields set from DefaultLimits and negative
// ones set to -1.
func (l Limits) resolved() Limits {
	d := DefaultLimits()
	pick := func(v, def int64) int64 {
		switch {
		case v == 0:
			return def
		case v < 0:
			return -1
		}
		return v
	}
	return Limits{
		Processes:   int(pick(int64(l.Processes), int64(d.Processes))),
		MemoryBytes: pick(l.MemoryBytes, d.MemoryBytes),
		FileBytes:   pick(l.FileBytes, d.FileBytes),
		CPUSeconds:  pick(l.CPUSeconds, d.CPUSeconds),
		TmpBytes:    pick(l.TmpBytes, d.TmpBytes),
		WriteBytes:  pick(l.WriteBytes, d.WriteBytes),
	}
}

// fileCap is the most bytes any file may hold: FileBytes, or WriteBytes
// when that is less; -1 for no bound.
func fileCap(l Limits) int64 {
	if l.WriteBytes >= 0 && (l.FileBytes < 0 || l.WriteBytes < l.FileBytes) {
		return l.WriteBytes
	}
	return l.FileBytes
}

// Profile is a named sandbox profile.
type Profile struct {
	// Name names the profile in events and escalation offers.
	Name    string
	Mode    Mode
	Network Network
	// ReadRoots are readable paths beyond the system directories (/usr,
	// /bin, /lib, /etc, …) and the workspace, which are always readable.
	ReadRoots []string
	// WriteRoots are writable paths beyond the workspace (workspace_write).
	// Under read_only they are readable only.
	WriteRoots []string
	Limits     Limits
}

// Builtin returns the profile named read_only, workspace_write or
// full_access (network none, full_access with network full), with default
// limits.
func Builtin(name string) (Profile, bool) {
	m := Mode(name)
	switch m {
	case ReadOnly, WorkspaceWrite, FullAccess:
		return Profile{Name: name, Mode: m, Network: builtinNetwork(m), Limits: DefaultLimits()}, true
	}
	return Profile{}, false
}

func builtinNetwork(m Mode) Network {
	if m == FullAccess {
		return NetworkFull
	}
	return NetworkNone
}

// profileName names the profile with mode m and network n by its builtin
// name, with "+network" when it has the network its builtin lacks and
// "-network" when it lacks the network its builtin has:
// "workspace_write+network", "full_access-network".
func profileName(m Mode, n Network) string {
	switch {
	case n == builtinNetwork(m):
		return string(m)
	case n == NetworkFull:
		return string(m) + "+network"
	}
	return string(m) + "-network"
}

// Escalation returns the profile to offer for rerunning a call that v
// refused under p: a write refused under read_only offers
// workspace_write, under workspace_write full_access; a read outside the
// readable roots offers full_access; a network refusal offers p with
// network full. The offer keeps p's network (unless that was refused),
// roots and limits, and is named by its builtin name, with "+network"
// or "-network" where its network differs from the builtin's:
// "workspace_write+network", "full_access-network". Resource limits
// offer none (ok false), as does a refusal p cannot have made.
func (p Profile) Escalation(v *Violation) (Profile, bool) {
	if v == nil {
		return Profile{}, false
	}
	q := p
	switch v.Kind {
	case WriteDenied:
		switch p.Mode {
		case ReadOnly:
			q.Mode = WorkspaceWrite
		case WorkspaceWrite:
			q.Mode = FullAccess
		default:
			return Profile{}, false
		}
	case ReadDenied:
		if p.Mode == FullAccess {
			return Profile{}, false
		}
		q.Mode = FullAccess
	case NetworkDenied:
		if p.Network == NetworkFull {
			return Profile{}, false
		}
		q.Network = NetworkFull
	default:
		return Profile{}, false
	}
	q.Name = profileName(q.Mode, q.Network)
	return q, true
}

// validate reports a profile whose mode or network is unknown.
func (p Profile) validate() error {
	switch p.Mode {
	case ReadOnly, WorkspaceWrite, FullAccess:
	default:
		return fmt.Errorf("%w: profile %q has unknown mode %q", ErrUnenforceable, p.Name, p.Mode)
	}
	switch p.Network {
	case NetworkNone, NetworkFull:
	default:
		return fmt.Errorf("%w: profile %q has unknown network %q", ErrUnenforceable, p.Name, p.Network)
	}
	return nil
}
