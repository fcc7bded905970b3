package dist

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every released target has a deb and an rpm CPU name and a distinct
// artifact name, and ParseTarget reads what String writes.
func TestTargetNames(t *testing.T) {
	tars, debs, rpms := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, tgt := range defaultTargets() {
		back, err := ParseTarget(tgt.String())
		if err != nil || back.GOOS != tgt.GOOS || back.GOARCH != tgt.GOARCH || back.GOARM != tgt.GOARM {
			t.Errorf("ParseTarget(%q) = %+v, %v", tgt, back, err)
		}
		if tars[tgt.String()] {
			t.Errorf("two targets named %s", tgt)
		}
		tars[tgt.String()] = true
		if tgt.GOOS != "linux" {
			continue
		}
		deb, rpm := debArch(tgt), rpmArch(tgt)
		if deb == "" || rpm == "" || debs[deb] || rpms[rpm] {
			t.Errorf("%s: deb %q, rpm %q: missing or shared with another target", tgt, deb, rpm)
		}
		debs[deb], rpms[rpm] = true, true
	}
	for _, bad := range []string{"linux", "linux/arm", "/amd64"} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) accepted", bad)
		}
	}
}

// The config a 32-bit target ships sets queue.max-bytes to its limit,
// 512 MiB (the agent refuses 1 GiB there); 64-bit targets ship the file
// as it is.
func TestTargetConfig(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tgt := range defaultTargets() {
		got, err := targetConfig(tgt, src)
		if err != nil {
			t.Fatalf("%s: %v", tgt, err)
		}
		switch {
		case tgt.is32bit() && (!strings.Contains(string(got), "\n  max-bytes: 536870912\n") || strings.Contains(string(got), "1073741824")):
			t.Errorf("%s ships queue.max-bytes other than 512 MiB", tgt)
		case !tgt.is32bit() && string(got) != string(src):
			t.Errorf("%s changed the config", tgt)
		}
	}
	if _, err := targetConfig(Target{GOOS: "linux", GOARCH: "386"}, []byte("queue:\n  max-bytes: 5\n")); err == nil {
		t.Error("a config without the 1 GiB line was shipped unchanged to a 32-bit target")
	}
}
