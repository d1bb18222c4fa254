// Package proc owns how agentrt runs external programs, such as command
// tools (package tool/command) and external checkers (package
// policy/checker): each runs without a shell in a process group of its
// own, and the whole group is killed when the caller gives up on it or is
// done with it, so that nothing the program started outlives it.
//
// It also bounds what is captured of a program's output ([CappedBuffer],
// [Excerpt]) and builds the base of a program's environment from the few
// daemon variables a program may see ([BaseEnv]), so that the daemon's
// secrets never reach it by accident.
//
// The programs it runs, and every other process agentrt starts, inherit
// no descriptor the daemon holds but standard input, output and error:
// Go opens its own descriptors close-on-exec, and [CloseInheritedOnExec]
// marks those a process inherited.
//
// What a program reads and writes, and how its failures are worded, stay
// with the package running it.
package proc
