//go:build unix

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

const deliverTimeout = 60 * time.Second

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: skipped in -short mode")
	}
	t.Parallel()
}

// A file of N lines is delivered end to end, every line with its exact
// text, and a graceful stop exits 0 and removes the pid file.
func TestDeliverFile(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	port := rc.port
	root := newRoot(t, options{port: port})
	want := makeLines(t.Name(), 0, 5000)
	root.createFile("in/app.log").lines(want)

	agent := root.startReady()
	d := rc.waitDelivered(want, deliverTimeout)
	t.Logf("delivered %d lines: %s", len(want), d)
	if d.duplicates != 0 {
		t.Errorf("%d duplicates without any failure", d.duplicates)
	}
	if code := root.stop(agent); code != 0 {
		t.Fatalf("graceful stop exit code %d, want 0", code)
	}
	if _, err := os.Stat(root.path("edge-agent.pid")); !os.IsNotExist(err) {
		t.Errorf("pid file left after a clean exit: %v", err)
	}
	if _, err := os.Stat(root.path("edge-agent.id")); err != nil {
		t.Errorf("agent id file not created: %v", err)
	}
	rc.stop()
	if summary := tail(rc.p.stderr, 1); !strings.Contains(summary, "done records=5000 ") {
		t.Errorf("receiver summary %q, want done records=5000", summary)
	}
}

// The engine is down when the agent starts: the agent keeps running and
// reading into its WAL, and delivers everything once the engine is up.
func TestEngineDownAtStart(t *testing.T) {
	skipShort(t)
	engine := holdPort(t)
	root := newRoot(t, options{port: engine.port})
	want := makeLines(t.Name(), 0, 1000)
	w := root.createFile("in/app.log")
	w.lines(want[:500])
	agent := root.startReady()
	w.lines(want[500:])

	eventually(t, 20*time.Second, "several failed connection attempts", func() bool {
		return root.connectFailures() >= 3 || !agent.running()
	})
	if !agent.running() {
		t.Fatalf("agent exited while the engine was down: %s", agent.stderrText())
	}
	if _, _, code := root.cli("status"); code != 0 {
		t.Fatalf("status exit %d while the agent runs", code)
	}
	engine.release()
	rc := startReceiverAt(t, engine.port, "e2e-token-0123456789")
	d := rc.waitDelivered(want, deliverTimeout)
	t.Logf("after the engine came up: %s", d)
	if code := root.stop(agent); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
}

// The receiver cuts connections, answers RETRY and QUEUE_FULL: everything
// still arrives; duplicates only where a cut lost a reply.
func TestEngineFaults(t *testing.T) {
	skipShort(t)
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"cut", []string{"--fault-cut-after", "97"}},
		{"retry", []string{"--fault-retry-every", "5"}},
		{"queue-full", []string{"--fault-queue-full-every", "50"}},
		{"all", []string{"--fault-cut-after", "251", "--fault-retry-every", "7", "--fault-queue-full-every", "101"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := startReceiver(t, "e2e-token-0123456789", tc.flags...)
			port := rc.port
			root := newRoot(t, options{port: port})
			want := makeLines(t.Name(), 0, 1000)
			root.createFile("in/app.log").lines(want)
			agent := root.startReady()
			d := rc.waitDelivered(want, deliverTimeout)
			t.Logf("faults %v: %s", tc.flags, d)
			if tc.name == "retry" || tc.name == "queue-full" {
				// RETRY and QUEUE_FULL are answered before the batch is
				// handled: they must not duplicate.
				if d.duplicates != 0 {
					t.Errorf("%d duplicates with %s only", d.duplicates, tc.name)
				}
			}
			if code := root.stop(agent); code != 0 {
				t.Errorf("stop exit code %d", code)
			}
		})
	}
}

// kill -9 in the middle of a stream, then restart: every line arrives at
// least once; duplicates are reported.
func TestKill9Restart(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	port := rc.port
	root := newRoot(t, options{port: port})
	w := root.createFile("in/app.log")
	want := makeLines(t.Name(), 0, 20000)
	w.lines(want[:5000])
	agent := root.startReady()

	// Keep writing while the agent dies.
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 5000; i < len(want); i += 500 {
			w.lines(want[i : i+500])
			time.Sleep(20 * time.Millisecond)
		}
	}()
	eventually(t, deliverTimeout, "some lines delivered", func() bool {
		return len(rc.received()) >= 2000
	})
	agent.signal(t, syscall.SIGKILL)
	agent.wait(t, 10*time.Second)
	<-writerDone
	t.Logf("killed with %d distinct lines delivered", len(rc.received()))

	restarted := root.startReady()
	d := rc.waitDelivered(want, deliverTimeout)
	t.Logf("after kill -9 and restart: %s (duplicates are expected only for rows in flight at the kill)", d)
	if code := root.stop(restarted); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
}

// SIGTERM in the middle of a stream, then start again: the graceful stop
// waits for the engine's replies to what is on the wire, so when the
// engine answers, every line arrives exactly once. The engine answers
// each batch after 1 ms, so batches are on the wire at the SIGTERM
// (before the stop waited for them, about a congestion window of lines
// arrived twice).
func TestSIGTERMRestartSendsNothingTwice(t *testing.T) {
	skipShort(t)
	rc := startReceiver(t, "e2e-token-0123456789", "--fault-delay-ms", "1")
	port := rc.port
	root := newRoot(t, options{port: port})
	w := root.createFile("in/app.log")
	want := makeLines(t.Name(), 0, 3000)
	w.lines(want)
	agent := root.startReady()
	eventually(t, deliverTimeout, "some lines delivered", func() bool {
		return len(rc.received()) >= 500
	})
	delivered := len(rc.received())
	if code := root.stop(agent); code != 0 {
		t.Fatalf("graceful stop exit code %d: %s", code, agent.stderrText())
	}
	t.Logf("stopped with %d distinct lines delivered (%d at the SIGTERM)", len(rc.received()), delivered)
	if !strings.Contains(root.logText(), "waiting for the engine to answer the batches in flight") {
		t.Errorf("no batch in flight at the SIGTERM: the test did not stop the agent mid-stream")
	}

	restarted := root.startReady()
	d := rc.waitDelivered(want, deliverTimeout)
	if code := root.stop(restarted); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
	if d.duplicates != 0 {
		t.Fatalf("after SIGTERM and restart: %s; the stop released rows the engine had received", d)
	}
	if strings.Contains(root.logText(), "the engine did not answer every batch in flight") {
		t.Errorf("the engine answers, yet the stop gave up on batches in flight:\n%s", tail(root.path("log/edge-agent.log"), 20))
	}
}

// Rename-rotation while running: the old file is read to its end (also
// lines written to it after the rename), then the new file from 0.
//   - leaves-glob: the rotated name (app.log.1) no longer matches in/*.log;
//     the agent must drain the file it already had open. Each rotation waits
//     until the current file was seen: a file that appears and rotates out
//     of the glob between two scans can be invisible to any tailer.
//   - stays-in-glob: the rotated name still matches in/app.log*; rotations
//     follow each other with no pause, so file identity (not the name)
//     must keep offsets apart.
func TestRotation(t *testing.T) {
	skipShort(t)
	for _, tc := range []struct {
		name   string
		glob   string
		rounds int
		settle bool
	}{
		{name: "leaves-glob", glob: "in/*.log", rounds: 2, settle: true},
		{name: "stays-in-glob", glob: "in/app.log*", rounds: 4, settle: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := startReceiver(t, "e2e-token-0123456789")
			port := rc.port
			root := newRoot(t, options{port: port, paths: []string{tc.glob}})
			want := makeLines(t.Name(), 0, 1000*(tc.rounds+1))
			cur := root.createFile("in/app.log")
			cur.lines(want[:1000])
			agent := root.startReady()
			rc.waitDelivered(want[:1000], deliverTimeout)

			for round := 0; round < tc.rounds; round++ {
				base := 1000 + round*1000
				// The application still holds the renamed file and writes
				// a last burst to it before it reopens: a classic loss in
				// tailers. Older generations shift up as logrotate does.
				for g := round; g >= 1; g-- {
					if err := os.Rename(root.path(fmt.Sprintf("in/app.log.%d", g)), root.path(fmt.Sprintf("in/app.log.%d", g+1))); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Rename(root.path("in/app.log"), root.path("in/app.log.1")); err != nil {
					t.Fatal(err)
				}
				cur.lines(want[base : base+300])
				cur.close()
				cur = root.createFile("in/app.log")
				cur.lines(want[base+300 : base+1000])
				if tc.settle {
					rc.waitDelivered(want[:base+1000], deliverTimeout)
				}
			}
			d := rc.waitDelivered(want, deliverTimeout)
			t.Logf("after %d rotations: %s", tc.rounds, d)
			if code := root.stop(agent); code != 0 {
				t.Errorf("stop exit code %d", code)
			}
			// Operators follow rotations in the agent's log: one line per
			// rotation (the old name now holds another file) or rename
			// within the globs, never one per line read. Back-to-back
			// renames may all fall between two scans: then one is seen.
			logText := root.logText()
			msg, atLeast := `"msg":"file renamed"`, 1
			if tc.settle {
				msg, atLeast = `"msg":"file rotated: its path now names another file"`, tc.rounds
			}
			if got := strings.Count(logText, msg); got < atLeast || strings.Count(logText, `"msg":"file `) > 100 {
				t.Errorf("%d %s lines for %d rotations (want at least %d, and no line per event read); log:\n%s", got, msg, tc.rounds, atLeast, tail(root.path("log/edge-agent.log"), 40))
			}
		})
	}
}

// PACKET mode with gzip and AES-256-GCM round-trips through the receiver,
// which decrypts with the same key.
func TestPacketGzipAESGCM(t *testing.T) {
	skipShort(t)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyB64 := base64.StdEncoding.EncodeToString(key)
	rc := startReceiver(t, "e2e-token-0123456789", "--packet-mode", "packet", "--secret-key", keyB64)
	port := rc.port
	root := newRoot(t, options{port: port, packetMode: "PACKET", compression: "gzip", encryption: "aes_gcm", keyB64: keyB64})
	want := makeLines(t.Name(), 0, 2000)
	root.createFile("in/app.log").lines(want)
	agent := root.startReady()
	d := rc.waitDelivered(want, deliverTimeout)
	t.Logf("PACKET gzip+aes_gcm: %s", d)
	if code := root.stop(agent); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
	if got := root.logText(); containsAny(got, keyB64, "e2e-token-0123456789") {
		t.Error("the log holds the AES key or the token")
	}
}

// One key decoder for config check and start: a 32-byte key written
// without base64 padding (43 characters, as Java accepts) passes both and
// delivers through the receiver; a key of the wrong length fails both,
// naming the key with its line:column, before anything is sent.
func TestUnpaddedKeyAgreesInCheckAndStart(t *testing.T) {
	skipShort(t)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	unpadded := base64.RawStdEncoding.EncodeToString(key)
	if len(unpadded) != 43 {
		t.Fatalf("test key has %d characters, want 43", len(unpadded))
	}
	rc := startReceiver(t, "e2e-token-0123456789", "--packet-mode", "packet", "--secret-key", base64.StdEncoding.EncodeToString(key))
	port := rc.port
	root := newRoot(t, options{port: port, packetMode: "PACKET", encryption: "aes_gcm", keyB64: unpadded})
	if out, errOut, code := root.cli("config", "check", root.configPath()); code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("config check with an unpadded key: exit %d, %s%s", code, out, errOut)
	}
	want := makeLines(t.Name(), 0, 200)
	root.createFile("in/app.log").lines(want)
	agent := root.startReady()
	rc.waitDelivered(want, deliverTimeout)
	if code := root.stop(agent); code != 0 {
		t.Errorf("stop exit code %d", code)
	}

	short := newRoot(t, options{port: port, packetMode: "PACKET", encryption: "aes_gcm", keyB64: base64.RawStdEncoding.EncodeToString(key[:31])})
	keyAt := regexp.MustCompile(`agent\.yaml:\d+:\d+: output\.aes-secret-key-base64: key must base64-decode to exactly 32 bytes.*got 31 bytes`)
	_, errOut, code := short.cli("config", "check", short.configPath())
	if code != 78 || !keyAt.MatchString(errOut) {
		t.Fatalf("config check with a 31-byte key: exit %d, want 78 matching %s; stderr: %s", code, keyAt, errOut)
	}
	p := short.start()
	if code := p.wait(t, 30*time.Second); code != 78 || !keyAt.MatchString(p.stderrText()) {
		t.Fatalf("start with a 31-byte key: exit %d, want 78 matching %s; stderr: %s", code, keyAt, p.stderrText())
	}
}
