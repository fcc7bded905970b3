package dist

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("repository root not found above dist/: %v", err)
	}
	return root
}

// TestBuildIsReproducible builds the release twice and compares the bytes:
// a tarball that differs between two builds of one commit cannot be verified
// by users against SHA256SUMS.
func TestBuildIsReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release twice; skipped in -short mode")
	}
	root := repoRoot(t)
	var sums []string
	var tarball string
	for i := 0; i < 2; i++ {
		o := DefaultOptions(root)
		o.OutDir = filepath.Join(t.TempDir(), "out")
		o.Version = "0.0.0-test"
		o.Commit = "testcommit"
		o.Epoch = time.Unix(1700000000, 0)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		res, err := Build(ctx, o)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, res.SHA256)
		tarball = res.Tarball
		if filepath.Base(res.Tarball) != "edge-agent-0.0.0-test-linux-amd64.tar.gz" {
			t.Fatalf("tarball name %q", filepath.Base(res.Tarball))
		}
		b, err := os.ReadFile(res.Sums)
		if err != nil {
			t.Fatal(err)
		}
		if want := res.SHA256 + "  edge-agent-0.0.0-test-linux-amd64.tar.gz\n"; string(b) != want {
			t.Fatalf("SHA256SUMS = %q, want %q", b, want)
		}
	}
	if sums[0] != sums[1] {
		t.Fatalf("two builds differ: %s vs %s", sums[0], sums[1])
	}

	got := listTar(t, tarball)
	want := []string{
		"edge-agent-0.0.0-test-linux-amd64/",
		"edge-agent-0.0.0-test-linux-amd64/LICENSE",
		"edge-agent-0.0.0-test-linux-amd64/README.md",
		"edge-agent-0.0.0-test-linux-amd64/bin/",
		"edge-agent-0.0.0-test-linux-amd64/bin/edge-agent",
		"edge-agent-0.0.0-test-linux-amd64/bin/edgesocket-receiver",
		"edge-agent-0.0.0-test-linux-amd64/config/",
		"edge-agent-0.0.0-test-linux-amd64/config/agent.yaml",
		"edge-agent-0.0.0-test-linux-amd64/data/",
		"edge-agent-0.0.0-test-linux-amd64/log/",
		"edge-agent-0.0.0-test-linux-amd64/systemd/",
		"edge-agent-0.0.0-test-linux-amd64/systemd/edge-agent.service",
	}
	sort.Strings(got)
	if len(got) != len(want) {
		t.Fatalf("tarball entries:\n%q\nwant:\n%q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("tarball entries:\n%q\nwant:\n%q", got, want)
		}
	}
}

func listTar(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d, want 0:0", h.Name, h.Uid, h.Gid)
		}
		if h.Name == "edge-agent-0.0.0-test-linux-amd64/bin/edge-agent" && h.Mode&0o111 == 0 {
			t.Errorf("edge-agent is not executable: %o", h.Mode)
		}
		names = append(names, h.Name)
	}
	return names
}
