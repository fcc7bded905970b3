//go:build unix

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/opampdev"
)

// upgradeWait bounds each step of an upgrade: a download, the checks of
// the staged binary, a trial, a restart.
const upgradeWait = 60 * time.Second

// versioned builds of the agent, made once per run and shared.
var versioned struct {
	mu   sync.Mutex
	dir  string
	bins map[string]string
}

// agentVersion is the agent built with its version variable set to v,
// as the Makefile stamps a release.
func agentVersion(t *testing.T, v string) string {
	return buildOnce(t, "edge-agent-"+v, "../starter/cmd/edge-agent", "-X github.com/edge-agent/edge-agent/starter/internal/cli.Version="+v)
}

// failingVersion is a binary that passes `version` (as v) and `config
// check` but exits 1 at start.
func failingVersion(t *testing.T, v string) string {
	return buildOnce(t, "failstart-"+v, "./internal/failstart", "-X main.version="+v)
}

func buildOnce(t *testing.T, name, pkg, ldflags string) string {
	t.Helper()
	versioned.mu.Lock()
	defer versioned.mu.Unlock()
	if versioned.bins == nil {
		// Beside the suite's binaries: TestMain removes that folder.
		versioned.dir, versioned.bins = filepath.Join(filepath.Dir(filepath.Dir(bins.agent)), "versions"), map[string]string{}
	}
	if p, ok := versioned.bins[name]; ok {
		return p
	}
	out := filepath.Join(versioned.dir, name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", ldflags, "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, b)
	}
	versioned.bins[name] = out
	return out
}

// upgradeRoot is an install root whose bin/edge-agent is version base,
// managed by srv with packages signed by the key it returns.
type upgradeRoot struct {
	*agentRoot
	key, pub string
	bin      string
}

func newUpgradeRoot(t *testing.T, rc *receiver, srv *opampdev.Server, base string, deadline time.Duration) *upgradeRoot {
	t.Helper()
	u := &upgradeRoot{}
	keyDir := t.TempDir()
	u.key = filepath.Join(keyDir, "release.key")
	out, stderr, code := run(t, keyDir, nil, bins.agent, "package", "keygen", "--out", u.key)
	if code != 0 {
		t.Fatalf("keygen: %d %s", code, stderr)
	}
	_, u.pub, _ = strings.Cut(strings.TrimSpace(out[strings.Index(out, "public key:"):]), ": ")
	extra := managed(srv.Endpoint()) + fmt.Sprintf("    packages:\n      public-key: %s\n      health-deadline-ms: %d\n", u.pub, deadline.Milliseconds())
	u.agentRoot = newRoot(t, options{port: rc.port, paths: []string{"in/a.log"}, extra: extra})
	u.bin = u.path("bin/edge-agent")
	if err := os.MkdirAll(filepath.Dir(u.bin), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, agentVersion(t, base), u.bin)
	return u
}

// waitStarted waits for the agent's pid file and instance uid file, and
// returns the uid.
func (u *upgradeRoot) waitStarted(p *proc) string {
	u.t.Helper()
	eventually(u.t, 20*time.Second, "the agent's pid file and instance uid", func() bool {
		return u.pid() == p.pid() && len(u.instanceUID()) == 36
	})
	return u.instanceUID()
}

// startInstalled runs bin/edge-agent start, as the unit does.
func (u *upgradeRoot) startInstalled(env ...string) *proc {
	u.t.Helper()
	return startProc(u.t, "edge-agent", u.dir, u.env(env...), u.bin, "start")
}

// sign is `edge-agent package sign` of file as version.
func (u *upgradeRoot) sign(file, version string, key string, extra ...string) (sha, sig []byte) {
	u.t.Helper()
	args := append([]string{"package", "sign", "--key", key, "--version", version}, extra...)
	out, stderr, code := run(u.t, u.dir, nil, bins.agent, append(args, file)...)
	if code != 0 {
		u.t.Fatalf("sign: %d %s", code, stderr)
	}
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, ": ")
		switch k {
		case "sha256":
			sha, _ = hex.DecodeString(v)
		case "signature":
			sig, _ = base64.StdEncoding.DecodeString(v)
		}
	}
	if len(sha) != 32 || len(sig) != 64 {
		u.t.Fatalf("sign printed %q", out)
	}
	return sha, sig
}

// offer offers file as version, signed with the root's key.
func (u *upgradeRoot) offer(srv *opampdev.Server, file, version string, extra ...string) {
	u.t.Helper()
	sha, sig := u.sign(file, version, u.key, extra...)
	content, err := os.ReadFile(file)
	if err != nil {
		u.t.Fatal(err)
	}
	if _, err := srv.OfferPackage(opampdev.Package{Version: version, Content: content, SHA256: sha, Signature: sig}); err != nil {
		u.t.Fatal(err)
	}
}

func runningVersion(a opampdev.Agent) string { return a.Identifying["service.version"] }

// packageIs waits for a package status (and the version it has).
func packageIs(t *testing.T, srv *opampdev.Server, uid, status, has string) opampdev.Agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), upgradeWait)
	defer cancel()
	var got opampdev.Agent
	err := srv.Wait(ctx, func(as []opampdev.Agent) bool {
		for _, a := range as {
			st, h, _, _ := a.PackageStatus()
			if a.InstanceUID == uid && a.Connected && st == status && h == has && runningVersion(a) == has {
				got = a
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("package %s with %s running: %v\nthe server knows: %+v", status, has, err, srv.Agents())
	}
	return got
}

type versionsStatus struct {
	Management struct {
		Versions struct {
			Running, Previous, Trial string
			LastOffer                string `json:"last_offer"`
		} `json:"versions"`
	} `json:"management"`
}

func (u *upgradeRoot) versions() versionsStatus {
	u.t.Helper()
	out, stderr, code := run(u.t, u.dir, u.env(), u.bin, "status", "--json")
	var st versionsStatus
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		u.t.Fatalf("status --json: exit %d %s %s", code, out, stderr)
	}
	return st
}

// The server offers 1.1.0; the first download is cut after 1 MiB and
// resumed with a Range request; the new version is tried, proves healthy,
// and runs under the same pid; every line written meanwhile is delivered.
func TestUpgradeOverOpAMP(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	srv := startOpAMP(t, "127.0.0.1:0")
	u := newUpgradeRoot(t, rc, srv, "1.0.0", 30*time.Second)
	w := u.createFile("in/a.log")
	want := makeLines(t.Name(), 0, 300)
	w.lines(want[:100])
	// systemd's notification socket (Type=notify, NotifyAccess=main).
	sockDir, err := os.MkdirTemp("", "sdn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "notify.sock")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()
	agent := u.startInstalled("NOTIFY_SOCKET=" + sock)
	defer u.stop(agent)
	uid := u.waitStarted(agent)
	waitAgent(t, srv, uid, "1.0.0 registered", func(a opampdev.Agent) bool { return runningVersion(a) == "1.0.0" })
	rc.waitDelivered(want[:100], deliverTimeout)
	if got := readDatagram(t, notify, 20*time.Second); got != "READY=1" {
		t.Fatalf("first notification %q", got)
	}

	srv.CutNextDownload(1 << 20)
	u.offer(srv, agentVersion(t, "1.1.0"), "1.1.0")
	w.lines(want[100:200])
	packageIs(t, srv, uid, "Installed", "1.1.0")
	w.lines(want[200:])
	if d := rc.waitDelivered(want, deliverTimeout); len(d.missing) != 0 {
		t.Fatalf("after the upgrade: %s", d)
	}
	if !agent.running() || u.pid() != agent.pid() {
		t.Fatalf("the upgraded agent should run under the first pid %d; pid file says %d", agent.pid(), u.pid())
	}
	// The launcher (the main pid) says ready while it tries the new
	// version, which is not given the socket; the new version, exec'd
	// in its place, says ready again. Nothing else: no STOPPING=1 for a
	// restart in place.
	for _, want := range []string{"READY=1\nSTATUS=trying a new version", "READY=1"} {
		if got := readDatagram(t, notify, 20*time.Second); got != want {
			t.Errorf("notification %q, want %q", got, want)
		}
	}
	if err := notify.SetReadDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n, err := notify.Read(make([]byte, 256)); err == nil {
		t.Errorf("a notification beyond the launcher's and the new version's (%d bytes): the trial was given the socket", n)
	}
	dl := srv.Downloads()
	if len(dl) < 2 || dl[0] != "" || !strings.HasPrefix(dl[1], "bytes=1048576-") {
		t.Errorf("downloads %q: want the whole file, then a resume from byte 1048576", dl)
	}
	st := u.versions()
	if v := st.Management.Versions; v.Running != "1.1.0" || v.Previous != "1.0.0" || v.Trial != "" || !strings.Contains(v.LastOffer, "1.1.0 installed") {
		t.Errorf("status versions %+v", v)
	}
	if _, err := os.Stat(u.path("versions/1.1.0/bin/edge-agent")); err != nil {
		t.Errorf("the new version is not staged: %v", err)
	}
	if code := u.stop(agent); code != 0 {
		t.Fatalf("stop exit %d", code)
	}
	// Started again by the unit, the installed binary runs 1.1.0.
	again := u.startInstalled()
	defer u.stop(again)
	waitAgent(t, srv, uid, "1.1.0 after a restart", func(a opampdev.Agent) bool { return a.Connected && runningVersion(a) == "1.1.0" })
}

// Offers the agent must refuse, each reported InstallFailed with why,
// while 1.0.0 runs on: a content hash that is not the file's, a signature
// of another key, and a downgrade the signature does not allow.
func TestUpgradeRefused(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	srv := startOpAMP(t, "127.0.0.1:0")
	u := newUpgradeRoot(t, rc, srv, "1.0.0", 30*time.Second)
	agent := u.startInstalled()
	defer u.stop(agent)
	uid := u.waitStarted(agent)
	waitAgent(t, srv, uid, "1.0.0 registered", func(a opampdev.Agent) bool { return runningVersion(a) == "1.0.0" })
	good := agentVersion(t, "1.1.0")
	content, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.key")
	if _, stderr, code := run(t, u.dir, nil, bins.agent, "package", "keygen", "--out", other); code != 0 {
		t.Fatal(stderr)
	}
	tampered := filepath.Join(t.TempDir(), "tampered")
	if err := os.WriteFile(tampered, append(append([]byte{}, content...), 0), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, version string
		offer         func() opampdev.Package
		want          string
	}{
		{"bad hash", "1.1.0", func() opampdev.Package {
			// A valid signature of another file's hash: the download
			// does not match it.
			sha, sig := u.sign(tampered, "1.1.0", u.key)
			return opampdev.Package{Version: "1.1.0", Content: content, SHA256: sha, Signature: sig}
		}, "content hash mismatch"},
		{"bad signature", "1.1.1", func() opampdev.Package {
			sha, sig := u.sign(good, "1.1.1", other)
			return opampdev.Package{Version: "1.1.1", Content: content, SHA256: sha, Signature: sig}
		}, "signature does not verify"},
		{"downgrade", "0.9.0", func() opampdev.Package {
			sha, sig := u.sign(good, "0.9.0", u.key)
			return opampdev.Package{Version: "0.9.0", Content: content, SHA256: sha, Signature: sig}
		}, "downgrade from 1.0.0 to 0.9.0 refused"},
	} {
		if _, err := srv.OfferPackage(tc.offer()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), upgradeWait)
		err := srv.Wait(ctx, func(as []opampdev.Agent) bool {
			for _, a := range as {
				st, _, offered, msg := a.PackageStatus()
				if a.InstanceUID == uid && st == "InstallFailed" && offered == tc.version && strings.Contains(msg, tc.want) {
					return true
				}
			}
			return false
		})
		cancel()
		if err != nil {
			t.Fatalf("%s: want InstallFailed with %q: %v\n%+v", tc.name, tc.want, err, srv.Agents())
		}
	}
	if !agent.running() || u.pid() != agent.pid() {
		t.Fatal("a refused offer stopped the agent")
	}
	if _, err := os.Stat(u.path("versions/1.1.0")); !os.IsNotExist(err) {
		t.Errorf("a refused version was staged: %v", err)
	}
	if v := u.versions().Management.Versions; v.Running != "1.0.0" || v.Trial != "" {
		t.Errorf("status versions %+v", v)
	}
}

// A new version that exits at start is rolled back: 1.0.0 runs again
// under the same pid, the server hears InstallFailed with the exit code,
// and nothing written meanwhile is lost.
func TestUpgradeRollback(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	srv := startOpAMP(t, "127.0.0.1:0")
	u := newUpgradeRoot(t, rc, srv, "1.0.0", 30*time.Second)
	w := u.createFile("in/a.log")
	want := makeLines(t.Name(), 0, 200)
	w.lines(want[:100])
	agent := u.startInstalled()
	defer u.stop(agent)
	uid := u.waitStarted(agent)
	waitAgent(t, srv, uid, "1.0.0 registered", func(a opampdev.Agent) bool { return runningVersion(a) == "1.0.0" })

	u.offer(srv, failingVersion(t, "1.2.0"), "1.2.0")
	got := packageIs(t, srv, uid, "InstallFailed", "1.0.0")
	if _, _, offered, msg := got.PackageStatus(); offered != "1.2.0" || !strings.Contains(msg, "exited with code 1") {
		t.Errorf("InstallFailed for %s: %q", offered, msg)
	}
	w.lines(want[100:])
	if d := rc.waitDelivered(want, deliverTimeout); len(d.missing) != 0 {
		t.Fatalf("after the rollback: %s", d)
	}
	eventually(t, 20*time.Second, "the rolled-back agent's pid file", func() bool { return u.pid() == agent.pid() })
	v := u.versions().Management.Versions
	if v.Running != "1.0.0" || v.Trial != "" || !strings.Contains(v.LastOffer, "1.2.0 failed") {
		t.Errorf("status versions %+v", v)
	}
	if _, err := os.Stat(u.path("versions/1.2.0")); !os.IsNotExist(err) {
		t.Errorf("the failed version is still staged: %v", err)
	}
}

// kill -9 while the new version is being installed and switched to: the
// installed binary, started again, runs one working version (old or new)
// and the upgrade completes.
func TestUpgradeKilledDuringSwitch(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	srv := startOpAMP(t, "127.0.0.1:0")
	u := newUpgradeRoot(t, rc, srv, "1.0.0", 30*time.Second)
	w := u.createFile("in/a.log")
	want := makeLines(t.Name(), 0, 200)
	w.lines(want[:100])
	agent := u.startInstalled()
	uid := u.waitStarted(agent)
	waitAgent(t, srv, uid, "1.0.0 registered", func(a opampdev.Agent) bool { return runningVersion(a) == "1.0.0" })

	u.offer(srv, agentVersion(t, "1.1.0"), "1.1.0")
	waitAgent(t, srv, uid, "Installing", func(a opampdev.Agent) bool { st, _, _, _ := a.PackageStatus(); return st == "Installing" })
	agent.signal(t, syscall.SIGKILL)
	agent.wait(t, 10*time.Second)
	w.lines(want[100:])

	again := u.startInstalled()
	defer u.stop(again)
	waitAgent(t, srv, uid, "a version running after the kill", func(a opampdev.Agent) bool {
		return a.Connected && (runningVersion(a) == "1.0.0" || runningVersion(a) == "1.1.0")
	})
	packageIs(t, srv, uid, "Installed", "1.1.0")
	if d := rc.waitDelivered(want, deliverTimeout); len(d.missing) != 0 {
		t.Fatalf("after the kill: %s", d)
	}
	eventually(t, 20*time.Second, "one agent, under the pid the test started", func() bool { return u.pid() == again.pid() })
}
