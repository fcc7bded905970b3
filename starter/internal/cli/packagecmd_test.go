package cli

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/exitcode"
	"github.com/edge-agent/edge-agent/starter/internal/upgrade"
)

// keygen's public key verifies sign's signature of the file it names;
// keygen never overwrites a key; sign refuses what is not a version.
func TestPackageKeygenAndSign(t *testing.T) {
	e := newTestEnv(t)
	key := filepath.Join(e.home, "release.key")
	if code := e.run("package", "keygen", "--out", key); code != 0 {
		t.Fatalf("keygen exit %d: %s", code, e.stderr.String())
	}
	_, pubText, _ := strings.Cut(strings.TrimSpace(e.stdout.String()[strings.Index(e.stdout.String(), "public key:"):]), ": ")
	pub, err := upgrade.ParsePublicKey(pubText)
	if err != nil {
		t.Fatal(err)
	}
	if code := e.run("package", "keygen", "--out", key); code != exitcode.Usage || !strings.Contains(e.stderr.String(), "never overwrites") {
		t.Errorf("second keygen: exit %d %s", code, e.stderr.String())
	}
	file := e.write("bin/new", "a binary")
	for _, down := range []bool{false, true} {
		args := []string{"package", "sign", "--key", key, "--version", "1.4.0"}
		if down {
			args = append(args, "--allow-downgrade")
		}
		if code := e.run(append(args, file)...); code != 0 {
			t.Fatalf("sign exit %d: %s", code, e.stderr.String())
		}
		fields := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(e.stdout.String()), "\n") {
			k, v, _ := strings.Cut(line, ": ")
			fields[k] = v
		}
		want := sha256.Sum256([]byte("a binary"))
		if fields["sha256"] != hex.EncodeToString(want[:]) || fields["version"] != "1.4.0" {
			t.Fatalf("sign printed %v", fields)
		}
		sig, _ := base64.StdEncoding.DecodeString(fields["signature"])
		allow, err := upgrade.Verify(pub, "1.4.0", want[:], sig)
		if err != nil || allow != down {
			t.Errorf("allow-downgrade %t: verify %t %v", down, allow, err)
		}
	}
	if code := e.run("package", "sign", "--key", key, "--version", "../1", file); code != exitcode.Usage {
		t.Errorf("sign of a bad version: exit %d", code)
	}
}
