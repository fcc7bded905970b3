//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/journald/journaltest"
)

// One agent with a file input, a journald input (a journal directory that
// grows during the run) and a syslog TCP input fed by util-linux logger,
// all delivered to the receiver; kill -9 mid-stream, then a restart.
//
// File and journald lose nothing: the offset and the cursor commit in the
// same WAL transaction as the events, so the restart resumes exactly there
// (duplicates, rows in flight at the kill, are counted and logged).
//
// Syslog has no positions and no acknowledgements to the sender: what a
// kill -9 loses is what the agent had read but not yet committed to the
// WAL, and what sat in the socket buffers (the agent's receive buffer,
// logger's send buffer, the lines logger had read from its stdin but not
// written; here also the lines the test hands logger between the kill and
// the end of its stdin). The test requires that every message the WAL held at the kill
// (read with db wal-show while the agent is down) is delivered after the
// restart, and that the delivered messages are a gap-free prefix of the
// stream (one TCP connection is read in order: a hole would be a loss
// inside what was stored); it logs the count lost at the tail.
func TestMixedInputsKill9(t *testing.T) {
	skipShort(t)
	tools := journaltest.Tools(t)
	logger := syslogLoggerPath(t)
	rc := startReceiver(t, "e2e-token-0123456789")
	root := newRoot(t, options{port: rc.port, api: true})
	jdir := root.path("journal")
	if err := os.MkdirAll(jdir, 0o755); err != nil {
		t.Fatal(err)
	}
	tcpPort := syslogFreePort(t, "tcp")
	root.opts.inputs = fmt.Sprintf(`inputs:
  - id: files
    paths: [%q]
    read-from-beginning: true
    glob-scan-interval-ms: 200
  - id: journal
    type: journald
    directory: %q
    read-from-beginning: true
  - id: sys
    type: syslog
    protocol: tcp
    listen: 127.0.0.1:%d
`, root.path("in/*.log"), jdir, tcpPort)
	root.writeConfig()

	const total, chunk = 4000, 200
	lines := makeLines(t.Name()+"-file", 0, total)
	w := root.createFile("in/app.log")
	w.lines(lines[:chunk])
	entries, es := journalEntries(t.Name()+"-journal", total)
	jfile := filepath.Join(jdir, "remote.journal")
	tools.Write(t, jfile, es[:chunk]...)
	agent := root.startReady()
	if log := root.logText(); !strings.Contains(log, `"input_types":"file,journald,syslog"`) {
		t.Fatalf("BOOTSTRAP_READY does not list the input types:\n%s", syslogGrepLines(log, "BOOTSTRAP_READY"))
	}

	// logger reads the stream from its stdin and sends each line over one
	// TCP connection (RFC 5424, octet counting), as a gateway's syslog
	// client does.
	lg := exec.Command(logger, "--server", "127.0.0.1", "--port", strconv.Itoa(tcpPort),
		"--tcp", "--rfc5424", "--octet-count", "-t", "gw-mix", "-p", "daemon.info")
	stdin, err := lg.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var lgErr strings.Builder
	lg.Stderr = &lgErr
	if err := lg.Start(); err != nil {
		t.Fatalf("logger: %v", err)
	}
	loggerDone := make(chan error, 1)
	go func() { loggerDone <- lg.Wait() }()
	t.Cleanup(func() {
		if lg.ProcessState == nil {
			_ = syscall.Kill(lg.Process.Pid, syscall.SIGKILL)
		}
	})
	stopFeed, fed := make(chan struct{}), make(chan int, 1)
	go func() { fed <- feedLogger(stdin, stopFeed) }()

	// The journal and the file grow until after the kill: half of them
	// is written when the kill may come, and the last quarter only after
	// it, however slow the machine, so the kill always comes mid-stream.
	writerDone, half, killed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	kill := sync.OnceFunc(func() { close(killed) })
	t.Cleanup(kill) // a failed test does not leave the writer waiting
	go func() {
		defer close(writerDone)
		for i := chunk; i < total; i += chunk {
			if i == total*3/4 {
				<-killed
			}
			tools.Write(t, jfile, es[i:i+chunk]...)
			w.lines(lines[i : i+chunk])
			if i == total/2 {
				close(half)
			}
			time.Sleep(200 * time.Millisecond) // pacing, not a correctness condition
		}
	}()

	tally := newSyslogTally(rc)
	<-half
	// The agent's own counters say when each input is well under way
	// (parsing the receiver's output on every poll would be too slow).
	eventually(t, deliverTimeout, "each input reading", func() bool {
		read := inputsRead(t, root)
		return read["sys"] >= 1000 && read["journal"] >= total/4 && read["files"] >= total/4
	})
	agent.signal(t, syscall.SIGKILL)
	agent.wait(t, 10*time.Second)
	atKill := len(journalPayloads(rc.out))
	kill()
	close(stopFeed)
	nFed := <-fed
	_ = stdin.Close()
	select {
	case <-loggerDone: // the broken connection, or the end of its stdin
	case <-time.After(time.Minute):
		t.Fatalf("logger did not exit after its stdin closed: %s", lgErr.String())
	}
	<-writerDone
	if atKill >= total {
		t.Errorf("every journal entry was delivered before the kill: the test did not kill the agent mid-stream")
	}
	eventually(t, 10*time.Second, "journalctl gone with the agent", func() bool {
		return len(processesNaming(jdir)) == 0
	})
	inWAL := walSyslogMsgs(t, root, "sys", regexp.MustCompile(`mix-\d{6}`))
	if len(inWAL) == 0 {
		t.Fatal("no syslog message in the WAL after the kill")
	}

	restarted := root.startReady()
	waitSyslog(t, tally, slices.Collect(maps.Keys(inWAL)), deliverTimeout)
	entryDups := waitJournalDelivered(t, rc, entries)
	d := rc.waitDelivered(lines, deliverTimeout)

	got := tally.update(t)
	delivered, last, sysDups := 0, -1, 0
	for i := range nFed {
		if n := got[fmt.Sprintf("mix-%06d", i)]; n > 0 {
			delivered++
			last = i
			sysDups += n - 1
		}
	}
	if delivered != last+1 {
		t.Errorf("syslog: %d of the messages up to mix-%06d delivered: a hole inside the stream", delivered, last)
	}
	t.Logf("kill -9 with %d journal entries delivered; after the restart: file 0 of %d lines lost, %d duplicates; "+
		"journald 0 of %d entries lost, %d duplicates; syslog: %d lines handed to logger, %d in the WAL at the kill, %d delivered "+
		"(%d duplicates), %d lost at the tail (read but not yet in the WAL, in socket buffers, or handed to logger after the kill: syslog cannot resend)",
		atKill, total, d.duplicates, total, entryDups, nFed, len(inWAL), delivered, sysDups, nFed-delivered)

	// The listener is back: logger's next messages arrive.
	after := makeLines("mix-after-restart", 0, 50)
	cmd := exec.Command(logger, "--server", "127.0.0.1", "--port", strconv.Itoa(tcpPort), "--tcp", "--rfc5424", "--octet-count", "-t", "gw-mix")
	cmd.Stdin = strings.NewReader(strings.Join(after, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("logger after the restart: %v: %s", err, out)
	}
	waitSyslog(t, tally, after, deliverTimeout)

	// status shows each input with its own line: the file input's files,
	// the journal's cursor, the listener's connections.
	out, _, code := root.cli("status")
	if code != 0 || !strings.Contains(out, "input files (file):") || !strings.Contains(out, "input journal (journald):") ||
		!strings.Contains(out, "cursor s=") || !regexp.MustCompile(`input sys \(syslog\):\s+\d+ connections open`).MatchString(out) {
		t.Fatalf("status (exit %d):\n%s", code, out)
	}
	if code := root.stop(restarted); code != 0 {
		t.Errorf("stop exit code %d", code)
	}
}

// inputsRead returns each input's lines_read (lines, entries, messages)
// from the running agent's /debug/status.
func inputsRead(t *testing.T, root *agentRoot) map[string]int64 {
	t.Helper()
	code, body := root.apiGet(t, "/debug/status")
	var st struct {
		Inputs []struct {
			ID        string
			LinesRead int64 `json:"lines_read"`
		} `json:"inputs"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("/debug/status (%d): %s", code, body)
	}
	out := make(map[string]int64, len(st.Inputs))
	for _, in := range st.Inputs {
		out[in.ID] = in.LinesRead
	}
	return out
}

// feedLogger writes numbered lines (mix-000000, ...) to logger's stdin at
// about 2,000 lines/s until stop is closed or the write fails (logger
// exited), bounded in count and time; it returns how many it wrote.
func feedLogger(stdin io.Writer, stop <-chan struct{}) int {
	end := time.Now().Add(2 * time.Minute)
	i := 0
	for ; i < 1_000_000 && time.Now().Before(end); i++ {
		select {
		case <-stop:
			return i
		default:
		}
		if _, err := fmt.Fprintf(stdin, "mix-%06d\n", i); err != nil {
			return i
		}
		if i%100 == 99 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return i
}
