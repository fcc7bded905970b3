package edgesocket

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/codec"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRelayDoesNotEchoTheToken: a collector sends its token again in
// every wrong place; the relay's peers, per-name totals and log show what
// was refused but never the token, nor a piece of it.
func TestRelayDoesNotEchoTheToken(t *testing.T) {
	const secret = "Qv5-SECRET-TOKEN-mK28"
	fragments := []string{secret, "Qv5", "SECRET", "TOKEN", "mK28"}
	var logs lockedBuffer
	c := testConfig()
	c.Tokens = []TokenConfig{{Name: "edge-1", Token: secret}}
	c.PacketMode = codec.ModePacket
	c.MaxLineBytes = 1024
	in, err := New(c, input.Settings{ID: "relay", Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Open(context.Background(), input.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })

	col := connect(t, in, secret)
	for _, r := range []struct{ line, reply string }{
		{secret, "BAD_REQUEST"},
		{"__BATCH__:" + secret + ":x", "INVALID_PARAM"},
		{"__COMMIT__:" + secret, "INVALID_PARAM"},
		{"__AUTH__:" + secret, "BAD_REQUEST"},
		{"GET " + secret, "BAD_REQUEST"},
		{`__BATCH__:1:{"payload":"aGk=","compression":"` + secret + `"}`, "DECODE_FAILED"},
		{"__BATCH__:2:" + secret, "DECODE_FAILED"},
	} {
		col.send(r.line + "\n")
		col.expect(r.reply)
		peers := in.Peers()
		if len(peers) != 1 || !strings.HasPrefix(peers[0].LastError, "request ") {
			t.Fatalf("after %q peers = %+v, want the refusal described", r.line, peers)
		}
		for _, f := range fragments {
			if strings.Contains(peers[0].LastError, f) {
				t.Errorf("after %q peer last_error echoes the token: %q", r.line, peers[0].LastError)
			}
		}
	}
	col.send(strings.Repeat(secret, 100) + "\n")
	col.expect("BAD_REQUEST")

	// A wrong token, the secret inside it, fails without an echo.
	conn, err := net.DialTimeout("tcp", in.Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	wrong := &collector{t: t, conn: conn, r: bufio.NewReader(conn)}
	wrong.send("__AUTH__:" + secret + secret + "\n")
	wrong.expect("AUTH_FAILED")

	totals := in.PeerTotals()
	if len(totals) != 1 || totals[0].LastError == "" {
		t.Fatalf("totals = %+v, want a last error", totals)
	}
	for _, f := range fragments {
		if strings.Contains(totals[0].LastError, f) {
			t.Errorf("totals last_error echoes the token: %q", totals[0].LastError)
		}
		if strings.Contains(logs.String(), f) {
			t.Errorf("log echoes the token (%q): %s", f, logs.String())
		}
	}
}
