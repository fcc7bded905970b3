// Command failstart stands in for a release of edge-agent that is broken
// at start: it passes the checks a staged binary must pass (`version`
// names the version it is built as, `config check` accepts any config)
// and exits 1 at `start`, before it could report healthy. The upgrade
// e2e tests offer it to see the agent roll back.
package main

import (
	"fmt"
	"os"
)

// version is set with -ldflags "-X main.version=V".
var version = "0.0.0"

func main() {
	args := os.Args[1:]
	switch {
	case len(args) > 0 && args[0] == "version":
		fmt.Printf("edge-agent %s\n", version)
	case len(args) > 1 && args[0] == "config" && args[1] == "check":
		fmt.Println("OK")
	default:
		fmt.Fprintln(os.Stderr, "failstart: this build fails at start on purpose")
		os.Exit(1)
	}
}
