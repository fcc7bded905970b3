package standin

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/protocol"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Token == "" {
		cfg.Token = "tok"
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type peer = transporttest.Peer

func dial(t *testing.T, s *Server) *peer { return transporttest.DialPeer(t, s.Addr()) }

func authed(t *testing.T, s *Server) *peer {
	p := dial(t, s)
	p.Send("__AUTH__:tok\n")
	p.Expect("ACK")
	return p
}

func TestAuth(t *testing.T) {
	s := start(t, Config{AuthTimeout: 200 * time.Millisecond})
	authed(t, s).Conn.Close()

	for _, line := range []string{"__AUTH__:wrong\n", "wrong-without-prefix\n", "\n"} {
		p := dial(t, s)
		p.Send(line)
		p.Expect("AUTH_FAILED")
		p.ExpectEOF()
	}
	p := dial(t, s) // the engine takes a prefix-less line as the token
	p.Send("tok\r\n")
	p.Expect("ACK")
	p.Conn.Close()

	p = dial(t, s) // silence until the auth timeout
	p.Expect("AUTH_FAILED")
	p.ExpectEOF()

	authed(t, s) // the ingress still takes a good collector afterwards
	if st := s.Stats(); st.AuthFailures != 4 || st.Sessions != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSingleCollector(t *testing.T) {
	s := start(t, Config{RejectGrace: -1})
	first := authed(t, s)
	second := dial(t, s)
	second.Expect("REJECTED") // without sending anything, like the engine
	second.ExpectEOF()
	first.Send("__BATCH__:1:x\n")
	first.Expect("RECEIVED")
	first.Conn.Close()
	waitFor(t, func() bool { return len(s.slot) == 0 })
	authed(t, s) // the ingress is free again
	if s.Stats().Rejected != 1 {
		t.Fatalf("stats %+v", s.Stats())
	}
}

func TestRejectGraceCoversAReconnectRace(t *testing.T) {
	s := start(t, Config{RejectGrace: 2 * time.Second})
	first := authed(t, s)
	second := dial(t, s)
	second.Send("__AUTH__:tok\n")
	// Accepted, the newcomer waits for the slot the first session holds.
	waitFor(t, func() bool { return s.Stats().Connections == 2 })
	first.Conn.Close() // the old session ends while the new one waits
	second.Expect("ACK")
}

func TestSecondAuthIsABadRequest(t *testing.T) {
	p := authed(t, start(t, Config{}))
	p.Send("__AUTH__:tok\n")
	p.Expect("BAD_REQUEST")
}

// Every line is answered by the engine model: records reach the Handler
// as accepted, and __COMMIT__ answers follow the model's rules, ACK only
// below the floor or after a checkpoint.
func TestModelAnswers(t *testing.T) {
	type rec struct {
		id  int64
		rec string
	}
	var mu sync.Mutex
	var got []rec
	s := start(t, Config{
		Handler: func(id int64, r []byte) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, rec{id, string(r)})
		},
	})
	p := authed(t, s)
	p.Send("__BATCH__:3:payload-data\n", "__BATCH__:4:n\n")
	p.Expect("RECEIVED")
	p.Expect("RECEIVED")
	p.Send("__BATCH__:5:crlf\r\n", "__BATCH__:6:a:b:c\n")
	p.Expect("RECEIVED")
	p.Expect("RECEIVED")
	steps := []struct{ line, reply string }{
		{"__BATCH__:notanumber:data\n", "INVALID_PARAM"},
		{"__BATCH__:0:data\n", "INVALID_PARAM"},
		{"__BATCH__:1\n", "BAD_REQUEST"},
		{"HELLO\n", "BAD_REQUEST"},
		{"__COMMIT__:abc\n", "INVALID_PARAM"},
		{"__COMMIT__:0\n", "INVALID_PARAM"},
		{"__COMMIT__:-1\n", "INVALID_PARAM"},
		{"__COMMIT__:1\n", "ACK:2"},   // the floor quirk: the first id was 3
		{"__COMMIT__:4\n", "PENDING"}, // drained, no checkpoint yet
		{"__COMMIT__:9\n", "RETRY"},   // never received
	}
	for _, b := range steps {
		p.Send(b.line)
		p.Expect(b.reply)
	}
	s.Source().Snapshot(1)
	s.Source().CheckpointComplete(1)
	p.Send("__COMMIT__:4\n")
	p.Expect("ACK:6")
	mu.Lock()
	defer mu.Unlock()
	want := []rec{{3, "payload-data"}, {4, "n"}, {5, "crlf"}, {6, "a:b:c"}}
	if !slices.Equal(got, want) {
		t.Fatalf("handler saw %+v, want %+v", got, want)
	}
	if st := s.Stats(); st.Batches != 7 || st.Records != 4 || st.BadRequests != 7 {
		t.Fatalf("stats %+v", st)
	}
}

// The source outlives connections, as the engine's reader does: a commit
// on a new connection is answered from what the old one sent.
func TestSourceSurvivesReconnects(t *testing.T) {
	s := start(t, Config{RejectGrace: 2 * time.Second})
	p := authed(t, s)
	p.Send("__BATCH__:1:x\n", "__BATCH__:2:y\n")
	p.Expect("RECEIVED")
	p.Expect("RECEIVED")
	p.Conn.Close()
	s.Source().Snapshot(1)
	s.Source().CheckpointComplete(1)
	p = authed(t, s)
	p.Send("__COMMIT__:2\n", "__COMMIT__:3\n")
	p.Expect("ACK:2")
	p.Expect("RETRY")
}

func TestPipelinedRequestsGetOrderedReplies(t *testing.T) {
	p := authed(t, start(t, Config{}))
	var b strings.Builder
	for i := 1; i <= 200; i++ {
		b.WriteString("__BATCH__:1:x\n__BATCH__:x:y\n")
	}
	p.Send(b.String())
	for range 200 {
		p.Expect("RECEIVED")
		p.Expect("INVALID_PARAM")
	}
}

func TestPacketDecoding(t *testing.T) {
	key := bytes.Repeat([]byte{1}, codec.KeySize)
	enc, _ := codec.NewEncoder(codec.Options{Mode: codec.ModePacket, Compression: codec.CompressionGzip, Encryption: codec.EncryptionAESGCM, Key: key})
	good, _ := enc.Encode(nil, []byte("hello"))
	withKey, _ := codec.NewDecoder(codec.ModePacket, key)
	noKey, _ := codec.NewDecoder(codec.ModePacket, nil)
	corrupt := `{"version":1,"payload":"` + base64.StdEncoding.EncodeToString([]byte("not gzip")) + `","compression":"gzip","encryption":"none","iv":null}`
	tampered := bytes.Replace(good, []byte(`"payload":"`), []byte(`"payload":"AAAA`), 1)

	var records []string
	s := start(t, Config{Decoder: withKey, Handler: func(_ int64, r []byte) { records = append(records, string(r)) }})
	p := authed(t, s)
	for _, c := range []struct{ payload, reply string }{
		{string(good), "RECEIVED"},
		{"not json", "DECODE_FAILED"},
		{corrupt, "DECODE_FAILED"},
		{string(tampered), "DECRYPT_FAILED"},
	} {
		p.Send("__BATCH__:1:" + c.payload + "\n")
		p.Expect(c.reply)
	}
	if len(records) != 1 || records[0] != "hello" {
		t.Fatalf("records %q", records)
	}
	p.Conn.Close()

	s2 := start(t, Config{Decoder: noKey})
	p = authed(t, s2)
	p.Send("__BATCH__:1:" + string(good) + "\n")
	p.Expect("DECRYPT_FAILED")
	if st := s2.Stats(); st.DecryptFailures != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestLineTooLong(t *testing.T) {
	p := authed(t, start(t, Config{MaxLineBytes: 64}))
	p.Send("__BATCH__:1:" + strings.Repeat("x", 100) + "\n")
	p.Expect("BAD_REQUEST")
	p.ExpectEOF()
}

func TestFaults(t *testing.T) {
	var handled []int64
	s := start(t, Config{Handler: func(id int64, _ []byte) { handled = append(handled, id) }})
	s.SetFaults(Faults{RetryEvery: 2, QueueFullEvery: 3, QueueFullDelay: 40 * time.Millisecond})
	p := authed(t, s)
	want := []string{"RECEIVED", "RETRY", "QUEUE_FULL:40", "RETRY", "RECEIVED", "QUEUE_FULL:40"}
	for i, w := range want {
		p.Send("__BATCH__:" + string(rune('1'+i)) + ":x\n")
		p.Expect(w)
	}
	if len(handled) != 2 {
		t.Fatalf("handled %v: RETRY and QUEUE_FULL must not reach the model", handled)
	}

	s.SetFaults(Faults{BatchReply: protocol.ReplyDecryptFailed})
	p.Send("__BATCH__:9:x\n")
	p.Expect("DECRYPT_FAILED")

	s.SetFaults(Faults{CutAfter: 2}) // the server-wide count is at 7: batch 8 is cut
	p.Send("__BATCH__:10:x\n")
	p.ExpectEOF()
	if s.Stats().Cuts != 1 || handled[len(handled)-1] != 10 {
		t.Fatalf("cut: stats %+v handled %v", s.Stats(), handled)
	}

	s.SetFaults(Faults{AuthReply: protocol.ReplyAuthFailed})
	waitFor(t, func() bool { return len(s.slot) == 0 })
	p = dial(t, s)
	p.Send("__AUTH__:tok\n")
	p.Expect("AUTH_FAILED")
	p.ExpectEOF()

	s.SetFaults(Faults{AuthReply: protocol.ReplyACK}) // in with a wrong token
	p = dial(t, s)
	p.Send("__AUTH__:wrong\n", "__BATCH__:12:x\n")
	p.Expect("ACK")
	p.Expect("RECEIVED")
	p.Conn.Close()
	waitFor(t, func() bool { return len(s.slot) == 0 })

	s.SetFaults(Faults{Reject: true})
	p = dial(t, s)
	p.Expect("REJECTED")

	s.SetFaults(Faults{ReplyDelay: 50 * time.Millisecond})
	p = authed(t, s)
	t0 := time.Now()
	p.Send("__BATCH__:11:x\n")
	p.Expect("RECEIVED")
	if time.Since(t0) < 50*time.Millisecond {
		t.Fatal("reply was not delayed")
	}
}

func TestDropCollector(t *testing.T) {
	s := start(t, Config{})
	p := authed(t, s)
	s.DropCollector()
	p.ExpectEOF()
}

func TestLifecycle(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("a config without token was accepted")
	}
	s, err := New(Config{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr() != "" {
		t.Fatal("Addr before Start")
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("second Start accepted")
	}
	p := authed(t, s)
	p.Send("__BATCH__:1:x\n")
	p.Expect("RECEIVED")
	done := make(chan struct{})
	go func() { _ = s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung with a collector connected")
	}
	p.ExpectEOF()
	_ = s.Close()
	if _, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		t.Fatal("still listening after Close")
	}
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("Start after Close accepted")
	}
	if _, err := New(Config{Token: "tok", Addr: "256.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	bad, _ := New(Config{Token: "tok", Addr: "256.0.0.1:1"})
	if err := bad.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "256.0.0.1:1") {
		t.Fatalf("listen error %v", err)
	}
	_ = bad.Close()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	transporttest.Eventually(t, 0, "the condition", cond)
}

var _ = errors.Is
