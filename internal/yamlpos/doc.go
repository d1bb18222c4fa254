// Package yamlpos owns positioned YAML values and problems for agentrt's
// YAML files: agentrt.yaml (package config), policy rule files (package
// policy) and replay scripts (package model/replay).
//
// Parse reads one document, whose values are resolved when asked for:
// anchors, aliases, tags and merge keys (<<) are followed within limits
// that keep a hostile file from exhausting memory or the stack, and each
// value remembers the line and column it is written at. A value converts
// to JSON with its keys in the order written.
//
// Before anything is parsed, a file is held to limits (MaxFileBytes,
// MaxDepth, MaxTokens, MaxBlockKeys) that keep the YAML parser, whose cost
// grows with the square of a document's nesting and of a block mapping's
// keys, from being made to exhaust memory or time by a small file; ReadFile
// refuses a file too large without reading it whole. A file past one is a
// [LimitError]. Only the first document of a file is parsed.
//
// Mistakes in how the YAML itself is written, such as an alias with no
// anchor or a key that is not a scalar, are reported as a [Problem] with a
// kind, a position and a message. What keys a file may hold and what their
// values mean stay with the package reading it, which may also word a
// Problem, a [JSONError] or a [SyntaxError] its own way.
//
// A package that reports every problem of a file at once, worded its way,
// can collect them as [FileErrors]: each [FileError] names the file, line
// and column, and [SortFileErrors] puts them in file and position order
// without duplicates. Packages config and policy export these types under
// their own names, as config.Error and config.Errors, policy.Error and
// policy.Errors.
package yamlpos
