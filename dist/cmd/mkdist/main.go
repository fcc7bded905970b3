// Command mkdist builds the edge-agent release tarball and SHA256SUMS.
//
//	go run ./cmd/mkdist -root .. -version 0.1.0 -out ../build/dist
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/dist"
)

func main() {
	o := dist.DefaultOptions(".")
	flag.StringVar(&o.Root, "root", "..", "repository root (holds go.work)")
	flag.StringVar(&o.OutDir, "out", "", "output folder (default <root>/build/dist)")
	flag.StringVar(&o.Version, "version", "", "release version, e.g. 0.1.0 (required)")
	flag.StringVar(&o.Commit, "commit", "", "commit id stamped into the binary (default: git HEAD)")
	flag.StringVar(&o.GOOS, "goos", "linux", "target OS")
	flag.StringVar(&o.GOARCH, "goarch", "amd64", "target architecture")
	flag.Parse()
	if o.OutDir == "" {
		o.OutDir = o.Root + "/build/dist"
	}
	if o.Commit == "" {
		o.Commit = git(o.Root, "rev-parse", "--short=12", "HEAD")
	}
	epoch, err := sourceDateEpoch(o.Root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkdist:", err)
		os.Exit(1)
	}
	o.Epoch = epoch
	res, err := dist.Build(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkdist:", err)
		os.Exit(1)
	}
	fmt.Printf("%s\n%s  sha256=%s\n", res.Tarball, res.Sums, res.SHA256)
}

// sourceDateEpoch honours SOURCE_DATE_EPOCH, else the last commit's time,
// so rebuilding the same commit gives the same bytes.
func sourceDateEpoch(root string) (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		s = git(root, "log", "-1", "--format=%ct")
	}
	if s == "" {
		return time.Unix(0, 0), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q is not a Unix time: %w", s, err)
	}
	return time.Unix(n, 0), nil
}

func git(dir string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
