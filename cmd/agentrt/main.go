// Command agentrt is the agentrt binary: the daemon (serve), the developer
// and operator commands (run, bench, version). See docs/cli.md.
package main

import (
	"os"

	"github.com/agentrt/agentrt/cli"
	"github.com/agentrt/agentrt/sandbox"
)

func main() {
	sandbox.Main()
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
