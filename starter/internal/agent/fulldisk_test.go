package agent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/starter/internal/disktest"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
	"github.com/edge-agent/edge-agent/transport/transporttest"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

// bigEvents are events of source key with ~1 KiB payloads, so a few MiB of
// disk hold only a few thousand rows.
func bigEvents(key string, from, to int) []input.Event {
	pad := strings.Repeat("p", 1000)
	var out []input.Event
	for i := from; i < to; i++ {
		out = append(out, input.Event{
			Payload: []byte(fmt.Sprintf(`{"_line":%d,"pad":"%s"}`, i, pad)),
			Pos:     input.Position{Key: key, State: []byte(itoa(i))},
		})
	}
	return out
}

func payloadsOfEvents(evs []input.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.Payload)
	}
	return out
}

// freeLoopbackAddr returns a loopback address nothing listens on (yet).
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// stopBeforeUnmount returns a stop func for h that is also run when the
// test ends early, before smallDisk's cleanup unmounts the WAL's disk.
func stopBeforeUnmount(t *testing.T, h *harness) func() error {
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() {
			h.cancel()
			select {
			case err = <-h.done:
			case <-time.After(20 * time.Second):
				err = errors.New("Run did not return within 20s")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// A backlog built while the engine was down, then the WAL's disk fills up
// while more input waits: once the engine is up, the acks must commit on
// their own (a commit that also appends cannot), the acked rows free pages
// inside the WAL file, the held-back events go in there, and everything is
// delivered exactly once.
func TestFullDiskAcksCommitAndBacklogDrains(t *testing.T) {
	disk := disktest.Small(t, 6<<20)
	addr := freeLoopbackAddr(t)
	cfg := transportConfig(t, addr)
	cfg.Agent.BulkMaxSize = 200
	cfg.Retry.Backoff = 20 * time.Millisecond
	cfg.Retry.BackoffMax = 100 * time.Millisecond
	in := &fakeInput{}
	first := bigEvents("a.log", 0, 2000)
	in.push(first...)
	h := startRuntime(t, ingressOptions(t, cfg, disk, in))
	stop := stopBeforeUnmount(t, h)
	transporttest.Eventually(t, 10*time.Second, "the backlog in the WAL", func() bool { return h.rt.Snapshot().RowsAppended == 2000 })

	ballast := disktest.Fill(t, disk)
	more := bigEvents("a.log", 2000, 2600)
	in.push(more...)
	transporttest.Eventually(t, 10*time.Second, "the append failing", func() bool {
		return strings.Contains(h.rt.Snapshot().LastError, "no space left")
	})
	if st := h.rt.Snapshot(); !strings.Contains(st.WALError, "no space left") {
		t.Fatalf("WALError %q while appends fail, want the disk's error (health checks read it)", st.WALError)
	}
	// Free pages left in the file by earlier commits may take a few
	// groups; the rest waits in the buffer and the input.
	if st := h.rt.Snapshot(); st.RowsAppended >= 2600 || st.Acked != 0 {
		t.Fatalf("before the engine is up: appended %d acked %d, want < 2600 and 0", st.RowsAppended, st.Acked)
	}

	eng := startEngine(t, addr, standin.Faults{}, nil)
	// The ballast stays: only what delivery frees in the WAL file is room.
	var st Status
	defer func() {
		if t.Failed() {
			t.Logf("last snapshot: acked %d, appended %d, queue %+v, last error %q",
				st.Acked, st.RowsAppended, st.Queue, st.LastError)
		}
	}()
	transporttest.Eventually(t, 20*time.Second, "the backlog drained with the disk still full", func() bool {
		st = h.rt.Snapshot()
		return st.Acked == 2600 && st.Queue.Pending == 0 && st.Queue.Sending == 0
	})
	if left := in.left(); left != 0 {
		t.Fatalf("input not resumed: %d events never read", left)
	}
	if st.WALError != "" {
		t.Fatalf("WALError %q after every append committed, want empty", st.WALError)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	if dups := eng.checkAll(payloadsOfEvents(append(first, more...))); dups != 0 {
		t.Fatalf("%d duplicates", dups)
	}
	if c := readCounts(t, disk); c.Total() != 0 {
		t.Fatalf("WAL not empty after everything was acked: %+v", c)
	}
	if got := string(readPositions(t, disk, "input-1")["a.log"]); got != "2599" {
		t.Fatalf("saved position %q, want 2599", got)
	}
}

// A WAL left by a run that stopped with rows in flight (SENDING), on a
// disk that is full: start must succeed without the one big transaction
// that returned them all to PENDING, and deliver everything.
func TestStartOnFullDiskDrains(t *testing.T) {
	disk := disktest.Small(t, 6<<20)
	addr := freeLoopbackAddr(t)
	cfg := transportConfig(t, addr)
	cfg.Agent.BulkMaxSize = 500
	events := bigEvents("a.log", 0, 2600)
	in := &fakeInput{}
	in.push(events...)
	h := startRuntime(t, ingressOptions(t, cfg, disk, in))
	stop := stopBeforeUnmount(t, h)
	transporttest.Eventually(t, 10*time.Second, "the backlog in the WAL", func() bool { return h.rt.Snapshot().RowsAppended == 2600 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// What a crash leaves: 2,000 rows (2 MiB, more than the WAL's reserve)
	// claimed and never settled.
	w, err := wal.Open(wal.Options{Path: filepath.Join(disk, "data", "wal.db")})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Update(func(tx *wal.Tx) error { _, err := tx.Claim(2000, time.Now().UnixMilli()); return err })
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	disktest.Fill(t, disk)

	eng := startEngine(t, addr, standin.Faults{}, nil)
	in2 := &fakeInput{}
	h2 := startRuntime(t, ingressOptions(t, cfg, disk, in2))
	stop2 := stopBeforeUnmount(t, h2)
	if got := string(in2.openOptions().Saved["a.log"]); got != "2599" {
		t.Fatalf("saved position %q, want 2599", got)
	}
	var st Status
	defer func() {
		if t.Failed() {
			t.Logf("last snapshot: acked %d, queue %+v, last error %q", st.Acked, st.Queue, st.LastError)
		}
	}()
	transporttest.Eventually(t, 20*time.Second, "the backlog drained on a full disk", func() bool {
		st = h2.rt.Snapshot()
		return st.Acked == 2600 && st.Queue.Pending == 0 && st.Queue.Sending == 0
	})
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	if dups := eng.checkAll(payloadsOfEvents(events)); dups != 0 {
		t.Fatalf("%d duplicates", dups)
	}
}
