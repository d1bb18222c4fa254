package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/apitype"
	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/event"
	"github.com/agentrt/agentrt/runtype"
)

// bigReadScript reads a 5000-byte file (its output is kept as a blob) and
// a 40000-byte one (spilled to the output store), then completes.
const bigReadScript = `responses:
  - tool_calls:
      - {name: read_file, input: {path: small.txt}}
      - {name: read_file, input: {path: big.txt}}
  - tool_calls: [{name: complete_task, input: {result: "read both"}}]
`

// TestOutputsGet: outputs get (and its other name, blobs get) writes a
// tool's whole output, a blob or a spilled one, byte for byte, from the
// data directory and from a daemon alike, to standard output or a
// private file; another tenant's token gets what a ref of nothing gets;
// a malformed ref is a usage error.
func TestOutputsGet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.useScript(t, bigReadScript)
	small, big := strings.Repeat("s", 5000), strings.Repeat("b", 40000)
	b.write(t, "workspace/small.txt", small)
	b.write(t, "workspace/big.txt", big)
	r := runOK(t, "", "run", "--config", b.config, "--json", "read them")
	var refs []string
	for _, e := range jsonLines(t, r.stdout) {
		if e.Type == event.ToolResult && e.OutputRef != "" {
			refs = append(refs, e.OutputRef)
		}
	}
	if len(refs) != 2 {
		t.Fatalf("output refs %v, want two", refs)
	}
	d := b.serve(t)
	for i, want := range []string{small, big} {
		for mode, flags := range b.modes(d) {
			for _, name := range []string{"outputs", "blobs"} {
				r := runOK(t, "", append([]string{name, "get", refs[i]}, flags...)...)
				if r.stdout != want {
					t.Errorf("%s: %s get %s printed %d bytes, want the %d of the output", mode, name, refs[i], len(r.stdout), len(want))
				}
			}
		}
	}
	file := filepath.Join(b.dir, "out", "big.txt")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	r = runOK(t, "", "outputs", "get", refs[1], "--config", b.config, "-o", file)
	got, err := os.ReadFile(file)
	if err != nil || string(got) != big || r.stdout != "" || !strings.Contains(r.stderr, "wrote "+refs[1]+" (39.1 KiB, text/plain; charset=utf-8) to "+file) {
		t.Errorf("-o %s: %d bytes written (%v), stdout %q, stderr %q", file, len(got), err, r.stdout, r.stderr)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("-o file mode = %v (%v), want 0600", fi.Mode().Perm(), err)
	}

	other, err := d.rt.CreateToken(t.Context(), &apitype.CreateTokenParams{Owner: runtype.Owner{TenantID: "other", PrincipalID: "vera"}, Role: runtype.APIRoleViewer})
	if err != nil {
		t.Fatal(err)
	}
	missing := "sha256:" + strings.Repeat("0", 64)
	nothing := run(t, "", "outputs", "get", missing, "--server", d.url, "--token", other.Token)
	theirs := run(t, "", "outputs", "get", refs[0], "--server", d.url, "--token", other.Token)
	if nothing.code != cli.ExitFailed || theirs.code != cli.ExitFailed || theirs.stdout != "" ||
		strings.ReplaceAll(theirs.stderr, refs[0], missing) != nothing.stderr {
		t.Errorf("another tenant's ref: exit %d, %q; a ref of nothing: exit %d, %q; want the same, exit 1", theirs.code, theirs.stderr, nothing.code, nothing.stderr)
	}
	for mode, flags := range b.modes(d) {
		r := run(t, "", append([]string{"outputs", "get", "../agentrt.yaml"}, flags...)...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "invalid ref: must be sha256: followed by 64 lowercase hex digits") {
			t.Errorf("%s: a malformed ref: exit %d, %q; want 2 and the reason", mode, r.code, r.stderr)
		}
	}
	if r := run(t, "", "outputs", "get", "--config", b.config); r.code != cli.ExitUsage {
		t.Errorf("outputs get without a ref: exit %d, want 2", r.code)
	}
}
