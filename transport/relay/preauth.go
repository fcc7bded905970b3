package relay

import (
	"crypto/tls"
	"net"
	"sync"
)

// handshake is one connection not yet authenticated.
type handshake struct {
	conn   net.Conn
	source string
	seq    uint64
	// gone is closed when the connection is evicted.
	gone    chan struct{}
	evicted bool // under preauth.mu
}

// preauth is the budget of connections not yet authenticated: at most
// max in all and perSource from one source address. It never refuses a
// newcomer: at a bound, an older connection is evicted for it, so that a
// flood of silent or half-sent connections cannot lock out a collector
// that authenticates at once (as OpenSSH's MaxStartups drops older
// unauthenticated connections). The victim is the oldest connection of
// the newcomer's source when that source is at its own bound, else the
// oldest of the source holding the most: a flood from a few addresses
// evicts itself before anyone else. Safe for concurrent use.
type preauth struct {
	max, perSource int

	mu       sync.Mutex
	bySource map[string][]*handshake // each in arrival order
	n        int
	seq      uint64
}

func newPreauth(max, perSource int) *preauth {
	return &preauth{max: max, perSource: perSource, bySource: make(map[string][]*handshake)}
}

// sourceOf is the address a connection's budget is counted against: its
// remote IP, without the port.
func sourceOf(conn net.Conn) string {
	a := conn.RemoteAddr()
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}

// admit registers conn and returns its handshake and the one evicted to
// make room, if any (already removed; the caller closes it with evict).
func (p *preauth) admit(conn net.Conn, source string) (h, victim *handshake) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case len(p.bySource[source]) >= p.perSource:
		victim = p.bySource[source][0]
	case p.n >= p.max:
		victim = p.largest()
	}
	if victim != nil {
		p.remove(victim)
		victim.evicted = true
	}
	p.seq++
	h = &handshake{conn: conn, source: source, seq: p.seq, gone: make(chan struct{})}
	p.bySource[source] = append(p.bySource[source], h)
	p.n++
	return h, victim
}

// largest is the oldest handshake of the source holding the most (ties:
// the source whose oldest is oldest). p.mu is held; p.n > 0.
func (p *preauth) largest() *handshake {
	var best *handshake
	bestN := 0
	for _, hs := range p.bySource {
		if len(hs) > bestN || len(hs) == bestN && hs[0].seq < best.seq {
			best, bestN = hs[0], len(hs)
		}
	}
	return best
}

// remove takes h out of the budget. p.mu is held.
func (p *preauth) remove(h *handshake) {
	hs := p.bySource[h.source]
	for i, x := range hs {
		if x == h {
			hs = append(hs[:i], hs[i+1:]...)
			p.n--
			break
		}
	}
	if len(hs) == 0 {
		delete(p.bySource, h.source)
	} else {
		p.bySource[h.source] = hs
	}
}

// leave takes h out of the budget once it authenticated or failed; false
// when it was evicted meanwhile (its connection is closed).
func (p *preauth) leave(h *handshake) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h.evicted {
		return false
	}
	p.remove(h)
	return true
}

// len is the number of handshakes in the budget.
func (p *preauth) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// evict closes an evicted connection without a word. Closing the
// socket beneath a TLS connection cannot block on a close alert.
func evict(h *handshake) {
	close(h.gone)
	conn := h.conn
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	_ = conn.Close()
}
