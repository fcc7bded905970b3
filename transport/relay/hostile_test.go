package relay

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport/codec"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// dialFrom connects to s from the loopback address src (127.0.0.x), so
// that tests can play several source addresses.
func dialFrom(t *testing.T, s *Server, src string) *peer {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return transporttest.NewPeer(t, c)
}

// A budget full of silent and half-sent connections, from one address
// and from several, still lets a collector that speaks at once in: from
// its own address, and from one of the flood's.
func TestFloodOfUnauthenticatedDoesNotLockOut(t *testing.T) {
	s := startRelay(t, Config{MaxHandshakes: 8, MaxHandshakesPerSource: 4, AuthTimeout: time.Minute / 2})
	var flood []*peer
	for i := range 40 {
		src := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}[i%3]
		p := dialFrom(t, s, src)
		if i%2 == 1 {
			p.Send("__AUTH__:tok-") // half a token line, never finished
		}
		flood = append(flood, p)
	}
	transporttest.Eventually(t, 5*time.Second, "the flood to be accepted", func() bool { return s.Stats().Connections == 40 })
	if n := s.Unauthenticated(); n > 8 {
		t.Fatalf("%d connections in a budget of 8", n)
	}
	for _, src := range []string{"127.0.0.9", "127.0.0.2"} {
		p := dialFrom(t, s, src)
		p.Send("__AUTH__:tok-a\n")
		p.Expect("ACK")
		p.Send("__BATCH__:1:{}\n")
		p.Expect("RECEIVED")
	}
	st := s.Stats()
	if st.Evicted < 40-8 {
		t.Errorf("Evicted = %d, want at least %d (the flood beyond the budget)", st.Evicted, 40-8)
	}
	// Evicted connections are closed without a word.
	evicted := 0
	for _, p := range flood[:10] {
		_ = p.Conn.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := p.R.ReadByte(); err == io.EOF {
			evicted++
		}
	}
	if evicted == 0 {
		t.Error("none of the oldest flood connections was closed")
	}
}

// Each connection has AuthTimeout from accept for its first line: a
// silent one and a half-sent one are answered AUTH_FAILED and closed,
// counted as timeouts.
func TestAuthTimeoutCountsAndCloses(t *testing.T) {
	s := startRelay(t, Config{AuthTimeout: 100 * time.Millisecond})
	silent := dialFrom(t, s, "127.0.0.1")
	half := dialFrom(t, s, "127.0.0.2")
	half.Send("__AUTH__:tok-")
	for _, p := range []*peer{silent, half} {
		p.Expect("AUTH_FAILED")
		p.ExpectEOF()
	}
	transporttest.Eventually(t, 5*time.Second, "two timeouts", func() bool { return s.Stats().AuthFailures.Timeout == 2 })
}

// Wrong tokens from one address are delayed, more with each failure,
// counted by reason and reported as one aggregate line that holds no
// token; another address is not slowed, and the right token still gets
// in from the slowed address.
func TestWrongTokensSlowedCountedAndReported(t *testing.T) {
	var logs syncBuffer
	s := startRelay(t, Config{
		AuthFailDelay: 5 * time.Millisecond, AuthFailDelayMax: 40 * time.Millisecond,
		AuthLogInterval: time.Hour,
		Logger:          slog.New(slog.NewTextHandler(&logs, nil)),
	})
	const attempts = 6
	for i := range attempts {
		p := dialFrom(t, s, "127.0.0.5")
		p.Send("__AUTH__:guess-" + strings.Repeat("x", i) + "\n")
		p.Expect("AUTH_FAILED")
	}
	st := s.Stats()
	if st.AuthFailures.WrongToken != attempts {
		t.Errorf("WrongToken = %d, want %d", st.AuthFailures.WrongToken, attempts)
	}
	// The first attempt is checked at once; every later one waits.
	if st.AuthDelayed != attempts-1 {
		t.Errorf("AuthDelayed = %d, want %d", st.AuthDelayed, attempts-1)
	}
	if d := s.pen.delay("127.0.0.5"); d != 40*time.Millisecond {
		t.Errorf("the slowed source's delay is %v, want the max after %d failures", d, attempts)
	}
	other := dialFrom(t, s, "127.0.0.6")
	other.Send("__AUTH__:tok-b\n")
	other.Expect("ACK")
	if got := s.Stats().AuthDelayed; got != attempts-1 {
		t.Errorf("a clean address was delayed (AuthDelayed %d)", got)
	}
	p := dialFrom(t, s, "127.0.0.5")
	p.Send("__AUTH__:tok-a\n")
	p.Expect("ACK")

	text := logs.String()
	if strings.Contains(text, "guess-") {
		t.Errorf("the log holds a presented token:\n%s", text)
	}
	if strings.Contains(text, "failed to authenticate") {
		t.Errorf("failures logged one by one, before the report interval:\n%s", text)
	}
}

// The report says what changed since the last one, by reason, and
// nothing when nothing did.
func TestAuthReport(t *testing.T) {
	var logs syncBuffer
	l := slog.New(slog.NewTextHandler(&logs, nil))
	var rep authReport
	rep.report(l, Stats{}, 0)
	if logs.String() != "" {
		t.Fatalf("a report with nothing to say: %s", logs.String())
	}
	rep.report(l, Stats{AuthFailures: AuthFailures{WrongToken: 6, Timeout: 2}, Evicted: 3, AuthDelayed: 5}, 1)
	rep.report(l, Stats{AuthFailures: AuthFailures{WrongToken: 6, Timeout: 2}, Evicted: 3, AuthDelayed: 5}, 1)
	rep.report(l, Stats{AuthFailures: AuthFailures{WrongToken: 7, Timeout: 2, TLS: 1}, Evicted: 3, AuthDelayed: 6}, 1)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	want := []string{
		"failed=8 wrong_token=6 timeout=2 evicted_unauthenticated=3 delayed=5 sources_slowed=1",
		"failed=2 wrong_token=1 tls_handshake=1 evicted_unauthenticated=0 delayed=1 sources_slowed=1",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d report lines, want %d:\n%s", len(lines), len(want), logs.String())
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], w) || !strings.Contains(lines[i], "level=WARN") {
			t.Errorf("report %d = %s\nwant it to end in %s", i, lines[i], w)
		}
	}
}

// A token waiting out its source's penalty and evicted meanwhile is
// counted as throttled: presented, never checked.
func TestEvictedWhileSlowedCountsAsThrottled(t *testing.T) {
	s := startRelay(t, Config{MaxHandshakes: 4, MaxHandshakesPerSource: 1,
		AuthFailDelay: time.Minute / 2, AuthFailDelayMax: time.Minute / 2, AuthTimeout: time.Minute / 2})
	first := dialFrom(t, s, "127.0.0.7")
	first.Send("__AUTH__:wrong\n")
	first.Expect("AUTH_FAILED")
	waiting := dialFrom(t, s, "127.0.0.7")
	waiting.Send("__AUTH__:also-wrong\n")
	transporttest.Eventually(t, 5*time.Second, "the second guess to wait", func() bool { return s.Stats().AuthDelayed == 1 })
	newer := dialFrom(t, s, "127.0.0.7") // the source's share is 1: evicts the waiting one
	waiting.ExpectEOF()
	transporttest.Eventually(t, 5*time.Second, "throttled counted", func() bool { return s.Stats().AuthFailures.Throttled == 1 })
	if st := s.Stats(); st.AuthFailures.WrongToken != 1 {
		t.Errorf("WrongToken = %d, want 1: the evicted guess was checked", st.AuthFailures.WrongToken)
	}
	_ = newer
}

// A relay whose decoder requires encryption answers an unencrypted
// envelope DECRYPT_FAILED, hands nothing over, and counts the batch as
// refused for its collector.
func TestUnencryptedRefusedAndCounted(t *testing.T) {
	key := make([]byte, codec.KeySize)
	dec, err := codec.NewDecoder(codec.ModePacket, key, codec.WithEncryptionRequired())
	if err != nil {
		t.Fatal(err)
	}
	handed := 0
	s := startRelay(t, Config{Decoder: dec, Handler: func(_ Peer, _ int64, _ []byte, tk Ticket) { handed++; tk.Done("") }})
	plain, err := codec.NewEncoder(codec.Options{Mode: codec.ModePacket})
	if err != nil {
		t.Fatal(err)
	}
	wire, err := plain.Encode(nil, []byte("event"))
	if err != nil {
		t.Fatal(err)
	}
	p := dialFrom(t, s, "127.0.0.1")
	p.Send("__AUTH__:tok-a\n", "__BATCH__:1:"+string(wire)+"\n")
	p.Expect("ACK")
	p.Expect("DECRYPT_FAILED")
	cs := s.Collectors()
	if len(cs) != 1 || cs[0].Refused != 1 || cs[0].Received != 0 || !strings.Contains(cs[0].LastError, "requires encryption") {
		t.Fatalf("Collectors() = %+v, want one refused batch saying why", cs)
	}
	if st := s.Stats(); st.DecryptFailures != 1 || handed != 0 {
		t.Fatalf("DecryptFailures %d, handed over %d; want 1 and 0", st.DecryptFailures, handed)
	}
}

// Under TLS, connections that never start a handshake fill the budget
// and are evicted or timed out; a collector that handshakes and sends its
// token at once gets in, and a handshake that fails is counted as such.
func TestTLSFloodDoesNotLockOut(t *testing.T) {
	cert := transporttest.SelfSigned(t, time.Hour)
	s := startRelay(t, Config{
		TLS:           &tls.Config{Certificates: []tls.Certificate{cert.Pair}, MinVersion: tls.VersionTLS12},
		MaxHandshakes: 8, MaxHandshakesPerSource: 4, AuthTimeout: time.Minute / 2,
	})
	for i := range 20 {
		dialFrom(t, s, []string{"127.0.0.2", "127.0.0.3"}[i%2]) // TCP only: no ClientHello
	}
	transporttest.Eventually(t, 5*time.Second, "the flood to be accepted", func() bool { return s.Stats().Connections == 20 })
	pem, err := os.ReadFile(cert.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.9")}},
		Config: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
	c, err := d.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatalf("a TLS collector during the flood: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	p := transporttest.NewPeer(t, c)
	p.Send("__AUTH__:tok-a\n")
	p.Expect("ACK")

	// A client that does not trust the relay's certificate aborts the
	// handshake.
	bad := tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.10")}},
		Config: &tls.Config{MinVersion: tls.VersionTLS12}}
	if bc, err := bad.Dial("tcp", s.Addr()); err == nil {
		bc.Close()
		t.Fatal("a client without the relay's CA completed the handshake")
	}
	transporttest.Eventually(t, 5*time.Second, "the failed handshake counted", func() bool { return s.Stats().AuthFailures.TLS == 1 })
	if st := s.Stats(); st.Evicted < 20-8 {
		t.Errorf("Evicted = %d, want at least %d", st.Evicted, 20-8)
	}
}
