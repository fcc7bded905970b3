//go:build linux

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/e2e/internal/powercut"
)

// powerCutSeed makes the cut points, the chunk sizes and the rotations
// reproducible; a failure names it.
const powerCutSeed = 25

// A kill -9 keeps the page cache; a power cut does not. The WAL lives on
// a filesystem that keeps only what was fsynced (powercut): ten times, at
// a random point while lines are written (files rotated now and then,
// PACKET with gzip and AES-GCM), the agent is killed and every unsynced
// write dropped, then it starts again. Every line must arrive; duplicates
// are the rows in flight at a cut. The agent keeps its default commit
// cadence at low rates (agent.commit-interval-ms), where a durability
// bug in it would hide.
func TestPowerCutsLoseNothing(t *testing.T) {
	skipShort(t)
	disk := powercut.NewDisk(256 << 20)
	walDir := filepath.Join(t.TempDir(), "wal")
	if err := os.Mkdir(walDir, 0o755); err != nil {
		t.Fatal(err)
	}
	mounted := mountPowerCut(t, disk, walDir)
	// Registered before the agent's and the receiver's cleanups, so it
	// runs after them: nothing holds a file on the mount any more.
	t.Cleanup(func() {
		if mounted != nil {
			if err := mounted.Unmount(); err != nil {
				t.Errorf("unmount %s: %v", walDir, err)
			}
		}
	})

	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyB64 := base64.StdEncoding.EncodeToString(key)
	rc := startReceiver(t, "e2e-token-0123456789", "--packet-mode", "packet", "--secret-key", keyB64)
	root := newRoot(t, options{port: rc.port, packetMode: "PACKET", compression: "gzip", encryption: "aes_gcm", keyB64: keyB64,
		paths: []string{"in/app.log*"}, queuePath: filepath.Join(walDir, "wal.db")})

	rng := mrand.New(mrand.NewPCG(powerCutSeed, 0))
	const cuts = 10
	want := makeLines(t.Name(), 0, 30_000)
	next, rotations := 0, 0
	w := root.createFile("in/app.log")
	agent := root.startReady()
	for cut := 1; cut <= cuts; cut++ {
		// A burst of lines in chunks (from a few lines a chunk, the
		// low-rate cadence, to hundreds), sometimes a rotation; the cut
		// falls at a random point up to 3 s from the burst's start, while
		// it is written or while the agent commits it.
		chunks := make([]int, 1+rng.IntN(8))
		pauses := make([]time.Duration, len(chunks))
		for i := range chunks {
			chunks[i] = 1 + rng.IntN(400)
			pauses[i] = time.Duration(rng.IntN(300)) * time.Millisecond
		}
		rotate := rng.IntN(3) == 0
		cutAfter := time.Duration(rng.IntN(3000)) * time.Millisecond
		burst := make(chan error, 1)
		go func() {
			for i, n := range chunks {
				n = min(len(want)-next, n)
				if _, err := w.f.WriteString(strings.Join(want[next:next+n], "\n") + "\n"); err != nil {
					burst <- err
					return
				}
				next += n
				time.Sleep(pauses[i]) // the writer's pace, not a wait
			}
			burst <- nil
		}()
		time.Sleep(cutAfter) // where the cut falls
		agent.signal(t, syscall.SIGKILL)
		agent.wait(t, 10*time.Second)
		if err := <-burst; err != nil {
			t.Fatal(err)
		}
		if rotate {
			rotations++
			w.close()
			if err := os.Rename(root.path("in/app.log"), root.path(fmt.Sprintf("in/app.log.%d", rotations))); err != nil {
				t.Fatal(err)
			}
			w = root.createFile("in/app.log")
		}
		if err := mounted.Unmount(); err != nil {
			mounted = nil
			t.Fatal(err)
		}
		dropped := disk.Cut()
		mounted = mountPowerCut(t, disk, walDir)
		t.Logf("cut %d (seed %d): %d lines written, %d distinct delivered, %d unsynced bytes dropped", cut, powerCutSeed, next, len(rc.received()), dropped)
		agent = root.startReady()
	}
	d := rc.waitDelivered(want[:next], deliverTimeout)
	if code := root.stop(agent); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
	syncs, dropped := disk.Stats()
	t.Logf("after %d power cuts (seed %d, %d rotations, %d fsyncs): %s", cuts, powerCutSeed, rotations, syncs, d)
	// With queue.fsync on, a commit leaves nothing unsynced once it
	// returns, so most cuts find nothing to drop; that the disk drops
	// what was not synced is TestCutKeepsWhatWasSynced's. Here: the WAL
	// was on it.
	if syncs == 0 {
		t.Errorf("the WAL never synced on the power-cut filesystem (%d bytes dropped)", dropped)
	}
	t.Logf("unsynced bytes dropped by the cuts: %d", dropped)
}

// mountPowerCut mounts disk at dir. Where FUSE is missing it skips,
// loudly, or fails under CI (CI=true), which must have it.
func mountPowerCut(t *testing.T, disk *powercut.Disk, dir string) *powercut.Mount {
	t.Helper()
	m, err := disk.Mount(dir)
	if errors.Is(err, powercut.ErrNoFUSE) && os.Getenv("CI") != "true" {
		t.Skipf("SKIPPED: power cuts are not tested on this host (needs /dev/fuse and root or fusermount): %v", err)
	}
	if err != nil {
		t.Fatalf("the power-cut filesystem: %v", err)
	}
	return m
}
