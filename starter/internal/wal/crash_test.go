package wal

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	crashChildEnv = "EDGE_AGENT_WAL_CRASH_CHILD"
	// crashKeyEnv names the testEncryptions entry the child opens with.
	crashKeyEnv = "EDGE_AGENT_WAL_CRASH_KEY"
)

// TestCrashChild is the child half of TestCrashConsistency; it does nothing
// unless started by it. It appends numbered rows together with the
// position "last number appended" in group commits, claims and acks some
// rows (kept as ACKED so they stay countable), and prints the last number
// of each batch after its commit returned.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("child process of TestCrashConsistency")
	}
	w, err := Open(Options{Path: path, Fsync: true, Encryption: testEncryption(os.Getenv(crashKeyEnv))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	var next int64 = 1
	_ = w.View(func(tx *ReadTx) error {
		pos, _ := tx.Positions("in")
		if v, ok := pos["file"]; ok {
			n, _ := strconv.ParseInt(string(v), 10, 64)
			next = n + 1
		}
		return nil
	})
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for {
		n := 1 + rng.IntN(64)
		rows := make([]NewRow, n)
		for i := range rows {
			rows[i] = NewRow{SourceID: "in", Payload: []byte(fmt.Sprintf("seq=%d", next+int64(i)))}
		}
		last := next + int64(n) - 1
		err := w.Update(func(tx *Tx) error {
			if _, _, err := tx.Append(rows); err != nil {
				return err
			}
			if err := tx.SavePositions([]PositionUpdate{{SourceID: "in", Key: "file", State: []byte(strconv.FormatInt(last, 10))}}); err != nil {
				return err
			}
			now := time.Now().UnixMilli()
			claimed, err := tx.Claim(rng.IntN(n+1), now)
			if err != nil {
				return err
			}
			half := len(claimed) / 2
			if err := tx.Ack(ids(claimed[:half]), time.Hour, now); err != nil {
				return err
			}
			if _, err = tx.Fail(ids(claimed[half:]), true, now, 0, "RETRY", now); err != nil {
				return err
			}
			// Bounded like drop-oldest and max-age: the oldest unsent
			// groups go, and the drop totals with them.
			_, _, _, err = tx.DropUnsent(DropLimits{MaxBytes: 64 << 10, OlderThanMS: now - 50})
			return err
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "child update:", err)
			os.Exit(3)
		}
		fmt.Printf("committed %d\n", last)
		next = last + 1
	}
}

// TestCrashConsistency SIGKILLs a child in the middle of its group commits,
// at random moments, several times over the same WAL, and checks after
// each kill that every committed row exists exactly once, that the stored
// position matches the rows exactly (rows and positions commit together),
// that the rows missing are exactly those the drop totals account for,
// and that the file is consistent. It runs on a clear WAL and on an
// encrypted one.
func TestCrashConsistency(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, enc := range testEncryptions {
		t.Run(enc.name, func(t *testing.T) { testCrashConsistency(t, enc.name) })
	}
}

func testCrashConsistency(t *testing.T, encName string) {
	path := filepath.Join(t.TempDir(), "wal.db")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	var reported int64
	for round := 0; round < 6; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path, crashKeyEnv+"="+encName)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan int64, 1024)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "committed "); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					lines <- n
				}
			}
		}()
		// Wait for the first commit so every round kills mid-stream, then
		// let it run a random while.
		select {
		case n, ok := <-lines:
			if !ok {
				t.Fatalf("round %d: child exited before committing", round)
			}
			reported = max(reported, n)
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("round %d: child did not commit", round)
		}
		time.Sleep(time.Duration(5+rng.IntN(200)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		for n := range lines {
			reported = max(reported, n)
		}
		_ = cmd.Wait()

		w, err := Open(Options{Path: path, Fsync: true, Encryption: testEncryption(encName)})
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		var pos, dropped int64
		seen := map[int64]bool{}
		err = w.View(func(tx *ReadTx) error {
			for _, d := range tx.DropTotals() {
				dropped += d.Rows
			}
			p, _ := tx.Positions("in")
			pos, _ = strconv.ParseInt(string(p["file"]), 10, 64)
			rows, err := tx.List(nil, 0, 0)
			if err != nil {
				return err
			}
			for _, r := range rows {
				n, err := strconv.ParseInt(strings.TrimPrefix(string(r.Payload), "seq="), 10, 64)
				if err != nil {
					t.Fatalf("row %d payload %q", r.ID, r.Payload)
				}
				if seen[n] {
					t.Fatalf("round %d: seq %d stored twice", round, n)
				}
				seen[n] = true
			}
			for _, p := range tx.Verify(10) {
				t.Errorf("round %d: %s", round, p)
			}
			return nil
		})
		_ = w.Close()
		if err != nil {
			t.Fatal(err)
		}
		if pos < reported {
			t.Fatalf("round %d: position %d behind committed %d: lost a commit", round, pos, reported)
		}
		if int64(len(seen))+dropped != pos {
			t.Fatalf("round %d: %d rows + %d dropped for position %d", round, len(seen), dropped, pos)
		}
		for n := range seen {
			if n < 1 || n > pos {
				t.Fatalf("round %d: seq %d past position %d", round, n, pos)
			}
		}
		t.Logf("round %d: %d rows, %d dropped, position %d, last reported %d", round, len(seen), dropped, pos, reported)
	}
}
