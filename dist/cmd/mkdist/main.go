// Command mkdist builds the edge-agent release: tarballs for linux amd64
// and arm64, a zip for windows amd64 (left out, with a warning, while the
// agent does not compile for Windows), .deb and .rpm packages for linux
// amd64 and arm64, and SHA256SUMS listing every artifact.
//
//	go run ./cmd/mkdist -root .. -version 0.1.0 -out ../build/dist
//	go run ./cmd/mkdist -root .. -version 0.1.0 -targets linux/amd64 -packages=false
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
	targets := flag.String("targets", "", "comma-separated os/arch list (default linux/amd64,linux/arm64,windows/amd64)")
	flag.BoolVar(&o.Packages, "packages", true, "also build .deb and .rpm for every linux target")
	flag.Parse()
	if *targets != "" {
		ts, err := parseTargets(*targets)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mkdist:", err)
			os.Exit(2)
		}
		o.Targets = ts
	}
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
	for _, s := range res.Skipped {
		fmt.Fprintln(os.Stderr, "mkdist: warning: skipped", s)
	}
	for _, a := range res.Artifacts {
		fmt.Printf("%s  %s\n", a.SHA256, a.Path)
	}
	fmt.Println(res.Sums)
}

// parseTargets reads "linux/amd64,windows/amd64"; targets named on the
// command line are never optional: asking for one that does not build
// is an error.
func parseTargets(s string) ([]dist.Target, error) {
	var ts []dist.Target
	for _, f := range strings.Split(s, ",") {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(f), "/")
		if !ok || goos == "" || goarch == "" {
			return nil, fmt.Errorf("-targets: %q is not os/arch", f)
		}
		ts = append(ts, dist.Target{GOOS: goos, GOARCH: goarch})
	}
	return ts, nil
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
