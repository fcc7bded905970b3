package dist

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
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
	checkVersionStamps(t, tarball)
}

// checkVersionStamps runs both released binaries with their version flag:
// each must name the release it ships in, not a development build.
func checkVersionStamps(t *testing.T, tarball string) {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Logf("release binaries are linux/amd64; not run on %s/%s", runtime.GOOS, runtime.GOARCH)
		return
	}
	dir := t.TempDir()
	for _, tc := range []struct{ bin, arg, want string }{
		{"edge-agent", "version", "edge-agent 0.0.0-test\n"},
		{"edgesocket-receiver", "--version", "edgesocket-receiver 0.0.0-test ("},
	} {
		path := filepath.Join(dir, tc.bin)
		if err := os.WriteFile(path, readTarFile(t, tarball, "edge-agent-0.0.0-test-linux-amd64/bin/"+tc.bin), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(path, tc.arg).Output()
		if err != nil {
			t.Fatalf("%s %s: %v", tc.bin, tc.arg, err)
		}
		if !strings.HasPrefix(string(out), tc.want) {
			t.Errorf("%s %s printed %q, want it to start with %q", tc.bin, tc.arg, out, tc.want)
		}
	}
}

func readTarFile(t *testing.T, tarball, name string) []byte {
	t.Helper()
	f, err := os.Open(tarball)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not found in %s: %v", name, tarball, err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
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
