package dist

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Binary is one Go main package to build into bin/.
type Binary struct {
	Name string // file name in bin/
	Dir  string // module directory holding the package
	Pkg  string // package path relative to Dir, e.g. "./cmd/edge-agent"
}

// Options describe one release build.
type Options struct {
	Root     string    // repository root (go.work lives here)
	OutDir   string    // where the tarball and SHA256SUMS go
	Version  string    // e.g. 0.1.0
	Commit   string    // stamped into the binary
	Epoch    time.Time // SOURCE_DATE_EPOCH: tar mtimes and the build date
	GOOS     string
	GOARCH   string
	Binaries []Binary
	// Files maps a path inside the tarball (below the top folder) to a
	// source path relative to Root.
	Files map[string]string
	// EmptyDirs are created empty inside the tarball (data/, log/).
	EmptyDirs []string
}

// DefaultOptions returns the edge-agent layout of SPEC §6.
func DefaultOptions(root string) Options {
	return Options{
		Root:   root,
		OutDir: filepath.Join(root, "build", "dist"),
		GOOS:   "linux",
		GOARCH: "amd64",
		Binaries: []Binary{
			{Name: "edge-agent", Dir: "starter", Pkg: "./cmd/edge-agent"},
			{Name: "edgesocket-receiver", Dir: "transport", Pkg: "./cmd/edgesocket-receiver"},
		},
		Files: map[string]string{
			"config/agent.yaml":          "config/agent.yaml",
			"README.md":                  "README.md",
			"LICENSE":                    "LICENSE",
			"systemd/edge-agent.service": "dist/packaging/edge-agent.service",
		},
		EmptyDirs: []string{"data", "log"},
	}
}

// Result names what Build wrote.
type Result struct {
	Tarball string
	SHA256  string
	Sums    string // path of SHA256SUMS
}

// Build compiles the binaries and writes the tarball and SHA256SUMS.
func Build(ctx context.Context, o Options) (Result, error) {
	if o.Version == "" {
		return Result{}, errors.New("dist: version is empty")
	}
	top := fmt.Sprintf("edge-agent-%s-%s-%s", o.Version, o.GOOS, o.GOARCH)
	work, err := os.MkdirTemp("", "edge-agent-dist-")
	if err != nil {
		return Result{}, fmt.Errorf("dist: temp dir: %w", err)
	}
	defer os.RemoveAll(work)

	entries := map[string]entry{}
	for _, d := range o.EmptyDirs {
		entries[d+"/"] = entry{dir: true, mode: 0o755}
	}
	entries["bin/"] = entry{dir: true, mode: 0o755}
	for _, b := range o.Binaries {
		out := filepath.Join(work, b.Name)
		if err := goBuild(ctx, o, b, out); err != nil {
			return Result{}, err
		}
		entries["bin/"+b.Name] = entry{src: out, mode: 0o755}
	}
	for dst, src := range o.Files {
		abs := filepath.Join(o.Root, src)
		if _, err := os.Stat(abs); err != nil {
			return Result{}, fmt.Errorf("dist: %s: %w", src, err)
		}
		entries[dst] = entry{src: abs, mode: 0o644}
		for dir := filepath.Dir(dst); dir != "."; dir = filepath.Dir(dir) {
			entries[dir+"/"] = entry{dir: true, mode: 0o755}
		}
	}

	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return Result{}, fmt.Errorf("dist: %w", err)
	}
	name := top + ".tar.gz"
	data, err := writeTarGz(top, entries, o.Epoch)
	if err != nil {
		return Result{}, err
	}
	tarball := filepath.Join(o.OutDir, name)
	if err := os.WriteFile(tarball, data, 0o644); err != nil {
		return Result{}, fmt.Errorf("dist: write %s: %w", tarball, err)
	}
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	sums := filepath.Join(o.OutDir, "SHA256SUMS")
	if err := os.WriteFile(sums, []byte(hexSum+"  "+name+"\n"), 0o644); err != nil {
		return Result{}, fmt.Errorf("dist: write %s: %w", sums, err)
	}
	return Result{Tarball: tarball, SHA256: hexSum, Sums: sums}, nil
}

type entry struct {
	src  string
	dir  bool
	mode int64
}

func goBuild(ctx context.Context, o Options, b Binary, out string) error {
	// Every binary gets every stamp; the linker ignores those naming a
	// variable the binary lacks (main.version is edgesocket-receiver's).
	ldflags := fmt.Sprintf("-s -w -buildid= -X github.com/edge-agent/edge-agent/starter/internal/cli.Version=%s -X github.com/edge-agent/edge-agent/starter/internal/cli.Commit=%s -X github.com/edge-agent/edge-agent/starter/internal/cli.BuildDate=%s -X main.version=%s",
		o.Version, o.Commit, o.Epoch.UTC().Format(time.RFC3339), o.Version)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, b.Pkg)
	cmd.Dir = filepath.Join(o.Root, b.Dir)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+o.GOOS, "GOARCH="+o.GOARCH, "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("dist: go build %s in %s: %w: %s", b.Pkg, b.Dir, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func writeTarGz(top string, entries map[string]entry, epoch time.Time) ([]byte, error) {
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)

	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	// No name and a zero ModTime in the gzip header keep the bytes stable.
	tw := tar.NewWriter(gz)
	mtime := epoch.UTC().Truncate(time.Second)
	if err := tw.WriteHeader(dirHeader(top+"/", mtime)); err != nil {
		return nil, err
	}
	for _, n := range names {
		e := entries[n]
		if e.dir {
			if err := tw.WriteHeader(dirHeader(top+"/"+n, mtime)); err != nil {
				return nil, err
			}
			continue
		}
		if err := addFile(tw, top+"/"+n, e, mtime); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func dirHeader(name string, mtime time.Time) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX, Uname: "root", Gname: "root"}
}

func addFile(tw *tar.Writer, name string, e entry, mtime time.Time) error {
	f, err := os.Open(e.src)
	if err != nil {
		return fmt.Errorf("dist: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("dist: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("dist: %s: %w", e.src, fs.ErrInvalid)
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: e.mode, Size: st.Size(), ModTime: mtime, Format: tar.FormatPAX, Uname: "root", Gname: "root"}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("dist: copy %s: %w", e.src, err)
	}
	return nil
}
