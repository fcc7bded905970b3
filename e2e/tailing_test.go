//go:build unix

package e2e

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// copytruncate rotates rel the way logrotate's copytruncate does: older
// copies shift up by rename (app.log.1 → app.log.2, which keeps their
// inode), the second one is also compressed to app.log.2.gz (the
// exclusion must keep it out), the live file is copied to a new
// app.log.1, then truncated in place. The writer keeps its descriptor
// (O_APPEND), so its next line lands at the start of the emptied file.
func copytruncate(t *testing.T, root *agentRoot, rel string, keep int) {
	t.Helper()
	for g := keep - 1; g >= 1; g-- {
		from := root.path(fmt.Sprintf("%s.%d", rel, g))
		if _, err := os.Stat(from); err == nil {
			if err := os.Rename(from, root.path(fmt.Sprintf("%s.%d", rel, g+1))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := os.Stat(root.path(rel + ".2")); err == nil {
		gzipTo(t, root.path(rel+".2"), root.path(rel+".2.gz"))
	}
	copyFile(t, root.path(rel), root.path(rel+".1"))
	if err := os.Truncate(root.path(rel), 0); err != nil {
		t.Fatal(err)
	}
}

func gzipTo(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(out)
	if _, err := io.Copy(zw, in); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// settled waits until every line of want was received, or until nothing
// new arrived for quiet (lines can be lost for good: the copies left out
// of the glob), and returns the comparison.
func (rc *receiver) settled(want []string, quiet, limit time.Duration) delivery {
	rc.t.Helper()
	deadline := time.Now().Add(limit)
	last, lastChange := -1, time.Now()
	for {
		got := rc.received()
		d := checkDelivery(want, got)
		if len(d.missing) == 0 {
			return d
		}
		n := 0
		for _, c := range got {
			n += c
		}
		if n != last {
			last, lastChange = n, time.Now()
		}
		if time.Since(lastChange) > quiet || time.Now().After(deadline) {
			return d
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// grepLines returns up to max lines of text that contain one of words.
func grepLines(text string, max int, words ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
		if len(out) == max {
			break
		}
	}
	return strings.Join(out, "\n")
}

// Copytruncate under a flood: 50,000 lines written as fast as the writer
// can, with a logrotate-style copytruncate every 10,000 lines and no
// pause for the agent, which sees each copy before or after the truncate
// and the original already refilled or not. With the copies in the glob
// (app.log*, *.gz excluded) nothing is lost and nothing is duplicated:
// the copy continues where the original was read up to, the original
// restarts at 0. With the copies left out of the glob, the lines written
// between the agent's last read and the truncate are in the copy only
// and cannot be read; duplicates must still be none.
func TestCopytruncateFlood(t *testing.T) {
	skipShort(t)
	const total, every = 50000, 10000
	for _, tc := range []struct {
		name     string
		glob     string
		lossless bool
	}{
		{name: "copies-in-glob", glob: "in/app.log*", lossless: true},
		{name: "copies-outside-glob", glob: "in/app.log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := startReceiver(t, "e2e-token-0123456789")
			port := rc.port
			root := newRoot(t, options{port: port, paths: []string{tc.glob}, exclude: []string{"*.gz"}})
			want := makeLines(t.Name(), 0, total)
			w := root.createFile("in/app.log")
			w.lines(want[:100])
			agent := root.startReady()
			// Rotation and writing take turns, as in logrotate's own
			// window: lines written between its copy and its truncate
			// are lost by logrotate whatever the reader does.
			for i := 100; i < total; i += 100 {
				w.lines(want[i : i+100])
				time.Sleep(time.Millisecond) // a busy application, not one write
				if (i+100)%every == 0 && i+100 < total {
					copytruncate(t, root, "in/app.log", 4)
				}
			}
			rc.settled(want, 5*time.Second, deliverTimeout)
			// Judged after the stop, which waits for the engine's replies:
			// a copy read again late would show here, not after the check.
			if code := root.stop(agent); code != 0 {
				t.Errorf("stop exit code %d", code)
			}
			d := checkDelivery(want, rc.received())
			t.Logf("%s: %d lines, %d copytruncates: %d lost, %d duplicates, %d unexpected",
				tc.name, total, total/every-1, len(d.missing), d.duplicates, d.foreign)
			for p, n := range rc.received() {
				if !slices.Contains(want, p) && n > 0 {
					t.Logf("unexpected payload %q", p)
				}
			}
			if d.duplicates != 0 || d.foreign != 0 {
				t.Errorf("%d duplicates, %d unexpected payloads (the .gz must be excluded); the agent's rotation lines:\n%s",
					d.duplicates, d.foreign, grepLines(root.logText(), 60, "copy", "truncated", "rotated", "renamed"))
			}
			if tc.lossless && len(d.missing) != 0 {
				t.Errorf("%d lines lost with the copies in the glob (first %q)", len(d.missing), d.missing[0])
			}
			if strings.Count(root.logText(), `"msg":"file `) > 200 {
				t.Errorf("file lifecycle logged per line, not per event")
			}
		})
	}
}

// Rotation while the agent is stopped: lines written after its last read
// are delivered after the start, from the renamed files.
//   - in-glob: app.log* matches the rotated names; two rotations
//     (app.log → app.log.1 → app.log.2, a new app.log each time, lines
//     written in between) are followed by identity.
//   - outside-glob: in/*.log does not match app.log.1; the file renamed
//     there while the agent was stopped is found in its directory by
//     device+inode and fingerprint and drained. (One rotation: a file
//     created and rotated out of the glob while the agent is stopped was
//     never seen and cannot be.)
func TestRotationWhileStopped(t *testing.T) {
	skipShort(t)
	for _, tc := range []struct {
		name      string
		glob      string
		rotations int
	}{
		{name: "in-glob", glob: "in/app.log*", rotations: 2},
		{name: "outside-glob", glob: "in/*.log", rotations: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := startReceiver(t, "e2e-token-0123456789")
			port := rc.port
			root := newRoot(t, options{port: port, paths: []string{tc.glob}})
			want := makeLines(t.Name(), 0, 1000*(tc.rotations+2))
			w := root.createFile("in/app.log")
			w.lines(want[:1000])
			agent := root.startReady()
			rc.waitDelivered(want[:1000], deliverTimeout)
			if code := root.stop(agent); code != 0 {
				t.Fatalf("stop exit code %d", code)
			}
			w.lines(want[1000:2000]) // unread when the agent stopped
			w.close()
			for r := 1; r <= tc.rotations; r++ {
				for g := r - 1; g >= 1; g-- {
					if err := os.Rename(root.path(fmt.Sprintf("in/app.log.%d", g)), root.path(fmt.Sprintf("in/app.log.%d", g+1))); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Rename(root.path("in/app.log"), root.path("in/app.log.1")); err != nil {
					t.Fatal(err)
				}
				w = root.createFile("in/app.log")
				w.lines(want[1000*(r+1) : 1000*(r+2)])
				w.close()
			}
			agent = root.startReady()
			d := rc.waitDelivered(want, deliverTimeout)
			t.Logf("%s: %d rotations while stopped: %s", tc.name, tc.rotations, d)
			if d.duplicates != 0 {
				t.Errorf("%d duplicates", d.duplicates)
			}
			if code := root.stop(agent); code != 0 {
				t.Errorf("stop exit code %d", code)
			}
		})
	}
}

// read-from-beginning: false applies to a path added to a configuration
// that already ran: the files present under it when it is added are
// tailed, only lines written later are shipped; a file appearing later
// under it is read from 0.
func TestAddedPathTailsExistingFiles(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	port := rc.port
	root := newRoot(t, options{port: port, paths: []string{"in/a/*.log"}, tailExisting: true})
	for _, d := range []string{"in/a", "in/b"} {
		if err := os.MkdirAll(root.path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := makeLines(t.Name()+" old", 0, 500)
	root.createFile("in/b/x.log").lines(old)
	agent := root.startReady()
	first := makeLines(t.Name()+" a", 0, 10)
	root.createFile("in/a/app.log").lines(first)
	rc.waitDelivered(first, deliverTimeout)
	if code := root.stop(agent); code != 0 {
		t.Fatalf("stop exit code %d", code)
	}

	root.opts.paths = []string{"in/a/*.log", "in/b/*.log"}
	root.writeConfig()
	agent = root.startReady()
	newer := makeLines(t.Name()+" new", 0, 20)
	root.createFile("in/b/x.log").lines(newer[:10])
	root.createFile("in/b/y.log").lines(newer[10:])
	d := rc.waitDelivered(append(first, newer...), deliverTimeout)
	got := rc.received()
	shipped := 0
	for _, l := range old {
		shipped += got[l]
	}
	t.Logf("after adding in/b/*.log: %s; %d of %d old lines shipped", d, shipped, len(old))
	if shipped != 0 {
		t.Errorf("%d lines that existed before the path was added were shipped", shipped)
	}
	if code := root.stop(agent); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
}
