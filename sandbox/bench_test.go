//go:build linux

package sandbox

import (
	"os/exec"
	"testing"

	"github.com/agentrt/agentrt/internal/testenv"
)

// BenchmarkStart measures what starting a sandboxed process costs: one
// run of `true` under each enforcer (helper, cgroup and all), against a
// plain exec.
func BenchmarkStart(b *testing.B) {
	for _, enf := range enforcers {
		b.Run(string(enf), func(b *testing.B) {
			sb := sandboxes[enf]()
			if got, err := sb.Enforcer(); err != nil || got != enf {
				testenv.Missing(b, "no %s sandbox on this host: %v", enf, err)
			}
			ws := b.TempDir()
			p, _ := Builtin("workspace_write")
			spec := Spec{Argv: []string{"true"}, Workspace: ws, Env: []string{"PATH=/usr/bin:/bin"}}
			for b.Loop() {
				c, err := sb.Command(b.Context(), p, spec)
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.CommandContext(b.Context(), "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
