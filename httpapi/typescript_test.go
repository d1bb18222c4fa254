package httpapi_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/testenv"
)

// tsDir is the TypeScript client check, from the httpapi directory.
var tsDir = filepath.Join("..", "clients", "typescript")

// TestTypeScriptClient: the TypeScript types openapi-typescript generates
// from the document type-check a small client that submits a turn and
// reads a snapshot (npm run check in clients/typescript, as CI runs it);
// and the same client fails to type-check against a document whose
// snapshot schema lost its properties, so the check proves something.
// It needs npm and the packages npm ci installs there.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	npm, err := exec.LookPath("npm")
	if err != nil {
		testenv.Missing(t, "the TypeScript client check needs npm: %v", err)
	}
	bin, err := filepath.Abs(filepath.Join(tsDir, "node_modules", ".bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"openapi-typescript", "tsc"} {
		if _, err := os.Stat(filepath.Join(bin, tool)); err != nil {
			testenv.Missing(t, "the TypeScript client check needs %s: run npm ci in %s (%v)", tool, tsDir, err)
		}
	}

	check := exec.CommandContext(t.Context(), npm, "run", "check")
	check.Dir = tsDir
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("npm run check in %s: %v\n%s", tsDir, err, out)
	}

	// The same client against a document whose snapshot is any object.
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	schemas["Snapshot"] = map[string]any{"type": "object", "additionalProperties": true}
	broken, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "openapi.json"), broken, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"example.ts", "tsconfig.json"} {
		b, err := os.ReadFile(filepath.Join(tsDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gen := exec.CommandContext(t.Context(), filepath.Join(bin, "openapi-typescript"), "openapi.json", "--output", "agentrt.d.ts")
	gen.Dir = tmp
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("generating types from the broken document: %v\n%s", err, out)
	}
	tsc := exec.CommandContext(t.Context(), filepath.Join(bin, "tsc"), "-p", tmp)
	out, err := tsc.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "example.ts") || !strings.Contains(string(out), "error TS") {
		t.Errorf("tsc against a snapshot without properties = %v, want errors in example.ts:\n%s", err, out)
	}
}
