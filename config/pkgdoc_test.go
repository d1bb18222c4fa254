package config

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPackageDoc checks that the package doc lives in doc.go and nowhere
// else.
func TestPackageDoc(t *testing.T) {
	t.Parallel()

	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var withDoc []string
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			withDoc = append(withDoc, name)
		}
	}
	if diff := cmp.Diff([]string{"doc.go"}, withDoc); diff != "" {
		t.Errorf("files with a package doc (-want +got):\n%s", diff)
	}
}
