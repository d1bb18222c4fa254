package policy

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// OpaqueReason says why the policy cannot determine statically what a
// simple command runs. A command line with an opaque command is never
// allowed by an allow rule's command matcher; unless a deny rule or a
// rule that matches opaque lines decides it, it gets the kernel's Opaque
// decision (reason ReasonOpaqueCommand).
type OpaqueReason string

// Opaque reasons.
const (
	// OpaqueProgram: the program is built at run time: a variable, a
	// command substitution, a glob or brace pattern ($X -rf /,
	// $(echo rm) x, {rm,-rf,/}), or a placeholder xargs -I or find -exec
	// fills in.
	OpaqueProgram OpaqueReason = "program_expansion"
	// OpaqueScript: a script that a shell, eval or a wrapper runs is
	// built at run time (bash -c "$CMD", eval "$x", source <(curl …),
	// ssh host "$cmd").
	OpaqueScript OpaqueReason = "script_expansion"
	// OpaqueStdin: a shell or interpreter reads the program from its
	// standard input or a descriptor (… | sh, curl … | python3,
	// bash /dev/stdin, sudo -s, su without -c).
	OpaqueStdin OpaqueReason = "program_from_input"
	// OpaqueInline: an interpreter runs code given inline in its own
	// language (python -c, perl -e, node -e, ruby -e, awk with system()
	// or a pipe, fish -c).
	OpaqueInline OpaqueReason = "inline_code"
	// OpaqueArguments: the command is completed by arguments supplied at
	// run time (echo rm x | xargs env, xargs sh -c).
	OpaqueArguments OpaqueReason = "command_from_arguments"
	// OpaqueRebind: the command changes what a command name runs
	// (hash -p /bin/rm ls, enable -f).
	OpaqueRebind OpaqueReason = "rebinds_command"
	// OpaqueUnparsed: the command line (or a script in it) does not
	// parse, or nests scripts or wrappers too deeply.
	OpaqueUnparsed OpaqueReason = "unparsed"
)

// Describe says in words what the reason means.
func (r OpaqueReason) Describe() string {
	switch r {
	case OpaqueProgram:
		return "its program is built at run time"
	case OpaqueScript:
		return "a script it runs is built at run time"
	case OpaqueStdin:
		return "a shell or interpreter reads its program from input"
	case OpaqueInline:
		return "an interpreter runs code given inline"
	case OpaqueArguments:
		return "the command it runs comes from arguments supplied at run time"
	case OpaqueRebind:
		return "it changes what a command name runs"
	case OpaqueUnparsed:
		return "the command line does not parse"
	}
	return string(r)
}

// cmdEnv is what a simple command gets from where it appears.
type cmdEnv struct {
	assigns bool // variables are set for it (FOO=1 cmd, env FOO=1 cmd)
	out     bool // its output goes to a file
	stdin   stdin
	// placeholder is a word a wrapper replaces at run time (xargs -I R,
	// find -exec's {}); empty when none.
	placeholder string
	// appended: a wrapper adds arguments at run time (xargs, find -exec
	// … +).
	appended bool
	// wrappers counts the wrappers it is inside.
	wrappers int
}

// unwrapper records a simple command and what it runs.
type unwrapper struct {
	sc     *shellCommand
	nested *[]string // literal scripts to parse after the walk
}

// unwrapped is what a handler found a command runs.
type unwrapped struct {
	u   *unwrapper
	env cmdEnv
	// transparent: the command only runs what it wraps, which allow
	// rules look at instead (timeout 5 ls, nice ls, sh -c 'ls').
	transparent bool
	// runs: it runs a command or script that was recorded.
	runs   bool
	opaque OpaqueReason
	// writes: it writes files itself (find -delete, time -o f).
	writes bool
	// stdinShell: it is a shell that reads commands from its input or a
	// script file.
	stdinShell bool
}

// command records a simple command and, recursively, what it runs.
func (u *unwrapper) command(words []word, env cmdEnv) {
	i := u.sc.add(texts(words), env.assigns, env.out, false)
	if len(words) == 0 {
		return
	}
	uw := unwrapped{u: u, env: env}
	uw.analyse(words)
	c := &u.sc.cmds[i]
	c.opaque = uw.opaque
	c.redirectsOutput = c.redirectsOutput || uw.writes
	c.wrapper = uw.transparent && uw.runs && uw.opaque == ""
	c.stdinShell = uw.stdinShell
}

// analyse finds what the command words run.
func (uw *unwrapped) analyse(words []word) {
	prog := words[0]
	switch {
	case !prog.lit || prog.pattern && prog.text != "[":
		uw.opaque = OpaqueProgram
		return
	case uw.env.placeholder != "" && strings.Contains(prog.text, uw.env.placeholder):
		uw.opaque = OpaqueProgram
		return
	}
	name := path.Base(prog.text)
	args := words[1:]
	if uw.wrapper(name, args) {
		return
	}
	base := strings.TrimRight(name, "0123456789.")
	if slices.Contains(shells, base) {
		uw.shell(args)
		return
	}
	if in, ok := interpreters[base]; ok {
		uw.interpreter(in, args)
	}
}

// inner records the command a wrapper runs: words, with env changed by
// mod. No words, where a wrapper adds arguments at run time, is opaque:
// they are the command (echo rm x | xargs env).
func (uw *unwrapped) inner(words []word, env cmdEnv) {
	if len(words) == 0 {
		if env.appended {
			uw.opaque = OpaqueArguments
		}
		return
	}
	env.wrappers++
	if env.wrappers > maxWrappers {
		if uw.u.sc.err == nil {
			uw.u.sc.err = fmt.Errorf("commands wrapped more than %d deep", maxWrappers)
		}
		return
	}
	uw.runs = true
	uw.u.command(words, env)
}

// script records a script the command runs, given as one word.
func (uw *unwrapped) script(w word) {
	switch {
	case !w.lit:
		uw.opaque = OpaqueScript
	case uw.env.placeholder != "" && strings.Contains(w.text, uw.env.placeholder):
		// find -exec sh -c 'rm {}': a file name becomes shell code.
		uw.opaque = OpaqueScript
	default:
		uw.scriptText(w.text)
	}
}

// scriptText records a literal script the command runs.
func (uw *unwrapped) scriptText(s string) {
	uw.runs = true
	*uw.u.nested = append(*uw.u.nested, s)
}

// scriptWords records a script made of words joined by spaces (ssh host
// cmd args, watch cmd args, sudo -s cmd).
func (uw *unwrapped) scriptWords(words []word) {
	for _, w := range words {
		if !w.lit {
			uw.opaque = OpaqueScript
			return
		}
	}
	uw.scriptText(strings.Join(texts(words), " "))
}

// opt is an option a program was given.
type opt struct {
	name  string // "-s", "--signal"
	value word   // its argument, when it takes one
}

// optSpec says which of a program's options take an argument.
type optSpec struct {
	// arg are the short options that take an argument, attached (-sKILL)
	// or as the next word (-s KILL).
	arg string
	// attached are the short options whose argument is optional and only
	// attached (xargs -i[R]).
	attached string
	// long are the long options that take an argument (--signal=KILL or
	// --signal KILL).
	long []string
}

// skipOptions returns the options at the start of args and the words
// after them: options end at the first word that is not one, or after
// "--". bad says an option is built at run time.
func skipOptions(args []word, spec optSpec) (opts []opt, rest []word, bad bool) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		s := w.text
		switch {
		case !w.lit && strings.HasPrefix(s, "-"):
			return opts, args[i:], true
		case s == "--":
			return opts, args[i+1:], false
		case !strings.HasPrefix(s, "-") || s == "-" || !w.lit:
			return opts, args[i:], false
		case strings.HasPrefix(s, "--"):
			name, value, hasValue := strings.Cut(s, "=")
			o := opt{name: name}
			switch {
			case hasValue:
				o.value = word{text: value, lit: true}
			case slices.Contains(spec.long, name) && i+1 < len(args):
				i++
				o.value = args[i]
			}
			opts = append(opts, o)
		default:
			for j := 1; j < len(s); j++ {
				c := s[j]
				o := opt{name: "-" + string(c)}
				switch {
				case strings.IndexByte(spec.attached, c) >= 0:
					o.value = word{text: s[j+1:], lit: true}
					j = len(s)
				case strings.IndexByte(spec.arg, c) >= 0:
					if j+1 < len(s) {
						o.value = word{text: s[j+1:], lit: true}
					} else if i+1 < len(args) {
						i++
						o.value = args[i]
					}
					j = len(s)
				}
				opts = append(opts, o)
			}
		}
	}
	return opts, nil, false
}

// has reports whether opts hold one of names.
func has(opts []opt, names ...string) bool {
	return slices.ContainsFunc(opts, func(o opt) bool { return slices.Contains(names, o.name) })
}

// value returns the value of the last of names in opts.
func value(opts []opt, names ...string) (word, bool) {
	for i := len(opts) - 1; i >= 0; i-- {
		if slices.Contains(names, opts[i].name) {
			return opts[i].value, true
		}
	}
	return word{}, false
}

// shells are the programs that run shell scripts: their -c script is
// parsed as a command line, their standard input is a script.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "rbash", "lksh", "pdksh", "oksh"}

// shell handles a POSIX shell: sh -c 'script' runs the script; sh file
// runs a file the line names; a shell given neither reads its script
// from standard input.
func (uw *unwrapped) shell(args []word) {
	dashC, plain, optArg, fileArg, fromStdin := false, true, false, false, false
	for i, w := range args {
		s := w.text
		switch {
		case !w.lit:
			// An option, a script or a script file built at run time.
			uw.opaque = OpaqueScript
			return
		case optArg:
			// The argument of -o/-O (also in -co, +o, …): never the
			// script, even after -c.
			optArg = false
		case fileArg:
			// The file of --rcfile: the shell runs more than the script.
			fileArg, plain = false, false
		case s == "--rcfile" || s == "--init-file":
			fileArg = true
		case s == "--" || s == "-":
			rest := args[i+1:]
			if len(rest) == 0 {
				break
			}
			uw.operand(rest[0], dashC, plain, fromStdin)
			return
		case len(s) > 1 && (s[0] == '-' || s[0] == '+') && s[1] != '-':
			if s[0] == '-' && strings.ContainsRune(s, 'c') {
				dashC = true
			}
			if s[0] == '-' && strings.ContainsAny(s, "si") {
				fromStdin = true
			}
			if strings.ContainsAny(s[1:], "oO") {
				optArg = true
			}
		case strings.HasPrefix(s, "--"):
		default:
			uw.operand(w, dashC, plain, fromStdin)
			return
		}
	}
	if dashC {
		// The script comes from elsewhere (xargs sh -c).
		uw.opaque = OpaqueArguments
		return
	}
	uw.fromStdin(plain)
}

// operand handles a shell's first operand: the script of -c, else the
// script file (unless -s or -i make it read standard input).
func (uw *unwrapped) operand(w word, dashC, plain, fromStdin bool) {
	switch {
	case dashC:
		uw.script(w)
		uw.transparent = plain
	case fromStdin:
		uw.fromStdin(plain)
	case !w.lit:
		uw.opaque = OpaqueScript
	case isStdinPath(w.text):
		uw.opaque, uw.stdinShell = OpaqueStdin, true
	default:
		uw.stdinShell = true // a script file may read commands too
	}
}

// fromStdin handles a shell that reads its script from standard input: a
// literal here-document or here-string is parsed like sh -c's script; a
// file is like a script file; anything else is opaque.
func (uw *unwrapped) fromStdin(plain bool) {
	switch {
	case uw.env.appended:
		uw.opaque = OpaqueArguments
	case uw.env.stdin.kind == stdinLiteral:
		uw.scriptText(uw.env.stdin.script)
		uw.transparent = plain
	case uw.env.stdin.kind == stdinFile:
	case uw.env.stdin.kind == stdinGoverned:
		// What it reads later is decided write by write; what it reads
		// first is known.
		if uw.env.stdin.script != "" {
			uw.scriptText(uw.env.stdin.script)
			uw.transparent = plain
		}
		uw.stdinShell = true
	default:
		uw.opaque, uw.stdinShell = OpaqueStdin, true
	}
}

// ShellReadsInput reports whether text written to the standard input of a
// process started with the command line cmdline (as a shell reads it: a
// shell call's command, an exec call's argv quoted) may run as shell
// commands: the line runs a shell (sh, bash, busybox sh, sudo -s, su,
// ssh HOST, …) that reads its commands from its input or a script file,
// or a program the policy cannot determine (an opaque command other than
// an interpreter's inline or standard-input code), or it does not parse.
// A runtime decides text written to such a process as a shell command
// line.
func ShellReadsInput(cmdline string) bool {
	sc := parseShell(cmdline)
	if sc.err != nil {
		return true
	}
	for i := range sc.cmds {
		c := &sc.cmds[i]
		if c.stdinShell {
			return true
		}
		switch c.opaque {
		case OpaqueProgram, OpaqueScript, OpaqueArguments, OpaqueRebind:
			return true
		}
	}
	return false
}

// interp describes an interpreter whose code the policy cannot read.
type interp struct {
	// inline are the options whose argument is code (-c, -e, --eval),
	// also attached (-cCODE, --eval=CODE).
	inline []string
	// bundled are the letters that make a bundle of short options carry
	// code (perl -ne, ruby -pe).
	bundled string
	// arg are the options that take the next word as their argument.
	arg []string
	// program are options that name what to run instead of a file
	// (python -m module): known, not opaque.
	program []string
	// awk: the first operand is the program, unless -f names its file.
	awk bool
	// sub: a first operand that is one of these runs code from the line
	// or standard input (deno eval, deno repl).
	sub []string
}

// noRun are options with which an interpreter runs no code.
var noRun = []string{"--version", "-V", "--help", "-h", "-v"}

// interpreters are the programs that run code in another language, by
// name without a version suffix (python3.12 is python).
var interpreters = map[string]interp{
	"python":    {inline: []string{"-c"}, arg: []string{"-W", "-X", "-Q"}, program: []string{"-m"}},
	"pypy":      {inline: []string{"-c"}, arg: []string{"-W", "-X"}, program: []string{"-m"}},
	"perl":      {inline: []string{"-e", "-E"}, bundled: "eE", arg: []string{"-I"}},
	"ruby":      {inline: []string{"-e"}, bundled: "e", arg: []string{"-I", "-r", "-E", "-C"}},
	"node":      {inline: []string{"-e", "--eval", "-p", "--print"}, arg: []string{"-r", "--require", "--import", "--loader", "--input-type"}},
	"nodejs":    {inline: []string{"-e", "--eval", "-p", "--print"}, arg: []string{"-r", "--require", "--import", "--loader", "--input-type"}},
	"bun":       {inline: []string{"-e", "--eval", "-p", "--print"}, sub: []string{"repl"}},
	"deno":      {inline: []string{"--eval"}, sub: []string{"eval", "repl"}},
	"php":       {inline: []string{"-r", "-B", "-R", "-E", "-F"}, arg: []string{"-c", "-d", "-z"}},
	"lua":       {inline: []string{"-e"}, arg: []string{"-l"}},
	"luajit":    {inline: []string{"-e"}, arg: []string{"-l", "-j", "-O"}},
	"Rscript":   {inline: []string{"-e"}},
	"R":         {inline: []string{"-e"}},
	"julia":     {inline: []string{"-e", "-E", "--eval", "--print"}},
	"pwsh":      {inline: []string{"-c", "-C", "-Command", "-command", "-EncodedCommand", "-e", "-ec"}},
	"tclsh":     {},
	"wish":      {},
	"expect":    {inline: []string{"-c"}},
	"osascript": {inline: []string{"-e"}},
	"fish":      {inline: []string{"-c", "--command"}, arg: []string{"-C", "--init-command"}},
	"csh":       {inline: []string{"-c"}},
	"tcsh":      {inline: []string{"-c"}},
	"xonsh":     {inline: []string{"-c"}},
	"elvish":    {inline: []string{"-c"}},
	"nu":        {inline: []string{"-c", "--commands"}},
	"awk":       {awk: true},
	"gawk":      {awk: true},
	"mawk":      {awk: true},
	"nawk":      {awk: true},
}

// interpreter handles a program that runs code in another language: code
// on the line or from standard input is opaque; a script file the line
// names is not (it is like any program).
func (uw *unwrapped) interpreter(in interp, args []word) {
	if in.awk {
		uw.awk(args)
		return
	}
	if len(args) > 0 && args[0].lit && slices.Contains(in.sub, args[0].text) {
		uw.opaque = OpaqueInline
		return
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		s := w.text
		name, _, _ := strings.Cut(s, "=")
		switch {
		case !w.lit:
			uw.opaque = OpaqueScript
			return
		case s == "-":
			uw.codeFromStdin()
			return
		case s == "--":
			if i+1 < len(args) {
				uw.scriptFile(args[i+1])
				return
			}
			uw.codeFromStdin()
			return
		case slices.Contains(noRun, s):
			return
		case slices.Contains(in.program, s) || slices.ContainsFunc(in.program, func(p string) bool { return len(s) > len(p) && strings.HasPrefix(s, p) }):
			return
		case slices.Contains(in.inline, name) || slices.ContainsFunc(in.inline, func(p string) bool {
			return len(p) == 2 && !strings.HasPrefix(s, "--") && len(s) > 2 && strings.HasPrefix(s, p)
		}):
			uw.opaque = OpaqueInline
			return
		case in.bundled != "" && len(s) > 1 && s[0] == '-' && s[1] != '-' && strings.ContainsAny(s[1:], in.bundled):
			uw.opaque = OpaqueInline
			return
		case slices.Contains(in.arg, s):
			i++
		case strings.HasPrefix(s, "-"):
		default:
			uw.scriptFile(w)
			return
		}
	}
	uw.codeFromStdin()
}

// scriptFile handles an interpreter's script file operand.
func (uw *unwrapped) scriptFile(w word) {
	switch {
	case !w.lit:
		uw.opaque = OpaqueScript
	case isStdinPath(w.text):
		uw.opaque = OpaqueStdin
	}
}

// codeFromStdin handles an interpreter that reads its code from standard
// input: opaque unless a file the line names is redirected into it.
func (uw *unwrapped) codeFromStdin() {
	switch {
	case uw.env.appended:
		uw.opaque = OpaqueArguments
	case uw.env.stdin.kind == stdinLiteral:
		uw.opaque = OpaqueInline
	case uw.env.stdin.kind != stdinFile:
		uw.opaque = OpaqueStdin
	}
}

// awk handles awk: its program is opaque when it can run commands
// (system(), print | "cmd", "cmd" | getline).
func (uw *unwrapped) awk(args []word) {
	opts, rest, bad := skipOptions(args, optSpec{arg: "FvfilE", long: []string{"--field-separator", "--assign", "--file", "--include", "--load", "--exec"}})
	switch {
	case bad:
		uw.opaque = OpaqueScript
	case has(opts, "-f", "--file", "-E", "--exec"):
	case len(rest) == 0:
	case !rest[0].lit:
		uw.opaque = OpaqueScript
	case strings.Contains(rest[0].text, "system") || strings.ContainsRune(rest[0].text, '|'):
		uw.opaque = OpaqueInline
	}
}

// wrapper handles a program that runs other commands or scripts, by
// name; it reports false for other programs.
func (uw *unwrapped) wrapper(name string, args []word) bool {
	switch name {
	case "env":
		uw.envProgram(args)
	case "command":
		uw.commandBuiltin(args)
	case "exec":
		uw.transparentWith(args, optSpec{arg: "a"}, 0)
	case "builtin", "nohup", "setsid":
		uw.transparentWith(args, optSpec{}, 0)
	case "nice":
		uw.transparentWith(args, optSpec{arg: "n", long: []string{"--adjustment"}}, 0)
	case "timeout":
		uw.transparentWith(args, optSpec{arg: "sk", long: []string{"--signal", "--kill-after"}}, 1)
	case "stdbuf":
		uw.transparentWith(args, optSpec{arg: "ioe", long: []string{"--input", "--output", "--error"}}, 0)
	case "time":
		uw.timeProgram(args)
	case "ionice":
		uw.ionice(args)
	case "taskset":
		uw.taskset(args)
	case "chrt":
		uw.chrt(args)
	case "busybox", "toybox":
		uw.busybox(args)
	case "sudo":
		uw.sudo(args)
	case "doas":
		uw.doas(args)
	case "su", "runuser":
		uw.su(args)
	case "chroot":
		uw.chroot(args)
	case "ssh":
		uw.ssh(args)
	case "rsync":
		uw.rsync(args)
	case "tar":
		uw.tar(args)
	case "xargs":
		uw.xargs(args)
	case "find":
		uw.find(args)
	case "watch":
		uw.watch(args)
	case "flock":
		uw.flock(args)
	case "script":
		uw.scriptProgram(args)
	case "git":
		uw.git(args)
	case "eval":
		uw.eval(args)
	case "source", ".":
		uw.source(args)
	case "trap":
		uw.trap(args)
	case "alias":
		uw.alias(args)
	case "hash":
		uw.rebinds(args, "p")
	case "enable":
		uw.rebinds(args, "f")
	default:
		return false
	}
	return true
}

// transparentWith handles a wrapper that only changes how its command
// runs (nice, timeout, nohup, …): options by spec, then skip operands
// (timeout's duration), then the command.
func (uw *unwrapped) transparentWith(args []word, spec optSpec, skip int) {
	_, rest, bad := skipOptions(args, spec)
	if bad {
		uw.opaque = OpaqueArguments
		return
	}
	if len(rest) < skip {
		return
	}
	uw.transparent = true
	uw.inner(rest[skip:], uw.env)
}

// env: env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE]… [COMMAND …].
func (uw *unwrapped) envProgram(args []word) {
	opts, rest, bad := skipOptions(args, optSpec{arg: "uCS", long: []string{"--unset", "--chdir", "--split-string"}})
	for len(rest) > 0 && rest[0].text == "-" {
		// "env -" is env -i.
		_, rest, bad = skipOptions(rest[1:], optSpec{arg: "uCS", long: []string{"--unset", "--chdir", "--split-string"}})
	}
	if bad {
		uw.opaque = OpaqueArguments
		return
	}
	env := uw.env
	rest = uw.assignments(rest, &env)
	uw.transparent = true
	if s, ok := value(opts, "-S", "--split-string"); ok {
		// -S splits its string into the command and its arguments.
		uw.scriptWords(append([]word{s}, rest...))
		return
	}
	uw.inner(rest, env)
}

// assignments takes the NAME=VALUE words at the start of words (env and
// sudo set them for the command), recording them in env, and returns the
// words after them.
func (uw *unwrapped) assignments(words []word, env *cmdEnv) []word {
	for len(words) > 0 && isAssignment(words[0].text) {
		env.assigns = true
		name, val, _ := strings.Cut(words[0].text, "=")
		uw.commandVariable(name, word{text: val, lit: words[0].lit})
		words = words[1:]
	}
	return words
}

// isAssignment reports whether s is NAME=VALUE.
func isAssignment(s string) bool {
	name, _, ok := strings.Cut(s, "=")
	return ok && name != "" && strings.TrimLeft(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == "" &&
		(name[0] < '0' || name[0] > '9')
}

// commandVariables are environment variables whose value is a command
// line that programs run (git's pager, an editor, ssh's command).
var commandVariables = []string{
	"PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
	"SUDO_EDITOR", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS",
	"PROMPT_COMMAND", "LESSOPEN", "LESSCLOSE",
}

// commandVariable records the command line a variable assignment gives a
// command-valued variable.
func (uw *unwrapped) commandVariable(name string, val word) {
	if !slices.Contains(commandVariables, name) {
		return
	}
	if !val.lit {
		uw.opaque = OpaqueScript
		return
	}
	uw.scriptText(val.text)
}

// assignment handles a variable assignment of a simple command or a
// declaration (GIT_PAGER='…' git log, export EDITOR=…): the command line a
// command-valued variable gets is parsed, and one built at run time is
// opaque.
func (sc *shellCommand) assignment(a *syntax.Assign, nested *[]string) {
	if a.Name == nil || a.Value == nil || !slices.Contains(commandVariables, a.Name.Value) {
		return
	}
	uw := &unwrapped{u: &unwrapper{sc: sc, nested: nested}}
	uw.commandVariable(a.Name.Value, makeWord(a.Value))
	if uw.opaque != "" {
		i := sc.add([]string{a.Name.Value + "=" + printNode(a.Value)}, true, false, false)
		sc.cmds[i].opaque = uw.opaque
	}
}

// commandBuiltin: command [-p] CMD runs CMD; command -v/-V only looks it
// up.
func (uw *unwrapped) commandBuiltin(args []word) {
	opts, rest, bad := skipOptions(args, optSpec{})
	switch {
	case bad:
		uw.opaque = OpaqueArguments
	case has(opts, "-v", "-V"):
	default:
		uw.transparent = true
		uw.inner(rest, uw.env)
	}
}

// timeProgram: time [-f FMT] [-o FILE] [-a] [-p] [-v] CMD (the program;
// the shell keyword is parsed as such).
func (uw *unwrapped) timeProgram(args []word) {
	opts, rest, bad := skipOptions(args, optSpec{arg: "fo", long: []string{"--format", "--output"}})
	if bad {
		uw.opaque = OpaqueArguments
		return
	}
	uw.writes = has(opts, "-o", "--output")
	uw.transparent = true
	uw.inner(rest, uw.env)
}

// ionice: ionice [-c CLASS] [-n LEVEL] [-t] CMD; with -p, -P or -u it
// acts on running processes and runs nothing.
func (uw *unwrapped) ionice(args []word) {
	opts, rest, bad := skipOptions(args, optSpec{arg: "cnpPu", long: []string{"--class", "--classdata", "--pid", "--pgid", "--uid"}})
	switch {
	case bad:
		uw.opaque = OpaqueArguments
	case has(opts, "-p", "-P", "-u", "--pid", "--pgid", "--uid"):
	default:
		uw.transparent = true
		uw.inner(rest, uw.env)
	}
}

// taskset: taskset [-c] MASK CMD; with -p it acts on a running process.
func (uw *unwrapped) taskset(args []word) {
	opts, rest, bad := skipOptions(args, optSpec{})
	switch {
	case bad:
		uw.opaque = OpaqueArguments
	case has(opts, "-p", "--pid") || len(rest) == 0:
	default:
		uw.transparent = true
		uw.inner(rest[1:], uw.env)
	}
}

// chrt: chrt [options] PRIORITY CMD; with -p it acts on a running
// process, with -m it only prints.
func (uw *unwrapped) chrt(args []word) {
	opts, rest, bad := skipOptions(args, optSpec{arg: "TPD", long: []string{"--sched-runtime", "--sched-period", "--sched-deadline"}})
	switch {
	case bad:
		uw.opaque = OpaqueArguments
	case has(opts, "-p", "--pid", "-m", "--max") || len(rest) == 0:
	default:
		uw.transparent = true
		uw.inner(rest[1:], uw.env)
	}
}

// busybox: busybox APPLET ARGS runs the applet (busybox sh -c …, busybox
// rm …).
func (uw *unwrapped) busybox(args []word) {
	if len(args) == 0 || strings.HasPrefix(args[0].text, "-") && args[0].lit {
		return
	}
	uw.transparent = true
	uw.inner(args, uw.env)
}

// sudo: sudo [options] [NAME=VALUE]… CMD; -s and -i run a shell, which
// reads its commands from standard input when no command is given.
func (uw *unwrapped) sudo(args []word) {
	opts, rest, bad := skipOptions(args, optSpec{arg: "CDghpRrtTUu", long: []string{
		"--close-from", "--chdir", "--group", "--host", "--prompt", "--chroot", "--role", "--type",
		"--command-timeout", "--other-user", "--user"}})
	if bad {
		uw.opaque = OpaqueArguments
		return
	}
	if has(opts, "-e", "--edit") {
		uw.writes = true
		return
	}
	if has(opts, "-l", "--list", "-v", "--validate", "-k", "-K", "--reset-timestamp", "--remove-timestamp", "-V", "--version", "-h", "--help") && len(rest) == 0 {
		return
	}
	env := uw.env
	rest = uw.assignments(rest, &env)
	if len(rest) == 0 && has(opts, "-s", "--shell", "-i", "--login") {
		uw.fromStdin(false)
		return
	}
	uw.inner(rest, env)
}

// doas: doas [-n] [-s] [-u USER] CMD; -C only checks a configuration.
func (uw *unwrapped) doas(args []word) {
	opts, rest, bad := skipOptions(args, optSpec{arg: "uaC"})
	switch {
	case bad:
		uw.opaque = OpaqueArguments
	case has(opts, "-C"):
	case len(rest) == 0 && has(opts, "-s"):
		uw.fromStdin(false)
	default:
		uw.inner(rest, uw.env)
	}
}

// su: su [options] [USER [ARG…]] runs -c's script with the user's shell,
// or a shell that reads its commands from standard input. su takes
// options after the user too.
func (uw *unwrapped) su(args []word) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		s := w.text
		switch {
		case !w.lit:
		case s == "-c" || s == "--command" || s == "--session-command":
			if i+1 < len(args) {
				uw.script(args[i+1])
				return
			}
		case strings.HasPrefix(s, "--command=") || strings.HasPrefix(s, "--session-command="):
			_, v, _ := strings.Cut(s, "=")
			uw.script(word{text: v, lit: true})
			return
		case len(s) > 2 && strings.HasPrefix(s, "-c"):
			uw.script(word{text: s[2:], lit: true})
			return
		case s == "-s" || s == "--shell" || s == "-g" || s == "--group" || s == "-G" || s == "--supp-group" || s == "-w" || s == "--whitelist-environment":
			i++
		}
	}
	uw.fromStdin(false)
}

// chroot: chroot [options] NEWROOT [CMD …]; without a command it runs a
// shell that reads standard input.
func (uw *unwrapped) chroot(args []word) {
	_, rest, bad := skipOptions(args, optSpec{long: []string{"--userspec", "--groups"}})
	switch {
	case bad:
		uw.opaque = OpaqueArguments
	case len(rest) == 0:
	case len(rest) == 1:
		uw.fromStdin(false)
	default:
		uw.inner(rest[1:], uw.env)
	}
}

// sshSpec are ssh's options that take an argument.
var sshSpec = optSpec{arg: "BbcDEeFIiJLlmOoPpQRSWw"}

// ssh: ssh [options] HOST [CMD …] runs the command line on the host, or
// a shell that reads standard input.
func (uw *unwrapped) ssh(args []word) {
	opts, rest, bad := skipOptions(args, sshSpec)
	if bad {
		uw.opaque = OpaqueArguments
		return
	}
	uw.sshOptions(opts)
	if has(opts, "-N", "-W", "-G", "-V", "-Q", "-O") || len(rest) == 0 {
		return
	}
	more, cmd, bad := skipOptions(rest[1:], sshSpec)
	uw.sshOptions(more)
	switch {
	case bad:
		uw.opaque = OpaqueArguments
	case has(more, "-N", "-W", "-G"):
	case len(cmd) == 0:
		uw.fromStdin(false)
	default:
		uw.scriptWords(cmd)
	}
}

// sshCommandOptions are the ssh -o options (lower case) whose value is a
// command line.
var sshCommandOptions = []string{"proxycommand", "localcommand", "knownhostscommand", "remotecommand"}

// sshOptions records the command lines ssh -o options run.
func (uw *unwrapped) sshOptions(opts []opt) {
	for _, o := range opts {
		if o.name != "-o" {
			continue
		}
		key, val, ok := strings.Cut(o.value.text, "=")
		if !ok {
			key, val, _ = strings.Cut(o.value.text, " ")
		}
		switch {
		case !o.value.lit:
			uw.opaque = OpaqueScript
		case slices.Contains(sshCommandOptions, strings.ToLower(strings.TrimSpace(key))):
			uw.scriptText(val)
		}
	}
}

// optionScripts records the command lines a program's own options run
// (rsync -e, tar --to-command): the value of each option named in long
// (--name=VALUE or --name VALUE) or short (-xVALUE, -x VALUE, or the last
// letter of a bundle, -avze VALUE).
func (uw *unwrapped) optionScripts(args []word, short string, long ...string) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		s := w.text
		next := func() {
			if i+1 < len(args) {
				i++
				uw.script(args[i])
			}
		}
		switch {
		case s == "--":
			return
		case strings.HasPrefix(s, "--"):
			name, val, hasVal := strings.Cut(s, "=")
			switch {
			case !slices.Contains(long, name):
			case hasVal:
				uw.script(word{text: val, lit: w.lit})
			default:
				next()
			}
		case len(s) > 1 && s[0] == '-':
			j := strings.IndexAny(s[1:], short)
			switch {
			case j < 0:
			case j+2 < len(s):
				uw.script(word{text: s[j+2:], lit: w.lit})
			default:
				next()
			}
		}
	}
}

// rsync runs -e (--rsh) to reach the remote host, and --rsync-path there.
func (uw *unwrapped) rsync(args []word) {
	uw.optionScripts(args, "e", "--rsh", "--rsync-path")
}

// tar runs --to-command, -I (--use-compress-program) and
// --checkpoint-action=exec=….
func (uw *unwrapped) tar(args []word) {
	uw.optionScripts(args, "I", "--to-command", "--use-compress-program", "--rsh-command")
	for _, w := range args {
		if v, ok := strings.CutPrefix(w.text, "--checkpoint-action=exec="); ok {
			uw.script(word{text: v, lit: w.lit})
		}
	}
}

// xargs: xargs [options] [CMD [ARG…]] runs the command with arguments
// read at run time, appended, or put in place of -I's placeholder.
func (uw *unwrapped) xargs(args []word) {
	opts, rest, bad := skipOptions(args, optSpec{arg: "adEILnPs", attached: "eil", long: []string{
		"--arg-file", "--delimiter", "--eof", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}})
	if bad {
		uw.opaque = OpaqueArguments
		return
	}
	env := uw.env
	env.stdin = stdin{kind: stdinUnknown}
	if r, ok := value(opts, "-I", "-i", "--replace"); ok {
		env.placeholder = cmp.Or(r.text, "{}")
	} else {
		env.appended = true
	}
	if len(rest) == 0 {
		return // it runs echo
	}
	uw.inner(rest, env)
}

// find runs the commands of -exec, -execdir, -ok and -okdir (up to ";",
// or "+" which appends file names), with {} for the file name; -delete
// and -fprint… write files.
func (uw *unwrapped) find(args []word) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch w.text {
		case "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
			uw.writes = true
		case "-exec", "-execdir", "-ok", "-okdir":
			end := i + 1
			for end < len(args) && args[end].text != ";" && args[end].text != "+" {
				end++
			}
			env := uw.env
			env.placeholder = "{}"
			env.stdin = stdin{kind: stdinUnknown}
			if end < len(args) && args[end].text == "+" {
				env.appended = true
			}
			uw.inner(args[i+1:end], env)
			i = end
		}
	}
}

// watch: watch [options] CMD … runs the words as a command line (sh -c),
// or as a command with -x.
func (uw *unwrapped) watch(args []word) {
	opts, rest, bad := skipOptions(args, optSpec{arg: "nq", long: []string{"--interval", "--equexit"}})
	switch {
	case bad:
		uw.opaque = OpaqueArguments
	case len(rest) == 0:
	case has(opts, "-x", "--exec"):
		uw.inner(rest, uw.env)
	default:
		uw.scriptWords(rest)
	}
}

// flock: flock [options] FILE CMD … or flock [options] FILE -c SCRIPT.
func (uw *unwrapped) flock(args []word) {
	opts, rest, bad := skipOptions(args, optSpec{arg: "wEc", long: []string{"--timeout", "--wait", "--conflict-exit-code", "--command"}})
	if bad {
		uw.opaque = OpaqueArguments
		return
	}
	if s, ok := value(opts, "-c", "--command"); ok {
		uw.script(s)
		return
	}
	if len(rest) < 2 {
		return
	}
	if c := rest[1]; c.lit && (c.text == "-c" || c.text == "--command") {
		if len(rest) > 2 {
			uw.script(rest[2])
		}
		return
	}
	uw.inner(rest[1:], uw.env)
}

// scriptProgram: script [options] [FILE] runs -c's command line, or a
// shell that reads standard input.
func (uw *unwrapped) scriptProgram(args []word) {
	opts, _, bad := skipOptions(args, optSpec{arg: "cEIOBTm", long: []string{
		"--command", "--echo", "--log-in", "--log-out", "--log-io", "--log-timing", "--logging-format", "--output-limit"}})
	switch {
	case bad:
		uw.opaque = OpaqueArguments
	case has(opts, "-V", "--version", "-h", "--help"):
	default:
		if s, ok := value(opts, "-c", "--command"); ok {
			uw.script(s)
			return
		}
		uw.fromStdin(false)
	}
}

// gitCommandKeys are git configuration keys (lower case, path.Match
// globs) whose value is a command line git runs.
var gitCommandKeys = []string{
	"core.pager", "core.editor", "core.sshcommand", "core.fsmonitor", "core.askpass", "core.gitproxy",
	"sequence.editor", "diff.external", "credential.helper", "credential.*.helper", "gpg.program", "gpg.*.program",
	"pager.*", "alias.*", "diff.*.textconv", "diff.*.command", "merge.*.driver", "filter.*.clean",
	"filter.*.smudge", "filter.*.process", "uploadpack.packobjectshook", "remote.*.uploadpack",
	"remote.*.receivepack", "interactive.difffilter", "sendemail.sendmailcmd", "web.browser", "browser.*.cmd",
}

// git: the values git -c gives command-valued keys are command lines.
func (uw *unwrapped) git(args []word) {
	opts, _, bad := skipOptions(args, optSpec{arg: "cC", long: []string{"--config-env", "--git-dir", "--work-tree", "--namespace", "--super-prefix"}})
	if bad {
		uw.opaque = OpaqueArguments
		return
	}
	for _, o := range opts {
		if o.name != "-c" && o.name != "--config-env" {
			continue
		}
		key, val, _ := strings.Cut(o.value.text, "=")
		key = strings.ToLower(key)
		if !slices.ContainsFunc(gitCommandKeys, func(g string) bool { ok, _ := path.Match(g, key); return ok }) {
			continue
		}
		switch {
		case o.name == "--config-env" || !o.value.lit:
			uw.opaque = OpaqueScript
		case strings.HasPrefix(key, "alias."):
			// An alias runs a shell command only when it starts with "!".
			if s, ok := strings.CutPrefix(val, "!"); ok {
				uw.scriptText(s)
			}
		default:
			uw.scriptText(val)
		}
	}
}

// eval runs its arguments, joined by spaces, as a command line.
func (uw *unwrapped) eval(args []word) {
	if len(args) == 0 {
		if uw.env.appended {
			uw.opaque = OpaqueArguments
		}
		return
	}
	for _, w := range args {
		if !w.lit || uw.env.placeholder != "" && strings.Contains(w.text, uw.env.placeholder) {
			uw.opaque = OpaqueScript
			return
		}
	}
	uw.transparent = true
	uw.scriptText(strings.Join(texts(args), " "))
}

// source (and .) runs a file in the current shell: a file built at run
// time or read from a descriptor is opaque.
func (uw *unwrapped) source(args []word) {
	switch {
	case len(args) == 0:
		if uw.env.appended {
			uw.opaque = OpaqueArguments
		}
	case !args[0].lit:
		uw.opaque = OpaqueScript
	case isStdinPath(args[0].text):
		uw.opaque = OpaqueStdin
	}
}

// trap ACTION SIGNAL… runs the action as a command line when the signal
// comes.
func (uw *unwrapped) trap(args []word) {
	_, rest, bad := skipOptions(args, optSpec{})
	switch {
	case bad:
		uw.opaque = OpaqueScript
	case len(rest) < 2, rest[0].lit && (rest[0].text == "-" || rest[0].text == ""):
	default:
		uw.script(rest[0])
	}
}

// alias NAME=VALUE… makes NAME run VALUE as a command line.
func (uw *unwrapped) alias(args []word) {
	for _, w := range args {
		if !w.lit {
			uw.opaque = OpaqueScript
			return
		}
		if _, v, ok := strings.Cut(w.text, "="); ok {
			uw.scriptText(v)
		}
	}
}

// rebinds handles a builtin that, given one of the letters as an option,
// changes what a command name runs (hash -p, enable -f).
func (uw *unwrapped) rebinds(args []word, letters string) {
	for _, w := range args {
		if !w.lit || len(w.text) > 1 && w.text[0] == '-' && strings.ContainsAny(w.text[1:], letters) {
			uw.opaque = OpaqueRebind
			return
		}
	}
}
