package policy

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// maxShellNesting bounds how deeply sh -c and eval strings are parsed in
// turn; a deeper one counts as a command that does not parse.
const maxShellNesting = 4

// maxWrappers bounds how many wrappers (sudo, env, timeout, …) one simple
// command is unwrapped through; more count as a command that does not
// parse.
const maxWrappers = 8

// simpleCommand is one simple command of a command line.
type simpleCommand struct {
	// words are its words: each word's literal value (quotes removed)
	// when it has no expansions, else its source form ("$HOME",
	// "$(date)").
	words []string
	// text is words joined by single spaces, for regexes.
	text string
	// assigns: it sets variables (FOO=1 cmd, env FOO=1 cmd).
	assigns bool
	// redirectsOutput: it writes its output to a file (cmd > f), or
	// writes files itself (find -delete).
	redirectsOutput bool
	// wrapper: it only runs other commands, which follow it in the list
	// (sh -c '…', eval '…', timeout 5 cmd, nice cmd, …), so that allow
	// rules look at those alone.
	wrapper bool
	// opaque says why what it runs cannot be determined statically; empty
	// when it can.
	opaque OpaqueReason
	// stdinShell: it is a shell whose commands are not all on the line: it
	// reads them from its input, or from a script file that may.
	stdinShell bool
}

// String returns the command's words joined by spaces.
func (s *simpleCommand) String() string { return s.text }

// shellCommand is a parsed command line.
type shellCommand struct {
	cmds []simpleCommand
	// err says why the command line, or a script it runs with sh -c or
	// eval, does not parse.
	err error
	// compoundRedirect: a compound command ({ …; } > f, a loop, …) writes
	// its output to a file.
	compoundRedirect bool
	// input is what the line's own standard input holds, nil when unknown
	// (Request.CommandInput).
	input *string
}

// opaque returns the first simple command whose effect the policy cannot
// determine, and why; a line that does not parse is opaque as a whole
// (nil, OpaqueUnparsed). It returns "" when every command is known.
func (sc *shellCommand) opaque() (*simpleCommand, OpaqueReason) {
	if sc.err != nil {
		return nil, OpaqueUnparsed
	}
	for i := range sc.cmds {
		if r := sc.cmds[i].opaque; r != "" {
			return &sc.cmds[i], r
		}
	}
	return nil, ""
}

var shellParsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// parseShell parses src as a bash command line and collects every simple
// command in it: in lists (&&, ||, ;), pipes, subshells, blocks, command
// substitutions ($(…) and `…`), process substitutions, here-documents,
// if/while/for/case bodies and function bodies; the commands wrappers run
// (sudo, env, timeout, xargs, find -exec, …; see unwrap.go); and the
// scripts of sh -c '…', eval '…' and the like when they are literal
// strings. What it cannot see through is marked opaque.
func parseShell(src string) *shellCommand {
	return parseShellInput(src, nil)
}

// parseShellInput is parseShell for a command line whose standard input
// holds input and nothing the runtime does not decide (Request.CommandInput);
// nil when what it holds is unknown.
func parseShellInput(src string, input *string) *shellCommand {
	sc := &shellCommand{input: input}
	sc.parse(src, 0)
	return sc
}

func (sc *shellCommand) parse(src string, depth int) {
	if depth >= maxShellNesting {
		sc.err = fmt.Errorf("scripts nested more than %d levels deep (sh -c, eval)", maxShellNesting)
		return
	}
	p := shellParsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	shellParsers.Put(p)
	if err != nil {
		if sc.err == nil {
			sc.err = err
		}
		return
	}
	var nested []string
	var top map[*syntax.Stmt]bool
	if depth == 0 && sc.input != nil {
		top = readsLineInput(f.Stmts)
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		st, ok := n.(*syntax.Stmt)
		if !ok {
			return true
		}
		out := redirectsOutput(st.Redirs)
		switch c := st.Cmd.(type) {
		case *syntax.CallExpr:
			words := make([]word, len(c.Args))
			for i, w := range c.Args {
				words[i] = makeWord(w)
			}
			for _, a := range c.Assigns {
				sc.assignment(a, &nested)
			}
			u := unwrapper{sc: sc, nested: &nested}
			env := cmdEnv{assigns: len(c.Assigns) > 0, out: out, stdin: stdinOf(st.Redirs)}
			if top[st] && env.stdin.kind == stdinInherited {
				env.stdin = stdin{script: *sc.input, kind: stdinGoverned}
			}
			u.command(words, env)
			return true
		case *syntax.DeclClause:
			words := []string{c.Variant.Value}
			for _, a := range c.Args {
				words = append(words, printNode(a))
				sc.assignment(a, &nested)
			}
			sc.add(words, false, out, false)
		case *syntax.LetClause:
			sc.add(strings.Fields(printNode(c)), false, out, false)
		default:
			if out {
				sc.compoundRedirect = true
			}
		}
		return true
	})
	for _, s := range nested {
		sc.parse(s, depth+1)
	}
}

// readsLineInput returns the statements of stmts whose standard input is
// the line's own: the statements of lists (;, &&, ||), blocks and
// subshells, and the first command of a pipe — not a pipe's later
// commands, nor anything nested deeper.
func readsLineInput(stmts []*syntax.Stmt) map[*syntax.Stmt]bool {
	top := make(map[*syntax.Stmt]bool)
	var mark func(st *syntax.Stmt)
	mark = func(st *syntax.Stmt) {
		top[st] = true
		switch c := st.Cmd.(type) {
		case *syntax.BinaryCmd:
			mark(c.X)
			if c.Op == syntax.AndStmt || c.Op == syntax.OrStmt {
				mark(c.Y)
			}
		case *syntax.Block:
			for _, s := range c.Stmts {
				mark(s)
			}
		case *syntax.Subshell:
			for _, s := range c.Stmts {
				mark(s)
			}
		}
	}
	for _, st := range stmts {
		mark(st)
	}
	return top
}

// add records a simple command and returns its index.
func (sc *shellCommand) add(words []string, assigns, out, wrapper bool) int {
	sc.cmds = append(sc.cmds, simpleCommand{
		words: words, text: strings.Join(words, " "),
		assigns: assigns, redirectsOutput: out, wrapper: wrapper,
	})
	return len(sc.cmds) - 1
}

// word is one word of a simple command as the policy sees it.
type word struct {
	// text is the word's literal value, quotes and escapes removed, when
	// lit; else its source form ("$HOME", "$(date)").
	text string
	// lit: the word has no expansions.
	lit bool
	// pattern: the word has unquoted glob or brace characters, which the
	// shell may expand into other words.
	pattern bool
}

func makeWord(w *syntax.Word) word {
	text, lit := wordText(w)
	return word{text: text, lit: lit, pattern: lit && hasPattern(w)}
}

func texts(words []word) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = w.text
	}
	return out
}

// hasPattern reports whether w's unquoted parts hold glob characters
// (* ? [) or a brace expansion ({a,b}, {1..3}).
func hasPattern(w *syntax.Word) bool {
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			continue
		}
		v := l.Value
		if strings.ContainsAny(v, "*?[") {
			return true
		}
		if i := strings.IndexByte(v, '{'); i >= 0 && (strings.Contains(v[i:], ",") || strings.Contains(v[i:], "..")) {
			return true
		}
	}
	return false
}

// stdin is what a simple command's statement feeds its standard input.
type stdin struct {
	// script is the literal text of a here-document or here-string.
	script string
	kind   stdinKind
}

type stdinKind uint8

const (
	stdinInherited stdinKind = iota // a pipe or whatever the line gets: unknown
	stdinLiteral                    // a here-document or here-string with no expansions
	stdinFile                       // a file named literally (< file)
	stdinUnknown                    // a file or text built at run time
	// stdinGoverned: the line's own input, which holds script and
	// nothing the runtime does not decide (Request.CommandInput).
	stdinGoverned
)

// stdinOf says what a statement's redirections feed its standard input.
func stdinOf(redirs []*syntax.Redirect) stdin {
	in := stdin{}
	for _, r := range redirs {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.WordHdoc:
			if s, lit := wordText(r.Word); lit {
				in = stdin{script: s + "\n", kind: stdinLiteral}
			} else {
				in = stdin{kind: stdinUnknown}
			}
		case syntax.Hdoc, syntax.DashHdoc:
			if s, lit := wordText(r.Hdoc); lit {
				in = stdin{script: s, kind: stdinLiteral}
			} else {
				in = stdin{kind: stdinUnknown}
			}
		case syntax.RdrIn, syntax.RdrInOut:
			if s, lit := wordText(r.Word); lit && !isStdinPath(s) {
				in = stdin{kind: stdinFile}
			} else {
				in = stdin{kind: stdinUnknown}
			}
		case syntax.DplIn:
			in = stdin{kind: stdinUnknown}
		}
	}
	return in
}

// isStdinPath reports whether a script file argument names the standard
// input (or another descriptor), so that the script is not a file the
// line names.
func isStdinPath(s string) bool {
	return s == "-" || s == "/dev/stdin" || strings.HasPrefix(s, "/dev/fd/") || strings.HasPrefix(s, "/proc/self/fd/") ||
		strings.HasPrefix(s, "/dev/tcp/") || strings.HasPrefix(s, "/dev/udp/")
}

// redirectsOutput reports whether redirs write to a file other than
// /dev/null.
func redirectsOutput(redirs []*syntax.Redirect) bool {
	for _, r := range redirs {
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrClob, syntax.AppClob,
			syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.DplOut:
		default:
			continue
		}
		target, lit := wordText(r.Word)
		switch {
		case !lit:
			return true
		case target == "/dev/null":
		case r.Op == syntax.DplOut && (target == "-" || isDigits(target)):
		default:
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// wordText returns a word's literal value, with quotes and escapes
// removed, and true; or, for a word with expansions (parameters, command
// substitutions, arithmetic, $'…'), its source form and false.
func wordText(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", true
	}
	if len(w.Parts) == 1 {
		if l, ok := w.Parts[0].(*syntax.Lit); ok && !strings.ContainsRune(l.Value, '\\') {
			return l.Value, true
		}
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				return printNode(w), false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return printNode(w), false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return printNode(w), false
				}
				b.WriteString(unescape(l.Value, true))
			}
		default:
			return printNode(w), false
		}
	}
	return b.String(), true
}

// unescape removes the backslashes the shell removes: before any
// character outside quotes, and before $ ` " \ and newline inside double
// quotes. (The parser has already removed line continuations outside
// quotes.)
func unescape(s string, dquoted bool) string {
	if !strings.ContainsRune(s, '\\') {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		next := s[i+1]
		switch {
		case next == '\n':
			i++ // a line continuation
		case !dquoted || strings.IndexByte("$`\"\\", next) >= 0:
			b.WriteByte(next)
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// printNode returns n's source form.
func printNode(n syntax.Node) string {
	var b strings.Builder
	if err := syntax.NewPrinter(syntax.Minify(true)).Print(&b, n); err != nil {
		return fmt.Sprintf("<%T>", n)
	}
	return b.String()
}

// commandMatcher is a compiled CommandMatch.
type commandMatcher struct {
	prefixes [][]string // each prefix's words
	re       *regexp.Regexp
	// opaque: it matches command lines with an opaque command.
	opaque bool
	desc   string
}

func compileCommand(cm *CommandMatch) (*commandMatcher, error) {
	m := &commandMatcher{opaque: cm.Opaque}
	if cm.Opaque {
		if len(cm.Prefixes) > 0 || cm.Regex != "" {
			return nil, errors.New("command opaque cannot be combined with a prefix or a regex: an opaque command has no words to match")
		}
		m.desc = "opaque"
		return m, nil
	}
	var desc []string
	for _, p := range cm.Prefixes {
		words := strings.Fields(p)
		if len(words) == 0 {
			return nil, fmt.Errorf("command prefix %q has no words", p)
		}
		m.prefixes = append(m.prefixes, words)
		desc = append(desc, fmt.Sprintf("%q", strings.Join(words, " ")))
	}
	if cm.Regex != "" {
		re, err := regexp.Compile(cm.Regex)
		if err != nil {
			return nil, fmt.Errorf("invalid command regex: %w", err)
		}
		m.re = re
	}
	if len(m.prefixes) == 0 && m.re == nil {
		return nil, fmt.Errorf("command needs a prefix, a regex or opaque")
	}
	switch {
	case len(desc) > 0 && m.re != nil:
		m.desc = "prefix " + strings.Join(desc, " or ") + fmt.Sprintf(" and regex %q", cm.Regex)
	case len(desc) > 0:
		m.desc = "prefix " + strings.Join(desc, " or ")
	default:
		m.desc = fmt.Sprintf("regex %q", cm.Regex)
	}
	return m, nil
}

// matchWords reports whether one simple command matches: one of the
// prefixes (when there are any) and the regex (when there is one).
// loose also tries the command's base name for a program given by path
// (/bin/rm for rm), as deny and ask rules do.
func (m *commandMatcher) matchWords(c *simpleCommand, loose bool) bool {
	if m.matchExact(c.words, c.text) {
		return true
	}
	if !loose || len(c.words) == 0 || !strings.ContainsRune(c.words[0], '/') {
		return false
	}
	words := slices.Clone(c.words)
	words[0] = path.Base(words[0])
	return m.matchExact(words, strings.Join(words, " "))
}

func (m *commandMatcher) matchExact(words []string, text string) bool {
	if len(m.prefixes) > 0 && !slices.ContainsFunc(m.prefixes, func(p []string) bool {
		return len(words) >= len(p) && slices.Equal(words[:len(p)], p)
	}) {
		return false
	}
	return m.re == nil || m.re.MatchString(text)
}

// match applies the matcher to a parsed command line for a rule with the
// given decision. An opaque matcher matches a line with an opaque
// command (or one that does not parse), whatever the decision. Deny and
// ask rules match when any simple command matches, or when the command
// line does not parse (failing closed). Allow rules match only when every
// simple command matches, there is at least one, none is opaque, sets
// variables or redirects output to a file, and the line parses. why says
// why not, when asked for.
func (m *commandMatcher) match(sc *shellCommand, decision Outcome, why bool) (bool, string) {
	if m.opaque {
		if _, r := sc.opaque(); r != "" {
			return true, ""
		}
		if !why {
			return false, ""
		}
		return false, "no simple command is opaque"
	}
	if decision != Allow {
		if sc.err != nil {
			return true, ""
		}
		for i := range sc.cmds {
			if m.matchWords(&sc.cmds[i], true) {
				return true, ""
			}
		}
		if !why {
			return false, ""
		}
		return false, fmt.Sprintf("no simple command matches command %s", m.desc)
	}
	reason := func(format string, args ...any) (bool, string) {
		if !why {
			return false, ""
		}
		return false, fmt.Sprintf(format, args...)
	}
	switch {
	case sc.err != nil:
		return reason("command does not parse, so no allow rule covers it: %v", sc.err)
	case sc.compoundRedirect:
		return reason("the command line redirects output to a file, which allow rules do not cover")
	}
	n := 0
	for i := range sc.cmds {
		c := &sc.cmds[i]
		switch {
		case c.opaque != "":
			return reason("simple command %q is opaque (%s), which allow rules do not cover", c.text, c.opaque)
		case c.wrapper && !c.assigns && !c.redirectsOutput:
			continue // the commands it runs are checked instead
		case c.assigns:
			return reason("simple command %q sets variables, which allow rules do not cover", c.text)
		case c.redirectsOutput:
			return reason("simple command %q writes to a file, which allow rules do not cover", c.text)
		case !m.matchWords(c, false):
			return reason("simple command %q does not match command %s (an allow rule must match every simple command)", c.text, m.desc)
		}
		n++
	}
	if n == 0 {
		return reason("the command line has no simple command for the allow rule to match")
	}
	return true, ""
}
