package agentrt_test

import (
	"errors"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPackageDocs: every package in the module has exactly one package
// doc comment, and it starts the way go doc expects ("Package name ..." or,
// for a command, "Command name ...").
func TestPackageDocs(t *testing.T) {
	t.Parallel()
	dirs := packageDirs(t)
	if len(dirs) < 10 {
		t.Fatalf("found only %d package directories: %v", len(dirs), dirs)
	}
	for _, dir := range dirs {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		fset := token.NewFileSet()
		var withDoc []string
		for _, name := range slices.Concat(pkg.GoFiles, pkg.CgoFiles, pkg.IgnoredGoFiles) {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Errorf("%s: %v", dir, err)
				continue
			}
			if f.Name.Name != pkg.Name || f.Doc == nil {
				continue // a file of another package (//go:build ignore tools) or without a doc
			}
			withDoc = append(withDoc, name)
			prefix := "Package " + pkg.Name + " "
			if pkg.Name == "main" {
				prefix = "Command " + filepath.Base(dir) + " "
			}
			if text := f.Doc.Text(); !strings.HasPrefix(text, prefix) {
				t.Errorf("%s: the package doc starts %q, want %q", filepath.Join(dir, name), firstLine(text), prefix+"…")
			}
		}
		switch len(withDoc) {
		case 1:
		case 0:
			t.Errorf("%s: package %s has no package doc comment", dir, pkg.Name)
		default:
			t.Errorf("%s: package %s has a package doc comment in %d files, want one: %s",
				dir, pkg.Name, len(withDoc), strings.Join(withDoc, ", "))
		}
	}
}

// packageDirs returns the module's directories holding a non-test Go
// package, skipping testdata, hidden and underscore directories, and
// nested modules.
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != "." {
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		if _, err := build.ImportDir(path, 0); err != nil {
			if _, ok := errors.AsType[*build.NoGoError](err); ok {
				return nil
			}
		}
		dirs = append(dirs, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
