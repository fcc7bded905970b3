package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/edge-agent/edge-agent/transport"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testConfig is fast: tiny backoffs, short timeouts.
func testConfig(endpoint string) Config {
	return Config{
		Endpoint:             endpoint,
		Token:                "tok",
		ConnectTimeout:       2 * time.Second,
		ReadTimeout:          2 * time.Second,
		MaxBatchSendAttempts: 64,
		InitialBackoff:       time.Millisecond,
		MaxBackoff:           5 * time.Millisecond,
		MaxReconnectCycles:   3,
		MaxInFlight:          1,
		CommitEvery:          256,
	}
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func batches(ids ...int64) []transport.Batch {
	out := make([]transport.Batch, len(ids))
	for i, id := range ids {
		out[i] = transport.Batch{ID: id, Payload: []byte(fmt.Sprintf(`{"n":%d}`, id))}
	}
	return out
}

func sendCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAuthWritesExactlyTheAuthLine(t *testing.T) {
	f := newFakeEngine(t, scripted())
	c := newClient(t, testConfig(f.addr()))
	res, err := c.Send(sendCtx(t), []transport.Batch{{ID: 1, Payload: []byte("p")}})
	if err != nil || res[0].Outcome != transport.Received {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	got := strings.Join(f.lines(0), "")
	// The call ends on a commit barrier, which balances its replies.
	if got != "__AUTH__:tok\n__BATCH__:1:p\n__COMMIT__:1\n" {
		t.Fatalf("wire = %q", got)
	}
	if !c.Connected() {
		t.Fatal("session not kept after Send")
	}
}

// TestRawWireBytesGolden pins the bytes a Send writes for RAW batches:
// the session's auth line, then one "__BATCH__:<id>:<payload>\n" per batch,
// in order, the payload byte for byte (quotes, tabs, multi-byte UTF-8,
// 64-bit ids). Framing changes made for speed must leave it as it is.
func TestRawWireBytesGolden(t *testing.T) {
	f := newFakeEngine(t, scripted())
	cfg := testConfig(f.addr())
	cfg.MaxInFlight = 3 // the three lines, then one barrier
	c := newClient(t, cfg)
	in := []transport.Batch{
		{ID: 1, Payload: []byte(`{"_index":0,"_file":"/var/log/app.log","_line":1,"_offset":42,"_ts":1764000000000,"payload":"GET /x \"q\"\tok"}`)},
		{ID: 2, Payload: []byte(`{"payload":"Größe ✓ 注文","host":{"name":"h1"}}`)},
		{ID: 9223372036854775807, Payload: []byte("\t \x00:__BATCH__:3:x")},
	}
	res, err := c.Send(sendCtx(t), in)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	for i, r := range res {
		if r.Outcome != transport.Received {
			t.Fatalf("batch %d: %+v", i, r)
		}
	}
	const golden = "__AUTH__:tok\n" +
		`__BATCH__:1:{"_index":0,"_file":"/var/log/app.log","_line":1,"_offset":42,"_ts":1764000000000,"payload":"GET /x \"q\"\tok"}` + "\n" +
		`__BATCH__:2:{"payload":"Größe ✓ 注文","host":{"name":"h1"}}` + "\n" +
		"__BATCH__:9223372036854775807:\t \x00:__BATCH__:3:x\n" +
		"__COMMIT__:9223372036854775807\n" // no reply read yet: the last id written
	if got := strings.Join(f.lines(0), ""); got != golden {
		t.Fatalf("wire bytes:\n got %q\nwant %q", got, golden)
	}
}

// TestReplyPaths mirrors the Java EdgeSocketLineTransportTest list.
func TestReplyPaths(t *testing.T) {
	tests := []struct {
		name        string
		auth        string // auth reply; "" = ACK
		script      []string
		tweak       func(*Config)
		wantOutcome transport.Outcome
		wantErr     error  // from Send
		wantResErr  string // substring of the Result's error
		wantWrites  int    // __BATCH__ lines seen by the engine
		wantAccepts int
	}{
		{name: "received", script: []string{"RECEIVED"}, wantOutcome: transport.Received, wantWrites: 1, wantAccepts: 1},
		{name: "auth failed", auth: "AUTH_FAILED", wantOutcome: transport.NotSent, wantErr: transport.ErrAuthFailed, wantAccepts: 1},
		{name: "rejected: exactly one connect", auth: "REJECTED", tweak: func(c *Config) { c.MaxReconnectCycles = 16 },
			wantOutcome: transport.NotSent, wantErr: transport.ErrRejected, wantAccepts: 1},
		{name: "unexpected auth reply reconnects", auth: "PENDING", wantOutcome: transport.NotSent, wantErr: transport.ErrUnavailable, wantAccepts: 3},
		{name: "auth reply normalised", auth: "  ACK\r", script: []string{"RECEIVED\r"}, wantOutcome: transport.Received, wantWrites: 1, wantAccepts: 1},
		{name: "queue full then received", script: []string{"QUEUE_FULL:5", "RECEIVED"}, wantOutcome: transport.Received, wantWrites: 2, wantAccepts: 1},
		{name: "queue full is not an attempt", script: []string{"QUEUE_FULL:1", "QUEUE_FULL:1", "QUEUE_FULL:1", "RECEIVED"},
			tweak: func(c *Config) { c.MaxBatchSendAttempts = 1 }, wantOutcome: transport.Received, wantWrites: 4, wantAccepts: 1},
		{name: "retry retry received", script: []string{"RETRY", "RETRY", "RECEIVED"}, wantOutcome: transport.Received, wantWrites: 3, wantAccepts: 1},
		{name: "max attempts 3 with four RETRYs", script: []string{"RETRY", "RETRY", "RETRY", "RETRY"},
			tweak: func(c *Config) { c.MaxBatchSendAttempts = 3 }, wantOutcome: transport.Failed,
			wantResErr: "exceeded max batch send attempts (3) without RECEIVED", wantWrites: 3, wantAccepts: 1},
		// PENDING only answers a __COMMIT__: the replies are out of step,
		// the session ends and the batch goes again, charged nothing.
		{name: "pending to a batch is out of step", script: []string{"PENDING"}, wantOutcome: transport.Received, wantWrites: 2, wantAccepts: 2},
		{name: "decode failed", script: []string{"DECODE_FAILED"}, wantOutcome: transport.Failed, wantResErr: "DECODE_FAILED", wantWrites: 1, wantAccepts: 1},
		{name: "bad request", script: []string{"BAD_REQUEST"}, wantOutcome: transport.Failed, wantWrites: 1, wantAccepts: 1},
		{name: "invalid param", script: []string{"INVALID_PARAM"}, wantOutcome: transport.Failed, wantWrites: 1, wantAccepts: 1},
		{name: "unknown reply", script: []string{"WHAT?"}, wantOutcome: transport.Failed, wantWrites: 1, wantAccepts: 1},
		{name: "decrypt failed is fatal", script: []string{"DECRYPT_FAILED"}, wantOutcome: transport.Failed, wantErr: transport.ErrDecryptFailed, wantWrites: 1, wantAccepts: 1},
		{name: "EOF on every connection", script: []string{cut, cut, cut}, wantOutcome: transport.Failed, wantErr: transport.ErrUnavailable,
			wantResErr: "EOF", wantWrites: 3, wantAccepts: 3},
		{name: "cut then received", script: []string{cut, "RECEIVED"}, wantOutcome: transport.Received, wantWrites: 2, wantAccepts: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			batchReplies := scripted(tt.script...)
			f := newFakeEngine(t, func(conn int, line string) string {
				if strings.HasPrefix(line, "__AUTH__:") && tt.auth != "" {
					return tt.auth
				}
				return batchReplies(conn, line)
			})
			cfg := testConfig(f.addr())
			if tt.tweak != nil {
				tt.tweak(&cfg)
			}
			c := newClient(t, cfg)
			res, err := c.Send(sendCtx(t), batches(7))
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Send error = %v, want %v", err, tt.wantErr)
			}
			if len(res) != 1 || res[0].ID != 7 || res[0].Outcome != tt.wantOutcome {
				t.Fatalf("result = %+v, want %v", res, tt.wantOutcome)
			}
			if tt.wantResErr != "" && (res[0].Err == nil || !strings.Contains(res[0].Err.Error(), tt.wantResErr)) {
				t.Fatalf("result error = %v, want it to mention %q", res[0].Err, tt.wantResErr)
			}
			if res[0].Outcome != transport.Received && res[0].Err == nil {
				t.Fatal("a batch that was not received carries no error")
			}
			if got := f.batchLines(); got != tt.wantWrites {
				t.Fatalf("engine saw %d batch lines, want %d", got, tt.wantWrites)
			}
			if got := f.accepts(); got != tt.wantAccepts {
				t.Fatalf("engine accepted %d connections, want %d", got, tt.wantAccepts)
			}
			if errors.Is(err, transport.ErrAuthFailed) || errors.Is(err, transport.ErrDecryptFailed) {
				if !transport.IsFatal(err) {
					t.Fatal("fatal error not reported by IsFatal")
				}
			}
		})
	}
}

func TestUnreachableEngine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := newClient(t, testConfig(addr))
	res, err := c.Send(sendCtx(t), batches(1, 2))
	if !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	for _, r := range res {
		if r.Outcome != transport.NotSent {
			t.Fatalf("result %+v: an unreachable engine must not charge an attempt", r)
		}
	}
	if st := c.Stats(); st.ConnectAttempts != 3 || st.Connects != 0 {
		t.Fatalf("stats %+v, want 3 connect attempts", st)
	}
	if !strings.Contains(err.Error(), addr) {
		t.Fatalf("error %q does not name the endpoint", err)
	}
}

func TestReconnectAfterCutMidBatch(t *testing.T) {
	f := newFakeEngine(t, func(conn int, line string) string {
		switch {
		case strings.HasPrefix(line, "__AUTH__:"):
			return "ACK"
		case conn == 0:
			return cut
		}
		return "RECEIVED"
	})
	c := newClient(t, testConfig(f.addr()))
	res, err := c.Send(sendCtx(t), batches(11))
	if err != nil || res[0].Outcome != transport.Received {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	if f.accepts() != 2 || f.lines(0)[1] != f.lines(1)[1] {
		t.Fatalf("want the same batch line resent on a second connection: %q / %q", f.lines(0), f.lines(1))
	}
	if st := c.Stats(); st.Reconnects != 1 || st.Connects != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPipeliningResendsExactlyTheUnanswered(t *testing.T) {
	const cutAt = "__BATCH__:6:"
	var answered []string
	f := newFakeEngine(t, func(conn int, line string) string {
		switch {
		case strings.HasPrefix(line, "__AUTH__:"):
			return "ACK"
		case conn == 0 && strings.HasPrefix(line, cutAt):
			return cut
		}
		answered = append(answered, line) // one engine goroutine at a time: serial
		return "RECEIVED"
	})
	cfg := testConfig(f.addr())
	cfg.MaxInFlight = 4
	cfg.CommitEvery = 4 // 1..4 are balanced before the cut; 5 is held and goes again
	c := newClient(t, cfg)
	ids := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	res, err := c.Send(sendCtx(t), batches(ids...))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.ID != ids[i] || r.Outcome != transport.Received {
			t.Fatalf("result %d = %+v", i, r)
		}
	}
	var second []string
	for _, l := range f.lines(1)[1:] {
		if strings.HasPrefix(l, "__BATCH__:") {
			second = append(second, strings.SplitN(l, ":", 3)[1])
		}
	}
	if got := strings.Join(second, ","); got != "5,6,7,8,9,10" {
		t.Fatalf("second connection carried batches %s, want exactly the unconfirmed 5..10 in order", got)
	}
	if len(answered) != 11 { // 5 was answered on both
		t.Fatalf("engine answered %d batches, want 11", len(answered))
	}
}

func TestPipeliningKeepsOrder(t *testing.T) {
	f := newFakeEngine(t, scripted())
	cfg := testConfig(f.addr())
	cfg.MaxInFlight = 64
	c := newClient(t, cfg)
	var ids []int64
	for i := int64(1); i <= 500; i++ {
		ids = append(ids, 1000+i)
	}
	res, err := c.Send(sendCtx(t), batches(ids...))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range f.lines(0)[1:] {
		if strings.HasPrefix(l, "__BATCH__:") {
			lines = append(lines, l)
		}
	}
	for i, r := range res {
		if r.ID != ids[i] || r.Outcome != transport.Received {
			t.Fatalf("result %d = %+v", i, r)
		}
		if want := fmt.Sprintf("__BATCH__:%d:", ids[i]); !strings.HasPrefix(lines[i], want) {
			t.Fatalf("line %d = %q, want %s…", i, lines[i], want)
		}
	}
}

func TestPipelinedRepliesAreMatchedInOrder(t *testing.T) {
	// Every third batch is refused: the refusals must land on exactly
	// those batches even with many in flight.
	n := 0
	f := newFakeEngine(t, func(_ int, line string) string {
		if strings.HasPrefix(line, "__AUTH__:") {
			return "ACK"
		}
		n++
		if n%3 == 0 {
			return "DECODE_FAILED"
		}
		return "RECEIVED"
	})
	cfg := testConfig(f.addr())
	cfg.MaxInFlight = 8
	c := newClient(t, cfg)
	res, err := c.Send(sendCtx(t), batches(1, 2, 3, 4, 5, 6, 7, 8, 9))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		want := transport.Received
		if (i+1)%3 == 0 {
			want = transport.Failed
		}
		if r.Outcome != want {
			t.Fatalf("batch %d: %v, want %v", r.ID, r.Outcome, want)
		}
	}
}

func TestReadTimeoutReplacesASilentConnection(t *testing.T) {
	f := newFakeEngine(t, func(conn int, line string) string {
		switch {
		case strings.HasPrefix(line, "__AUTH__:"):
			return "ACK"
		case conn == 0:
			return silent
		}
		return "RECEIVED"
	})
	cfg := testConfig(f.addr())
	cfg.ReadTimeout = 150 * time.Millisecond
	c := newClient(t, cfg)
	res, err := c.Send(sendCtx(t), batches(3))
	if err != nil || res[0].Outcome != transport.Received {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	if f.accepts() != 2 {
		t.Fatalf("accepts = %d, want 2", f.accepts())
	}
}

// An engine that authenticates and then stops reading makes a write
// block once the socket buffers are full: the deadline set before a
// write that reaches the socket must end it, so the session is replaced
// and the batches go out on the next one, instead of Send hanging until
// its context ends.
func TestWriteTimeoutReplacesAnEngineThatStopsReading(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	done := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	go func() {
		for n := 0; ; n++ {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			go func(n int, conn net.Conn) {
				r := bufio.NewReaderSize(conn, 1<<20)
				if _, err := r.ReadString('\n'); err != nil { // __AUTH__
					return
				}
				if _, err := conn.Write([]byte("ACK\n")); err != nil {
					return
				}
				if n == 0 {
					<-done // never reads again
					return
				}
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					reply := "RECEIVED\n"
					if strings.HasPrefix(line, "__COMMIT__:") {
						reply = "PENDING\n"
					}
					if _, err := conn.Write([]byte(reply)); err != nil {
						return
					}
				}
			}(n, conn)
		}
	}()
	cfg := testConfig(ln.Addr().String())
	// Long enough that the reading session never falls this far behind on
	// a loaded machine (at 300 ms it once did, and was replaced too); the
	// stalled one still ends after one timeout.
	cfg.ReadTimeout = 2 * time.Second
	cfg.MaxInFlight = 64
	c := newClient(t, cfg)
	big := bytes.Repeat([]byte("x"), 1<<20)
	in := make([]transport.Batch, 32) // 32 MiB: more than loopback's socket buffers hold
	for i := range in {
		in[i] = transport.Batch{ID: int64(i + 1), Payload: big}
	}
	res, err := c.Send(sendCtx(t), in)
	if err != nil {
		t.Fatalf("Send: %v (a write to an engine that stopped reading was not ended by its deadline)", err)
	}
	for i, r := range res {
		if r.Outcome != transport.Received {
			t.Fatalf("batch %d: %+v", i+1, r)
		}
	}
	mu.Lock()
	n := len(conns)
	mu.Unlock()
	if n != 2 {
		t.Fatalf("%d connections, want 2: the stalled one replaced once", n)
	}
}

func TestSessionIsKeptAndRevalidated(t *testing.T) {
	f := newFakeEngine(t, scripted())
	c := newClient(t, testConfig(f.addr()))
	for i := range 3 {
		if _, err := c.Send(sendCtx(t), batches(int64(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	if f.accepts() != 1 {
		t.Fatalf("three Sends used %d connections, want 1", f.accepts())
	}
	// The engine drops the idle session; the next Send notices before
	// writing, so no batch is charged as unanswered.
	f.mu.Lock()
	_ = f.open[0].Close()
	f.mu.Unlock()
	waitFor(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.sess != nil && c.sess.check() != nil
	})
	res, err := c.Send(sendCtx(t), batches(9))
	if err != nil || res[0].Outcome != transport.Received {
		t.Fatalf("Send after idle drop = %+v, %v", res, err)
	}
	if f.accepts() != 2 || c.Stats().BatchesSent != 4 {
		t.Fatalf("accepts %d, stats %+v", f.accepts(), c.Stats())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	transporttest.Eventually(t, 0, "the condition", cond)
}

func TestInvalidBatchesFailAlone(t *testing.T) {
	f := newFakeEngine(t, scripted())
	c := newClient(t, testConfig(f.addr()))
	in := []transport.Batch{{ID: 0, Payload: []byte("a")}, {ID: 2, Payload: []byte("b\nc")}, {ID: 3, Payload: []byte("ok")}}
	res, err := c.Send(sendCtx(t), in)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != transport.Failed || !strings.Contains(res[0].Err.Error(), "batchId must be positive") {
		t.Fatalf("id 0: %+v", res[0])
	}
	if res[1].Outcome != transport.Failed || !strings.Contains(res[1].Err.Error(), "line break") {
		t.Fatalf("newline payload: %+v", res[1])
	}
	if res[2].Outcome != transport.Received || f.batchLines() != 1 {
		t.Fatalf("valid batch: %+v, lines %d", res[2], f.batchLines())
	}
}

func TestContextCancelInterruptsAWait(t *testing.T) {
	f := newFakeEngine(t, scripted("QUEUE_FULL:60000"))
	c := newClient(t, testConfig(f.addr()))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := c.Send(ctx, batches(1))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
	if res[0].Outcome != transport.NotSent {
		t.Fatalf("a batch answered QUEUE_FULL is not charged: %+v", res[0])
	}
}

func TestCloseInterruptsSendAndIsIdempotent(t *testing.T) {
	f := newRawFakeEngine(t, func(_ int, line string) string {
		if strings.HasPrefix(line, "__AUTH__:") {
			return "ACK"
		}
		return silent
	})
	cfg := testConfig(f.addr())
	cfg.ReadTimeout = time.Minute
	c := newClient(t, cfg)
	done := make(chan error, 1)
	go func() {
		_, err := c.Send(context.Background(), batches(1))
		done <- err
	}()
	waitFor(t, func() bool { return f.batchLines() == 1 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, transport.ErrClosed) {
			t.Fatalf("Send err = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not interrupt Send")
	}
	_ = c.Close()
	if _, err := c.Send(context.Background(), batches(2)); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
	if c.Connected() {
		t.Fatal("still connected after Close")
	}
}

func TestCustomDialIsUsed(t *testing.T) {
	f := newFakeEngine(t, scripted())
	cfg := testConfig("engine.invalid:9999")
	dials := 0
	cfg.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		dials++
		var d net.Dialer
		return d.DialContext(ctx, network, f.addr())
	}
	c := newClient(t, cfg)
	if res, err := c.Send(sendCtx(t), batches(1)); err != nil || res[0].Outcome != transport.Received || dials != 1 {
		t.Fatalf("Send = %+v, %v, dials %d", res, err, dials)
	}
}
