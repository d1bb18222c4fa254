//go:build linux && !amd64 && !arm64

package sandbox

// seccompTable is nil: the filter knows only amd64's and arm64's system
// call numbers, so no profile can be enforced here.
var seccompTable *syscallTable
