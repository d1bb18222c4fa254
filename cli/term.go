package cli

import (
	"io"
	"os"

	"golang.org/x/term"
)

// terminal returns w as a file when it is a terminal.
func terminal(w io.Writer) (*os.File, bool) {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(f) {
		return nil, false
	}
	return f, true
}

// windowWidth asks the terminal for its width; 0 when it does not say.
func windowWidth(f *os.File) int {
	w, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return w
}
