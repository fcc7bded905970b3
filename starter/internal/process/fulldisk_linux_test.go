package process

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A killed agent's pid file is left behind; on restart the disk is full.
// The stale file holds the room a pid needs: AcquirePID must reuse it
// rather than fail the start.
func TestAcquirePIDOnFullDiskReusesStaleFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs for the full-disk case")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a small tmpfs for the full-disk case: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	path := filepath.Join(dir, "edge-agent.pid")
	// A long stale pid: the new, shorter one must fit in its block.
	if err := os.WriteFile(path, []byte(strconv.Itoa(1<<22)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "ballast"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for i := 0; i < 1<<10; i++ { // bounded: 1 MiB fills after 256 writes
		if _, err = f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the disk: %v, want ENOSPC", err)
	}
	l, err := AcquirePID(path, os.Getpid())
	if err != nil {
		t.Fatalf("AcquirePID on a full disk over a stale pid file: %v", err)
	}
	defer l.Release()
	if got, err := ReadPID(path); err != nil || got != os.Getpid() {
		t.Fatalf("pid file holds %d (%v), want %d", got, err, os.Getpid())
	}
}
