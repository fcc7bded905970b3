package syslog

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// With SO_RXQ_OVFL on, the kernel's count of the datagrams it dropped
// for a full receive buffer comes with the next datagram it queues: what
// was read plus that count is what was sent.
func TestKernelDropCount(t *testing.T) {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if err := pc.SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	if err := enableDropCount(pc); err != nil {
		if os.Getenv("EDGE_AGENT_TEST_EMULATOR") != "" && errors.Is(err, unix.ENOPROTOOPT) {
			// make test-cross: qemu-user does not translate SO_RXQ_OVFL.
			t.Skipf("SKIP: under a user-mode emulator: %v", err)
		}
		t.Fatal(err)
	}
	if n, err := receiveBuffer(pc); err != nil || n <= 0 {
		t.Fatalf("receive buffer %d: %v", n, err)
	}
	c, err := net.DialUDP("udp", nil, pc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const sent = 200
	payload := make([]byte, 512)
	for range sent {
		if _, err := c.Write(payload); err != nil {
			t.Fatal(err)
		}
	}
	buf, oob := make([]byte, 2048), make([]byte, dropsOOBLen())
	read, drops := 0, uint32(0)
	readAll := func() {
		for read <= sent {
			_ = pc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			_, oobn, _, _, err := pc.ReadMsgUDPAddrPort(buf, oob)
			if err != nil {
				return
			}
			read++
			if v, ok := parseDropCount(oob[:oobn]); ok {
				drops = v
			}
		}
	}
	readAll()
	// Queued after the drops, into an empty buffer: it carries their count.
	if _, err := c.Write(payload); err != nil {
		t.Fatal(err)
	}
	readAll()
	if drops == 0 || read+int(drops) != sent+1 {
		t.Fatalf("read %d, kernel dropped %d, sent %d", read, drops, sent)
	}
	t.Logf("a 4 KiB buffer kept %d of %d datagrams; the kernel counted %d dropped", read, sent+1, drops)
}

// parseDropCount reads the count from a control message as the kernel
// writes it, and nothing from other messages.
func TestParseDropCount(t *testing.T) {
	cmsg := func(level, typ int32, data []byte) []byte {
		b := make([]byte, unix.CmsgSpace(len(data)))
		binary.NativeEndian.PutUint64(b, uint64(unix.CmsgLen(len(data))))
		binary.NativeEndian.PutUint32(b[8:], uint32(level))
		binary.NativeEndian.PutUint32(b[12:], uint32(typ))
		copy(b[unix.CmsgLen(0):], data)
		return b
	}
	if unix.SizeofCmsghdr != 16 {
		t.Skip("SKIP: the test builds 64-bit control messages")
	}
	n := binary.NativeEndian.AppendUint32(nil, 1234)
	for _, tc := range []struct {
		name string
		oob  []byte
		want uint32
		ok   bool
	}{
		{"count", cmsg(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, n), 1234, true},
		{"after another", append(cmsg(unix.SOL_IP, unix.IP_TTL, []byte{64, 0, 0, 0}), cmsg(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, n)...), 1234, true},
		{"another only", cmsg(unix.SOL_IP, unix.IP_TTL, []byte{64, 0, 0, 0}), 0, false},
		{"short data", cmsg(unix.SOL_SOCKET, unix.SO_RXQ_OVFL, []byte{1}), 0, false},
		{"empty", nil, 0, false},
		{"garbage", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3}, 0, false},
	} {
		if got, ok := parseDropCount(tc.oob); got != tc.want || ok != tc.ok {
			t.Errorf("%s: %d %v, want %d %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseDropCount(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{20, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 40, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, oob []byte) {
		_, _ = parseDropCount(oob)
	})
}
