// Package mosquittotest runs a real MQTT broker (Debian's mosquitto) for
// tests: on a free loopback port, with a config in a temp dir, stopped
// by its PID. It skips without mosquitto, and fails under CI=true. Test
// support only.
package mosquittotest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Options shape the broker's config.
type Options struct {
	// Extra lines appended to the listener's config (TLS files,
	// require_certificate, password_file...).
	Extra string
	// NoAnonymous refuses clients without a username.
	NoAnonymous bool
	// UnlimitedInflight lifts the broker's in-flight window per client
	// (default 20 unacknowledged QoS 1/2 messages).
	UnlimitedInflight bool
}

// Broker is a running mosquitto.
type Broker struct {
	t    testing.TB
	bin  string
	dir  string
	Port int
	opts Options
	cmd  *exec.Cmd
	// exited receives cmd's Wait result.
	exited chan error
	log    string
}

// Path finds mosquitto (Debian installs it in /usr/sbin, often not in a
// user's PATH).
func Path(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"} {
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("mosquitto is required under CI (Debian: apt-get install mosquitto)")
	}
	t.Skipf("SKIP: mosquitto not installed (Debian: apt-get install mosquitto); this real-broker test did not run")
	return ""
}

// Start runs a broker and waits until it accepts connections; it is
// stopped (SIGTERM, then SIGKILL, by PID) when the test ends.
func Start(t testing.TB, opts Options) *Broker {
	t.Helper()
	b := &Broker{t: t, bin: Path(t), dir: t.TempDir(), opts: opts}
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		b.Port = freePort(t)
		if err = b.launch(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// URL is the broker's tcp:// URL (scheme as given).
func (b *Broker) URL(scheme string) string {
	return scheme + "://127.0.0.1:" + strconv.Itoa(b.Port)
}

// Dir is the broker's temp dir, for files its config names.
func (b *Broker) Dir() string { return b.dir }

// launch writes the config and starts mosquitto on b.Port, waiting until
// it accepts a TCP connection (bounded: 10s).
func (b *Broker) launch() error {
	inflight := 20
	if b.opts.UnlimitedInflight {
		inflight = 0
	}
	user := ""
	if os.Geteuid() == 0 {
		// Started as root, mosquitto drops to the user "mosquitto", who
		// cannot read the test's temp files.
		user = "user root\n"
	}
	conf := fmt.Sprintf("%slistener %d 127.0.0.1\nallow_anonymous %t\nmax_queued_messages 1000000\nmax_inflight_messages %d\npersistence false\n%s\n",
		user, b.Port, !b.opts.NoAnonymous, inflight, b.opts.Extra)
	path := filepath.Join(b.dir, "mosquitto.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return err
	}
	b.log = filepath.Join(b.dir, "mosquitto.log")
	logf, err := os.OpenFile(b.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(b.bin, "-c", path)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start mosquitto: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("mosquitto exited at start (%v): %s", err, b.LogText())
		default:
		}
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(b.Port), time.Second)
		if err == nil {
			c.Close()
			b.cmd = cmd
			b.exited = exited
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	return errors.New("mosquitto did not accept connections within 10s: " + b.LogText())
}

// LogText is what mosquitto logged so far.
func (b *Broker) LogText() string {
	out, _ := os.ReadFile(b.log)
	return strings.TrimSpace(string(out))
}

// Stop ends the broker by its PID (SIGTERM, SIGKILL after 10s) and waits
// for it. Idempotent.
func (b *Broker) Stop() {
	if b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.exited
	}
	b.cmd = nil
}

// Restart stops the broker and starts it again on the same port: without
// persistence it forgets every session and subscription.
func (b *Broker) Restart() {
	b.t.Helper()
	b.Stop()
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err = b.launch(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.t.Fatalf("restart mosquitto on port %d: %v", b.Port, err)
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
