package transporttest

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// DelayProxy forwards 127.0.0.1 connections to a target and holds every
// chunk for a fixed delay in each direction: a link whose round-trip time
// is twice the delay while its bandwidth stays high, as on a WAN.
type DelayProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

// NewDelayProxy starts a proxy to target adding rtt/2 in each direction.
// It is closed by tb.Cleanup, which waits for its goroutines.
func NewDelayProxy(tb testing.TB, target string, rtt time.Duration) *DelayProxy {
	tb.Helper()
	p, err := StartDelayProxy(target, rtt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	return p
}

// StartDelayProxy is NewDelayProxy for programs (the end-to-end
// benchmark): the caller closes it.
func StartDelayProxy(target string, rtt time.Duration) (*DelayProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("delay proxy: %w", err)
	}
	p := &DelayProxy{ln: ln, target: target, delay: rtt / 2}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listening address (host:port).
func (p *DelayProxy) Addr() string { return p.ln.Addr().String() }

func (p *DelayProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst; each chunk leaves delay after it arrived, so
// chunks in flight overlap as they do on a real link.
func (p *DelayProxy) pipe(src, dst net.Conn) {
	defer p.wg.Done()
	q := make(chan chunk, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range q {
			time.Sleep(time.Until(c.due))
			if _, err := dst.Write(c.data); err != nil {
				for range q { // drain so the reader never blocks
				}
				return
			}
		}
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{append([]byte(nil), buf[:n]...), time.Now().Add(p.delay)}
		}
		if err != nil {
			close(q)
			<-done
			if err != io.EOF {
				_ = dst.Close()
			}
			return
		}
	}
}

// Close stops accepting, closes every connection and waits for the pipes.
// It is idempotent.
func (p *DelayProxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
