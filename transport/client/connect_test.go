package client

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/transport"
)

// Connect opens the session the next Send uses, makes one attempt, and
// reports a refusal as Send does.
func TestConnectKeepsTheSessionForSend(t *testing.T) {
	f := newFakeEngine(t, scripted())
	c := newClient(t, testConfig(f.addr()))
	if err := c.Connect(sendCtx(t)); err != nil {
		t.Fatal(err)
	}
	if !c.Connected() {
		t.Fatal("Connected() = false after Connect")
	}
	if err := c.Connect(sendCtx(t)); err != nil { // an open session is kept
		t.Fatal(err)
	}
	res, err := c.Send(sendCtx(t), batches(1, 2))
	if err != nil || res[1].Outcome != transport.Received {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	if f.accepts() != 1 {
		t.Fatalf("Connect, Connect and Send used %d connections, want 1", f.accepts())
	}
}

func TestConnectRefusedAndUnreachable(t *testing.T) {
	refuse := newFakeEngine(t, func(_ int, line string) string {
		if strings.HasPrefix(line, "__AUTH__:") {
			return "REJECTED"
		}
		return "RECEIVED"
	})
	c := newClient(t, testConfig(refuse.addr()))
	if err := c.Connect(sendCtx(t)); !errors.Is(err, transport.ErrRejected) || c.Connected() {
		t.Fatalf("Connect to a rejecting engine = %v, connected %v", err, c.Connected())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	d := newClient(t, testConfig(addr))
	if err := d.Connect(sendCtx(t)); err == nil || d.Stats().ConnectAttempts != 1 {
		t.Fatalf("Connect to nothing = %v, attempts %d, want an error after 1", err, d.Stats().ConnectAttempts)
	}
	_ = d.Close()
	if err := d.Connect(sendCtx(t)); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Connect after Close = %v, want ErrClosed", err)
	}
}
