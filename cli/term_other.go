//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package cli

import "os"

// windowWidth returns 0: the width of the terminal is not known here.
func windowWidth(*os.File) int { return 0 }
