package syslog

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
)

// tuneUDP sets the receive buffer and asks for the kernel's drop count;
// neither failing stops the input.
func (in *Input) tuneUDP(pc *net.UDPConn) {
	if want := in.cfg.ReceiveBufferBytes; want > 0 {
		if err := pc.SetReadBuffer(want); err != nil {
			in.log.Warn("syslog udp: cannot set receive-buffer-bytes", slog.Int("receive_buffer_bytes", want), slog.Any("error", err))
		} else if got, err := receiveBuffer(pc); err == nil && got < want {
			in.log.Warn("syslog udp: the kernel capped receive-buffer-bytes; raise net.core.rmem_max to get more",
				slog.Int("receive_buffer_bytes", want), slog.Int("granted_bytes", got))
		}
	}
	if err := enableDropCount(pc); err != nil {
		in.log.Debug("syslog udp: datagrams the kernel drops are not counted", slog.Any("error", err))
	}
}

// readUDP reads datagrams until the socket closes. It never waits for the
// queue: a datagram that finds it full is dropped and counted. The
// kernel's own drops come with the datagrams (where it tells them).
func (in *Input) readUDP(pc *net.UDPConn) {
	defer in.wg.Done()
	buf := make([]byte, in.cfg.MaxMessageBytes+1)
	var oob []byte
	if n := dropsOOBLen(); n > 0 {
		oob = make([]byte, n)
	}
	var kernelDrops uint32 // this socket's count as last seen
	h := in.newHandler("")
	var last netip.AddrPort
	for {
		var n, oobn int
		var addr netip.AddrPort
		var err error
		if oob != nil {
			n, oobn, _, addr, err = pc.ReadMsgUDPAddrPort(buf, oob)
		} else {
			n, addr, err = pc.ReadFromUDPAddrPort(buf)
		}
		if err != nil {
			if in.stopping() || errors.Is(err, net.ErrClosed) {
				return
			}
			in.st.errors.Add(1)
			in.logs.warn(logConnFail, "syslog udp read failed", slog.Any("error", err))
			continue
		}
		if oobn > 0 {
			if v, ok := parseDropCount(oob[:oobn]); ok && v != kernelDrops {
				in.st.rcvDrops.Add(int64(v - kernelDrops)) // uint32 arithmetic: the kernel's count wraps
				kernelDrops = v
			}
		}
		if addr != last {
			last = addr
			h.setPeer(addr.String())
		}
		cut := n > in.cfg.MaxMessageBytes
		h.handle(buf[:min(n, in.cfg.MaxMessageBytes)], cut, false)
	}
}
