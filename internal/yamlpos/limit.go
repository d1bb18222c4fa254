package yamlpos

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/goccy/go-yaml/scanner"
	"github.com/goccy/go-yaml/token"
)

// The limits every document is held to, checked before it is parsed: the
// YAML parser's memory grows with the square of a document's nesting and
// its time with the square of a block mapping's keys, so a small hostile
// file could otherwise exhaust memory or hold a process for hours.
const (
	// MaxFileBytes is the largest file ReadFile reads and Parse parses
	// (10 MiB).
	MaxFileBytes = 10 << 20
	// MaxDepth is how deeply mappings and sequences may nest.
	MaxDepth = 256
	// MaxTokens is how many tokens (keys, values, indicators such as - or
	// {) a document may hold; the parser needs about half a kilobyte of
	// memory for each.
	MaxTokens = 1 << 17
	// MaxBlockKeys is how many keys one block mapping (one key per line)
	// may hold. The parser's work grows with the square of that number,
	// so the limit holds for the sum of the squares over all the
	// mappings of a document: a document may hold one mapping this large,
	// or a hundred a tenth of its size. Flow mappings ({k: v, …}) cost
	// no more than their tokens.
	MaxBlockKeys = 4096
)

// LimitError is a file past one of the limits above, found before it is
// parsed.
type LimitError struct {
	// Pos is where the document passes the limit: the token too deep, or
	// the one past MaxTokens. It is the zero Pos for a file too large,
	// which is about the file as a whole.
	Pos Pos
	// Message says which limit, as "nested more than 256 levels deep".
	Message string
}

// Error returns "line:column: message", or the message alone without a
// position.
func (e *LimitError) Error() string {
	if e.Pos == (Pos{}) {
		return e.Message
	}
	return fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Column, e.Message)
}

// FileError returns the error as a FileError of the named file.
func (e *LimitError) FileError(name string) *FileError {
	return &FileError{File: name, Line: e.Pos.Line, Column: e.Pos.Column, Message: e.Message}
}

func tooLarge() *LimitError {
	return &LimitError{Message: fmt.Sprintf("the file is larger than %d MiB, the most agentrt reads", MaxFileBytes>>20)}
}

func tooManyTokens(at Pos) *LimitError {
	return &LimitError{Pos: at, Message: fmt.Sprintf("the file holds more than %d YAML tokens (keys, values, - and such), the most agentrt reads", MaxTokens)}
}

// ReadFile reads the named file, refusing one larger than MaxFileBytes
// with a *LimitError without reading more than that.
func ReadFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxFileBytes {
		return nil, tooLarge()
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, tooLarge()
	}
	return data, nil
}

// blockLevel is one open block collection: a mapping whose keys, or a
// sequence whose dashes, start at column col.
type blockLevel struct {
	col  int
	seq  bool
	keys int // keys so far, for a mapping
}

// tokenizer keeps the tokens of the first document of a source that
// holds content, checking nesting and block keys as it goes.
type tokenizer struct {
	tokens  token.Tokens
	flow    int          // open flow collections ([ or {)
	block   []blockLevel // open block collections, outermost first
	props   int          // anchors, tags and ? keys in a row, each wrapping the next
	keyWork int          // block mapping keys' cost: the sum of each key's index in its mapping
	content bool         // the current document holds more than comments and markers
	ended   bool         // the document holding content was ended by --- or ...
	next    Pos          // the last --- after it, or else the first token of a second document
}

// tokenize returns the tokens of src's first document that holds
// content, and where a second one starts (the zero Pos when none does);
// the tokens after are not kept, so not parsed: every reader wants one
// document. It returns a *LimitError for a source past a limit. The
// scanner makes every token of a source in one go, so their number is
// bounded first, by countTokens; nesting and block keys are checked on
// the tokens, before the parser sees them.
func tokenize(src string) (token.Tokens, Pos, error) {
	if len(src) > MaxFileBytes {
		return nil, Pos{}, tooLarge()
	}
	if _, at := countTokens(src, MaxTokens); at != (Pos{}) {
		return nil, Pos{}, tooManyTokens(at)
	}
	z := &tokenizer{}
	var s scanner.Scanner
	s.Init(src)
	for {
		sub, err := s.Scan()
		if err == io.EOF {
			break
		}
		for _, tk := range sub {
			done, err := z.add(tk)
			if err != nil || done {
				return z.tokens, z.next, err
			}
		}
	}
	return z.tokens, Pos{}, nil
}

// add takes the next token. It reports done at the first token of a
// second document with content, which it leaves out with the markers
// before it.
func (z *tokenizer) add(tk *token.Token) (done bool, err error) {
	switch tk.Type {
	case token.CommentType, token.DirectiveType:
	case token.DocumentHeaderType, token.DocumentEndType:
		z.ended = z.content
		if z.ended && tk.Type == token.DocumentHeaderType {
			z.next = tokenPos(tk)
		}
		z.flow, z.block = 0, z.block[:0]
	default:
		if z.ended {
			if z.next == (Pos{}) {
				z.next = tokenPos(tk)
			}
			return true, nil
		}
		z.content = true
	}
	if z.ended {
		return false, nil
	}
	z.tokens.Add(tk)
	if len(z.tokens) > MaxTokens {
		return false, tooManyTokens(tokenPos(tk))
	}
	return false, z.nest(tk)
}

// nest follows the nesting of collections: flow ones by their brackets,
// block ones by the columns of their keys and dashes, as the parser
// reads indentation. A block mapping and a sequence of it may start at
// the same column (a list under a key often does), so a dash at a
// mapping's column opens a sequence inside it, and a key at a sequence's
// column closes the sequence.
func (z *tokenizer) nest(tk *token.Token) error {
	switch tk.Type {
	case token.AnchorType, token.TagType, token.MappingKeyType:
		// Each wraps what follows, as deeply as a collection would.
		if z.props++; z.props > MaxDepth {
			return &LimitError{Pos: tokenPos(tk), Message: fmt.Sprintf("more than %d anchors, tags and ? keys in a row", MaxDepth)}
		}
	case token.CommentType:
	default:
		if prev := tk.Prev; prev == nil || prev.Type != token.AnchorType { // not an anchor's name
			z.props = 0
		}
	}
	switch tk.Type {
	case token.SequenceStartType, token.MappingStartType:
		z.flow++
		return z.checkDepth(tk)
	case token.SequenceEndType, token.MappingEndType:
		z.flow = max(z.flow-1, 0)
		return nil
	}
	if z.flow > 0 {
		return nil
	}
	switch tk.Type {
	case token.SequenceEntryType:
		col := tokenPos(tk).Column
		z.closeBlocks(func(l blockLevel) bool { return l.col > col })
		if n := len(z.block); n > 0 && z.block[n-1].col == col && z.block[n-1].seq {
			return nil
		}
		z.block = append(z.block, blockLevel{col: col, seq: true})
		return z.checkDepth(tk)
	case token.MappingValueType, token.MappingKeyType:
		at := tokenPos(tk)
		col := at.Column
		if prev := tk.Prev; tk.Type == token.MappingValueType && prev != nil && tokenPos(prev).Line == at.Line && keyToken(prev) {
			col = tokenPos(prev).Column
		}
		z.closeBlocks(func(l blockLevel) bool { return l.col > col || l.col == col && l.seq })
		if n := len(z.block); n > 0 && z.block[n-1].col == col {
			top := &z.block[n-1]
			if tk.Type == token.MappingValueType {
				z.keyWork += top.keys
				top.keys++
			}
			if z.keyWork > MaxBlockKeys*(MaxBlockKeys-1)/2 {
				return &LimitError{Pos: tokenPos(tk), Message: fmt.Sprintf(
					"block mappings hold too many keys (more than %d in one mapping, or as costly across several); "+
						"write a long mapping in flow style, {key: value, …}", MaxBlockKeys)}
			}
			return nil
		}
		z.block = append(z.block, blockLevel{col: col, keys: 1})
		return z.checkDepth(tk)
	}
	return nil
}

// keyToken reports whether tk can be the key a ':' on its line belongs
// to: a scalar, or the end of a quoted one.
func keyToken(tk *token.Token) bool {
	switch tk.Type {
	case token.SequenceEndType, token.MappingEndType, token.CommentType, token.SequenceEntryType, token.MappingKeyType:
		return false
	}
	return true
}

func (z *tokenizer) closeBlocks(closes func(blockLevel) bool) {
	for n := len(z.block); n > 0 && closes(z.block[n-1]); n-- {
		z.block = z.block[:n-1]
	}
}

func (z *tokenizer) checkDepth(tk *token.Token) error {
	if len(z.block)+z.flow > MaxDepth {
		return &LimitError{Pos: tokenPos(tk), Message: fmt.Sprintf("nested more than %d levels deep", MaxDepth)}
	}
	return nil
}

// countTokens counts the tokens the YAML scanner would make of src, from
// above, reading the bytes once and allocating nothing; it stops at the
// first token past limit and returns its position. The scanner holds
// every token of a source at once, so this count, not the scanner's, is
// what keeps a dense file from costing gigabytes before any limit could
// be checked.
//
// Every token the scanner makes starts at a punctuation character or at
// the start of a word (a run of other characters between spaces), so
// counting those bounds the tokens from above. Three exceptions keep
// prose cheap, each where the scanner surely makes one token: a comment
// (a # at the start of a line or after a space), a quoted scalar that
// closes on its line and starts where a value does, and the content of
// a block scalar (| or > with a valid header where a value starts,
// outside brackets): the lines after it indented more than the key or
// dash it belongs to. A value starts at the start of a line or after
// "[", "{", "," or an indicator and a space (": ", "- ", "? ").
func countTokens(src string, limit int) (int, Pos) {
	c := tokenCounter{limit: limit, block: -1}
	for line := 1; len(src) > 0; line++ {
		l, rest, _ := strings.Cut(src, "\n")
		src = rest
		for more := true; more; { // the scanner breaks lines at \r too
			var seg string
			seg, l, more = strings.Cut(l, "\r")
			if c.line(seg) {
				return c.n, Pos{Line: line, Column: c.col}
			}
		}
	}
	return c.n, Pos{}
}

// punctuation are the characters the scanner may start a token at in the
// middle of a word.
const punctuation = "[]{},:-?#&*!|>'\"%@`"

// tokenCounter is countTokens's state.
type tokenCounter struct {
	limit int
	n     int
	col   int // 1-based column of the token past the limit
	// block is the indentation a block scalar's content must pass, while
	// in one; -1 otherwise.
	block int
	// flow is how many brackets are open, counted roughly: only to keep
	// | and > inside brackets from being taken for block scalars.
	flow int
}

// line counts the tokens of one line; it reports true when the count
// passes the limit.
func (c *tokenCounter) line(l string) bool {
	indent := len(l) - len(strings.TrimLeft(l, " "))
	if c.block >= 0 {
		if strings.TrimSpace(l) == "" || indent > c.block {
			return false
		}
		c.block = -1
	}
	owner := indent    // where the innermost key or dash of the line starts
	word := -1         // where the last word started
	valueStart := true // a value may start here
	for i := 0; i < len(l); {
		ch := l[i]
		switch {
		case ch == ' ' || ch == '\t':
			i++
			continue
		case ch == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t'):
			return c.add(i)
		case (ch == '"' || ch == '\'') && valueStart:
			if end := quoteEnd(l, i); end > 0 {
				if c.add(i) {
					return true
				}
				i, valueStart = end, false
				continue
			}
		case (ch == '|' || ch == '>') && valueStart && c.flow == 0 && blockHeader(l[i+1:]):
			c.block = owner
			if c.add(i) { // the indicator
				return true
			}
			return c.add(i) // and the content
		}
		if c.add(i) {
			return true
		}
		if strings.IndexByte(punctuation, ch) < 0 {
			word = i
			for i < len(l) && l[i] != ' ' && l[i] != '\t' && strings.IndexByte(punctuation, l[i]) < 0 {
				i++
			}
			valueStart = false
			continue
		}
		spaced := i+1 == len(l) || l[i+1] == ' ' || l[i+1] == '\t'
		switch ch {
		case '[', '{':
			c.flow++
		case ']', '}':
			c.flow = max(c.flow-1, 0)
		case '-', '?':
			if spaced {
				owner = i
			}
		case ':':
			if spaced && word >= 0 {
				owner = word
			}
		}
		valueStart = strings.IndexByte("[{,", ch) >= 0 || spaced && strings.IndexByte(":-?", ch) >= 0
		i++
	}
	return false
}

// blockHeader reports whether rest, what follows a | or >, is a block
// scalar's header: an indentation digit and a chomping indicator, in
// either order, then nothing but a comment. An indentation digit makes
// the content's indentation fixed, which the counter does not follow:
// it counts those lines.
func blockHeader(rest string) bool {
	h := strings.TrimRight(rest, " \t\r")
	if i := strings.Index(h, " #"); i >= 0 {
		h = strings.TrimRight(h[:i], " \t")
	}
	return h == "" || h == "-" || h == "+"
}

// add counts a token at index i of the line; it reports true when the
// count passes the limit.
func (c *tokenCounter) add(i int) bool {
	c.n++
	c.col = i + 1
	return c.n > c.limit
}

// quoteEnd returns the index after the quoted scalar starting at l[i], or
// 0 when it does not close on the line.
func quoteEnd(l string, i int) int {
	q := l[i]
	for j := i + 1; j < len(l); j++ {
		switch {
		case q == '"' && l[j] == '\\':
			j++
		case l[j] == q:
			return j + 1
		}
	}
	return 0
}
