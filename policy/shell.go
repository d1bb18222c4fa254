package policy

import (
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

// simpleCommand is one simple command of a command line.
type simpleCommand struct {
	// words are its words: each word's literal value (quotes removed)
	// when it has no expansions, else its source form ("$HOME",
	// "$(date)").
	words []string
	// text is words joined by single spaces, for regexes.
	text string
	// assigns: it sets variables (FOO=1 cmd).
	assigns bool
	// redirectsOutput: it writes its output to a file (cmd > f).
	redirectsOutput bool
	// wrapper: it runs a script given as a literal string (sh -c '…',
	// eval '…') whose own simple commands follow in the list.
	wrapper bool
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
}

var shellParsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// parseShell parses src as a bash command line and collects every simple
// command in it: in lists (&&, ||, ;), pipes, subshells, blocks, command
// substitutions ($(…) and `…`), process substitutions, here-documents,
// if/while/for/case bodies and function bodies, and in the scripts of
// sh -c '…' and eval '…' when they are literal strings.
func parseShell(src string) *shellCommand {
	sc := &shellCommand{}
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
	syntax.Walk(f, func(n syntax.Node) bool {
		st, ok := n.(*syntax.Stmt)
		if !ok {
			return true
		}
		out := redirectsOutput(st.Redirs)
		var words []string
		var assigns bool
		switch c := st.Cmd.(type) {
		case *syntax.CallExpr:
			words = make([]string, len(c.Args))
			for i, w := range c.Args {
				words[i], _ = wordText(w)
			}
			assigns = len(c.Assigns) > 0
			if script, ok, plain := scriptOf(c.Args); ok {
				nested = append(nested, script)
				sc.add(words, assigns, out, plain)
				return true
			}
		case *syntax.DeclClause:
			words = []string{c.Variant.Value}
			for _, a := range c.Args {
				words = append(words, printNode(a))
			}
		case *syntax.LetClause:
			words = strings.Fields(printNode(c))
		default:
			if out {
				sc.compoundRedirect = true
			}
			return true
		}
		sc.add(words, assigns, out, false)
		return true
	})
	for _, s := range nested {
		sc.parse(s, depth+1)
	}
}

func (sc *shellCommand) add(words []string, assigns, out, wrapper bool) {
	sc.cmds = append(sc.cmds, simpleCommand{
		words: words, text: strings.Join(words, " "),
		assigns: assigns, redirectsOutput: out, wrapper: wrapper,
	})
}

// shells are the programs whose -c option runs a script.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh"}

// scriptOf returns the script a simple command runs when it is
// sh -c 'script' (or bash -lc, …) or eval with literal words. plain says
// the command does nothing but run the script: eval, or a shell given only
// options (and their -o/-O arguments) before it, so that allow rules may
// look at the script's commands alone.
func scriptOf(args []*syntax.Word) (script string, ok, plain bool) {
	if len(args) < 2 {
		return "", false, false
	}
	name, lit := wordText(args[0])
	if !lit {
		return "", false, false
	}
	if name == "eval" {
		parts := make([]string, 0, len(args)-1)
		for _, w := range args[1:] {
			s, lit := wordText(w)
			if !lit {
				return "", false, false
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, " "), true, true
	}
	if !slices.Contains(shells, path.Base(name)) {
		return "", false, false
	}
	dashC, plain, optArg, fileArg := false, true, false, false
	for _, w := range args[1:] {
		s, lit := wordText(w)
		switch {
		case !lit:
			return "", false, false
		case optArg:
			// The argument of -o/-O (also in -co, +o, …): never the
			// script, even after -c.
			optArg = false
		case fileArg:
			// The file of --rcfile: the shell runs more than the script.
			fileArg, plain = false, false
		case s == "--rcfile" || s == "--init-file":
			fileArg = true
		case len(s) > 1 && (s[0] == '-' || s[0] == '+') && s[1] != '-':
			if s[0] == '-' && strings.ContainsRune(s, 'c') {
				dashC = true
			}
			if strings.ContainsAny(s[1:], "oO") {
				optArg = true
			}
		case dashC && s != "--" && !strings.HasPrefix(s, "-"):
			return s, true, plain
		case !strings.HasPrefix(s, "-"):
			plain = false
		}
	}
	return "", false, false
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
	desc     string
}

func compileCommand(cm *CommandMatch) (*commandMatcher, error) {
	m := &commandMatcher{}
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
		return nil, fmt.Errorf("command needs a prefix or a regex")
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
// given decision. Deny and ask rules match when any simple command
// matches, or when the command line does not parse (failing closed).
// Allow rules match only when every simple command matches, there is at
// least one, none sets variables or redirects output to a file, and the
// line parses. why says why not, when asked for.
func (m *commandMatcher) match(sc *shellCommand, decision Outcome, why bool) (bool, string) {
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
		case c.wrapper && !c.assigns && !c.redirectsOutput:
			continue // its script's commands are checked instead
		case c.assigns:
			return reason("simple command %q sets variables, which allow rules do not cover", c.text)
		case c.redirectsOutput:
			return reason("simple command %q redirects output to a file, which allow rules do not cover", c.text)
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
