//go:build !linux

package builtin

import "os"

// fdPath is Linux's; elsewhere the path is resolved by name.
func fdPath(*os.File) (string, bool) { return "", false }
