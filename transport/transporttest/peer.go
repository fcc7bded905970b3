package transporttest

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// PeerDeadline bounds every read and write of a Peer: far beyond any
// reply on a loaded machine, so it only ends a test whose server hangs.
const PeerDeadline = 30 * time.Second

// Peer is a test's client of a line protocol: it sends lines and checks
// the replies, failing the test on anything else.
type Peer struct {
	T    testing.TB
	Conn net.Conn
	R    *bufio.Reader
}

// DialPeer connects to addr; the connection is closed at the test's end.
func DialPeer(t testing.TB, addr string) *Peer {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, PeerDeadline)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(PeerDeadline))
	return NewPeer(t, c)
}

// NewPeer wraps a connection the test made and closes itself.
func NewPeer(t testing.TB, c net.Conn) *Peer { return &Peer{T: t, Conn: c, R: bufio.NewReader(c)} }

// Send writes lines, each already ending in "\n".
func (p *Peer) Send(lines ...string) {
	p.T.Helper()
	if _, err := io.WriteString(p.Conn, strings.Join(lines, "")); err != nil {
		p.T.Fatal(err)
	}
}

// Expect reads one reply line and fails unless it is want.
func (p *Peer) Expect(want string) {
	p.T.Helper()
	got, err := p.R.ReadString('\n')
	if err != nil || got != want+"\n" {
		p.T.Fatalf("reply = %q, %v; want %q", got, err, want)
	}
}

// ExpectEOF fails unless the server closed the connection without
// sending more.
func (p *Peer) ExpectEOF() {
	p.T.Helper()
	if b, err := p.R.ReadByte(); err == nil {
		p.T.Fatalf("read %q, want EOF", b)
	}
}
