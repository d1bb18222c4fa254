package runtype_test

import (
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/runtype"
)

// TestReasonsListed: Reasons lists every Reason constant the package
// declares, once.
func TestReasonsListed(t *testing.T) {
	t.Parallel()
	declared := slices.Collect(maps.Values(reasonConstants(t)))
	var listed []string
	for _, r := range runtype.Reasons {
		listed = append(listed, string(r))
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if diff := cmp.Diff(declared, listed); diff != "" {
		t.Errorf("runtype.Reasons differs from the declared Reason constants (-declared +listed):\n%s", diff)
	}
}

// TestReasonsDocumented: docs/events.md catalogues exactly the reasons
// there are, one row each, in "How a run ends: status reasons".
func TestReasonsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "events.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := between(t, string(doc), "\n## How a run ends: status reasons\n", "\n## ")
	table := between(t, section, "\n### Every reason\n", "\n#")
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		documented = append(documented, m[1])
	}
	var want []string
	for _, r := range runtype.Reasons {
		want = append(want, string(r))
	}
	slices.Sort(want)
	sorted := slices.Clone(documented)
	slices.Sort(sorted)
	if diff := cmp.Diff(want, sorted); diff != "" {
		t.Errorf("the reasons docs/events.md catalogues differ from runtype.Reasons (-code +docs):\n%s", diff)
	}
}

// between returns the text of s after start up to end (or its end).
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, start)
	if !ok {
		t.Fatalf("no %q", strings.TrimSpace(start))
	}
	if i := strings.Index(rest, end); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// reasonConstants type-checks the package and returns the value of each
// constant of type Reason, by name.
func reasonConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := (&types.Config{Importer: importer.Default()}).Check("github.com/agentrt/agentrt/runtype", fset, files, nil)
	if err != nil {
		t.Fatalf("type-checking runtype: %v", err)
	}
	reason := pkg.Scope().Lookup("Reason").Type()
	out := map[string]string{}
	for _, name := range pkg.Scope().Names() {
		if c, ok := pkg.Scope().Lookup(name).(*types.Const); ok && types.Identical(c.Type(), reason) {
			out[name] = constant.StringVal(c.Val())
		}
	}
	if len(out) == 0 {
		t.Fatal("found no Reason constants")
	}
	return out
}
