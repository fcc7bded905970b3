package dist

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"time"
)

func sortedNames(entries map[string]entry) []string {
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func writeTarGz(top string, entries map[string]entry, epoch time.Time) ([]byte, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	// No name and a zero ModTime in the gzip header (gzip -n) keep the
	// bytes stable.
	tw := tar.NewWriter(gz)
	mtime := epoch.UTC().Truncate(time.Second)
	if err := tw.WriteHeader(dirHeader(top+"/", mtime)); err != nil {
		return nil, err
	}
	for _, n := range sortedNames(entries) {
		e := entries[n]
		if e.dir {
			if err := tw.WriteHeader(dirHeader(top+"/"+n, mtime)); err != nil {
				return nil, err
			}
			continue
		}
		if err := addTarFile(tw, top+"/"+n, e, mtime); err != nil {
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

func addTarFile(tw *tar.Writer, name string, e entry, mtime time.Time) error {
	f, size, err := openRegular(e.src)
	if err != nil {
		return err
	}
	defer f.Close()
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: e.mode, Size: size, ModTime: mtime, Format: tar.FormatPAX, Uname: "root", Gname: "root"}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("dist: copy %s: %w", e.src, err)
	}
	return nil
}

func openRegular(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("dist: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("dist: %w", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("dist: %s: %w", path, fs.ErrInvalid)
	}
	return f, st.Size(), nil
}

// writeZip is the Windows archive: the same sorted entries as the tarball,
// every entry stamped with the epoch in UTC and no extra fields, so two
// builds give the same bytes.
func writeZip(top string, entries map[string]entry, epoch time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestCompression)
	})
	mtime := epoch.UTC().Truncate(2 * time.Second) // DOS time has 2 s steps
	names := append([]string{""}, sortedNames(entries)...)
	for _, n := range names {
		e := entries[n]
		if n == "" {
			e = entry{dir: true, mode: 0o755}
		}
		h := &zip.FileHeader{Name: top + "/" + n, Method: zip.Deflate, Modified: mtime}
		if e.dir {
			h.Method = zip.Store
			h.SetMode(fs.ModeDir | 0o755)
			if _, err := zw.CreateHeader(h); err != nil {
				return nil, err
			}
			continue
		}
		h.SetMode(fs.FileMode(e.mode))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		f, _, err := openRegular(e.src)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(w, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("dist: copy %s: %w", e.src, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
