package dist

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Binary is one Go main package to build into bin/.
type Binary struct {
	Name string // file name in bin/ (".exe" is added for Windows)
	Dir  string // module directory holding the package
	Pkg  string // package path relative to Dir, e.g. "./cmd/edge-agent"
}

// Options describe one release build.
type Options struct {
	Root     string    // repository root (go.work lives here)
	OutDir   string    // where the artifacts and SHA256SUMS go
	Version  string    // e.g. 0.1.0
	Commit   string    // stamped into the binary
	Epoch    time.Time // SOURCE_DATE_EPOCH: archive mtimes and the build date
	Targets  []Target
	Binaries []Binary
	// Files maps a path inside the archive (below the top folder) to a
	// source path relative to Root.
	Files map[string]string
	// UnixFiles are added to tarballs only (the systemd unit).
	UnixFiles map[string]string
	// EmptyDirs are created empty inside the archive (data/, log/).
	EmptyDirs []string
	// Packages builds .deb and .rpm for every linux target.
	Packages bool
	// SBOM writes ARTIFACT.cdx.json, a CycloneDX SBOM, beside every
	// archive and package.
	SBOM bool
	// SigningKey, when set, is the private key file (edge-agent package
	// keygen) that signs every artifact, SBOM and SHA256SUMS: a detached
	// signature, FILE.sig, as edge-agent package sign prints it. With
	// GenerateKey a missing file is created first.
	SigningKey  string
	GenerateKey bool
	// PublicKeyName is the file in OutDir the signing key's public key is
	// written to, for users to see which key signed the release.
	PublicKeyName string
}

// DefaultOptions returns the edge-agent release layout: a tarball, a .deb
// and a .rpm for every linux CPU of defaultTargets, and a zip for windows
// amd64.
func DefaultOptions(root string) Options {
	return Options{
		Root:    root,
		OutDir:  filepath.Join(root, "build", "dist"),
		Targets: defaultTargets(),
		Binaries: []Binary{
			{Name: "edge-agent", Dir: "starter", Pkg: "./cmd/edge-agent"},
			{Name: "edgesocket-receiver", Dir: "transport", Pkg: "./cmd/edgesocket-receiver"},
		},
		Files: merge(map[string]string{
			"config/agent.yaml": "config/agent.yaml",
			"README.md":         operatorGuide,
			"LICENSE":           "LICENSE",
		}, monitoringFiles),
		UnixFiles: map[string]string{
			"systemd/edge-agent.service": "dist/packaging/edge-agent.service",
		},
		EmptyDirs:     []string{"data", "log"},
		Packages:      true,
		SBOM:          true,
		PublicKeyName: "edge-agent-release.pub",
	}
}

// operatorGuide is shipped as README.md in every artifact; the developer
// README stays in the repository.
const operatorGuide = "dist/packaging/README.operator.md"

// monitoringFiles are the Grafana dashboard and the Prometheus alert rules,
// by their path in the archive; the packages put them under
// /opt/edge-agent/monitoring.
var monitoringFiles = map[string]string{
	"monitoring/edge-agent.dashboard.json": "dist/monitoring/edge-agent.dashboard.json",
	"monitoring/edge-agent.rules.yml":      "dist/monitoring/edge-agent.rules.yml",
}

// Artifact is one file Build wrote.
type Artifact struct {
	Path   string
	SHA256 string
}

// Result names what Build wrote.
type Result struct {
	Artifacts  []Artifact // archives, packages and SBOMs: what SHA256SUMS lists
	Sums       string     // path of SHA256SUMS
	Signatures []string   // the .sig of every artifact and of SHA256SUMS
	PublicKey  string     // path of the public key file, when signed
	Skipped    []string   // optional targets left out, with the reason
}

// Build compiles the binaries once per target and writes every archive and
// package with its SBOM, then SHA256SUMS listing them all, then a detached
// signature of each and of SHA256SUMS.
func Build(ctx context.Context, o Options) (Result, error) {
	if o.Version == "" {
		return Result{}, errors.New("dist: version is empty")
	}
	work, err := os.MkdirTemp("", "edge-agent-dist-")
	if err != nil {
		return Result{}, fmt.Errorf("dist: temp dir: %w", err)
	}
	defer os.RemoveAll(work)
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return Result{}, fmt.Errorf("dist: %w", err)
	}

	// The agent built for this host generates the docs and signs.
	host := filepath.Join(work, "host", "edge-agent")
	hostTarget := Target{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	if err := goBuild(ctx, o, hostTarget, Binary{Name: "edge-agent", Dir: "starter", Pkg: "./cmd/edge-agent"}, host); err != nil {
		return Result{}, err
	}
	docs, err := generateDocs(ctx, host, filepath.Join(work, "docs"))
	if err != nil {
		return Result{}, err
	}

	var res Result
	var written []string
	for _, t := range o.Targets {
		bins, err := buildTarget(ctx, o, t, filepath.Join(work, t.GOOS+"-"+t.Arch()))
		if err != nil {
			if t.Optional && ctx.Err() == nil {
				res.Skipped = append(res.Skipped, fmt.Sprintf("%s: %v", t, err))
				continue
			}
			return Result{}, err
		}
		names, err := writeArtifacts(o, t, bins, docs, filepath.Join(work, t.GOOS+"-"+t.Arch()))
		if err != nil {
			return Result{}, err
		}
		written = append(written, names...)
		if o.SBOM {
			sboms, err := writeSBOMs(o, t, bins, names)
			if err != nil {
				return Result{}, err
			}
			written = append(written, sboms...)
		}
	}

	sort.Strings(written)
	var sums strings.Builder
	for _, name := range written {
		path := filepath.Join(o.OutDir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			return Result{}, fmt.Errorf("dist: %w", err)
		}
		sum := sha256.Sum256(data)
		hexSum := hex.EncodeToString(sum[:])
		fmt.Fprintf(&sums, "%s  %s\n", hexSum, name)
		res.Artifacts = append(res.Artifacts, Artifact{Path: path, SHA256: hexSum})
	}
	res.Sums = filepath.Join(o.OutDir, "SHA256SUMS")
	if err := os.WriteFile(res.Sums, []byte(sums.String()), 0o644); err != nil {
		return Result{}, fmt.Errorf("dist: write %s: %w", res.Sums, err)
	}
	if o.SigningKey != "" {
		if err := signRelease(ctx, o, host, &res); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// writeSBOMs writes the SBOM of each artifact of one target and returns
// their file names.
func writeSBOMs(o Options, t Target, bins map[string]string, artifacts []string) ([]string, error) {
	boms, err := binaryBOMs(bins, o.Version)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, name := range artifacts {
		data, err := os.ReadFile(filepath.Join(o.OutDir, name))
		if err != nil {
			return nil, fmt.Errorf("dist: %w", err)
		}
		sum := sha256.Sum256(data)
		sbom, err := artifactSBOM(name, o.Version, sum[:], t, o.Epoch, boms)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(o.OutDir, name+sbomSuffix), sbom, 0o644); err != nil {
			return nil, fmt.Errorf("dist: write %s: %w", name+sbomSuffix, err)
		}
		names = append(names, name+sbomSuffix)
	}
	return names, nil
}

// writeArtifacts writes the archive of one target and, for linux, its
// packages; it returns the file names written into o.OutDir. work is the
// target's scratch folder.
func writeArtifacts(o Options, t Target, bins, docs map[string]string, work string) ([]string, error) {
	top := fmt.Sprintf("edge-agent-%s-%s-%s", o.Version, t.GOOS, t.Arch())
	entries := map[string]entry{"bin/": {dir: true, mode: 0o755}}
	for _, d := range o.EmptyDirs {
		entries[d+"/"] = entry{dir: true, mode: 0o755}
	}
	for name, path := range bins {
		entries["bin/"+name] = entry{src: path, mode: 0o755}
	}
	files := o.Files
	if t.GOOS != "windows" {
		files = merge(o.Files, o.UnixFiles)
	}
	add := func(dst, abs string) {
		entries[dst] = entry{src: abs, mode: 0o644}
		for dir := filepath.Dir(dst); dir != "."; dir = filepath.Dir(dir) {
			entries[dir+"/"] = entry{dir: true, mode: 0o755}
		}
	}
	for dst, src := range files {
		abs := filepath.Join(o.Root, src)
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("dist: %s: %w", src, err)
		}
		add(dst, abs)
	}
	if cfg, ok := entries["config/agent.yaml"]; ok && t.is32bit() {
		raw, err := os.ReadFile(cfg.src)
		if err != nil {
			return nil, fmt.Errorf("dist: %w", err)
		}
		data, err := targetConfig(t, raw)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(work, "agent.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, fmt.Errorf("dist: %w", err)
		}
		add("config/agent.yaml", path)
	}
	if t.GOOS != "windows" {
		for dst, abs := range docs {
			add(dst, abs)
		}
	}

	var name string
	var data []byte
	var err error
	if t.GOOS == "windows" {
		name = top + ".zip"
		data, err = writeZip(top, entries, o.Epoch)
	} else {
		name = top + ".tar.gz"
		data, err = writeTarGz(top, entries, o.Epoch)
	}
	if err != nil {
		return nil, fmt.Errorf("dist: %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(o.OutDir, name), data, 0o644); err != nil {
		return nil, fmt.Errorf("dist: write %s: %w", name, err)
	}
	names := []string{name}
	if o.Packages && t.GOOS == "linux" {
		pkgs, err := writePackages(o, t, bins, docs)
		if err != nil {
			return nil, err
		}
		names = append(names, pkgs...)
	}
	return names, nil
}

func merge(a, b map[string]string) map[string]string {
	m := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// buildTarget compiles every binary for t into dir, once, so the archive
// and the packages of one target ship the same bytes. It returns the
// binaries by their file name in bin/.
func buildTarget(ctx context.Context, o Options, t Target, dir string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("dist: %w", err)
	}
	bins := map[string]string{}
	for _, b := range o.Binaries {
		name := b.Name
		if t.GOOS == "windows" {
			name += ".exe"
		}
		out := filepath.Join(dir, name)
		if err := goBuild(ctx, o, t, b, out); err != nil {
			return nil, err
		}
		bins[name] = out
	}
	return bins, nil
}

// Shell completions and the man page, generated by the agent itself from
// its command tree (so they match the flags it accepts), by their path in
// the archive; the packages install them where the shells and man look.
var generatedDocs = []struct {
	archive, pkg string
	args         []string
}{
	{"share/completion/edge-agent.bash", "/usr/share/bash-completion/completions/edge-agent", []string{"completion", "bash"}},
	{"share/completion/_edge-agent", "/usr/share/zsh/vendor-completions/_edge-agent", []string{"completion", "zsh"}},
	{"share/completion/edge-agent.fish", "/usr/share/fish/vendor_completions.d/edge-agent.fish", []string{"completion", "fish"}},
	{"share/man/man8/edge-agent.8", "/usr/share/man/man8/edge-agent.8", []string{"man"}},
}

// generateDocs writes what the host's edge-agent, bin, prints for each of
// generatedDocs into dir; it returns archive path → file.
func generateDocs(ctx context.Context, bin, dir string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("dist: %w", err)
	}
	docs := map[string]string{}
	for _, d := range generatedDocs {
		out, err := exec.CommandContext(ctx, bin, d.args...).Output()
		if err != nil || len(out) == 0 {
			return nil, fmt.Errorf("dist: edge-agent %s: %v", strings.Join(d.args, " "), err)
		}
		path := filepath.Join(dir, filepath.Base(d.archive))
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return nil, fmt.Errorf("dist: %w", err)
		}
		docs[d.archive] = path
	}
	return docs, nil
}

type entry struct {
	src  string
	dir  bool
	mode int64
}

func goBuild(ctx context.Context, o Options, t Target, b Binary, out string) error {
	// Every binary gets every stamp; the linker ignores those naming a
	// variable the binary lacks (main.version is edgesocket-receiver's).
	ldflags := fmt.Sprintf("-s -w -buildid= -X github.com/edge-agent/edge-agent/starter/internal/cli.Version=%s -X github.com/edge-agent/edge-agent/starter/internal/cli.Commit=%s -X github.com/edge-agent/edge-agent/starter/internal/cli.BuildDate=%s -X main.version=%s",
		o.Version, o.Commit, o.Epoch.UTC().Format(time.RFC3339), o.Version)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, b.Pkg)
	cmd.Dir = filepath.Join(o.Root, b.Dir)
	// GOWORK=off: a released binary is built from its own module's go.mod
	// (its replace directives reach the sibling modules), so the packaging
	// library dist requires can never raise a version in the agent.
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOWORK=off"), t.env()...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("dist: go build %s in %s for %s: %w: %s", b.Pkg, b.Dir, t, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
