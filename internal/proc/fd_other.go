//go:build !linux

package proc

// CloseInheritedOnExec does nothing outside Linux, where the sandbox does
// not run.
func CloseInheritedOnExec() error { return nil }
