// Package diag builds the diagnostics bundle: one .tar.gz an operator
// attaches to a ticket, the same whether `edge-agent diagnostics` writes
// it or the OpAMP server asks for it.
//
// Contract:
//   - The bundle holds what its builder adds (package daemon: the redacted
//     effective config, status, metrics, recent log lines, the WAL
//     summary, a goroutine dump, version and build info) and a
//     MANIFEST.txt naming each file, its size and what could not be
//     collected (the error instead of the file).
//   - Bounded: one file at most MaxFileBytes, the whole at most
//     MaxBundleBytes before compression; a file over the limit is cut
//     (its end kept for logs, which matter most there) and the manifest
//     says so.
//   - Never a secret: builders add only redacted documents; nothing here
//     reads files or the environment.
package diag

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"
)

// Limits of a bundle, before compression.
const (
	MaxFileBytes   = 2 << 20
	MaxBundleBytes = 8 << 20
)

// Bundle collects files in the order added.
type Bundle struct {
	files []file
	notes []string
	total int
}

type file struct {
	name string
	data []byte
}

// Add puts data in the bundle as name, cut to the limits: a log keeps
// its last bytes (cutTail), any other file its first.
func (b *Bundle) Add(name string, data []byte) {
	limit := min(MaxFileBytes, MaxBundleBytes-b.total)
	if limit < 0 {
		limit = 0
	}
	if len(data) > limit {
		b.notes = append(b.notes, fmt.Sprintf("%s: cut from %d to %d bytes (bundle limits)", name, len(data), limit))
		if strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".log") {
			data = data[len(data)-limit:]
		} else {
			data = data[:limit]
		}
	}
	b.total += len(data)
	b.files = append(b.files, file{name: name, data: data})
}

// AddJSON adds v, indented; a value that does not encode is noted.
func (b *Bundle) AddJSON(name string, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		b.Missing(name, err)
		return
	}
	b.Add(name, append(data, '\n'))
}

// Missing notes a file that could not be collected, and why.
func (b *Bundle) Missing(name string, err error) {
	b.notes = append(b.notes, fmt.Sprintf("%s: not collected: %v", name, err))
}

// Note adds a line to the manifest.
func (b *Bundle) Note(format string, args ...any) {
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

// Names lists the files added, in order (the manifest excluded).
func (b *Bundle) Names() []string {
	out := make([]string, len(b.files))
	for i, f := range b.files {
		out[i] = f.name
	}
	return out
}

// TarGz writes the bundle under a top folder named after the time, so
// that two bundles untar side by side.
func (b *Bundle) TarGz(now time.Time) ([]byte, error) {
	var out bytes.Buffer
	gz := gzip.NewWriter(&out)
	tw := tar.NewWriter(gz)
	dir := "edge-agent-diagnostics-" + now.UTC().Format("20060102T150405Z") + "/"
	files := append([]file{{name: "MANIFEST.txt", data: b.manifest(now)}}, b.files...)
	for _, f := range files {
		hdr := &tar.Header{Name: dir + f.name, Mode: 0o600, Size: int64(len(f.data)), ModTime: now, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("diagnostics bundle: %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("diagnostics bundle: %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("diagnostics bundle: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("diagnostics bundle: %w", err)
	}
	return out.Bytes(), nil
}

func (b *Bundle) manifest(now time.Time) []byte {
	var m strings.Builder
	fmt.Fprintf(&m, "edge-agent diagnostics bundle, %s\n\nfiles:\n", now.UTC().Format(time.RFC3339))
	for _, f := range b.files {
		fmt.Fprintf(&m, "  %-20s %d bytes\n", f.name, len(f.data))
	}
	if len(b.notes) > 0 {
		m.WriteString("\nnotes:\n")
		for _, n := range b.notes {
			fmt.Fprintf(&m, "  %s\n", n)
		}
	}
	return []byte(m.String())
}

// Goroutines is every goroutine's stack, as a panic prints them.
func Goroutines() []byte {
	var buf bytes.Buffer
	if p := pprof.Lookup("goroutine"); p != nil {
		_ = p.WriteTo(&buf, 2) // a bytes.Buffer does not fail
	}
	return buf.Bytes()
}

// Version is the version file: what the binary says about itself, and
// the Go build's module and settings.
func Version(version, commit string) []byte {
	var v strings.Builder
	fmt.Fprintf(&v, "version: %s\ncommit: %s\ngo: %s\nos/arch: %s/%s\n", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if bi, ok := debug.ReadBuildInfo(); ok {
		fmt.Fprintf(&v, "module: %s %s\n", bi.Main.Path, bi.Main.Version)
		for _, s := range bi.Settings {
			fmt.Fprintf(&v, "build %s=%s\n", s.Key, s.Value)
		}
	}
	return []byte(v.String())
}

// Lines joins log records, one per line.
func Lines(lines []string) []byte {
	if len(lines) == 0 {
		return nil
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}
