package process

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/disktest"
)

// A killed agent's pid file is left behind; on restart the disk is full.
// The stale file holds the room a pid needs: AcquirePID must reuse it
// rather than fail the start.
func TestAcquirePIDOnFullDiskReusesStaleFile(t *testing.T) {
	dir := disktest.Small(t, 1<<20)
	path := filepath.Join(dir, "edge-agent.pid")
	// A long stale pid: the new, shorter one must fit in its block.
	if err := os.WriteFile(path, []byte(strconv.Itoa(1<<22)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	disktest.Fill(t, dir)
	l, err := AcquirePID(path, os.Getpid())
	if err != nil {
		t.Fatalf("AcquirePID on a full disk over a stale pid file: %v", err)
	}
	defer l.Release()
	if got, err := ReadPID(path); err != nil || got != os.Getpid() {
		t.Fatalf("pid file holds %d (%v), want %d", got, err, os.Getpid())
	}
}
