package cli

import (
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file lays out the timeline's lines for a terminal of a given
// width: a line is made of spans that give way in a set order when it is
// too wide, and prose (a model's text, a result) wraps at word
// boundaries. Widths count runes, as oneLine does.

// A span is a piece of a timeline line: its text, its colour, and how it
// gives way when the line is wider than the terminal.
type span struct {
	text  string
	color string // an ANSI code; "" is plain
	// give is the order in which the span gives way (1 first); 0 keeps it
	// whole. A span that gives way is cut to fit, down to minCut runes,
	// or left out when drop is set.
	give int
	drop bool
}

// minCut is the fewest runes a span that gives way is cut to ("abcd…").
const minCut = 6

func plain(text string) span              { return span{text: text} }
func painted(color, text string) span     { return span{text: text, color: color} }
func flexible(give int, text string) span { return span{text: text, give: give} }

// fit makes spans fit in width runes: the spans that give way do, in
// their order (those of one rank together, each in proportion to what it
// can give), and if the line is still too wide it is cut at the end. A
// width of 0 leaves the spans as they are.
func fit(spans []span, width int) {
	if width <= 0 {
		return
	}
	over, last := -width, 0
	for _, s := range spans {
		over += utf8.RuneCountInString(s.text)
		last = max(last, s.give)
	}
	for rank := 1; rank <= last && over > 0; rank++ {
		can := 0
		for _, s := range spans {
			if s.give == rank {
				can += s.room()
			}
		}
		take := min(over, can)
		for i := range spans {
			s := &spans[i]
			r := s.room()
			if s.give != rank || r == 0 || over <= 0 {
				continue
			}
			share := min((take*r+can-1)/can, r, over)
			n := utf8.RuneCountInString(s.text)
			if s.drop {
				s.text = ""
				over -= n
				continue
			}
			s.text = cut(s.text, n-share)
			over -= share
		}
	}
	for i := len(spans) - 1; i >= 0 && over > 0; i-- {
		n := utf8.RuneCountInString(spans[i].text)
		keep := max(n-over, 0)
		spans[i].text = cut(spans[i].text, keep)
		over -= n - keep
	}
}

// room is how many runes s can give.
func (s span) room() int {
	n := utf8.RuneCountInString(s.text)
	if s.drop {
		return n
	}
	return max(n-minCut, 0)
}

// cut shortens s to n runes, the last of them "…" when anything is cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// render paints the spans and joins them, without trailing spaces.
func render(spans []span, st style) string {
	for i := len(spans) - 1; i >= 0; i-- {
		spans[i].text = strings.TrimRight(spans[i].text, " ")
		if spans[i].text != "" {
			break
		}
	}
	var b strings.Builder
	for _, s := range spans {
		if s.color == "" {
			b.WriteString(s.text)
		} else {
			b.WriteString(st.paint(s.color, s.text))
		}
	}
	return b.String()
}

// textBlock writes prose indented and, with a width, wrapped at word
// boundaries; a word longer than a line is broken. A word split across
// two writes (two streamed pieces) appears once it is whole, so that it
// never has to move to the next line after it was written. Runs of
// white space collapse to one space; a newline starts a new line.
type textBlock struct {
	w      io.Writer
	indent string
	width  int // 0: lines are not wrapped

	col   int    // runes on the current line; 0 before its indent
	fresh bool   // no word on the current line yet
	space bool   // a space goes before the next word
	word  []rune // the word not written yet
}

// newTextBlock continues a line the caller has begun, col runes wide;
// the block's other lines begin with indent.
func newTextBlock(w io.Writer, indent string, width, col int) *textBlock {
	return &textBlock{w: w, indent: indent, width: width, col: col, fresh: true}
}

func (b *textBlock) write(s string) {
	for _, r := range s {
		switch {
		case r == '\n':
			b.flushWord()
			b.newline()
		case unicode.IsSpace(r):
			b.flushWord()
			b.space = !b.fresh
		default:
			b.word = append(b.word, r)
		}
	}
}

// end writes what is held back and closing right after the text, and
// ends the line.
func (b *textBlock) end(closing string) {
	if closing != "" {
		b.space = b.space && len(b.word) > 0
		b.word = append(b.word, []rune(closing)...)
	}
	b.flushWord()
	io.WriteString(b.w, "\n")
}

func (b *textBlock) newline() {
	io.WriteString(b.w, "\n")
	b.col, b.fresh, b.space = 0, true, false
}

func (b *textBlock) flushWord() {
	if len(b.word) == 0 {
		return
	}
	word := b.word
	b.word = b.word[:0]
	need := len(word)
	if b.space {
		need++
	}
	if b.width > 0 && !b.fresh && b.col+need > b.width {
		b.newline()
	}
	for len(word) > 0 {
		if b.col == 0 {
			io.WriteString(b.w, b.indent)
			b.col = utf8.RuneCountInString(b.indent)
		}
		if b.space {
			io.WriteString(b.w, " ")
			b.col++
		}
		n := len(word)
		if room := b.width - b.col; b.width > 0 && n > room && room > 0 {
			n = room // longer than a line: broken
		}
		io.WriteString(b.w, string(word[:n]))
		b.col += n
		b.fresh, b.space = false, false
		if word = word[n:]; len(word) > 0 {
			b.newline()
		}
	}
}
