package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is stamped at link time by `make build` and the dist builder:
//
//	-ldflags "-X main.version=v0.1.0"
//
// Unstamped builds (go build, go run, go install) fall back to the module
// version Go records in the binary.
var version = ""

func printVersion(w io.Writer) {
	v := version
	if v == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			v = bi.Main.Version
		}
	}
	if v == "" {
		v = "unknown"
	}
	fmt.Fprintf(w, "edgesocket-receiver %s (%s %s/%s)\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
