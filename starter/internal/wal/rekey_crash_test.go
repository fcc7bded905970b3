package wal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

const rekeyChildEnv = "EDGE_AGENT_WAL_REKEY_CHILD"

// TestRekeyChild is the child half of TestRekeyCrash; it does nothing
// unless started by it. It rotates the WAL from key A to key B.
func TestRekeyChild(t *testing.T) {
	path := os.Getenv(rekeyChildEnv)
	if path == "" {
		t.Skip("child process of TestRekeyCrash")
	}
	w, err := Open(Options{Path: path, Fsync: true, Encryption: Encryption{Key: testKeyA, NextKey: testKeyB}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	fmt.Println("rekeying")
	if _, err := w.Rekey(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "child rekey:", err)
		os.Exit(3)
	}
	fmt.Println("done")
	os.Exit(0)
}

// TestRekeyCrash SIGKILLs a rotation at random moments: after each kill
// the WAL opens with both keys and holds every row, a Rekey with both
// finishes the rotation, and then the WAL opens with the new key alone.
func TestRekeyCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	master := filepath.Join(t.TempDir(), "master.db")
	w, err := Open(Options{Path: master, Encryption: Encryption{Key: testKeyA}})
	if err != nil {
		t.Fatal(err)
	}
	fillSealed(t, w, 12*rekeyTxBlocks)
	want := storedPayloads(t, w)
	_ = w.Close()
	data, err := os.ReadFile(master)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 4))
	interrupted := 0
	for round := range 4 {
		path := filepath.Join(t.TempDir(), "wal.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestRekeyChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), rekeyChildEnv+"="+path)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 4)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		select {
		case l := <-lines:
			if l != "rekeying" {
				_ = cmd.Process.Kill()
				t.Fatalf("round %d: child said %q", round, l)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("round %d: child did not start", round)
		}
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		finished := false
		for l := range lines {
			finished = finished || l == "done"
		}
		_ = cmd.Wait()

		both := Encryption{Key: testKeyA, NextKey: testKeyB}
		w, err := Open(Options{Path: path, Fsync: true, Encryption: both})
		if err != nil {
			t.Fatalf("round %d: open with both keys: %v", round, err)
		}
		if got := storedPayloads(t, w); !slicesEqual(got, want) {
			t.Fatalf("round %d: %d rows after the kill, want %d", round, len(got), len(want))
		}
		rep, err := w.Rekey(context.Background())
		_ = w.Close()
		if err != nil {
			t.Fatalf("round %d: finish the rotation: %v", round, err)
		}
		if rep.Resumed {
			interrupted++
		}
		if _, err := Open(Options{Path: path, Encryption: Encryption{Key: testKeyA}}); !errors.Is(err, ErrKey) {
			t.Fatalf("round %d: the old key alone after the rotation: %v", round, err)
		}
		w = openOpts(t, Options{Path: path, Encryption: Encryption{Key: testKeyB}})
		if got := storedPayloads(t, w); !slicesEqual(got, want) {
			t.Fatalf("round %d: rows differ after the rotation", round)
		}
		t.Logf("round %d: child finished %v, rotation resumed %v (%d blocks re-sealed after the kill)", round, finished, rep.Resumed, rep.Blocks)
	}
	t.Logf("%d of 4 rounds killed the rotation midway", interrupted)
}
