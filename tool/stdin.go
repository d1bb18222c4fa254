package tool

import (
	"encoding/json"

	"github.com/agentrt/agentrt/sandbox"
)

// StdinWriter is implemented by a tool whose calls write to the standard
// input of a process an earlier call started (write_process_stdin). What
// a call writes is governed by what reads it: the coordinator decides text
// written to a process that runs a shell as a call of the shell tool
// running that text, with the same rules, hooks and checkers.
type StdinWriter interface {
	Tool
	// StdinTarget returns the process a call with input would write to in
	// session sessionID, and what it would write; ok is false when the
	// input names no live process of the session.
	StdinTarget(sessionID string, input json.RawMessage) (t StdinTarget, ok bool)
}

// StdinTarget is the process a call writes to.
type StdinTarget struct {
	ProcessID string
	// Command is the command line the process was started with, as a
	// shell reads it: a shell call's command, an exec call's argv quoted.
	Command string
	// Pending is the unfinished line written to the process before (see
	// UnfinishedLine): a shell runs it with what the call writes.
	Pending string
	// Text is what the call writes.
	Text string
	// Profile is the sandbox profile the process runs under; a call that
	// writes to it runs nothing under another.
	Profile sandbox.Profile
	// Shell is the tool that runs command lines (its CommandField names
	// the input field): text written to a process that runs a shell is
	// decided as a call of it.
	Shell Spec
}

// UnfinishedLine returns the end of s that a shell reading s line by line
// has not run yet: what follows the last newline that no backslash
// escapes.
func UnfinishedLine(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != '\n' {
			continue
		}
		backslashes := 0
		for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return s[i+1:]
		}
	}
	return s
}
