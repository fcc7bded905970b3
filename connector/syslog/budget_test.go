package syslog

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"testing"
)

// fakeConn is a net.Conn with a remote address and nothing else; the
// budget only keys on it.
type fakeConn struct {
	net.Conn
	remote net.Addr
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.remote }

// The budget against a model, over random admits, handshakes begun, first
// bytes and ends: never more than max open or perSource from a source; a
// connection that spoke is never evicted; an eviction takes the oldest
// silent connection, else the one whose handshake began first (of the
// newcomer's source when that source is at its cap); a newcomer is
// refused only when nothing under the limit it hit is waiting.
func TestBudgetModel(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 41))
			max, perSource := 1+rng.IntN(12), 0
			perSource = 1 + rng.IntN(max)
			b := newBudget(max, perSource)
			type mconn struct {
				c     net.Conn
				src   string
				s     *slot
				spoke bool
				// shook: when its handshake began (0: silent).
				shook int
			}
			var open []*mconn // in admission order
			srcCount := func(src string) int {
				n := 0
				for _, m := range open {
					if m.src == src {
						n++
					}
				}
				return n
			}
			for step := range 2000 {
				switch op := rng.IntN(10); {
				case op < 6: // a newcomer
					src := fmt.Sprintf("10.0.0.%d", 1+rng.IntN(4))
					c := &fakeConn{remote: &net.TCPAddr{IP: net.ParseIP(src), Port: step}}
					// The model's verdict.
					var wantEvict *mconn
					wantWhy := admitted
					firstWaiting := func(match func(*mconn) bool) *mconn {
						var best *mconn
						for _, m := range open {
							if m.spoke || !match(m) {
								continue
							}
							if m.shook == 0 {
								return m
							}
							if best == nil || m.shook < best.shook {
								best = m
							}
						}
						return best
					}
					if srcCount(src) >= perSource {
						if wantEvict = firstWaiting(func(m *mconn) bool { return m.src == src }); wantEvict == nil {
							wantWhy = refusedSource
						}
					} else if len(open) >= max {
						if wantEvict = firstWaiting(func(*mconn) bool { return true }); wantEvict == nil {
							wantWhy = refusedFull
						}
					}
					s, ev, why := b.admit(c)
					if why != wantWhy {
						t.Fatalf("step %d: admit %v, want %v", step, why, wantWhy)
					}
					if (ev == nil) != (wantEvict == nil) || (ev != nil && ev.c != wantEvict.c) {
						t.Fatalf("step %d: evicted the wrong connection", step)
					}
					if wantEvict != nil {
						if !isClosed(ev.gone) {
							t.Fatalf("step %d: the evicted slot is not marked gone", step)
						}
						if b.release(ev) {
							t.Fatalf("step %d: an evicted slot was released twice", step)
						}
						open = slices.DeleteFunc(open, func(m *mconn) bool { return m == wantEvict })
					}
					if why == admitted {
						open = append(open, &mconn{c: c, src: src, s: s})
					}
				case op < 7 && len(open) > 0: // a TLS client's first handshake byte
					m := open[rng.IntN(len(open))]
					b.handshaking(m.s)
					if !m.spoke && m.shook == 0 {
						m.shook = 1 + step
					}
				case op < 8 && len(open) > 0: // first byte of data
					m := open[rng.IntN(len(open))]
					if !b.spoke(m.s) {
						t.Fatalf("step %d: an open slot was not found", step)
					}
					m.spoke = true
				case len(open) > 0: // the connection ends
					i := rng.IntN(len(open))
					if !b.release(open[i].s) {
						t.Fatalf("step %d: release of an open slot failed", step)
					}
					open = slices.Delete(open, i, i+1)
				}
				if b.open() != len(open) || len(open) > max {
					t.Fatalf("step %d: %d open, model %d, max %d", step, b.open(), len(open), max)
				}
				for _, m := range open {
					if n := srcCount(m.src); n > perSource {
						t.Fatalf("step %d: %d from %s, cap %d", step, n, m.src, perSource)
					}
				}
			}
		})
	}
}

// IPv4 addresses are their own source; IPv6 ones count by /64.
func TestSourceOf(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"192.0.2.7", "192.0.2.7/32"},
		{"::ffff:192.0.2.7", "192.0.2.7/32"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"},
	} {
		if got := sourceOf(&net.TCPAddr{IP: net.ParseIP(tc.addr), Port: 1}).String(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.addr, got, tc.want)
		}
	}
}
