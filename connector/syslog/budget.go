package syslog

import (
	"container/list"
	"net"
	"net/netip"
	"sync"
)

// budget admits TCP/TLS connections so that silent ones cannot lock out
// a sender that speaks: at most max are open and at most perSource from
// one source. A connection is waiting from its accept until its first
// byte of data (after the TLS handshake): first silent, then, once a TLS
// client has sent a byte of its handshake, handshaking. A newcomer over a
// limit evicts a waiting connection under that limit (of its source for
// the per-source cap): the oldest silent one, else the one whose
// handshake began first. So each newcomer has the time of max arrivals to
// speak before it can be evicted in turn, and a TLS client that is
// handshaking outlasts every silent connection; only when every
// connection under the limit has spoken is the newcomer refused. It is
// safe for concurrent use.
type budget struct {
	max, perSource int

	mu      sync.Mutex
	conns   map[net.Conn]*slot
	sources map[netip.Prefix]int
	// waiting[tierSilent] and waiting[tierHandshaking]: *slot, oldest
	// first.
	waiting [2]list.List
	closed  bool
}

const (
	tierSilent = iota
	tierHandshaking
)

// slot is one admitted connection.
type slot struct {
	c    net.Conn
	src  netip.Prefix
	tier int
	wait *list.Element // in budget.waiting[tier]; nil once it spoke
	// gone is closed when the connection was evicted.
	gone chan struct{}
}

// refusal says why admit closed a connection.
type refusal int

const (
	admitted refusal = iota
	refusedFull
	refusedSource
	refusedStopping
)

func newBudget(max, perSource int) *budget {
	return &budget{max: max, perSource: perSource, conns: map[net.Conn]*slot{}, sources: map[netip.Prefix]int{}}
}

// sourceOf is the source a connection counts against: its IPv4 address,
// or the /64 of an IPv6 one (one host commonly holds a whole /64).
func sourceOf(a net.Addr) netip.Prefix {
	var ip netip.Addr
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ = netip.AddrFromSlice(ta.IP)
	} else if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		ip = ap.Addr()
	}
	ip = ip.Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits) // an invalid address: the zero prefix, one shared source
	return p
}

// admit registers c, first evicting the connection that makes room for
// it. It returns the slot (nil when refused) and the evicted connection,
// which the caller closes; the caller closes c when refused.
func (b *budget) admit(c net.Conn) (s *slot, evicted *slot, why refusal) {
	src := sourceOf(c.RemoteAddr())
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, nil, refusedStopping
	}
	if b.sources[src] >= b.perSource {
		if evicted = b.oldestWaiting(func(w *slot) bool { return w.src == src }); evicted == nil {
			return nil, nil, refusedSource
		}
		b.remove(evicted)
	}
	if len(b.conns) >= b.max {
		if evicted = b.oldestWaiting(nil); evicted == nil {
			return nil, nil, refusedFull
		}
		b.remove(evicted)
	}
	s = &slot{c: c, src: src, gone: make(chan struct{})}
	s.wait = b.waiting[tierSilent].PushBack(s)
	b.conns[c] = s
	b.sources[src]++
	if evicted != nil {
		close(evicted.gone)
	}
	return s, evicted, admitted
}

// oldestWaiting is the first waiting slot that match accepts (nil: any),
// silent ones first.
func (b *budget) oldestWaiting(match func(*slot) bool) *slot {
	for i := range b.waiting {
		for e := b.waiting[i].Front(); e != nil; e = e.Next() {
			if w := e.Value.(*slot); match == nil || match(w) {
				return w
			}
		}
	}
	return nil
}

// remove forgets s; the caller holds mu.
func (b *budget) remove(s *slot) {
	delete(b.conns, s.c)
	if b.sources[s.src]--; b.sources[s.src] <= 0 {
		delete(b.sources, s.src)
	}
	if s.wait != nil {
		b.waiting[s.tier].Remove(s.wait)
		s.wait = nil
	}
}

// handshaking marks s as having begun its TLS handshake: it is evicted
// only after every silent connection.
func (b *budget) handshaking(s *slot) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conns[s.c] != s || s.wait == nil || s.tier != tierSilent {
		return
	}
	b.waiting[tierSilent].Remove(s.wait)
	s.tier = tierHandshaking
	s.wait = b.waiting[tierHandshaking].PushBack(s)
}

// spoke marks s as having sent data: it is no longer evicted. It reports
// false when s was evicted already.
func (b *budget) spoke(s *slot) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conns[s.c] != s {
		return false
	}
	if s.wait != nil {
		b.waiting[s.tier].Remove(s.wait)
		s.wait = nil
	}
	return true
}

// release forgets s when it ended by itself; a no-op after an eviction.
// It reports whether s was still registered.
func (b *budget) release(s *slot) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conns[s.c] != s {
		return false
	}
	b.remove(s)
	return true
}

// open is the number of connections registered now.
func (b *budget) open() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

// closeAll refuses every later admit and closes every registered
// connection; their readers release them.
func (b *budget) closeAll() {
	b.mu.Lock()
	b.closed = true
	cs := make([]net.Conn, 0, len(b.conns))
	for c := range b.conns {
		cs = append(cs, c)
	}
	b.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
}

// reopen lets admit take connections again after closeAll (a relisten).
func (b *budget) reopen() {
	b.mu.Lock()
	b.closed = false
	b.mu.Unlock()
}
