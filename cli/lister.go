package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// This file holds the one output convention of every list command
// (approvals list and watch, requests list and tail, sessions list, tasks
// list, queue list, token list): a table for a person at a terminal, and
// JSON Lines — one object a line, the object the HTTP API answers for the
// item — when standard output is not a terminal (a pipe, a file) or with
// --json. Scripts never parse a table, and people never read JSON they
// did not ask for.

// lister prints the items of a list command, in one batch or, for a
// command that follows (watch, tail), in several: the table's header is
// printed once, and its columns keep their widths across batches unless
// a cell needs more. Every column but the last is printed whole (ids are
// meant to be copied); the last is cut to what the terminal's width
// leaves.
type lister[T any] struct {
	w     io.Writer
	table bool
	width int // the terminal's width, for the last column
	st    style

	header []string
	// row makes an item's cells, one per column.
	row func(*T) []string
	// minWidths are the columns' least widths (nil: the header's), so
	// that the rows of a following command stay aligned as they come.
	minWidths []int
	// paint colours a column's cells, by index, after padding: colour
	// never moves a column.
	paint map[int]func(style, string) string
	// none is what a table says for a first batch without items; empty,
	// the header is printed instead (a following command: rows come).
	none string

	said   bool  // a batch was printed
	headed bool  // the header was printed
	widths []int // the columns' widths so far
}

// newLister prints a table when w is a terminal and asJSON is false, and
// JSON Lines otherwise.
func newLister[T any](w io.Writer, asJSON bool, header []string, row func(*T) []string) *lister[T] {
	l := &lister[T]{w: w, header: header, row: row, paint: map[int]func(style, string) string{}}
	if f, ok := w.(*os.File); ok && !asJSON && isTerminal(f) {
		l.table, l.width, l.st = true, terminalWidth(f), newStyle(w, false)
	}
	return l
}

// tableOf is l printing a table width columns wide, whatever its writer
// is: for tests.
func (l *lister[T]) tableOf(width int) *lister[T] {
	l.table, l.width = true, width
	return l
}

// print prints a batch of items.
func (l *lister[T]) print(items []T) error {
	if !l.table {
		enc := json.NewEncoder(l.w)
		enc.SetEscapeHTML(false)
		for i := range items {
			if err := enc.Encode(&items[i]); err != nil {
				return err
			}
		}
		return nil
	}
	first := !l.said
	l.said = true
	if len(items) == 0 && (!first || l.none != "") {
		if first {
			_, err := fmt.Fprintln(l.w, l.none)
			return err
		}
		return nil
	}
	rows := make([][]string, len(items))
	for i := range items {
		rows[i] = l.row(&items[i])
	}
	if l.widths == nil {
		l.widths = make([]int, len(l.header))
		for i, h := range l.header {
			l.widths[i] = utf8.RuneCountInString(h)
			if i < len(l.minWidths) {
				l.widths[i] = max(l.widths[i], l.minWidths[i])
			}
		}
	}
	last := len(l.header) - 1
	for _, row := range rows {
		for i, cell := range row[:last] {
			l.widths[i] = max(l.widths[i], utf8.RuneCountInString(oneLine(cell, len(cell))))
		}
	}
	used := 0
	for _, w := range l.widths[:last] {
		used += w + 2
	}
	lastWidth := max(l.width-used, 20)
	var b strings.Builder
	if !l.headed {
		l.headed = true
		l.line(&b, l.header, lastWidth, true)
	}
	for _, row := range rows {
		l.line(&b, row, lastWidth, false)
	}
	_, err := io.WriteString(l.w, b.String())
	return err
}

// line writes one line of the table.
func (l *lister[T]) line(b *strings.Builder, cells []string, lastWidth int, header bool) {
	last := len(l.header) - 1
	var line strings.Builder
	for i, cell := range cells[:last+1] {
		width := lastWidth
		if i < last {
			width = max(len(cell), 10) // whole: only whitespace is folded
		}
		cell = oneLine(cell, width)
		painted := cell
		switch p := l.paint[i]; {
		case header:
			painted = l.st.dim(cell)
		case p != nil:
			painted = p(l.st, cell)
		}
		line.WriteString(painted)
		if i < last {
			line.WriteString(strings.Repeat(" ", l.widths[i]-utf8.RuneCountInString(cell)+2))
		}
	}
	b.WriteString(strings.TrimRight(line.String(), " "))
	b.WriteByte('\n')
}

// paintStatus colours a status cell by what it asks of an operator.
func paintStatus(st style, cell string) string { return st.status(cell) }

// paintStatusWord colours the status that starts a cell, not the reason
// after it.
func paintStatusWord(st style, cell string) string {
	word, rest, ok := strings.Cut(cell, " ")
	if !ok {
		return st.status(cell)
	}
	return st.status(word) + " " + rest
}

// collect reads up to limit records page by page: fetch reads a page of
// at most n records from cursor ("" for the first) and returns them and
// the next page's cursor ("" after the last).
func collect[T any](limit int, fetch func(n int, cursor string) ([]T, string, error)) ([]T, error) {
	var all []T
	cursor := ""
	for len(all) < limit {
		page, next, err := fetch(limit-len(all), cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" || len(page) == 0 {
			break
		}
		cursor = next
	}
	return all[:min(len(all), limit)], nil
}
