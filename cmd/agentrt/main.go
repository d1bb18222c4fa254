// Command agentrt is the agentrt binary: the daemon (serve), the developer
// and operator commands (run, bench, version). See docs/cli.md.
package main

import (
	"os"

	"github.com/agentrt/agentrt/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
