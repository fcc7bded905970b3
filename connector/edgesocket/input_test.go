package edgesocket

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/codec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testConfig() *Config {
	c := NewDefaultConfig()
	c.Listen = "127.0.0.1:0"
	c.Tokens = []TokenConfig{{Name: "edge-1", Token: "tok-1"}, {Name: "edge-2", Token: "tok-2"}}
	return c
}

func open(t *testing.T, c *Config) *Input {
	t.Helper()
	in, err := New(c, input.Settings{ID: "relay"})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Open(context.Background(), input.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}

type collector struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func connect(t *testing.T, in *Input, token string) *collector {
	t.Helper()
	c, err := net.DialTimeout("tcp", in.Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	col := &collector{t: t, conn: c, r: bufio.NewReader(c)}
	col.send("__AUTH__:" + token + "\n")
	col.expect("ACK")
	return col
}

func (c *collector) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, s); err != nil {
		c.t.Fatal(err)
	}
}

func (c *collector) expect(want string) {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := c.r.ReadString('\n')
	if err != nil || got != want+"\n" {
		c.t.Fatalf("reply %q, %v; want %q", got, err, want)
	}
}

// silent asserts no reply arrives for a moment.
func (c *collector) silent() {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
	if got, err := c.r.ReadString('\n'); err == nil {
		c.t.Fatalf("reply %q before the batch was stored", got)
	}
}

// pollN polls until n events arrived, bounded in time.
func pollN(t *testing.T, in *Input, n int) []input.Event {
	t.Helper()
	var got []input.Event
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		var err error
		if got, err = in.Poll(context.Background(), got, n-len(got)); err != nil {
			t.Fatal(err)
		}
		if len(got) < n {
			select {
			case <-in.Wakeup():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	if len(got) != n {
		t.Fatalf("polled %d events, want %d", len(got), n)
	}
	return got
}

// RECEIVED leaves only for batches the scheduler said it stored, in
// order, and the payload is stored byte-identical.
func TestReceivedOnlyAfterCommitted(t *testing.T) {
	in := open(t, testConfig())
	c := connect(t, in, "tok-1")
	c.send("__BATCH__:1:{\"a\":1}\n__BATCH__:2:{\"a\":2}\n__BATCH__:3: not json \n")
	evs := pollN(t, in, 3)
	for i, want := range []string{`{"a":1}`, `{"a":2}`, ` not json `} {
		if string(evs[i].Payload) != want || evs[i].Pos.Key != "" {
			t.Errorf("event %d = %q (pos %q), want %q", i, evs[i].Payload, evs[i].Pos.Key, want)
		}
	}
	c.silent()
	in.Committed(2)
	c.expect("RECEIVED")
	c.expect("RECEIVED")
	c.silent()
	in.Committed(1)
	c.expect("RECEIVED")
	c.send("__COMMIT__:3\n__COMMIT__:4\n")
	c.expect("ACK:3")
	c.expect("RETRY")
	peers := in.Peers()
	if len(peers) != 1 || peers[0].Name != "edge-1" || peers[0].Received != 3 || peers[0].Batches != 3 {
		t.Fatalf("Peers() = %+v", peers)
	}
	if st := in.Stats(); st.Events != 3 {
		t.Fatalf("Stats().Events = %d", st.Events)
	}
}

// At max-pending-bytes (the scheduler not polling: the relay's queue is
// full) batches are answered QUEUE_FULL at once, and taken again once
// polled.
func TestQueueFullAtTheBound(t *testing.T) {
	cfg := testConfig()
	cfg.MaxPendingBytes = 64 << 10
	cfg.QueueFullRetry = 300 * time.Millisecond
	in := open(t, cfg)
	c := connect(t, in, "tok-2")
	big := strings.Repeat("x", 40<<10)
	c.send("__BATCH__:1:" + big + "\n__BATCH__:2:" + big + "\n")
	deadline := time.Now().Add(5 * time.Second)
	for in.Stats().Errors == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // batch 2 meets batch 1 still pending
	}
	pollN(t, in, 1)
	c.silent() // batch 1 not stored yet: no reply, and none for 2 before it
	in.Committed(1)
	c.expect("RECEIVED")
	c.expect("QUEUE_FULL:300")
	c.send("__BATCH__:2:" + big + "\n")
	pollN(t, in, 1)
	in.Committed(1)
	c.expect("RECEIVED")
}

// Drain takes what is pending and stops taking: a stop stores what it
// has, and new batches are told to come back.
func TestDrainThenQueueFull(t *testing.T) {
	in := open(t, testConfig())
	c := connect(t, in, "tok-1")
	c.send("__BATCH__:1:{}\n")
	select {
	case <-in.Wakeup(): // handed over
	case <-time.After(5 * time.Second):
		t.Fatal("the batch never reached the input")
	}
	if evs := in.Drain(nil); len(evs) != 1 {
		t.Fatalf("Drain = %d events, want 1", len(evs))
	}
	c.send("__BATCH__:2:{}\n")
	in.Committed(1)
	c.expect("RECEIVED")
	c.expect("QUEUE_FULL:500")
}

func TestAddFields(t *testing.T) {
	cfg := testConfig()
	cfg.AddFields = []string{"token-name", "peer-address"}
	in := open(t, cfg)
	c := connect(t, in, "tok-2")
	c.send("__BATCH__:1:{\"m\":\"x\"}\n__BATCH__:2:{}\n__BATCH__:3:[1]\n")
	evs := pollN(t, in, 3)
	local := c.conn.LocalAddr().String()
	want := []string{
		fmt.Sprintf(`{"_relay_token":"edge-2","_relay_peer":%q,"m":"x"}`, local),
		fmt.Sprintf(`{"_relay_token":"edge-2","_relay_peer":%q}`, local),
		`[1]`,
	}
	for i := range want {
		if string(evs[i].Payload) != want[i] {
			t.Errorf("event %d = %s, want %s", i, evs[i].Payload, want[i])
		}
	}
}

// PACKET mode decodes every compression a sender may choose, encrypted
// with the relay's key, to the very event that was encoded. An envelope
// that is not encrypted is answered DECRYPT_FAILED and stored nowhere,
// unless allow-unencrypted is set.
func TestPacketModeEveryCompression(t *testing.T) {
	key := make([]byte, codec.KeySize)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow-unencrypted=%v", allow), func(t *testing.T) {
			cfg := testConfig()
			cfg.PacketMode = codec.ModePacket
			cfg.AESSecretKeyFile = keyFile
			cfg.AllowUnencrypted = allow
			in := open(t, cfg)
			c := connect(t, in, "tok-1")
			event := `{"_file":"/var/log/a.log","payload":"hello \"relay\" ` + strings.Repeat("é", 50) + `"}`
			var id int64
			var want, replies []string
			for _, comp := range []codec.Compression{codec.CompressionNone, codec.CompressionGzip, codec.CompressionZlib, codec.CompressionDeflate} {
				for _, enc := range []codec.Encryption{codec.EncryptionNone, codec.EncryptionAESGCM} {
					e, err := codec.NewEncoder(codec.Options{Mode: codec.ModePacket, Compression: comp, Level: 1, Encryption: enc, Key: key})
					if err != nil {
						t.Fatal(err)
					}
					wire, err := e.Encode(nil, []byte(event))
					if err != nil {
						t.Fatal(err)
					}
					id++
					c.send(fmt.Sprintf("__BATCH__:%d:%s\n", id, wire))
					if enc == codec.EncryptionNone && !allow {
						replies = append(replies, "DECRYPT_FAILED")
						continue
					}
					want = append(want, event)
					replies = append(replies, "RECEIVED")
				}
			}
			evs := pollN(t, in, len(want))
			for i := range evs {
				if string(evs[i].Payload) != want[i] {
					t.Errorf("batch %d decoded to %q", i+1, evs[i].Payload)
				}
			}
			c.send("__BATCH__:99:{\"version\":1,\"payload\":\"AAAA\",\"compression\":\"none\",\"encryption\":\"aes_gcm\",\"iv\":\"AAAAAAAAAAAAAAAA\"}\n")
			in.Committed(len(evs))
			for _, r := range replies {
				c.expect(r)
			}
			c.expect("DECRYPT_FAILED")
			if evs, _ := in.Poll(context.Background(), nil, 100); len(evs) != 0 {
				t.Errorf("%d more events polled, want none", len(evs))
			}
		})
	}
}

// A wrong token is refused and logged without the token.
func TestWrongTokenRefused(t *testing.T) {
	in := open(t, testConfig())
	c, err := net.Dial("tcp", in.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, "__AUTH__:tok-3\n")
	line, _ := bufio.NewReader(c).ReadString('\n')
	if line != "AUTH_FAILED\n" {
		t.Fatalf("reply %q", line)
	}
}

// A batch that meets the bound waits for the next poll instead of being
// refused at once: when the poll comes within queue-full-retry-ms, it is
// taken and stored, not answered QUEUE_FULL.
func TestBoundWaitsForRoom(t *testing.T) {
	cfg := testConfig()
	cfg.MaxPendingBytes = 64 << 10
	cfg.QueueFullRetry = 5 * time.Second
	in := open(t, cfg)
	c := connect(t, in, "tok-1")
	big := strings.Repeat("x", 40<<10)
	c.send("__BATCH__:1:" + big + "\n__BATCH__:2:" + big + "\n")
	pollN(t, in, 2) // the first poll makes room for the second batch
	in.Committed(2)
	c.expect("RECEIVED")
	c.expect("RECEIVED")
	if n := in.Stats().Errors; n != 0 {
		t.Fatalf("%d batches answered QUEUE_FULL, want 0", n)
	}
}

// At the bound, batches are admitted first come, first served: a small
// batch that would fit the room left still queues behind a big one that
// came first and waits, so no collector's batch is passed over again and
// again by luckier ones.
func TestBoundAdmitsInArrivalOrder(t *testing.T) {
	cfg := testConfig()
	cfg.MaxPendingBytes = 64 << 10
	cfg.QueueFullRetry = 5 * time.Second
	in := open(t, cfg)
	// count waits until f (read under pendingMu) is n.
	count := func(what string, n int, f func() int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			in.pendingMu.Lock()
			got := f()
			in.pendingMu.Unlock()
			if got == n {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("want %d %s", n, what)
	}
	waiting := func(n int) { count("batches waiting for room", n, func() int { return len(in.waiters) }) }
	big := strings.Repeat("x", 40<<10)
	c1 := connect(t, in, "tok-1")
	c1.send("__BATCH__:1:a" + big + "\n")
	count("batches taken", 1, func() int { return len(in.pending) })
	c2 := connect(t, in, "tok-1")
	c2.send("__BATCH__:1:b" + big + "\n")
	waiting(1)
	c3 := connect(t, in, "tok-1")
	c3.send("__BATCH__:1:c\n") // fits the room left, but comes last
	waiting(2)
	got := pollN(t, in, 3)
	var order []string
	for _, e := range got {
		order = append(order, string(e.Payload[:1]))
	}
	if strings.Join(order, "") != "abc" {
		t.Fatalf("polled in order %v, want a b c (arrival order)", order)
	}
	in.Committed(3)
	for _, c := range []*collector{c1, c2, c3} {
		c.expect("RECEIVED")
	}
}

// A token name holding a control byte or invalid UTF-8 (a tokens-file
// may) still gives a valid JSON event: JSON quoting, not Go's.
func TestAddFieldsOddNameStaysJSON(t *testing.T) {
	cfg := testConfig()
	cfg.Tokens = []TokenConfig{{Name: "edge\x01\xff", Token: "tok-1"}}
	cfg.AddFields = []string{"token-name", "peer-address"}
	in := open(t, cfg)
	c := connect(t, in, "tok-1")
	c.send("__BATCH__:1:{\"m\":\"x\"}\n")
	ev := pollN(t, in, 1)[0].Payload
	var got map[string]any
	if !utf8.Valid(ev) || json.Unmarshal(ev, &got) != nil || got["_relay_token"] != "edge\x01\ufffd" {
		t.Fatalf("event %q is not valid JSON with the name", ev)
	}
}

// The listener's refusals before authentication reach the input's
// stats, by reason: a wrong token is counted as such.
func TestStatsCountAuthFailuresByReason(t *testing.T) {
	in := open(t, testConfig())
	c, err := net.DialTimeout("tcp", in.Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("__AUTH__:not-a-token\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(c).ReadString('\n'); line != "AUTH_FAILED\n" {
		t.Fatalf("reply %q, %v; want AUTH_FAILED", line, err)
	}
	got := map[string]int64{}
	for _, rc := range in.Stats().AuthFailures {
		got[rc.Reason] = rc.N
	}
	if got["wrong_token"] != 1 || len(got) != 6 {
		t.Fatalf("AuthFailures = %v, want wrong_token 1 among the 6 reasons", got)
	}
}
