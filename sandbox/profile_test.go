package sandbox

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuiltin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want Profile
	}{
		{"read_only", Profile{Name: "read_only", Mode: ReadOnly, Network: NetworkNone, Limits: DefaultLimits()}},
		{"workspace_write", Profile{Name: "workspace_write", Mode: WorkspaceWrite, Network: NetworkNone, Limits: DefaultLimits()}},
		{"full_access", Profile{Name: "full_access", Mode: FullAccess, Network: NetworkFull, Limits: DefaultLimits()}},
	} {
		got, ok := Builtin(tc.name)
		if diff := cmp.Diff(tc.want, got); !ok || diff != "" {
			t.Errorf("Builtin(%q) ok %v (-want +got):\n%s", tc.name, ok, diff)
		}
	}
	if _, ok := Builtin("root"); ok {
		t.Errorf("Builtin(root) ok")
	}
}

func TestEscalation(t *testing.T) {
	t.Parallel()
	ro, _ := Builtin("read_only")
	ww, _ := Builtin("workspace_write")
	fa, _ := Builtin("full_access")
	wwNet := ww
	wwNet.Network = NetworkFull
	faNone := fa
	faNone.Network = NetworkNone
	for _, tc := range []struct {
		p      Profile
		kind   ViolationKind
		want   string // "" for no offer
		wantMd Mode
		wantNw Network
	}{
		{ro, WriteDenied, "workspace_write", WorkspaceWrite, NetworkNone},
		{ww, WriteDenied, "full_access-network", FullAccess, NetworkNone},
		{wwNet, WriteDenied, "full_access", FullAccess, NetworkFull},
		{fa, WriteDenied, "", "", ""},
		{ro, ReadDenied, "full_access-network", FullAccess, NetworkNone},
		{fa, ReadDenied, "", "", ""},
		{ro, NetworkDenied, "read_only+network", ReadOnly, NetworkFull},
		{ww, NetworkDenied, "workspace_write+network", WorkspaceWrite, NetworkFull},
		{faNone, NetworkDenied, "full_access", FullAccess, NetworkFull},
		{wwNet, NetworkDenied, "", "", ""},
		{ww, ProcessLimit, "", "", ""},
		{ww, MemoryLimit, "", "", ""},
		{ww, FileSizeLimit, "", "", ""},
		{ww, CPULimit, "", "", ""},
	} {
		p := tc.p
		p.ReadRoots = []string{"/data"}
		got, ok := p.Escalation(&Violation{Kind: tc.kind, Profile: p.Name})
		if tc.want == "" {
			if ok {
				t.Errorf("%s under %s (%s): offered %q, want none", tc.kind, p.Name, p.Network, got.Name)
			}
			continue
		}
		want := p
		want.Name, want.Mode, want.Network = tc.want, tc.wantMd, tc.wantNw
		if diff := cmp.Diff(want, got); !ok || diff != "" {
			t.Errorf("%s under %s (%s): ok %v (-want +got):\n%s", tc.kind, p.Name, p.Network, ok, diff)
		}
	}
	if _, ok := ro.Escalation(nil); ok {
		t.Errorf("Escalation(nil) offered a profile")
	}
}

func TestLimitsResolved(t *testing.T) {
	t.Parallel()
	got := Limits{Processes: 0, MemoryBytes: -5, FileBytes: 10, CPUSeconds: 0, TmpBytes: 0, WriteBytes: 0}.resolved()
	want := Limits{Processes: 256, MemoryBytes: -1, FileBytes: 10, CPUSeconds: 600, TmpBytes: 256 << 20, WriteBytes: -1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolved (-want +got):\n%s", diff)
	}
}

func TestViolationLimit(t *testing.T) {
	t.Parallel()
	for k, want := range map[ViolationKind]bool{
		WriteDenied: false, ReadDenied: false, NetworkDenied: false,
		ProcessLimit: true, MemoryLimit: true, FileSizeLimit: true, CPULimit: true,
	} {
		if got := (&Violation{Kind: k}).Limit(); got != want {
			t.Errorf("%s: Limit() = %v, want %v", k, got, want)
		}
	}
	if (*Violation)(nil).Limit() {
		t.Errorf("nil: Limit() = true")
	}
}

func ExampleProfile_Escalation() {
	p, _ := Builtin("read_only")
	for _, v := range []*Violation{
		{Kind: WriteDenied, Detail: "out.txt", Profile: "read_only"},
		{Kind: NetworkDenied, Detail: "connection refused", Profile: "read_only"},
		{Kind: CPULimit, Profile: "read_only"},
	} {
		offer, ok := p.Escalation(v)
		fmt.Println(v.Kind, "→", offer.Name, ok)
	}
	// Output:
	// write_denied → workspace_write true
	// network_denied → read_only+network true
	// cpu_limit →  false
}
