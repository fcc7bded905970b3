package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// smallDisk mounts a tmpfs of size bytes under t.TempDir, unmounted when
// the test ends (register it before anything that keeps files open on it).
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs for the full-disk case")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Skipf("cannot mount a small tmpfs for the full-disk case: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

func fillDisk(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "ballast"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for i := 0; i < 1<<20; i++ { // bounded: a few MiB fill long before
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatalf("fill disk: %v", err)
		}
	}
	t.Fatal("the disk never filled up")
}

var summaryCount = regexp.MustCompile(`(?m)^\s*(PENDING|SENDING|total)\s+(\d+)`)

// walCounts reads `db wal-summary`: through the agent's API while it runs,
// from the file once it is killed.
func walCounts(t *testing.T, root *agentRoot) map[string]int {
	t.Helper()
	out, errOut, code := root.cli("db", "wal-summary", "--db-path", root.opts.queuePath)
	if code != 0 {
		t.Fatalf("db wal-summary exit %d: %s", code, errOut)
	}
	got := map[string]int{}
	for _, m := range summaryCount.FindAllStringSubmatch(out, -1) {
		got[m[1]], _ = strconv.Atoi(m[2])
	}
	return got
}

// The agent is killed with rows in flight (SENDING) and its WAL's disk
// fills up meanwhile: the restart used to end at once with "open WAL …
// no space left on device". It must start and deliver everything.
func TestStartOnFullDisk(t *testing.T) {
	skipShort(t)
	disk := smallDisk(t, 8<<20)
	slow := startReceiver(t, "e2e-token-0123456789", "--fault-delay-ms", "600000")
	port := slow.port
	root := newRoot(t, options{port: port, queuePath: filepath.Join(disk, "wal.db"), api: true})
	// An engine that takes the batches and never answers in time: rows
	// stay SENDING until the read timeout.
	pad := strings.Repeat("p", 1000)
	want := makeLines(t.Name(), 0, 3000)
	for i := range want {
		want[i] += " " + pad
	}
	root.createFile("in/app.log").lines(want)
	agent := root.startReady()
	eventually(t, deliverTimeout, "every line in the WAL with some in flight", func() bool {
		c := walCounts(t, root)
		return c["total"] == len(want) && c["SENDING"] > 0
	})
	agent.signal(t, syscall.SIGKILL)
	agent.wait(t, 10*time.Second)
	slow.p.kill()
	if c := walCounts(t, root); c["SENDING"] == 0 {
		t.Fatalf("no rows left in flight by the kill: %v", c)
	}
	fillDisk(t, disk)

	rc := startReceiverAt(t, port, "e2e-token-0123456789")
	restarted := root.startReady()
	d := rc.waitDelivered(want, deliverTimeout)
	t.Logf("after a restart on a full disk: %s", d)
	eventually(t, deliverTimeout, "an empty WAL", func() bool { return walCounts(t, root)["total"] == 0 })
	if code := root.stop(restarted); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
}
