// Command mkdist builds the edge-agent release: a tarball, a .deb and a
// .rpm for every linux CPU (amd64, arm64, armv6, armv7, 386, riscv64,
// ppc64le, s390x), a zip for windows amd64 (left out, with a warning,
// while the agent does not compile for Windows), and SHA256SUMS listing
// every artifact.
//
//	go run ./cmd/mkdist -root .. -version 0.1.0 -out ../build/dist
//	go run ./cmd/mkdist -root .. -version 0.1.0 -targets linux/amd64,linux/armv7 -packages=false
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	targets := flag.String("targets", "", "comma-separated os/arch list such as linux/amd64,linux/armv7 (default: every released target)")
	flag.BoolVar(&o.Packages, "packages", true, "also build .deb and .rpm for every linux target")
	flag.BoolVar(&o.SBOM, "sbom", true, "write a CycloneDX SBOM beside every archive and package")
	key := flag.String("key", os.Getenv("EDGE_AGENT_RELEASE_KEY_FILE"), "release signing key file (edge-agent package keygen; default $EDGE_AGENT_RELEASE_KEY_FILE, else $EDGE_AGENT_RELEASE_KEY, else a throwaway key)")
	throwaway := flag.String("throwaway-key", "", "where the throwaway key of a local build is kept (default <root>/build/THROWAWAY-local-build.key)")
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
	cleanup, err := signingKey(&o, *key, *throwaway)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkdist:", err)
		os.Exit(1)
	}
	res, err := dist.Build(context.Background(), o)
	cleanup()
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
	if res.PublicKey != "" {
		fmt.Println(res.PublicKey)
	}
}

// throwawayName marks the key of a local build, and its public key file,
// as not the project's: a user who sees it beside artifacts knows they
// were not released.
const throwawayName = "THROWAWAY-local-build"

// signingKey chooses the key that signs the release: -key (or
// $EDGE_AGENT_RELEASE_KEY_FILE), else $EDGE_AGENT_RELEASE_KEY (the key
// file's content, for CI secrets; written to a 0600 temporary file that
// cleanup removes), else a throwaway key kept under build/ so rebuilds
// sign with the same key and stay byte-identical.
func signingKey(o *dist.Options, file, throwaway string) (cleanup func(), err error) {
	cleanup = func() {}
	switch {
	case file != "":
		o.SigningKey = file
	case os.Getenv("EDGE_AGENT_RELEASE_KEY") != "":
		f, err := os.CreateTemp("", "edge-agent-release-key-")
		if err != nil {
			return cleanup, fmt.Errorf("EDGE_AGENT_RELEASE_KEY: %w", err)
		}
		cleanup = func() { _ = os.Remove(f.Name()) }
		_, err = f.WriteString(os.Getenv("EDGE_AGENT_RELEASE_KEY") + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			cleanup()
			return func() {}, fmt.Errorf("EDGE_AGENT_RELEASE_KEY: %w", err)
		}
		o.SigningKey = f.Name()
	default:
		if throwaway == "" {
			throwaway = filepath.Join(o.Root, "build", throwawayName+".key")
		}
		o.SigningKey, o.GenerateKey = throwaway, true
		o.PublicKeyName = throwawayName + ".pub"
		fmt.Fprintf(os.Stderr, "mkdist: warning: no release key (-key, EDGE_AGENT_RELEASE_KEY_FILE or EDGE_AGENT_RELEASE_KEY): signing with the throwaway key %s; do not publish these artifacts\n", throwaway)
	}
	return cleanup, nil
}

// parseTargets reads "linux/amd64,windows/amd64"; targets named on the
// command line are never optional: asking for one that does not build
// is an error.
func parseTargets(s string) ([]dist.Target, error) {
	var ts []dist.Target
	for _, f := range strings.Split(s, ",") {
		t, err := dist.ParseTarget(f)
		if err != nil {
			return nil, fmt.Errorf("-targets: %w", err)
		}
		ts = append(ts, t)
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
