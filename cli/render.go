package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// This file holds the rendering helpers the operator commands share:
// relative times, a table with stable columns, colour that appears only
// on a terminal, and a progress line for long operations.

// relTime says when t was, relative to now, in a few characters: "just
// now", "45s ago", "3m ago", "2h05m ago", "1d4h ago"; a time ahead of now
// is "in 3m". The zero time is "-".
func relTime(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < -time.Second:
		return "in " + compactDuration(-d)
	case d < time.Second:
		return "just now"
	}
	return compactDuration(d) + " ago"
}

// relTimeOf is relTime of a time that may be missing.
func relTimeOf(now time.Time, t *time.Time) string {
	if t == nil {
		return "-"
	}
	return relTime(now, *t)
}

// style colours text for a terminal. The zero style leaves text plain.
type style struct{ on bool }

// newStyle colours only output to a terminal, and never with NO_COLOR
// set (https://no-color.org), TERM=dumb, or for JSON.
func newStyle(w io.Writer, asJSON bool) style {
	f, ok := w.(*os.File)
	if asJSON || !ok || !isTerminal(f) || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return style{}
	}
	return style{on: true}
}

// ANSI colours.
const (
	ansiRed    = "31"
	ansiGreen  = "32"
	ansiYellow = "33"
	ansiDim    = "2"
	ansiBold   = "1"
)

func (s style) paint(code, text string) string {
	if !s.on || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

func (s style) bold(text string) string { return s.paint(ansiBold, text) }
func (s style) dim(text string) string  { return s.paint(ansiDim, text) }

// status colours a status word by what it asks of an operator: nothing
// (green), attention (yellow) or action (red).
func (s style) status(text string) string {
	switch statusClass(text) {
	case "good":
		return s.paint(ansiGreen, text)
	case "attention":
		return s.paint(ansiYellow, text)
	case "bad":
		return s.paint(ansiRed, text)
	}
	return text
}

// statusClass sorts the status words of health checks, requests,
// tasks and actions.
func statusClass(status string) string {
	switch status {
	case "ok", "completed", "approved", "running", "pass":
		return "good"
	case "degraded", "warn", "pending", "waiting_permission", "waiting_input", "waiting_resource", "paused",
		"blocked", "retrying", "queued", "cancelling", "expired":
		return "attention"
	case "failed", "fail", "error", "stopped", "lost", "timed_out", "denied", "cancelled", "unhealthy":
		return "bad"
	}
	return ""
}

// table prints rows in columns sized to their widest cell, two spaces
// apart; the last column is not padded. Colour is added after padding,
// so it never moves a column.
type table struct {
	header []string
	rows   [][]string
	// paint colours the cells of a column, by index.
	paint map[int]func(string) string
}

func newTable(header ...string) *table {
	return &table{header: header, paint: map[int]func(string) string{}}
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the table, prefix before every line.
func (t *table) write(w io.Writer, prefix string, st style) {
	widths := make([]int, len(t.header))
	for _, r := range append([][]string{t.header}, t.rows...) {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], utf8.RuneCountInString(c))
			}
		}
	}
	line := func(cells []string, header bool) {
		var b strings.Builder
		b.WriteString(prefix)
		for i, c := range cells {
			pad := ""
			if i < len(cells)-1 {
				pad = strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2)
			}
			switch p := t.paint[i]; {
			case header:
				c = st.dim(c)
			case p != nil && st.on:
				c = p(c)
			}
			b.WriteString(c)
			b.WriteString(pad)
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(t.header, true)
	for _, r := range t.rows {
		line(r, false)
	}
}

// progress draws a one-line progress display on a terminal (standard
// error, so that it never mixes with output meant for a pipe) while a
// long operation runs; elsewhere it draws nothing. Use it from one
// goroutine.
type progress struct {
	w     io.Writer
	on    bool
	label string
	now   func() time.Time
	last  time.Time // of the last draw
	width int       // of the last line drawn
}

// newProgress draws on w only when w is a terminal.
func newProgress(w io.Writer, label string) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, on: ok && isTerminal(f), label: label, now: time.Now}
}

// progressEvery is the least time between two draws.
const progressEvery = 100 * time.Millisecond

// update shows how much of total (0: unknown) is done, at most every
// progressEvery, and always when done reaches total.
func (p *progress) update(done, total int64) {
	if !p.on {
		return
	}
	now := p.now()
	if now.Sub(p.last) < progressEvery && (total == 0 || done < total) {
		return
	}
	p.last = now
	text := p.label + " " + byteSize(done)
	if total > 0 {
		text = fmt.Sprintf("%s %3d%% (%s of %s)", p.label, done*100/total, byteSize(done), byteSize(total))
	}
	p.draw(text)
}

func (p *progress) draw(text string) {
	n := utf8.RuneCountInString(text)
	fmt.Fprintf(p.w, "\r%s%s", text, strings.Repeat(" ", max(p.width-n, 0)))
	p.width = n
}

// finish clears the progress line.
func (p *progress) finish() {
	if !p.on || p.width == 0 {
		return
	}
	fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
	p.width = 0
}

// byteSize writes n bytes in binary units: 512 B, 1.5 KiB, 3.2 MiB.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
