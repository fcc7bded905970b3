package dist

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// checkSignatures runs the agent's own verify-release, built for this
// host, on every artifact and SBOM of the release with the public key it
// ships; then on a copy of one artifact with a byte flipped, which it
// must refuse.
func checkSignatures(ctx context.Context, t *testing.T, root, out string, names []string) {
	agent := filepath.Join(t.TempDir(), "edge-agent")
	build := exec.CommandContext(ctx, "go", "build", "-o", agent, "./cmd/edge-agent")
	build.Dir = filepath.Join(root, "starter")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build edge-agent: %v\n%s", err, b)
	}
	pub := filepath.Join(out, "THROWAWAY-local-build.pub")
	for _, name := range names {
		b, err := exec.CommandContext(ctx, agent, "verify-release", "--public-key-file", pub, filepath.Join(out, name)).CombinedOutput()
		if err != nil || !strings.Contains(string(b), "listed in") || !strings.Contains(string(b), "SHA256SUMS.sig verifies") {
			t.Errorf("verify-release %s: %v\n%s", name, err, b)
		}
	}

	// A tampered copy, beside the same .sig and SHA256SUMS.
	tampered := filepath.Join(t.TempDir(), "release")
	if err := os.MkdirAll(tampered, 0o755); err != nil {
		t.Fatal(err)
	}
	name := names[0]
	for _, f := range []string{name, name + ".sig", "SHA256SUMS", "SHA256SUMS.sig"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == name {
			b[len(b)/2] ^= 1
		}
		if err := os.WriteFile(filepath.Join(tampered, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(ctx, agent, "verify-release", "--public-key-file", pub, filepath.Join(tampered, name))
	b, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 || !strings.Contains(string(b), "refused") || !strings.Contains(string(b), "do not install it") {
		t.Errorf("verify-release of a tampered %s: exit %d, %v\n%s", name, code, err, b)
	}
}

// checkSBOM reads ARTIFACT.cdx.json: CycloneDX naming the artifact and
// its SHA-256, both binaries as components built for the artifact's
// CPU, and the modules they link (bbolt for the agent).
func checkSBOM(t *testing.T, out, name string) {
	t.Helper()
	f, err := os.Open(filepath.Join(out, name+sbomSuffix))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatalf("%s%s: %v", name, sbomSuffix, err)
	}
	data, err := os.ReadFile(filepath.Join(out, name))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	subject := bom.Metadata.Component
	if bom.BOMFormat != "CycloneDX" || subject == nil || subject.Name != name || subject.Hashes == nil ||
		(*subject.Hashes)[0].Value != hex.EncodeToString(sum[:]) || bom.SerialNumber != "" {
		t.Fatalf("%s: SBOM subject %+v, format %q, serial %q", name, subject, bom.BOMFormat, bom.SerialNumber)
	}
	goarch := map[string]bool{}
	var mains []string
	hasBbolt := false
	for _, c := range *bom.Components {
		if c.Properties != nil {
			mains = append(mains, c.PackageURL)
			for _, p := range *c.Properties {
				if p.Name == "cdx:gomod:build:env:GOARCH" {
					goarch[p.Value] = true
				}
			}
		}
		hasBbolt = hasBbolt || c.Name == "go.etcd.io/bbolt"
	}
	joined := strings.Join(mains, " ")
	// The binaries' main modules: starter (edge-agent) and transport
	// (edgesocket-receiver).
	if !strings.Contains(joined, "pkg:golang/github.com/edge-agent/edge-agent/starter@") ||
		!strings.Contains(joined, "pkg:golang/github.com/edge-agent/edge-agent/transport@") || !hasBbolt {
		t.Errorf("%s: SBOM binaries %q, bbolt listed %t", name, mains, hasBbolt)
	}
	wantArch := "amd64"
	for _, tgt := range defaultTargets() {
		if strings.Contains(name, "-"+tgt.GOOS+"-"+tgt.Arch()+".") || strings.Contains(name, "_"+debArch(tgt)+".deb") || strings.Contains(name, "."+rpmArch(tgt)+".rpm") {
			wantArch = tgt.GOARCH
		}
	}
	if len(goarch) != 1 || !goarch[wantArch] {
		t.Errorf("%s: SBOM binaries built for %v, want %s", name, goarch, wantArch)
	}
}
