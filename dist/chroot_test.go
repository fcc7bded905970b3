package dist

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// debianSuite is the suite of the fresh root the packages are installed
// into: the one this project's machines run.
const debianSuite = "bookworm"

// needTool fails under CI and skips, saying why, elsewhere: the install
// tests must not pass quietly on a runner that lacks what they need.
func needTool(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip("SKIPPED (fails under CI=true): " + why)
}

// debianRoot returns a fresh copy of a minimal Debian root, made once
// with debootstrap and kept under build/debootstrap for later runs.
func debianRoot(t *testing.T, ctx context.Context) string {
	t.Helper()
	if os.Geteuid() != 0 {
		needTool(t, "installing a package into a Debian root needs root (chroot, dpkg)")
	}
	cache := filepath.Join(repoRoot(t), "build", "debootstrap", debianSuite+"-minbase")
	if _, err := os.Stat(filepath.Join(cache, "usr", "bin", "dpkg")); err != nil {
		if _, err := exec.LookPath("debootstrap"); err != nil {
			needTool(t, "debootstrap is not installed (apt-get install debootstrap)")
		}
		tmp := cache + ".tmp"
		if err := os.RemoveAll(tmp); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		// No mirror named: debootstrap's default, Debian's own.
		cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", debianSuite, tmp)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("debootstrap: %v\n%s", err, tail(out))
		}
		if err := os.Rename(tmp, cache); err != nil {
			t.Fatal(err)
		}
		t.Logf("debootstrap %s made %s in %s (once)", debianSuite, cache, time.Since(start).Round(time.Second))
	}
	root := filepath.Join(t.TempDir(), "root")
	if out, err := exec.CommandContext(ctx, "cp", "-a", cache, root).CombinedOutput(); err != nil {
		t.Fatalf("copy the Debian root: %v\n%s", err, out)
	}
	return root
}

// checkInstalledOutsideSystemd installs a package into a fresh Debian root
// with install and starts the agent there as an operator would in a
// container or a debugging session, without systemd: as the edge-agent
// user, with the packaged config, in the background; status must find it
// and stop must end it.
func checkInstalledOutsideSystemd(t *testing.T, pkg string, install func(ctx context.Context, root, pkg string) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	root := debianRoot(t, ctx)
	if err := install(ctx, root, pkg); err != nil {
		t.Fatal(err)
	}
	uid, gid := lookupUser(t, root, "edge-agent")
	// A container has /proc; the agent finds its install root through
	// /proc/self/exe.
	if out, err := exec.CommandContext(ctx, "mount", "-t", "proc", "proc", filepath.Join(root, "proc")).CombinedOutput(); err != nil {
		t.Fatalf("mount /proc in the Debian root: %v\n%s", err, out)
	}
	defer func() {
		if out, err := exec.Command("umount", filepath.Join(root, "proc")).CombinedOutput(); err != nil {
			t.Errorf("umount the root's /proc: %v\n%s", err, out)
		}
	}()

	// An engine the test owns: the agent dials it instead of the packaged
	// 127.0.0.1:9999, and its API takes a free port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfgPath := filepath.Join(root, "etc", "edge-agent", "agent.yaml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(cfg), "endpoint: 127.0.0.1:9999", "endpoint: "+ln.Addr().String(), 1)
	edited = strings.Replace(edited, "listen: 127.0.0.1:9466", "listen: 127.0.0.1:0", 1)
	if edited == string(cfg) {
		t.Fatal("the packaged agent.yaml has no output.endpoint or http.listen line to point at the test")
	}
	if err := os.WriteFile(cfgPath, []byte(edited), 0o640); err != nil {
		t.Fatal(err)
	}

	// chroot --userspec is `sudo -u edge-agent` without sudo in the root.
	asAgent := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "chroot", append([]string{"--userspec=" + uid + ":" + gid, root}, args...)...)
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/var/lib/edge-agent", "EDGE_AGENT_TOKEN=test-token"}
		cmd.Dir = "/"
		return cmd
	}
	asRoot := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "chroot", append([]string{root}, args...)...)
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "EDGE_AGENT_TOKEN=test-token"}
		return cmd
	}

	start := asAgent("edge-agent", "start", "--background", "--config", "/etc/edge-agent/agent.yaml")
	out, err := start.CombinedOutput()
	pid := readPID(root)
	if pid > 0 {
		// Whatever happens below, the agent this test started ends.
		defer func() {
			if alive(pid) {
				if p, err := os.FindProcess(pid); err == nil {
					_ = p.Kill()
				}
			}
		}()
	}
	if err != nil {
		t.Fatalf("edge-agent start --background as edge-agent: %v\n%s\n%s", err, out, readOut(root))
	}
	if pid <= 0 {
		t.Fatalf("no pid in /var/lib/edge-agent/edge-agent.pid after start:\n%s", out)
	}
	for _, c := range []struct {
		name string
		cmd  *exec.Cmd
	}{
		{"status as edge-agent", asAgent("edge-agent", "status")},
		{"status as root, through /usr/bin", asRoot("/usr/bin/edge-agent", "status")},
	} {
		out, err := c.cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), strconv.Itoa(pid)) {
			t.Errorf("%s: %v (want exit 0 naming pid %d)\n%s", c.name, err, pid, out)
		}
	}
	id, err := os.ReadFile(filepath.Join(root, "var", "lib", "edge-agent", "edge-agent.id"))
	if err != nil || !strings.Contains(string(id), "agent.id=") {
		t.Errorf("the id file under /var/lib/edge-agent: %q, %v", id, err)
	}
	if out, err := asAgent("edge-agent", "stop", "--timeout", "20s").CombinedOutput(); err != nil || !strings.Contains(string(out), "stopped") {
		t.Errorf("edge-agent stop: %v\n%s", err, out)
	}
	if alive(pid) {
		t.Errorf("pid %d still runs after stop", pid)
	}
	if out, err := asAgent("edge-agent", "status").CombinedOutput(); exitCode(err) != 3 {
		t.Errorf("status after stop: %v, want exit 3\n%s", err, out)
	}
}

func installDeb(ctx context.Context, root, pkg string) error {
	if err := copyFile(pkg, filepath.Join(root, "tmp", filepath.Base(pkg))); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "chroot", root, "dpkg", "-i", "/tmp/"+filepath.Base(pkg))
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg -i in the Debian root: %w\n%s", err, tail(out))
	}
	return nil
}

// installRPM uses the host's rpm with --root: it runs the scriptlets
// inside the root. --nodeps because the root's packages are Debian's, not
// in rpm's database.
func installRPM(ctx context.Context, root, pkg string) error {
	for _, args := range [][]string{
		{"--root", root, "--initdb"},
		{"--root", root, "-i", "--nodeps", pkg},
	} {
		if out, err := exec.CommandContext(ctx, "rpm", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("rpm %s: %w\n%s", strings.Join(args, " "), err, tail(out))
		}
	}
	return nil
}

func lookupUser(t *testing.T, root, name string) (uid, gid string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "etc", "passwd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 4 && f[0] == name {
			return f[2], f[3]
		}
	}
	t.Fatalf("the package made no %s user in the root's /etc/passwd", name)
	return "", ""
}

func readPID(root string) int {
	raw, err := os.ReadFile(filepath.Join(root, "var", "lib", "edge-agent", "edge-agent.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	return pid
}

// alive tells whether pid runs: the detached agent is not this test's
// child, so once it exits it may stay a zombie until its new parent reaps
// it, which is not running.
func alive(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := strings.LastIndexByte(string(raw), ')')
	return i > 0 && i+2 < len(raw) && raw[i+2] != 'Z'
}

func readOut(root string) string {
	raw, _ := os.ReadFile(filepath.Join(root, "var", "log", "edge-agent", "edge-agent.out"))
	return tail(raw)
}

func copyFile(src, dst string) error {
	raw, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, raw, 0o644)
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// tail keeps the end of a long tool output, where the error is.
func tail(b []byte) string {
	const keep = 4000
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return string(b)
}
