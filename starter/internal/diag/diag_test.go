package diag

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// untar returns the bundle's files by name, without the top folder.
func untar(t *testing.T, data []byte) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		_, name, _ := strings.Cut(h.Name, "/")
		out[name] = string(body)
	}
}

func TestBundleFilesAndManifest(t *testing.T) {
	var b Bundle
	b.Add("config.yaml", []byte("output:\n  token: <redacted>\n"))
	b.AddJSON("status.json", map[string]int{"pending": 3})
	b.Missing("wal-summary.json", errors.New("no WAL yet"))
	b.Add("goroutines.txt", Goroutines())
	data, err := b.TarGz(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	files := untar(t, data)
	if files["config.yaml"] != "output:\n  token: <redacted>\n" || !strings.Contains(files["status.json"], `"pending": 3`) {
		t.Errorf("files %q", files)
	}
	if !strings.Contains(files["goroutines.txt"], "goroutine ") {
		t.Errorf("goroutine dump %q", files["goroutines.txt"])
	}
	m := files["MANIFEST.txt"]
	for _, want := range []string{"config.yaml", "status.json", "wal-summary.json: not collected: no WAL yet", "2026-01-02T03:04:05Z"} {
		if !strings.Contains(m, want) {
			t.Errorf("manifest lacks %q:\n%s", want, m)
		}
	}
}

func TestBundleIsBounded(t *testing.T) {
	var b Bundle
	b.Add("agent.log", []byte(strings.Repeat("a", MaxFileBytes)+"LAST"))
	b.Add("big.txt", []byte("FIRST"+strings.Repeat("b", MaxFileBytes)))
	for range 10 {
		b.Add("more.txt", bytes.Repeat([]byte("c"), MaxFileBytes))
	}
	if b.total > MaxBundleBytes {
		t.Fatalf("total %d over %d", b.total, MaxBundleBytes)
	}
	data, err := b.TarGz(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	files := untar(t, data)
	if !strings.HasSuffix(files["agent.log"], "LAST") || !strings.HasPrefix(files["big.txt"], "FIRST") {
		t.Error("a log keeps its end, another file its start")
	}
	if !strings.Contains(files["MANIFEST.txt"], "agent.log: cut from") {
		t.Errorf("manifest:\n%s", files["MANIFEST.txt"])
	}
}
