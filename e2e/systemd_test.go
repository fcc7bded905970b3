//go:build unix

package e2e

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Under systemd Type=notify the agent sends READY=1 once ready and
// STOPPING=1 when it begins a graceful stop, to $NOTIFY_SOCKET.
func TestSystemdNotify(t *testing.T) {
	skipShort(t)
	// A unix socket path must stay under ~108 bytes; TempDir names are long.
	dir, err := os.MkdirTemp("", "sdn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	root := newRoot(t, options{port: deadPort(t)})
	agent := root.startEnv([]string{"NOTIFY_SOCKET=" + sock})
	if got := readDatagram(t, conn, 20*time.Second); got != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", got)
	}
	if !root.hasReadyLine() {
		t.Error("READY=1 came before the readiness log line")
	}
	agent.signal(t, syscall.SIGTERM)
	if got := readDatagram(t, conn, 20*time.Second); got != "STOPPING=1" {
		t.Fatalf("notification at stop %q, want STOPPING=1", got)
	}
	if code := agent.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func readDatagram(t *testing.T, conn *net.UnixConn, d time.Duration) string {
	t.Helper()
	buf := make([]byte, 256)
	if err := conn.SetReadDeadline(time.Now().Add(d)); err != nil {
		t.Fatal(err)
	}
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no sd_notify datagram: %v", err)
	}
	return string(buf[:n])
}
