package event

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/spectest"
)

// TestTypesMatchSchema: the Type constants declared in this package, the
// set Valid checks, and the standard's schema enum are the same list.
func TestTypesMatchSchema(t *testing.T) {
	t.Parallel()
	enum, err := spectest.TypeEnum()
	if err != nil {
		t.Fatal(err)
	}
	if len(enum) == 0 {
		t.Fatal("the event schema has no type enum")
	}
	declared := declaredTypes(t)
	var valid []string
	for typ := range known {
		valid = append(valid, string(typ))
	}
	slices.Sort(enum)
	slices.Sort(valid)
	if diff := cmp.Diff(enum, declared); diff != "" {
		t.Errorf("declared Type constants (+) vs the schema's enum (-):\n%s", diff)
	}
	if diff := cmp.Diff(declared, valid); diff != "" {
		t.Errorf("Valid's set (+) vs the declared Type constants (-):\n%s", diff)
	}
	for _, typ := range enum {
		if !Type(typ).Valid() {
			t.Errorf("Type(%q).Valid() = false", typ)
		}
	}
}

// declaredTypes returns the values of every constant of type Type in the
// package's non-test files, sorted.
func declaredTypes(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, de := range entries {
		name := de.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Type" {
					continue
				}
				for i, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: constant %s is not a string literal", fset.Position(v.Pos()), vs.Names[i])
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					values = append(values, s)
				}
			}
		}
	}
	slices.Sort(values)
	return values
}

func TestTypeValid(t *testing.T) {
	t.Parallel()
	for _, typ := range []Type{"", "tool", "tool.Result", "tool.result ", "turn.*"} {
		if typ.Valid() {
			t.Errorf("Type(%q).Valid() = true", typ)
		}
	}
}

func TestTypeFamily(t *testing.T) {
	t.Parallel()
	tests := map[Type]string{
		ToolResult:          "tool",
		TaskAttemptFailed:   "task",
		RateLimitHit:        "rate_limit",
		"nodot":             "nodot",
		"":                  "",
		".leading":          "",
		ToolCatalogResolved: "tool",
	}
	for typ, want := range tests {
		if got := typ.Family(); got != want {
			t.Errorf("Type(%q).Family() = %q, want %q", typ, got, want)
		}
	}
}
