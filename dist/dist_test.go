package dist

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
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

const (
	testVersion = "0.0.0-test"
	amd64Top    = "edge-agent-0.0.0-test-linux-amd64"
	amd64Deb    = "edge-agent_0.0.0~test-1_amd64.deb"
)

// TestRelease builds the whole release twice with mkdist, as `make dist`
// does, and compares every artifact: an artifact that differs between two
// builds of one commit cannot be verified by users against SHA256SUMS. The
// subtests then inspect the artifacts of the second build. mkdist runs as
// its own process, built without the race detector: compressing some
// hundred MiB of binaries under -race would take most of the test budget.
// releaseTestTargets are the targets TestRelease builds twice: one of each
// kind (64-bit, 32-bit with its own queue cap in the shipped config,
// Windows), not every CPU, which make dist builds and test-cross runs.
var releaseTestTargets = []string{"linux/amd64", "linux/armv7", "windows/amd64"}

func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release twice; skipped in -short mode")
	}
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	mkdist := filepath.Join(t.TempDir(), "mkdist")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", mkdist, "./cmd/mkdist").CombinedOutput(); err != nil {
		t.Fatalf("go build mkdist: %v\n%s", err, out)
	}
	type build struct {
		out     string
		sums    string
		skipped string
	}
	var builds []build
	// No release key: both builds sign with one throwaway key, made by the first.
	throwaway := filepath.Join(t.TempDir(), "THROWAWAY-local-build.key")
	for i := 0; i < 2; i++ {
		out := filepath.Join(t.TempDir(), "out")
		cmd := exec.CommandContext(ctx, mkdist, "-root", root, "-out", out, "-version", testVersion, "-commit", "testcommit", "-throwaway-key", throwaway,
			"-targets", strings.Join(releaseTestTargets, ","))
		cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1700000000")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("mkdist: %v\n%s", err, stderr.String())
		}
		sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		builds = append(builds, build{out: out, sums: string(sums), skipped: stderr.String()})
	}
	skipped := builds[1].skipped
	if skipped != "" {
		t.Logf("mkdist said: %s", skipped)
	}
	if builds[0].sums != builds[1].sums {
		t.Errorf("two builds differ:\n%s\n%s", builds[0].sums, builds[1].sums)
	}

	var want []string
	for _, name := range releaseTestTargets {
		tgt, err := ParseTarget(name)
		if err != nil {
			t.Fatal(err)
		}
		if tgt.GOOS != "linux" {
			continue
		}
		want = append(want, "edge-agent-0.0.0-test-linux-"+tgt.Arch()+".tar.gz",
			"edge-agent_0.0.0~test-1_"+debArch(tgt)+".deb", "edge-agent-0.0.0~test-1."+rpmArch(tgt)+".rpm")
	}
	windowsBuilt := !strings.Contains(skipped, "skipped windows/amd64")
	if windowsBuilt {
		want = append(want, "edge-agent-0.0.0-test-windows-amd64.zip")
	}
	for _, name := range slices.Clone(want) {
		want = append(want, name+sbomSuffix)
	}
	sort.Strings(want)
	out := builds[1].out
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(builds[1].sums, "\n"), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		got = append(got, name)
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS says %s for %s, the file hashes to %x", sum, name, h)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("SHA256SUMS lists:\n%q\nwant:\n%q", got, want)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	// Every listed file and SHA256SUMS have a .sig; the public key too.
	if n := 2*(len(want)+1) + 1; len(entries) != n {
		t.Errorf("%d files in the output folder, want %d: the %d artifacts and SBOMs, SHA256SUMS, a .sig of each and the public key", len(entries), n, len(want))
	}
	// Signatures are as reproducible as the artifacts (ed25519 is
	// deterministic, the key is the same).
	for _, name := range append(slices.Clone(want), "SHA256SUMS", "THROWAWAY-local-build.pub") {
		if name != "THROWAWAY-local-build.pub" {
			name += ".sig"
		}
		a, errA := os.ReadFile(filepath.Join(builds[0].out, name))
		b, errB := os.ReadFile(filepath.Join(builds[1].out, name))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds or is missing: %v %v", name, errA, errB)
		}
	}

	t.Run("signatures", func(t *testing.T) { checkSignatures(ctx, t, root, out, want) })
	t.Run("sboms", func(t *testing.T) {
		for _, name := range want {
			if !strings.HasSuffix(name, sbomSuffix) {
				checkSBOM(t, out, name)
			}
		}
	})
	t.Run("tarball", func(t *testing.T) { checkTarball(t, filepath.Join(out, amd64Top+".tar.gz")) })
	t.Run("zip", func(t *testing.T) {
		if !windowsBuilt {
			t.Skipf("windows build failed, no zip: %s", skipped)
		}
		checkZip(t, filepath.Join(out, "edge-agent-0.0.0-test-windows-amd64.zip"))
	})
	t.Run("deb", func(t *testing.T) { checkDeb(t, filepath.Join(out, amd64Deb)) })
	t.Run("rpm", func(t *testing.T) {
		if _, err := exec.LookPath("rpm"); err != nil {
			t.Skip("rpm is not installed; the .rpm is built from the same contents as the .deb checked above")
		}
		outb, err := exec.Command("rpm", "-qlp", filepath.Join(out, "edge-agent-0.0.0~test-1.x86_64.rpm")).Output()
		if err != nil {
			t.Fatalf("rpm -qlp: %v", err)
		}
		for _, p := range []string{"/opt/edge-agent/bin/edge-agent", "/etc/edge-agent/agent.yaml", "/usr/lib/systemd/system/edge-agent.service"} {
			if !strings.Contains(string(outb), p+"\n") {
				t.Errorf("rpm lacks %s:\n%s", p, outb)
			}
		}
	})
	// The packages as an operator meets them outside systemd: installed
	// into a fresh Debian root, the agent started there by hand.
	t.Run("deb installed, no systemd", func(t *testing.T) {
		if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
			t.Skip("the amd64 package runs on linux/amd64 only")
		}
		checkInstalledOutsideSystemd(t, filepath.Join(out, amd64Deb), installDeb)
	})
	t.Run("rpm installed, no systemd", func(t *testing.T) {
		if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
			t.Skip("the amd64 package runs on linux/amd64 only")
		}
		if _, err := exec.LookPath("rpm"); err != nil {
			needTool(t, "rpm is not installed (apt-get install rpm); it installs the .rpm into the Debian root")
		}
		checkInstalledOutsideSystemd(t, filepath.Join(out, "edge-agent-0.0.0~test-1.x86_64.rpm"), installRPM)
	})
}

func checkTarball(t *testing.T, tarball string) {
	got := listTar(t, tarball)
	want := []string{
		amd64Top + "/",
		amd64Top + "/LICENSE",
		amd64Top + "/README.md",
		amd64Top + "/bin/",
		amd64Top + "/bin/edge-agent",
		amd64Top + "/bin/edgesocket-receiver",
		amd64Top + "/config/",
		amd64Top + "/config/agent.yaml",
		amd64Top + "/data/",
		amd64Top + "/log/",
		amd64Top + "/monitoring/",
		amd64Top + "/monitoring/edge-agent.dashboard.json",
		amd64Top + "/monitoring/edge-agent.rules.yml",
		amd64Top + "/share/",
		amd64Top + "/share/completion/",
		amd64Top + "/share/completion/_edge-agent",
		amd64Top + "/share/completion/edge-agent.bash",
		amd64Top + "/share/completion/edge-agent.fish",
		amd64Top + "/share/man/",
		amd64Top + "/share/man/man8/",
		amd64Top + "/share/man/man8/edge-agent.8",
		amd64Top + "/systemd/",
		amd64Top + "/systemd/edge-agent.service",
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("tarball entries:\n%q\nwant:\n%q", got, want)
	}
	guide, err := os.ReadFile(filepath.Join(repoRoot(t), operatorGuide))
	if err != nil {
		t.Fatal(err)
	}
	// The completions and the man page are the agent's own output.
	if man := readTarFile(t, tarball, amd64Top+"/share/man/man8/edge-agent.8"); !bytes.Contains(man, []byte(".SH NAME")) {
		t.Errorf("man page has no NAME section:\n%.200s", man)
	}
	if bash := readTarFile(t, tarball, amd64Top+"/share/completion/edge-agent.bash"); !bytes.Contains(bash, []byte("edge-agent")) {
		t.Errorf("bash completion does not name the command:\n%.200s", bash)
	}
	if !bytes.Equal(readTarFile(t, tarball, amd64Top+"/README.md"), guide) {
		t.Error("README.md in the tarball is not the operator guide")
	}
	for dst, src := range monitoringFiles {
		want, err := os.ReadFile(filepath.Join(repoRoot(t), src))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(readTarFile(t, tarball, amd64Top+"/"+dst), want) {
			t.Errorf("%s in the tarball differs from %s", dst, src)
		}
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("release binaries are linux/amd64; not run on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	dir := t.TempDir()
	unpack(t, tarball, dir)
	home := filepath.Join(dir, amd64Top)
	for _, tc := range []struct {
		bin  string
		args []string
		want string
	}{
		{"edge-agent", []string{"version"}, "edge-agent 0.0.0-test\n"},
		{"edgesocket-receiver", []string{"--version"}, "edgesocket-receiver 0.0.0-test ("},
		// Run from the unpacked folder with no flag: the binary must find
		// config/agent.yaml through the bin/ layout, as an operator's would.
		{"edge-agent", []string{"config", "check"}, ""},
	} {
		cmd := exec.Command(filepath.Join(home, "bin", tc.bin), tc.args...)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "EDGE_AGENT_TOKEN=test-token")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", tc.bin, tc.args, err, out)
		}
		if !strings.HasPrefix(string(out), tc.want) {
			t.Errorf("%s %v printed %q, want it to start with %q", tc.bin, tc.args, out, tc.want)
		}
	}
	t.Run("delivery", func(t *testing.T) { checkDelivery(t, home) })
}

// checkDelivery runs the unpacked agent against the unpacked receiver on
// loopback: three lines written before the start must reach the receiver,
// which exits by itself once it holds them (--exit-after). The context
// only bounds a hang; nothing waits on a clock.
func checkDelivery(t *testing.T, home string) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	out := filepath.Join(dir, "received.ndjson")
	recv := exec.CommandContext(ctx, filepath.Join(home, "bin", "edgesocket-receiver"),
		"--listen", "127.0.0.1:0", "--token", "dist-test-token", "--exit-after", "3", "--out", out)
	stderr, err := recv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := recv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = recv.Process.Kill(); _ = recv.Wait() }()
	addr := ""
	sc := bufio.NewScanner(stderr)
	for addr == "" && sc.Scan() {
		if _, a, ok := strings.Cut(sc.Text(), "listening on "); ok {
			addr = strings.Fields(a)[0]
		}
	}
	if addr == "" {
		t.Fatalf("receiver never said where it listens: %v", sc.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()

	in := filepath.Join(dir, "in.log")
	if err := os.WriteFile(in, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "agent.yaml")
	yaml := "input:\n  type: file\n  paths: [" + strconv.Quote(in) + "]\n  read-from-beginning: true\n" +
		"queue:\n  path: " + strconv.Quote(filepath.Join(dir, "wal.db")) + "\n" +
		"output:\n  type: transport\n  endpoint: " + addr + "\n  token: dist-test-token\n" +
		"http:\n  listen: \"off\"\n" +
		"log:\n  file: " + strconv.Quote(filepath.Join(dir, "agent.log")) + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := exec.CommandContext(ctx, filepath.Join(home, "bin", "edge-agent"), "start", "--config", cfg)
	agent.Dir = dir
	agent.Env = append(os.Environ(), "EDGE_AGENT_PID_FILE="+filepath.Join(dir, "edge-agent.pid"), "EDGE_AGENT_ID_FILE="+filepath.Join(dir, "edge-agent.id"))
	agentOut, err := os.Create(filepath.Join(dir, "agent.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer agentOut.Close()
	agent.Stdout, agent.Stderr = agentOut, agentOut
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = agent.Process.Kill(); _ = agent.Wait() }()

	if err := recv.Wait(); err != nil {
		said, _ := os.ReadFile(agentOut.Name())
		t.Fatalf("receiver: %v (agent said:\n%s)", err, said)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"one", "two", "three"} {
		if !strings.Contains(string(got), w) {
			t.Errorf("receiver did not get %q:\n%s", w, got)
		}
	}
}

func checkZip(t *testing.T, path string) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	top := "edge-agent-0.0.0-test-windows-amd64/"
	for _, n := range []string{top + "bin/edge-agent.exe", top + "bin/edgesocket-receiver.exe", top + "config/agent.yaml", top + "README.md", top + "monitoring/edge-agent.rules.yml"} {
		if !contains(names, n) {
			t.Errorf("zip lacks %s: %q", n, names)
		}
	}
	if contains(names, top+"systemd/edge-agent.service") {
		t.Error("zip ships the systemd unit")
	}
}

// checkDeb reads the .deb with dpkg-deb: what an operator's apt would see.
func checkDeb(t *testing.T, deb string) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("dpkg-deb is not installed")
	}
	run := func(args ...string) string {
		out, err := exec.Command("dpkg-deb", args...).Output()
		if err != nil {
			t.Fatalf("dpkg-deb %v: %v", args, err)
		}
		return string(out)
	}
	info := run("-I", deb)
	for _, w := range []string{"Package: edge-agent", "Version: 0.0.0~test-1", "Architecture: amd64", " postinst ", " prerm ", " postrm ", " conffiles "} {
		if !strings.Contains(info, w) {
			t.Errorf("dpkg-deb -I lacks %q:\n%s", w, info)
		}
	}
	if got := run("-f", deb, "Package"); got != "edge-agent\n" {
		t.Errorf("Package field %q", got)
	}
	ctrl := t.TempDir()
	run("-e", deb, ctrl)
	conffiles, err := os.ReadFile(filepath.Join(ctrl, "conffiles"))
	if err != nil {
		t.Fatal(err)
	}
	if string(conffiles) != "/etc/edge-agent/agent.yaml\n" {
		t.Errorf("conffiles = %q, want the config only", conffiles)
	}
	postinst, err := os.ReadFile(filepath.Join(ctrl, "postinst"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"useradd --system --gid adm", "getent passwd edge-agent", "systemctl enable edge-agent.service"} {
		if !strings.Contains(string(postinst), w) {
			t.Errorf("postinst lacks %q", w)
		}
	}
	if strings.Contains(string(postinst), "systemctl start") {
		t.Error("postinst starts the unit; it must only enable it")
	}

	rootfs := t.TempDir()
	run("-x", deb, rootfs)
	for _, c := range []struct {
		path string
		mode fs.FileMode
	}{
		{"opt/edge-agent/bin/edge-agent", 0o755},
		{"opt/edge-agent/bin/edgesocket-receiver", 0o755},
		{"opt/edge-agent/README.md", 0o644},
		{"opt/edge-agent/monitoring/edge-agent.dashboard.json", 0o644},
		{"opt/edge-agent/monitoring/edge-agent.rules.yml", 0o644},
		{"etc/edge-agent/agent.yaml", 0o640},
		{"usr/lib/systemd/system/edge-agent.service", 0o644},
		{"usr/share/man/man8/edge-agent.8", 0o644},
		{"usr/share/bash-completion/completions/edge-agent", 0o644},
		{"usr/share/zsh/vendor-completions/_edge-agent", 0o644},
		{"usr/share/fish/vendor_completions.d/edge-agent.fish", 0o644},
		{"var/lib/edge-agent", fs.ModeDir | 0o750},
		{"var/log/edge-agent", fs.ModeDir | 0o750},
	} {
		st, err := os.Lstat(filepath.Join(rootfs, c.path))
		if err != nil {
			t.Errorf("extracted .deb: %v", err)
			continue
		}
		if st.Mode() != c.mode {
			t.Errorf("%s mode %v, want %v", c.path, st.Mode(), c.mode)
		}
	}
	for link, target := range map[string]string{
		"opt/edge-agent/config":                  "/etc/edge-agent",
		"usr/bin/edge-agent":                     "/opt/edge-agent/bin/edge-agent",
		"opt/edge-agent/edge-agent.instance-uid": "/var/lib/edge-agent/edge-agent.instance-uid",
		"opt/edge-agent/edge-agent.pid":          "/var/lib/edge-agent/edge-agent.pid",
	} {
		if got, err := os.Readlink(filepath.Join(rootfs, link)); err != nil || got != target {
			t.Errorf("%s -> %q (%v), want %q", link, got, err, target)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(rootfs, "etc/edge-agent/agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"\n  path: /var/lib/edge-agent/wal.db\n", "\n  file: /var/log/edge-agent/edge-agent.log\n"} {
		if !strings.Contains(string(cfg), w) {
			t.Errorf("packaged agent.yaml lacks %q", strings.TrimSpace(w))
		}
	}
	unit, err := os.ReadFile(filepath.Join(rootfs, "usr/lib/systemd/system/edge-agent.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "User=edge-agent\n") {
		t.Error("packaged unit lacks User=edge-agent")
	}
	// The paths come from edge-agent.paths alone, so an agent started
	// without systemd uses the unit's files; /run/edge-agent would exist
	// only under the unit.
	for _, w := range []string{"Environment=EDGE_AGENT_", "RuntimeDirectory=", "/run/edge-agent"} {
		if strings.Contains(string(unit), w) {
			t.Errorf("packaged unit sets %q, which edge-agent.paths owns", w)
		}
	}
	defaults, err := os.ReadFile(filepath.Join(rootfs, "opt/edge-agent/edge-agent.paths"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"EDGE_AGENT_CONFIG=/etc/edge-agent/agent.yaml", "EDGE_AGENT_ID_FILE=/var/lib/edge-agent/edge-agent.id",
		"EDGE_AGENT_PID_FILE=/var/lib/edge-agent/edge-agent.pid", "EDGE_AGENT_LOG_DIR=/var/log/edge-agent"} {
		if !strings.Contains(string(defaults), "\n"+w+"\n") {
			t.Errorf("edge-agent.paths lacks %q:\n%s", w, defaults)
		}
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		// The packaged config must be valid as shipped.
		cmd := exec.Command(filepath.Join(rootfs, "opt/edge-agent/bin/edge-agent"), "config", "check", filepath.Join(rootfs, "etc/edge-agent/agent.yaml"))
		cmd.Env = append(os.Environ(), "EDGE_AGENT_TOKEN=test-token")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("config check of the packaged agent.yaml: %v\n%s", err, out)
		}
	}
}

// TestPackagedConfig: the packaged agent.yaml keeps the WAL and the log
// out of /opt, and a config/agent.yaml whose lines moved fails the build
// instead of shipping a package writing under /opt.
func TestPackagedConfig(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := packagedConfig(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"\n  path: /var/lib/edge-agent/wal.db\n", "\n  file: /var/log/edge-agent/edge-agent.log\n"} {
		if !bytes.Contains(got, []byte(w)) {
			t.Errorf("packaged config lacks %q", strings.TrimSpace(w))
		}
	}
	if _, err := packagedConfig(bytes.Replace(src, []byte("path: data/wal.db"), []byte("path: data/other.db"), 1)); err == nil {
		t.Error("a config without the queue.path line was accepted")
	}
}

// TestZipIsReproducible: two zips of files with different mtimes are the
// same bytes, since every entry carries the epoch.
func TestZipIsReproducible(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "a.txt")
	var zips [][]byte
	for i := 0; i < 2; i++ {
		if err := os.WriteFile(src, []byte("same"), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := time.Unix(1600000000+int64(i)*86400, 0)
		if err := os.Chtimes(src, mt, mt); err != nil {
			t.Fatal(err)
		}
		b, err := writeZip("top", map[string]entry{"a.txt": {src: src, mode: 0o644}, "data/": {dir: true, mode: 0o755}}, time.Unix(1700000000, 0))
		if err != nil {
			t.Fatal(err)
		}
		zips = append(zips, b)
	}
	if !bytes.Equal(zips[0], zips[1]) {
		t.Fatal("two zips of the same content differ")
	}
	zr, err := zip.NewReader(bytes.NewReader(zips[0]), int64(len(zips[0])))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if !f.Modified.Equal(time.Unix(1700000000, 0)) {
			t.Errorf("%s modified %v, want the epoch", f.Name, f.Modified)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// tarEntries calls fn for each entry of a .tar.gz, with the reader on its
// content, until fn returns false.
func tarEntries(t *testing.T, tarball string, fn func(h *tar.Header, r io.Reader) bool) {
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
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !fn(h, tr) {
			return
		}
	}
}

func unpack(t *testing.T, tarball, dir string) {
	t.Helper()
	tarEntries(t, tarball, func(h *tar.Header, r io.Reader) bool {
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return true
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, fs.FileMode(h.Mode)); err != nil {
			t.Fatal(err)
		}
		return true
	})
}

func readTarFile(t *testing.T, tarball, name string) []byte {
	t.Helper()
	var b []byte
	found := false
	tarEntries(t, tarball, func(h *tar.Header, r io.Reader) bool {
		if h.Name != name {
			return true
		}
		var err error
		if b, err = io.ReadAll(r); err != nil {
			t.Fatal(err)
		}
		found = true
		return false
	})
	if !found {
		t.Fatalf("%s not found in %s", name, tarball)
	}
	return b
}

func listTar(t *testing.T, path string) []string {
	t.Helper()
	var names []string
	tarEntries(t, path, func(h *tar.Header, _ io.Reader) bool {
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d, want 0:0", h.Name, h.Uid, h.Gid)
		}
		if h.Name == amd64Top+"/bin/edge-agent" && h.Mode&0o111 == 0 {
			t.Errorf("edge-agent is not executable: %o", h.Mode)
		}
		names = append(names, h.Name)
		return true
	})
	return names
}

// TestPostinstall runs the package's postinstall twice against recording
// stand-ins for useradd, getent, chown, chmod and systemctl (first on a
// host without the user, then with it): the user is created once, in group
// adm, and the unit is enabled but never started.
func TestPostinstall(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the package scripts are linux shell scripts")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	userFile := filepath.Join(t.TempDir(), "user-exists")
	// Builtins only: PATH holds nothing but the stand-ins.
	record := "#!" + sh + "\necho \"${0##*/} $*\" >> " + strconv.Quote(calls) + "\n"
	for name, body := range map[string]string{
		"useradd":   record + ": > " + strconv.Quote(userFile) + "\n",
		"getent":    record + "test -e " + strconv.Quote(userFile) + "\n",
		"chown":     record,
		"chmod":     record,
		"systemctl": record,
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(repoRoot(t), "dist", "packaging", "postinstall.sh")
	for i, args := range [][]string{{"configure"}, {"configure", "0.0.9"}} {
		cmd := exec.Command(sh, append([]string{script}, args...)...)
		cmd.Env = []string{"PATH=" + bin}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %d: postinstall %v: %v\n%s", i, args, err, out)
		}
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if n := strings.Count(log, "useradd "); n != 1 {
		t.Errorf("useradd ran %d times over two runs, want once:\n%s", n, log)
	}
	if !strings.Contains(log, "useradd --system --gid adm ") || !strings.Contains(log, " edge-agent\n") {
		t.Errorf("useradd does not create the system user edge-agent in adm:\n%s", log)
	}
	if !strings.Contains(log, "chown edge-agent:adm /var/lib/edge-agent /var/log/edge-agent\n") {
		t.Errorf("data and log folders not given to edge-agent:\n%s", log)
	}
	if !strings.Contains(log, "systemctl enable edge-agent.service\n") {
		t.Errorf("unit not enabled:\n%s", log)
	}
	if strings.Contains(log, "systemctl start") || strings.Contains(log, "--now") {
		t.Errorf("postinstall starts the unit:\n%s", log)
	}
}
