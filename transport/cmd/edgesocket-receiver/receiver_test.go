package main

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/client"
	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/transporttest/standin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a bytes.Buffer safe for the receiver's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startReceiver runs the command in-process and returns its address and a
// wait function giving the exit code.
func startReceiver(t *testing.T, ctx context.Context, args ...string) (string, *syncBuffer, *syncBuffer, func() int) {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	args = append([]string{"--listen", "127.0.0.1:0", "--addr-file", addrFile, "--stats-interval", "50ms"}, args...)
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, stdout, stderr) }()
	var addr string
	for range 500 {
		if b, err := os.ReadFile(addrFile); err == nil {
			addr = strings.TrimSpace(string(b))
			break
		}
		select {
		case code := <-done:
			t.Fatalf("receiver exited %d: %s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if addr == "" {
		t.Fatal("receiver did not start")
	}
	return addr, stdout, stderr, func() int {
		select {
		case code := <-done:
			return code
		case <-time.After(10 * time.Second):
			t.Fatal("receiver did not exit")
			return -1
		}
	}
}

func send(t *testing.T, addr string, batches ...transport.Batch) {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Endpoint, cfg.Token = addr, "tok"
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Send(context.Background(), batches)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Outcome != transport.Received {
			t.Fatalf("%+v", r)
		}
	}
}

func TestReceiverEnvelopeAndExitAfter(t *testing.T) {
	out := filepath.Join(t.TempDir(), "records.ndjson")
	addr, _, stderr, wait := startReceiver(t, context.Background(), "--token", "tok", "--format", "envelope", "--out", out, "--exit-after", "3")
	send(t, addr,
		transport.Batch{ID: 5, Payload: []byte(`{"a":1}`)},
		transport.Batch{ID: 6, Payload: []byte(`plain "text"`)},
		transport.Batch{ID: 5, Payload: []byte(`[1,2]`)},
	)
	if code := wait(); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got, _ := os.ReadFile(out)
	want := `{"batch_id":5,"payload":{"a":1}}
{"batch_id":6,"payload":"plain \"text\""}
{"batch_id":5,"payload":[1,2]}
`
	if string(got) != want {
		t.Fatalf("output\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(stderr.String(), "done records=3 unique_batch_ids=2 duplicate_batch_ids=1") {
		t.Fatalf("summary missing: %s", stderr.String())
	}
}

func TestReceiverPacketPayloadToStdoutUntilSignal(t *testing.T) {
	key := bytes.Repeat([]byte{4}, codec.KeySize)
	keyB64 := "BAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ="
	ctx, stop := context.WithCancel(context.Background())
	addr, stdout, stderr, wait := startReceiver(t, ctx, "--token", "tok", "--packet-mode", "PACKET", "--secret-key", keyB64)
	enc, err := codec.NewEncoder(codec.Options{Mode: codec.ModePacket, Compression: codec.CompressionZlib, Encryption: codec.EncryptionAESGCM, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := enc.Encode(nil, []byte(`{"payload":"x"}`))
	p2, _ := enc.Encode(nil, []byte("multi\nline"))
	send(t, addr, transport.Batch{ID: 1, Payload: p1}, transport.Batch{ID: 2, Payload: p2})
	stop() // as SIGTERM would
	if code := wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if got := stdout.String(); got != "{\"payload\":\"x\"}\n\"multi\\nline\"\n" {
		t.Fatalf("stdout %q", got)
	}
	// The count at exit; the periodic line is TestStatsSkipsIdleIntervals'
	// (its clock is injected, so it needs no sleep).
	if !strings.Contains(stderr.String(), "done records=2 unique_batch_ids=2 duplicate_batch_ids=0") {
		t.Fatalf("no final count: %s", stderr.String())
	}
}

func TestReceiverFaultFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	ctx, stop := context.WithCancel(context.Background())
	addr, _, stderr, wait := startReceiver(t, ctx, "--token", "tok", "--out", out, "--format", "envelope",
		"--fault-cut-after", "7", "--fault-retry-every", "5", "--fault-queue-full-every", "6", "--fault-queue-full-ms", "1", "--fault-delay-ms", "1")
	var in []transport.Batch
	for i := int64(1); i <= 20; i++ {
		in = append(in, transport.Batch{ID: i, Payload: []byte(`{}`)})
	}
	send(t, addr, in...)
	stop()
	if code := wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	got, _ := os.ReadFile(out)
	ids := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(got)), "\n") {
		ids[strings.SplitN(l, ",", 2)[0]] = true
	}
	if len(ids) != 20 {
		t.Fatalf("%d distinct batch ids in output, want 20:\n%s", len(ids), got)
	}
	if !strings.Contains(stderr.String(), "unique_batch_ids=20 duplicate_batch_ids=") || strings.Contains(stderr.String(), "duplicate_batch_ids=0\n") {
		t.Fatalf("cuts must show as duplicates: %s", stderr.String())
	}
}

const testKeyB64 = "BAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ=" // 32 bytes of 4

func TestReceiverUsage(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "aes.key")
	shortKeyFile := filepath.Join(dir, "short.key")
	emptyTokenFile := filepath.Join(dir, "token")
	for f, content := range map[string]string{keyFile: testKeyB64 + "\n", shortKeyFile: "c2hvcnQ=\n", emptyTokenFile: "\n"} {
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{}, 2, "a token is required"},
		{[]string{"--token", "t", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"--token", "t", "--packet-mode", "json"}, 2, `unknown packet mode "json"`},
		{[]string{"--token", "t", "--secret-key", "c2hvcnQ="}, 2, "exactly 32 bytes"},
		{[]string{"--token", "t", "--format", "xml"}, 2, `--format "xml"`},
		{[]string{"--token", "t", "--fault-cut-after", "-1"}, 2, "must not be negative"},
		{[]string{"--token", "t", "extra"}, 2, "unexpected argument"},
		{[]string{"--token-file", "/nonexistent/token"}, 2, "--token-file"},
		{[]string{"--token-file", emptyTokenFile}, 2, "empty"},
		{[]string{"--token", "t", "--listen", "256.1.1.1:1"}, 1, "listen"},
		{[]string{"--token", "t", "--secret-key", testKeyB64, "--secret-key-file", keyFile}, 2, "--secret-key and --secret-key-file exclude each other"},
		{[]string{"--token", "t", "--secret-key-file", filepath.Join(dir, "missing.key")}, 2, "--secret-key-file: open"},
		{[]string{"--token", "t", "--secret-key-file", shortKeyFile}, 2, "--secret-key-file: "},
	} {
		var stdout, stderr syncBuffer
		code := run(context.Background(), tt.args, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), tt.code, tt.want)
		}
		// A usage error is reported once, by run, without the help text
		// (which the flag package would dump on its own).
		if tt.code == 2 && (strings.Count(stderr.String(), tt.want) != 1 || strings.Contains(stderr.String(), "Usage:") || stdout.String() != "") {
			t.Errorf("%v: want the error once and no help, got stderr %q and stdout %q", tt.args, stderr.String(), stdout.String())
		}
	}
}

// --help is asked for, so it is output (stdout, exit 0), not an error:
// `edgesocket-receiver --help | less` must show it.
func TestReceiverHelpOnStdout(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		var stdout, stderr syncBuffer
		if code := run(context.Background(), []string{arg}, &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", arg, code, stderr.String())
		}
		for _, want := range []string{"Examples:", "-secret-key-file", "-version"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("%s: stdout lacks %q:\n%s", arg, want, stdout.String())
			}
		}
		if stderr.String() != "" {
			t.Errorf("%s: stderr %q, want nothing", arg, stderr.String())
		}
	}
}

func TestReceiverVersion(t *testing.T) {
	// Unstamped (go test, go run): the build info's module version.
	var stdout, stderr syncBuffer
	if code := run(context.Background(), []string{"--version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build info in the test binary")
	}
	want := "edgesocket-receiver " + bi.Main.Version + " (" + runtime.Version()
	if bi.Main.Version == "" {
		want = "edgesocket-receiver unknown ("
	}
	if !strings.HasPrefix(stdout.String(), want) {
		t.Errorf("unstamped: stdout %q, want it to start with %q", stdout.String(), want)
	}
	// Stamped at link time (make build, the dist builder): the stamp wins,
	// and no token is needed just to ask.
	defer func(v string) { version = v }(version)
	version = "v9.8.7"
	stdout = syncBuffer{}
	if code := run(context.Background(), []string{"--version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "edgesocket-receiver v9.8.7 (") {
		t.Errorf("stamped: stdout %q", stdout.String())
	}
}

// The key read from a file (trailing newline and spaces trimmed) decrypts
// what the agent encrypted with it.
func TestSecretKeyFile(t *testing.T) {
	key := bytes.Repeat([]byte{4}, codec.KeySize)
	f := filepath.Join(t.TempDir(), "aes.key")
	if err := os.WriteFile(f, []byte("  "+testKeyB64+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, stdout, stderr, wait := startReceiver(t, context.Background(), "--token", "tok", "--packet-mode", "packet",
		"--secret-key-file", f, "--exit-after", "1")
	enc, err := codec.NewEncoder(codec.Options{Mode: codec.ModePacket, Encryption: codec.EncryptionAESGCM, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	p, err := enc.Encode(nil, []byte(`{"k":1}`))
	if err != nil {
		t.Fatal(err)
	}
	send(t, addr, transport.Batch{ID: 1, Payload: p})
	if code := wait(); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if got := stdout.String(); got != "{\"k\":1}\n" {
		t.Fatalf("stdout %q", got)
	}
}

func TestStatsSkipsIdleIntervals(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := newStatsReporter(t0)
	tick := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	steps := []struct {
		at   time.Time
		snap statsSnapshot
		want string // "" = no line
	}{
		// Nothing has happened yet: an idle receiver prints nothing.
		{tick(1), statsSnapshot{}, ""},
		// A collector connected: worth a line though no record came.
		{tick(2), statsSnapshot{server: standin.Stats{Connections: 1, Sessions: 1}},
			"edgesocket-receiver: records=0 rate=0/s unique_batch_ids=0 duplicate_batch_ids=0 sessions=1 rejected=0 decode_failed=0 decrypt_failed=0\n"},
		{tick(3), statsSnapshot{records: 10, unique: 2, server: standin.Stats{Connections: 1, Sessions: 1, Records: 10}},
			"edgesocket-receiver: records=10 rate=10/s unique_batch_ids=2 duplicate_batch_ids=0 sessions=1 rejected=0 decode_failed=0 decrypt_failed=0\n"},
		// Unchanged: skipped.
		{tick(4), statsSnapshot{records: 10, unique: 2, server: standin.Stats{Connections: 1, Sessions: 1, Records: 10}}, ""},
		{tick(5), statsSnapshot{records: 10, unique: 2, server: standin.Stats{Connections: 1, Sessions: 1, Records: 10}}, ""},
		// The rate covers the last interval, not the idle ones before it.
		{tick(6), statsSnapshot{records: 30, unique: 4, dups: 1, server: standin.Stats{Connections: 1, Sessions: 1, Records: 30}},
			"edgesocket-receiver: records=30 rate=20/s unique_batch_ids=4 duplicate_batch_ids=1 sessions=1 rejected=0 decode_failed=0 decrypt_failed=0\n"},
		// A refused connection alone changes the picture.
		{tick(7), statsSnapshot{records: 30, unique: 4, dups: 1, server: standin.Stats{Connections: 2, Sessions: 1, Rejected: 1, Records: 30}},
			"edgesocket-receiver: records=30 rate=0/s unique_batch_ids=4 duplicate_batch_ids=1 sessions=1 rejected=1 decode_failed=0 decrypt_failed=0\n"},
	}
	for i, st := range steps {
		var out bytes.Buffer
		r.report(&out, st.at, st.snap)
		if out.String() != st.want {
			t.Errorf("step %d: got %q, want %q", i, out.String(), st.want)
		}
	}
}

func TestTokenFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, _, _, wait := startReceiver(t, context.Background(), "--token-file", f, "--exit-after", "1", "--out", filepath.Join(t.TempDir(), "o"))
	send(t, addr, transport.Batch{ID: 1, Payload: []byte("x")})
	if code := wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// Past --exit-after, batches are refused with QUEUE_FULL before the model
// takes them: nothing is answered RECEIVED that was not written.
func TestExitAfterRefusesTheRest(t *testing.T) {
	out := filepath.Join(t.TempDir(), "records.ndjson")
	addr, _, stderr, wait := startReceiver(t, context.Background(), "--token", "tok", "--out", out, "--exit-after", "2")
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	// All pipelined: the third is read before the receiver winds down or
	// not at all, never half.
	if _, err := conn.Write([]byte("__AUTH__:tok\n__BATCH__:1:a\n__BATCH__:2:b\n__BATCH__:3:c\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	var replies []string
	for range 4 {
		line, err := r.ReadString('\n')
		if err != nil {
			break
		}
		replies = append(replies, strings.TrimSuffix(line, "\n"))
	}
	if code := wait(); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if len(replies) < 3 || !slices.Equal(replies[:3], []string{"ACK", "RECEIVED", "RECEIVED"}) ||
		(len(replies) == 4 && replies[3] != "QUEUE_FULL:1000") {
		t.Fatalf("replies %q", replies)
	}
	if got, _ := os.ReadFile(out); string(got) != "\"a\"\n\"b\"\n" {
		t.Fatalf("output %q", got)
	}
}
