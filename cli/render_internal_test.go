package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRelTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{time.Time{}, "-"},
		{now, "just now"},
		{now.Add(-45 * time.Second), "45s ago"},
		{now.Add(-3 * time.Minute), "3m ago"},
		{now.Add(-(2*time.Hour + 5*time.Minute)), "2h05m ago"},
		{now.Add(-28 * time.Hour), "1d4h ago"},
		{now.Add(5 * time.Minute), "in 5m"},
	} {
		if got := relTime(now, tc.at); got != tc.want {
			t.Errorf("relTime(%v) = %q, want %q", tc.at, got, tc.want)
		}
	}
	if got := relTimeOf(now, nil); got != "-" {
		t.Errorf("relTimeOf(nil) = %q", got)
	}
}

// TestTableColourKeepsColumns: painting a column on a terminal adds
// escape codes after the padding, so the plain text of each line is the
// same with and without colour.
func TestTableColourKeepsColumns(t *testing.T) {
	t.Parallel()
	tab := newTable("NAME", "STATUS", "REASON")
	tab.row("store", "ok", "-")
	tab.row("workers", "degraded", "2 of 4 stalled")
	var plain, coloured bytes.Buffer
	tab.paint[1] = style{}.status
	tab.write(&plain, "  ", style{})
	on := style{on: true}
	tab.paint[1] = on.status
	tab.write(&coloured, "  ", on)
	want := "  NAME     STATUS    REASON\n  store    ok        -\n  workers  degraded  2 of 4 stalled\n"
	if plain.String() != want {
		t.Errorf("plain table:\n%q\nwant\n%q", plain.String(), want)
	}
	if !strings.Contains(coloured.String(), "\x1b[33mdegraded\x1b[0m") || !strings.Contains(coloured.String(), "\x1b[32mok\x1b[0m") {
		t.Errorf("coloured table has no status colours:\n%q", coloured.String())
	}
	strip := strings.NewReplacer("\x1b[0m", "", "\x1b[2m", "", "\x1b[32m", "", "\x1b[33m", "")
	if got := strip.Replace(coloured.String()); got != want {
		t.Errorf("coloured table without its codes:\n%q\nwant\n%q", got, want)
	}
}

// TestStyleOnlyOnTerminal: no colour for a buffer, a file, or JSON.
func TestStyleOnlyOnTerminal(t *testing.T) {
	t.Parallel()
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, s := range map[string]style{
		"buffer": newStyle(&bytes.Buffer{}, false),
		"file":   newStyle(f, false),
		"json":   newStyle(os.Stdout, true),
	} {
		if s.on || s.status("failed") != "failed" || s.bold("x") != "x" {
			t.Errorf("%s: style is on", name)
		}
	}
}

// TestProgress: a progress line draws on a terminal only, at most every
// progressEvery (and always at the end), and finish clears it.
func TestProgress(t *testing.T) {
	t.Parallel()
	var off bytes.Buffer
	p := newProgress(&off, "exporting")
	p.update(10, 100)
	p.finish()
	if off.Len() != 0 {
		t.Errorf("progress drew off a terminal: %q", off.String())
	}

	var out bytes.Buffer
	now := time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)
	p = &progress{w: &out, on: true, label: "exporting", now: func() time.Time { return now }}
	p.update(512, 3<<20)
	now = now.Add(10 * time.Millisecond)
	p.update(1<<20, 3<<20) // too soon: skipped
	p.update(3<<20, 3<<20) // the end: drawn
	p.finish()
	want := "\rexporting   0% (512 B of 3.0 MiB)" +
		"\rexporting 100% (3.0 MiB of 3.0 MiB)" +
		"\r" + strings.Repeat(" ", len("exporting 100% (3.0 MiB of 3.0 MiB)")) + "\r"
	if out.String() != want {
		t.Errorf("progress output:\n%q\nwant\n%q", out.String(), want)
	}
	if got := byteSize(1536); got != "1.5 KiB" {
		t.Errorf("byteSize(1536) = %q", got)
	}
}
