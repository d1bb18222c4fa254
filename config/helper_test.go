package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// builtins are the names the runtime passes as Options.Builtins.
var builtins = []string{"read_file", "list_dir", "write_file", "complete_task"}

// fixture returns a fresh directory holding the files the test configs
// refer to:
//
//	support.replay.yaml   a replay script
//	tools/run.sh          an executable command
//	tools/plain.sh        a command file without the executable bit
//	ws/                   a workspace directory
//	notes.txt             a plain file
func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "support.replay.yaml"), "model: m\nresponses: []\n", 0o644)
	writeFile(t, filepath.Join(dir, "tools", "run.sh"), "#!/bin/sh\necho '{}'\n", 0o755)
	writeFile(t, filepath.Join(dir, "tools", "plain.sh"), "#!/bin/sh\n", 0o644)
	writeFile(t, filepath.Join(dir, "notes.txt"), "notes\n", 0o644)
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode is filtered by the umask; set it exactly.
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// errorLines returns err's lines with dir replaced by $DIR, or fails the
// test when err is not Errors.
func errorLines(t *testing.T, err error, dir string) []string {
	t.Helper()
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error is %T (%v), want Errors", err, err)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(errs) {
		t.Fatalf("Error() has %d lines for %d errors", len(lines), len(errs))
	}
	for i, l := range lines {
		lines[i] = strings.ReplaceAll(l, dir, "$DIR")
	}
	return lines
}
