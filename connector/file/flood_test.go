//go:build unix

package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// TestCopytruncateFloodFigures measures, in real time, what the
// deterministic TestCopyListedHalfWritten proves: a writer at floodRate
// lines/s, a logrotate-style copytruncate every floodEvery lines, the
// copies in the glob. It prints the duplicates and losses of each run.
// Set COPYTRUNCATE_FLOOD_RUNS to run it (figures, not a unit test).
func TestCopytruncateFloodFigures(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("COPYTRUNCATE_FLOOD_RUNS"))
	if runs <= 0 {
		t.Skip("set COPYTRUNCATE_FLOOD_RUNS to run the copytruncate flood")
	}
	const total, floodEvery, floodRate = 30000, 3000, 5000
	bad := 0
	for run := range runs {
		dups, lost := floodRun(t, total, floodEvery, floodRate)
		t.Logf("run %d: %d lines, %d copytruncates: %d duplicates, %d lost", run+1, total, total/floodEvery-1, dups, lost)
		if dups != 0 || lost != 0 {
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d runs delivered duplicates or lost lines", bad, runs)
	}
}

// floodRun writes total lines at rate lines/s while the input is polled as
// the scheduler does, rotating every lines, and counts what was delivered
// more than once and not at all.
func floodRun(t *testing.T, total, every, rate int) (dups, lost int) {
	dir := t.TempDir()
	cfg := NewDefaultConfig()
	cfg.Paths = []string{filepath.Join(dir, "app.log*")}
	cfg.ReadFromBeginning = true
	cfg.GlobScanInterval = time.Second // the agent's discovery: fsnotify first, a scan each second
	in, err := New(cfg, input.Settings{ID: "flood"})
	must(t, err)
	defer in.Close()
	app := filepath.Join(dir, "app.log")
	w, err := os.OpenFile(app, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	must(t, err)
	defer w.Close()
	must(t, in.Open(context.Background(), input.OpenOptions{FirstStart: true}))

	seen := make(map[string]int, total)
	var evs []input.Event
	poll := func() int {
		evs, err = in.Poll(context.Background(), evs[:0], 128)
		must(t, err)
		n := 0
		for _, ev := range evs {
			if ev.Payload == nil {
				continue
			}
			for _, r := range decodeEvent(t, ev.Payload) {
				seen[r.text()]++
				n++
			}
		}
		return n
	}
	writerDone := make(chan error, 1)
	go func() { writerDone <- floodWrite(w, dir, total, every, rate) }()
	deadline := time.Now().Add(time.Duration(total/rate)*time.Second + 30*time.Second)
	written := false
	for idle := 0; idle < 400 && time.Now().Before(deadline); {
		if !written {
			select {
			case err := <-writerDone:
				must(t, err)
				written = true
			default:
			}
		}
		if poll() == 0 {
			if written {
				idle++
			}
			select { // the scheduler's idle wait
			case <-in.Wakeup():
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	if !written {
		t.Fatal("writer did not finish in time")
	}
	for i := range total {
		switch n := seen[floodLine(i)]; {
		case n == 0:
			lost++
		case n > 1:
			dups += n - 1
		}
	}
	return dups, lost
}

func floodLine(i int) string {
	return fmt.Sprintf("flood line %06d: the quick brown fox jumps over the lazy dog", i)
}

// floodWrite writes the lines in batches paced to rate, and copytruncates
// app.log every lines as logrotate does (copies shifted by rename, a new
// copy written, the original truncated in place).
func floodWrite(w *os.File, dir string, total, every, rate int) error {
	const batch = 50
	start := time.Now()
	app := filepath.Join(dir, "app.log")
	for i := 0; i < total; i += batch {
		var b []byte
		for j := i; j < i+batch && j < total; j++ {
			b = append(append(b, floodLine(j)...), '\n')
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		if (i+batch)%every == 0 && i+batch < total {
			for g := 3; g >= 1; g-- {
				from := fmt.Sprintf("%s.%d", app, g)
				if _, err := os.Stat(from); err == nil {
					if err := os.Rename(from, fmt.Sprintf("%s.%d", app, g+1)); err != nil {
						return err
					}
				}
			}
			if err := floodCopy(app, app+".1"); err != nil {
				return err
			}
			if err := os.Truncate(app, 0); err != nil {
				return err
			}
		}
		if ahead := time.Duration(i+batch)*time.Second/time.Duration(rate) - time.Since(start); ahead > 0 {
			time.Sleep(ahead) // pacing the writer to rate
		}
	}
	return nil
}

// floodCopy copies from to a new file to as cp does, in 32 KiB writes
// with a pause between them (a disk, not the page cache), so a scan can
// list the copy while it is being written.
func floodCopy(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	f, err := os.Create(to)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		n := min(len(data), 32<<10)
		if _, err := f.Write(data[:n]); err != nil {
			_ = f.Close()
			return err
		}
		data = data[n:]
		time.Sleep(200 * time.Microsecond)
	}
	return f.Close()
}
