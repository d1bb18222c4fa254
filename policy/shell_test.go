package policy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseShell checks which simple commands a command line holds, as
// command matchers see them: "!" marks one that sets variables, ">" one
// that redirects output to a file, "~" a sh -c or eval wrapper.
func TestParseShell(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want []string
	}{
		{"ls -la", []string{"ls -la"}},
		{"ls && rm -rf /", []string{"ls", "rm -rf /"}},
		{"a || b; c | d & e", []string{"a", "b", "c", "d", "e"}},
		{"(cd x; make) && { test -f y; }", []string{"cd x", "make", "test -f y"}},
		{"echo $(rm -rf /) `id -u`", []string{"echo $(rm -rf /) $(id -u)", "rm -rf /", "id -u"}},
		{"diff <(sort a) <(sort b)", []string{"diff <(sort a) <(sort b)", "sort a", "sort b"}},
		{"if grep -q x f; then rm f; elif true; then :; else echo no; fi", []string{"grep -q x f", "rm f", "true", ":", "echo no"}},
		{"while read l; do echo $l; done < f", []string{"read l", "echo $l"}},
		{"for f in *.go; do gofmt -l $f; done", []string{"gofmt -l $f"}},
		{"case $x in a) rm a;; *) rm b;; esac", []string{"rm a", "rm b"}},
		{"f() { rm -rf /; }; f", []string{"rm -rf /", "f"}},
		{"cat <<EOF\n$(rm -rf /)\nEOF", []string{"cat", "rm -rf /"}},
		{`'rm' "-rf" \/`, []string{"rm -rf /"}},
		{`echo "a \"b\" \$c" 'it''s'`, []string{`echo a "b" $c its`}},
		{`echo "$HOME" ${X:-y} $((1+2)) $'\n'`, []string{`echo "$HOME" ${X:-y} $((1+2)) $'\n'`}},
		{"FOO=1 BAR=$(id) make", []string{"!make", "id"}},
		{"X=1", []string{"!"}},
		{"export A=$(whoami) B", []string{"export A=$(whoami) B", "whoami"}},
		{"let x=1+2", []string{"let x=1+2"}},
		{"ls > out 2>&1", []string{">ls"}},
		{"ls >/dev/null 2>&1 >&2 >&-", []string{"ls"}},
		{"ls >> log", []string{">ls"}},
		{"ls &> log", []string{">ls"}},
		{"{ ls; } > out", []string{"ls"}},
		{"bash -lc 'ls && rm -rf /'", []string{"~bash -lc ls && rm -rf /", "ls", "rm -rf /"}},
		{"sh -c \"echo hi\" arg0", []string{"~sh -c echo hi arg0", "echo hi"}},
		{"/bin/bash -e -o pipefail -c 'make test'", []string{"~/bin/bash -e -o pipefail -c make test", "make test"}},
		{"bash -c \"$CMD\"", []string{`bash -c "$CMD"`}},
		{"bash script.sh", []string{"bash script.sh"}},
		{"bash --rcfile /tmp/x -c 'ls'", []string{"bash --rcfile /tmp/x -c ls", "ls"}},
		{"eval 'rm -rf /' && eval ls", []string{"~eval rm -rf /", "~eval ls", "rm -rf /", "ls"}},
		{"time rm -rf x", []string{"rm -rf x"}},
		{"! rm -rf x", []string{"rm -rf x"}},
		{"[[ -f x ]] && (( y++ ))", nil},
		{"# only a comment", nil},
		{"", nil},
	}
	for _, tt := range tests {
		sc := parseShell(tt.src)
		if sc.err != nil {
			t.Errorf("parseShell(%q): %v", tt.src, sc.err)
			continue
		}
		var got []string
		for _, c := range sc.cmds {
			mark := ""
			if c.wrapper {
				mark += "~"
			}
			if c.assigns {
				mark += "!"
			}
			if c.redirectsOutput {
				mark += ">"
			}
			got = append(got, mark+c.text)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseShell(%q) (-want +got):\n%s", tt.src, diff)
		}
	}
	if sc := parseShell("{ ls; } > out"); !sc.compoundRedirect {
		t.Error("a block redirected to a file is not marked")
	}
}

func TestParseShellErrors(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		"ls && (",
		"echo 'unterminated",
		"if true; then",
		"bash -c 'ls && ('",
		"eval 'echo \"'",
		// Scripts nested past the limit.
		`bash -c "bash -c 'bash -c \"bash -c ls\"'"`,
	} {
		if sc := parseShell(src); sc.err == nil {
			t.Errorf("parseShell(%q) parsed: %v", src, sc.cmds)
		}
	}
}

// TestCommandMatch checks the asymmetry between deny and allow rules.
func TestCommandMatch(t *testing.T) {
	t.Parallel()
	rm, err := compileCommand(&CommandMatch{Prefixes: []string{"rm  -rf"}})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := compileCommand(&CommandMatch{Prefixes: []string{"ls", "cat"}})
	if err != nil {
		t.Fatal(err)
	}
	both, err := compileCommand(&CommandMatch{Prefixes: []string{"git"}, Regex: `--force\b`})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		m        *commandMatcher
		decision Outcome
		src      string
		want     bool
	}{
		{rm, Deny, "rm -rf /", true},
		{rm, Deny, "ls && rm -rf /", true},
		{rm, Deny, "rm -r x", false},
		{rm, Deny, "rm -rfv x", false},
		{rm, Deny, "/usr/bin/rm -rf x", true},
		{rm, Allow, "/usr/bin/rm -rf x", false},
		{rm, Ask, "echo rm -rf", false},
		{rm, Deny, "ls && (", true},
		{ls, Allow, "ls", true},
		{ls, Allow, "ls | cat", true},
		{ls, Allow, "ls && rm -rf /", false},
		{ls, Allow, "ls && (", false},
		{ls, Allow, "/bin/ls", false},
		{ls, Allow, "ls > f", false},
		{ls, Allow, "A=1 ls", false},
		{ls, Allow, "[[ -f x ]]", false},
		{ls, Allow, "bash -c 'ls | cat'", true},
		{ls, Allow, "bash -c 'ls' > out", false},
		{ls, Allow, "bash -o pipefail -c 'ls'", true},
		{ls, Allow, "bash --rcfile /tmp/evil -c 'ls'", false},
		{rm, Deny, "bash --rcfile /tmp/x -c 'rm -rf /'", true},
		{ls, Allow, "echo $(ls)", false},
		{both, Deny, "git push --force", true},
		{both, Deny, "git push", false},
		{both, Deny, "echo --force", false},
	}
	for _, tt := range tests {
		got, why := tt.m.match(parseShell(tt.src), tt.decision, true)
		if got != tt.want {
			t.Errorf("%s rule on command %s, %q: match = %v, want %v (%s)", tt.decision, tt.m.desc, tt.src, got, tt.want, why)
		}
		if !got && why == "" {
			t.Errorf("%s rule on command %s, %q: no reason given", tt.decision, tt.m.desc, tt.src)
		}
		if fast, _ := tt.m.match(parseShell(tt.src), tt.decision, false); fast != got {
			t.Errorf("%q: match without reasons = %v, with = %v", tt.src, fast, got)
		}
	}
	if _, err := compileCommand(&CommandMatch{Prefixes: []string{"  "}}); err == nil || !strings.Contains(err.Error(), "no words") {
		t.Errorf("blank prefix: %v", err)
	}
	if _, err := compileCommand(&CommandMatch{}); err == nil {
		t.Error("an empty command matcher compiled")
	}
}

// TestShellOptionArguments: the argument of -o/-O (alone or combined with
// -c) is never taken for the script, so `bash -c -o posix 'rm -rf /'` is
// judged by rm -rf.
func TestShellOptionArguments(t *testing.T) {
	t.Parallel()
	k := mustKernel(t, KernelConfig{DefaultMode: ModeBypass, Rules: mustParse(t, "r.yaml", `rules:
  - {id: no-rm-rf, tools: [shell], command: {prefix: rm -rf}, decision: deny, reason_code: rm_rf}
`)})
	for _, cmd := range []string{
		`bash -c -o posix 'rm -rf /'`,
		`bash -co posix 'rm -rf /'`,
		`bash -o posix -c 'rm -rf /'`,
		`sh +o vi -c 'rm -rf /'`,
		`bash --rcfile x -c 'rm -rf /'`,
		`bash -c -- 'rm -rf /'`,
	} {
		d, err := k.Evaluate(context.Background(), &Request{ToolName: "shell", Command: cmd, Input: json.RawMessage(`{}`)})
		if err != nil || d.Outcome != Deny || d.ReasonCode != "rm_rf" {
			t.Errorf("%s: %+v, %v; want denied by no-rm-rf", cmd, d, err)
		}
	}
}
