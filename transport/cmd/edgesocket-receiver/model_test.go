package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// netTimeout bounds each network wait; a safety net, never measured.
const netTimeout = 10 * time.Second

// modelReceiver is the receiver run in-process in engine-model mode,
// its model time driven by the test.
type modelReceiver struct {
	t      *testing.T
	addr   string
	out    string
	stderr *syncBuffer
	t0     time.Time
	ticks  chan time.Time
	stop   context.CancelFunc
	done   chan int
}

func startModel(t *testing.T, args ...string) *modelReceiver {
	t.Helper()
	dir := t.TempDir()
	m := &modelReceiver{
		t: t, out: filepath.Join(dir, "committed.ndjson"), stderr: &syncBuffer{},
		t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), ticks: make(chan time.Time), done: make(chan int, 1),
	}
	addrFile := filepath.Join(dir, "addr")
	args = append([]string{"--listen", "127.0.0.1:0", "--addr-file", addrFile, "--stats-interval", "0",
		"--token", "tok", "--engine-model", "--out", m.out, "--format", "envelope"}, args...)
	ctx, stop := context.WithCancel(context.Background())
	m.stop = stop
	go func() {
		m.done <- runWithClock(ctx, args, io.Discard, m.stderr, &modelClock{start: m.t0, ticks: m.ticks})
	}()
	for range 1000 { // bounded wait for the addr file
		if b, err := os.ReadFile(addrFile); err == nil {
			m.addr = strings.TrimSpace(string(b))
			return m
		}
		select {
		case code := <-m.done:
			t.Fatalf("receiver exited %d: %s", code, m.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("receiver did not start")
	return nil
}

// at lets model time reach d after the start.
func (m *modelReceiver) at(d time.Duration) { m.ticks <- m.t0.Add(d) }

// exit stops the receiver and returns its exit code.
func (m *modelReceiver) exit() int {
	m.stop()
	select {
	case code := <-m.done:
		return code
	case <-time.After(netTimeout):
		m.t.Fatal("receiver did not exit")
		return -1
	}
}

type lineConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

// connect dials the model, retrying while the port is closed (between a
// collector leaving and the server listening again).
func connect(t *testing.T, addr string) *lineConn {
	t.Helper()
	for range 500 {
		conn, err := net.DialTimeout("tcp", addr, netTimeout)
		if err == nil {
			t.Cleanup(func() { _ = conn.Close() })
			_ = conn.SetDeadline(time.Now().Add(netTimeout))
			return &lineConn{t: t, conn: conn, r: bufio.NewReader(conn)}
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the model never listened again")
	return nil
}

// ask sends one line and returns the reply.
func (c *lineConn) ask(line string) string {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
	reply, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("%q: %v", line, err)
	}
	return strings.TrimSuffix(reply, "\n")
}

func (c *lineConn) want(line, reply string) {
	c.t.Helper()
	if got := c.ask(line); got != reply {
		c.t.Fatalf("%q: %q, want %q", line, got, reply)
	}
}

// awaitCommit polls __COMMIT__ until want: the model advances on its own
// goroutine once a tick was taken.
func (c *lineConn) awaitCommit(id, want string) {
	c.t.Helper()
	var got string
	for range 1000 {
		if got = c.ask("__COMMIT__:" + id); got == want {
			return
		}
		time.Sleep(time.Millisecond)
	}
	c.t.Fatalf("__COMMIT__:%s stayed %q, want %q", id, got, want)
}

func readOut(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// Only committed rows reach --out; a failover loses the open
// transaction, drops the collector, and the lost ids answer RETRY.
func TestEngineModelCommitAndFailover(t *testing.T) {
	m := startModel(t, "--checkpoint-interval", "1s", "--failover-every", "1500ms", "--log-commits")
	c := connect(t, m.addr)
	c.want("__AUTH__:tok", "ACK")
	for _, l := range []string{`__BATCH__:1:{"n":1}`, `__BATCH__:2:{"n":2}`, `__BATCH__:3:{"n":3}`} {
		c.want(l, "RECEIVED")
	}
	c.want("__COMMIT__:3", "PENDING")
	if got := readOut(t, m.out); got != "" {
		t.Fatalf("output before any checkpoint: %q", got)
	}
	m.at(time.Second) // drain, checkpoint 1
	c.awaitCommit("3", "ACK:3")
	c.want(`__BATCH__:4:{"n":4}`, "RECEIVED")
	c.want(`__BATCH__:5:{"n":5}`, "RECEIVED")
	m.at(1500 * time.Millisecond) // 4, 5 drained into the open transaction, then the failover
	if _, err := c.r.ReadString('\n'); err == nil {
		t.Fatal("the collector's connection outlived the failover")
	}
	d := connect(t, m.addr)
	d.want("tok", "ACK")
	d.want("__COMMIT__:3", "ACK:3")
	d.want("__COMMIT__:4", "RETRY")
	d.want("__COMMIT__:5", "RETRY")
	if code := m.exit(); code != 0 {
		t.Fatalf("exit %d: %s", code, m.stderr.String())
	}
	want := `{"batch_id":1,"payload":{"n":1}}
{"batch_id":2,"payload":{"n":2}}
{"batch_id":3,"payload":{"n":3}}
`
	if got := readOut(t, m.out); got != want {
		t.Fatalf("output\n%s\nwant\n%s", got, want)
	}
	log := m.stderr.String()
	for _, w := range []string{
		"engine model listening on",
		"done records=3 unique_batch_ids=3 duplicate_batch_ids=0 committed=3 checkpoints=1 aborted_checkpoints=0 failovers=1 fresh_restarts=0 lost_open_tx=2 lost_queued=0 queue_full=0",
		"commit_retry=2 commit_resend=0",
		"msg=commit batch_id=4 reply=RETRY",
		"msg=commit batch_id=3 reply=ACK:3",
	} {
		if !strings.Contains(log, w) {
			t.Errorf("stderr lacks %q:\n%s", w, log)
		}
	}
}

// The queue flags set QUEUE_FULL's mark and value; with checkpointing
// off nothing is committed.
func TestEngineModelQueueFlags(t *testing.T) {
	m := startModel(t, "--queue-capacity", "2", "--queue-ratio", "0.5", "--queue-full-retry-after-ms", "250", "--checkpoint-interval", "0")
	c := connect(t, m.addr)
	c.want("tok", "ACK")
	c.want("__BATCH__:1:a", "RECEIVED")
	c.want("__BATCH__:2:b", "QUEUE_FULL:250")
	c.want("__COMMIT__:2", "RETRY")
	m.at(time.Hour) // the sink drains; no checkpoint runs
	for i := 0; c.ask("__BATCH__:2:b") != "RECEIVED"; i++ {
		if i == 1000 {
			t.Fatal("the queue never drained")
		}
		time.Sleep(time.Millisecond)
	}
	// The floor quirk: id 2 makes id 1 ACK, though no row is committed.
	c.want("__COMMIT__:1", "ACK:1")
	if code := m.exit(); code != 0 {
		t.Fatalf("exit %d: %s", code, m.stderr.String())
	}
	if got := readOut(t, m.out); got != "" {
		t.Fatalf("output with checkpointing off: %q", got)
	}
	if log := m.stderr.String(); !strings.Contains(log, "committed=0 checkpoints=0") || !strings.Contains(log, "commit_ack=1") || strings.Contains(log, "queue_full=0 ") {
		t.Fatalf("summary: %s", log)
	}
}

// A fresh restart forgets every id; the first new id makes all lower
// ones ACK.
func TestEngineModelRestartFresh(t *testing.T) {
	m := startModel(t, "--checkpoint-interval", "0", "--restart-fresh-every", "1s")
	c := connect(t, m.addr)
	c.want("tok", "ACK")
	c.want("__BATCH__:7:x", "RECEIVED")
	m.at(time.Second)
	if _, err := c.r.ReadString('\n'); err == nil {
		t.Fatal("the collector's connection outlived the restart")
	}
	d := connect(t, m.addr)
	d.want("tok", "ACK")
	d.want("__COMMIT__:7", "RETRY")
	d.want("__BATCH__:10:y", "RECEIVED")
	d.want("__COMMIT__:7", "ACK:9")
	if code := m.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if log := m.stderr.String(); !strings.Contains(log, "fresh_restarts=1 lost_open_tx=1") {
		t.Fatalf("summary: %s", log)
	}
}

func TestEngineModelFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--token", "t", "--checkpoint-interval", "1s"}, "--checkpoint-interval needs --engine-model"},
		{[]string{"--token", "t", "--log-commits"}, "--log-commits needs --engine-model"},
		{[]string{"--token", "t", "--engine-model", "--fault-retry-every", "3"}, "--fault-retry-every does not apply to --engine-model"},
		{[]string{"--token", "t", "--engine-model", "--exit-after", "3"}, "--exit-after does not apply"},
		{[]string{"--token", "t", "--engine-model", "--queue-capacity", "0"}, "--queue-capacity 0: must be > 0"},
		{[]string{"--token", "t", "--engine-model", "--queue-ratio", "1.5"}, "--queue-ratio 1.5: must be in (0, 1]"},
		{[]string{"--token", "t", "--engine-model", "--queue-full-retry-after-ms", "0"}, "must be > 0"},
		{[]string{"--token", "t", "--engine-model", "--drain-rate", "0"}, "--drain-rate 0: must be > 0"},
		{[]string{"--token", "t", "--engine-model", "--accept-timeout", "0s"}, "--accept-timeout 0s"},
		{[]string{"--token", "t", "--engine-model", "--failover-every", "-1s"}, "--failover-every -1s: must not be negative"},
		{[]string{"--token", "t", "--engine-model", "--abort-checkpoint-every", "-1"}, "--abort-checkpoint-every -1"},
	} {
		var stdout, stderr syncBuffer
		if code := run(context.Background(), tt.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr.String(), tt.want)
		}
	}
	var stdout, stderr syncBuffer
	run(context.Background(), []string{"--help"}, &stdout, &stderr)
	for _, w := range []string{"-engine-model", "-checkpoint-interval", "-failover-every", "-restart-fresh-every", "-queue-capacity",
		"-queue-ratio", "-queue-full-retry-after-ms", "-drain-rate", "-accept-timeout", "-log-commits", "Engine-model mode"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("--help lacks %q", w)
		}
	}
}
