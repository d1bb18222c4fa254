package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParseRules: no input makes ParseRules panic, every error carries a
// position, and the rules it accepts compile.
func FuzzParseRules(f *testing.F) {
	f.Add([]byte(benchRules()))
	f.Add([]byte("tier: admin\nrules:\n  - id: a\n    tools: [x, 'y*']\n    when: input.a > 1\n    command: {prefix: [rm -rf], regex: '^x'}\n    decision: deny\n    reason_code: r\n"))
	f.Add([]byte("rules:\n  - &a {id: a, decision: allow, reason_code: x}\n  - *a\n  - <<: *a\n    id: b\n"))
	f.Add([]byte("rules: [{id: a, when: 'input.x.exists(y, y == 1', decision: ask, reason_code: q}]"))
	f.Add([]byte("rules:\n  - id: a\n    when: |\n      tool ==\n        'x'\n    decision: deny\n    reason_code: r\n"))
	f.Add([]byte("rules: !!map {}\n"))
	f.Add([]byte("rules:\n  - id: \xff\n"))
	f.Add([]byte("{"))
	if files, err := filepath.Glob("testdata/decisions/*.yaml"); err == nil {
		for _, name := range files {
			if data, err := os.ReadFile(name); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, err := ParseRules("fuzz.yaml", data)
		if err != nil {
			if rules != nil {
				t.Fatal("rules returned with an error")
			}
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %T %v is not Errors", err, err)
			}
			for _, e := range es {
				if e.File != "fuzz.yaml" || e.Line < 1 || e.Column < 1 || e.Message == "" {
					t.Fatalf("error without a position: %#v", e)
				}
				if !strings.HasPrefix(e.Error(), "fuzz.yaml:"+strconv.Itoa(e.Line)+":") {
					t.Fatalf("error %q", e)
				}
			}
			return
		}
		for _, r := range rules {
			if r.compiled == nil || r.ID == "" || r.ReasonCode == "" || !strings.HasPrefix(r.Source, "fuzz.yaml:") {
				t.Fatalf("rule %+v", r)
			}
			if _, err := r.compile(); err != nil {
				t.Fatalf("accepted rule %s does not compile: %v", r.ID, err)
			}
		}
	})
}

// celFuzzKernel has rules whose when expressions walk the input in
// several ways.
func celFuzzKernel(t testing.TB) *Kernel {
	return mustKernel(t, KernelConfig{Rules: mustParse(t, "cel.yaml", `rules:
  - id: field
    when: input.priority == "urgent"
    decision: ask
    reason_code: urgent
  - id: nested
    when: has(input.a) && has(input.a.b) && input.a.b.c > 10
    decision: deny
    reason_code: nested
  - id: loops
    when: input.items.exists(i, i.all(j, string(j).size() > 3))
    decision: deny
    reason_code: loops
  - id: strings
    when: input.path.startsWith("/etc") || input.path.matches("^/(proc|sys)/")
    decision: deny
    reason_code: strings
  - id: size
    when: size(input) > 3 && "x" in input
    decision: ask
    reason_code: size
  - id: types
    when: type(input.v) == int && input.v + 1 > 0 || type(input.v) == double && input.v * 2.0 < 1.0
    decision: ask
    reason_code: types
`)})
}

// FuzzEvaluateCEL: no input makes evaluation panic or run away; every
// decision has a reason.
func FuzzEvaluateCEL(f *testing.F) {
	for _, s := range []string{
		`{"priority":"urgent"}`, `{"a":{"b":{"c":11}}}`, `{"items":[[1,2],["abcd"]]}`,
		`{"path":"/etc/passwd"}`, `{"path":"/proc/1"}`, `{"x":1,"y":2,"z":3,"w":4}`,
		`{"v":9223372036854775807}`, `{"v":1e308}`, `{"v":-0.0}`, `[]`, `null`, ``, `{"a":`,
		`{"items":[` + strings.Repeat(`[1,2,3,4,5,6,7,8,9,10],`, 200) + `[]]}`,
		strings.Repeat(`{"a":`, 2000), "{\"s\":\"\\ud800\"}", "{\"s\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	k := celFuzzKernel(f)
	f.Fuzz(func(t *testing.T, input []byte) {
		req := &Request{ToolName: "t", Input: input}
		d, err := k.Evaluate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if d.ReasonCode == "" || d.Mode == "" {
			t.Fatalf("decision %+v", d)
		}
	})
}

// FuzzShellCommand: no command line makes parsing or matching panic; an
// allow rule never matches a line that a deny rule on the same prefix
// also matches; a line with an opaque command is never allowed by an
// allow rule on a prefix; and an rm that unwrapping finds anywhere in a
// line is denied by a deny rule on rm.
func FuzzShellCommand(f *testing.F) {
	for _, s := range []string{
		"ls -la", "ls && rm -rf /", "echo $(rm -rf /)", "echo `rm -rf /`", "bash -lc 'ls; rm -rf /'",
		"eval \"eval 'rm -rf /'\"", "f() { rm -rf /; }; f", "cat <<EOF\n$(rm -rf /)\nEOF",
		"a=(1 2 3); echo ${a[@]}", "[[ $x =~ ^a+$ ]] && echo y", "coproc rm -rf /", "ls && (",
		"ls > /dev/null 2>&1 | tee out", "for ((i=0;i<3;i++)); do rm -rf $i; done",
		"'\\''", "$'\\x41'", "sh -c", "sh -c -c -c", "\x00", "ls\\\nx",
		"env -i A=1 timeout -s KILL 5 nice -n 1 sudo -u x -- rm -rf /", "xargs -0 -I{} sh -c '{}'",
		"find . -exec rm {} + -o -execdir sh -c 'ls' \\;", "echo x | base64 -d | bash -s", "python3 -c 'x'",
		"git -c alias.x='!rm -rf /' x", "ssh -p 1 host 'rm -rf /'", "su - root -c 'ls'", "flock f -c 'rm x'",
		"busybox busybox busybox sh -c 'env env env env env env env env env rm'", "bash <<< 'rm x'",
		"GIT_PAGER='rm x' git log", "awk 'BEGIN{system(\"x\")}'", "$X -rf /", "{rm,-rf,/}", "watch -x rm x",
	} {
		f.Add(s)
	}
	evasion := mustKernel(f, KernelConfig{Rules: mustParse(f, "evasion.yaml", evasionRules)})
	k := mustKernel(f, KernelConfig{Rules: mustParse(f, "shell.yaml", `rules:
  - id: deny-rm
    tools: [shell]
    command: {prefix: "rm -rf"}
    decision: deny
    reason_code: rm
  - id: allow-rm
    tools: [shell]
    priority: 10
    command: {prefix: "rm -rf"}
    decision: allow
    reason_code: rm_ok
  - id: regex
    tools: [shell]
    command: {regex: '(^| )/etc/'}
    decision: ask
    reason_code: etc
`)})
	f.Fuzz(func(t *testing.T, command string) {
		d, err := k.Evaluate(context.Background(), &Request{ToolName: "shell", Command: command})
		if err != nil {
			t.Fatal(err)
		}
		if d.ReasonCode == "" {
			t.Fatalf("decision %+v", d)
		}
		if len(d.RuleIDs) > 0 && d.RuleIDs[0] == "allow-rm" && !slices.Contains(d.RuleIDs, "deny-rm") {
			t.Fatalf("%q: the allow rule matched and the deny rule on the same prefix did not: %v", command, d.RuleIDs)
		}
		d, err = evasion.Evaluate(context.Background(), &Request{ToolName: "shell", Command: command, Mode: ModeBypass})
		if err != nil {
			t.Fatal(err)
		}
		sc := parseShell(command)
		if _, why := sc.opaque(); why != "" && d.Outcome == Allow {
			t.Fatalf("%q is opaque (%s) and was allowed: %+v", command, why, d)
		}
		for _, c := range sc.cmds {
			if len(c.words) > 0 && path.Base(c.words[0]) == "rm" && d.Outcome != Deny {
				t.Fatalf("%q runs %q and was not denied: %+v", command, c.text, d)
			}
		}
	})
}

// FuzzDecodeInput: the input decoder agrees with encoding/json.
func FuzzDecodeInput(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[1,2.5,"x",null,true,false,{}],"c":{"d":"e"}}`, `{"a":"\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t"}`,
		`{"a":-0,"b":1E+2,"c":-1.5e-3,"d":123456789012345678901234567890}`, `{"a":1,"a":2}`,
		`{"a":"` + "\xff\xfe" + `"}`, `{"a":"\ud800"}`, ` { } `, `{"a":1}x`, `{"a":01}`, `{"a":.5}`,
		`{"a":1.}`, `{"a":-}`, `{"a":"x`, `{"a":[1,]}`, `{,}`, `{"a":tru}`, `null`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeInput(data)
		want, wantErr := referenceDecode(data)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decodeInput(%q) error = %v, encoding/json error = %v", data, err, wantErr)
		}
		if err != nil {
			return
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateNaNs()); diff != "" {
			t.Fatalf("decodeInput(%q) (-encoding/json +got):\n%s", data, diff)
		}
	})
}

// referenceDecode decodes input with encoding/json the way decodeInput
// promises to.
func referenceDecode(data []byte) (map[string]any, error) {
	trimmed := bytes.Trim(data, " \t\r\n") // JSON's white space only
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return map[string]any{}, nil
	}
	if !json.Valid(trimmed) {
		return nil, errors.New("invalid JSON")
	}
	if trimmed[0] != '{' {
		return nil, errInputNotObject
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if depth(m) > maxInputDepth {
		return nil, errors.New("too deep")
	}
	return convertNumbers(m).(map[string]any), nil
}

func depth(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			d = max(d, depth(x))
		}
	case []any:
		for _, x := range v {
			d = max(d, depth(x))
		}
	default:
		return 0
	}
	return d + 1
}

// convertNumbers replaces json.Numbers by int64 when they are integers
// that fit and by float64 otherwise.
func convertNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(string(v), 64)
		return f
	case map[string]any:
		for k, x := range v {
			v[k] = convertNumbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = convertNumbers(x)
		}
	}
	return v
}
