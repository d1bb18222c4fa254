package policy

import (
	"slices"
	"time"
)

// Rule is one policy rule. Matchers left empty match every call; a rule
// applies to a call when all its matchers match. Rule files hold rules
// (see ParseRules); a rule built in code should be compiled (see
// Rule.Compile) before it is shared. A rule is not modified once it is
// in use.
type Rule struct {
	// ID is unique across all loaded rules.
	ID          string
	Description string
	Tier        Tier
	// Source is where the rule came from: "file:line" for a rule file,
	// "human" for a rule added by an approval, "config" for the inline
	// policy of agentrt.yaml.
	Source   string
	Priority int

	// Tools are tool name globs (path.Match syntax). MCPServers, Agents,
	// Intents, Principals and Roles are globs too; a call with no value
	// for one (a builtin tool has no MCP server) matches none of them.
	Tools      []string
	MCPServers []string
	Agents     []string
	Intents    []string
	Principals []string
	// Roles match when the principal has any of them.
	Roles []string
	// Modes match the mode the call is decided in.
	Modes []Mode
	// Annotations match the tool's annotations: each listed annotation
	// must have the given value on the call (Request.ReadOnly, …). An
	// MCP server's annotations are hints, so a rule that matches them
	// decides in their place: a deny rule on a tool its server calls
	// read-only denies it in every mode.
	Annotations map[Annotation]bool
	// When is a CEL expression over the tool input (bound as input, a map
	// with JSON integers as int and other numbers as double) and the call
	// (tool, agent, principal, intent, mode as strings, roles as a list of
	// strings); it must type-check to a bool. It is compiled once and
	// evaluated under a cost limit. An evaluation error, such as a missing
	// key or the cost limit, fails closed: a deny or ask rule applies, an
	// allow rule does not. Guard optional keys with has(input.key).
	When string
	// Command matches shell-like tools (calls with Request.Command set;
	// a rule with a Command never matches other calls). Every simple
	// command of the command line is checked, and the decision sets how
	// many must match: a deny or ask rule matches when any does (so a
	// deny on "rm -rf" catches "ls && rm -rf /"), an allow rule only when
	// all do (so an allow on "ls" does not allow "ls && rm -rf /"). See
	// CommandMatch.
	Command *CommandMatch
	// Checker names a checker: the rule matches only when it flags the
	// call's input.
	Checker string
	// SessionID limits a rule to one session (a rule added by
	// approve_for_session).
	SessionID string

	Decision   Outcome
	ReasonCode string
	Message    string

	// AddedBy and AddedAt say who added a human rule, and when.
	AddedBy string
	AddedAt time.Time

	// compiled holds the prepared matchers; nil until the rule is
	// compiled.
	compiled *compiledRule
}

// CommandMatch matches the simple commands of a shell command line. The
// kernel parses the line as bash and finds every simple command in it:
// in lists (&&, ||, ;), pipes, subshells and blocks, command and process
// substitutions, here-documents, loop, if and case bodies, function
// bodies, the scripts of sh -c '…', eval '…', su -c '…', ssh host '…',
// bash <<< '…' and the like when written as literal strings, and the
// command a wrapper runs (env, command, exec, nice, nohup, timeout,
// stdbuf, time, setsid, ionice, taskset, chrt, busybox, sudo, doas,
// chroot, flock, watch, xargs, find -exec; their own options skipped).
// A simple command's words are the words the shell would see with quotes
// and escapes removed ('rm' "-rf" is rm -rf); a word with expansions
// keeps its source form ("$HOME", "$(date)").
//
// A simple command matches when its words start with one of Prefixes
// (when there are any) and Regex matches (when set). Deny and ask rules
// also try a program given by path under its base name (/bin/rm as rm),
// and match a command line that does not parse, failing closed. Allow
// rules are stricter: every simple command must match, and a simple
// command that sets variables (FOO=1 cmd) or writes to a file (cmd > f,
// find -delete) is never covered, since either changes what the command
// does; a command line that does not parse is never allowed by a rule. A
// wrapper that only changes how its command runs (timeout 5 ls, nice ls,
// sh -c 'ls') is judged by that command alone; one that changes who or
// where it runs (sudo, ssh, xargs, find) must be covered as well.
//
// A simple command whose program cannot be determined statically is
// opaque (see OpaqueReason): $cmd, $(echo rm), … | sh, python -c, eval
// "$x". No prefix or regex allow rule covers it, and no deny rule can see
// into it; a line with one gets the kernel's Opaque decision unless a
// deny rule, or a rule with Opaque set, decides it.
type CommandMatch struct {
	// Prefixes match a simple command whose words start with the
	// prefix's words ("rm -rf" matches "rm -rf /tmp", not "rm -r").
	Prefixes []string
	// Regex matches a simple command's words joined by single spaces
	// (Go regexp syntax, unanchored unless written with ^ and $).
	Regex string
	// Opaque matches a command line that has an opaque command or does
	// not parse, whatever the rule's decision: a rule can deny opaque
	// lines (or ask, or allow them for an agent it trusts) in its own
	// tier and scope. It cannot be combined with Prefixes or Regex.
	Opaque bool
}

// Annotation names a tool annotation a rule can match, as rule files
// write it.
type Annotation string

// Annotations.
const (
	AnnotationReadOnly    Annotation = "read_only"
	AnnotationDestructive Annotation = "destructive"
	AnnotationIdempotent  Annotation = "idempotent"
	AnnotationOpenWorld   Annotation = "open_world"
)

// allAnnotations lists the annotations, in the order messages name them.
var allAnnotations = []Annotation{AnnotationReadOnly, AnnotationDestructive, AnnotationIdempotent, AnnotationOpenWorld}

// Valid reports whether a is one of the annotations.
func (a Annotation) Valid() bool { return slices.Contains(allAnnotations, a) }

// of returns the annotation's value on req.
func (a Annotation) of(req *Request) bool {
	switch a {
	case AnnotationReadOnly:
		return req.ReadOnly
	case AnnotationDestructive:
		return req.Destructive
	case AnnotationIdempotent:
		return req.Idempotent
	case AnnotationOpenWorld:
		return req.OpenWorld
	}
	return false
}
