//go:build !linux

package sandbox

// runProbe does nothing outside Linux, where nothing is sandboxed.
func runProbe() {}
