// Command edge-agent tails local files and delivers every line to Apache
// SeaTunnel over the EdgeSocket protocol. See `edge-agent --help`.
//
// Everything lives in package cli, including the version stamps that release
// builds set with -ldflags -X (see cli.Version).
package main

import (
	"os"

	"github.com/edge-agent/edge-agent/starter/internal/cli"
)

func main() {
	os.Exit(cli.Main())
}
