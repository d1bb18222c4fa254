package cli

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestVersionOf: the version line carries the module version, the
// revision (shortened), time and modified mark the build recorded, the
// Go version and the platform; a build that recorded nothing has none.
func TestVersionOf(t *testing.T) {
	t.Parallel()
	goPlatform := " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	bi := &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "-compiler", Value: "gc"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "3083c69a1b2c4d5e6f708192a3b4c5d6e7f80912"},
		{Key: "vcs.time", Value: "2026-11-20T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	for _, tt := range []struct {
		v    string
		bi   *debug.BuildInfo
		want string
	}{
		{"v0.5.0", bi, "agentrt v0.5.0 (rev 3083c69a1b2c, 2026-11-20T10:00:00Z, modified)" + goPlatform},
		{"devel", &debug.BuildInfo{Settings: bi.Settings[:4]}, "agentrt devel (rev 3083c69a1b2c, 2026-11-20T10:00:00Z)" + goPlatform},
		{"devel", &debug.BuildInfo{}, "agentrt devel" + goPlatform},
		{"devel", nil, "agentrt devel" + goPlatform},
	} {
		if got := versionOf(tt.v, tt.bi); got != tt.want {
			t.Errorf("versionOf(%s, …) = %q, want %q", tt.v, got, tt.want)
		}
	}
}
