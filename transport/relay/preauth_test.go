package relay

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
)

// fakeConn is a net.Conn for the budget, which only closes it.
type fakeConn struct {
	net.Conn
	closed bool
}

func (c *fakeConn) Close() error { c.closed = true; return nil }

// TestPreauthEvictionOrder: the table of who is evicted for whom.
func TestPreauthEvictionOrder(t *testing.T) {
	type arrival struct {
		source string
		victim string // "" for none, else "<source>#<n>" (n-th arrival, from 1)
	}
	tests := []struct {
		name           string
		max, perSource int
		arrivals       []arrival
	}{
		{"room: nobody evicted", 3, 3, []arrival{{"a", ""}, {"b", ""}, {"a", ""}}},
		{"own share full: own oldest", 4, 2, []arrival{{"a", ""}, {"b", ""}, {"a", ""}, {"a", "a#1"}, {"a", "a#3"}}},
		{"budget full: oldest of the largest source", 4, 4, []arrival{
			{"x", ""}, {"a", ""}, {"a", ""}, {"a", ""}, {"y", "a#2"}, {"z", "a#3"}, {"w", "x#1"},
		}},
		{"a collector among a flood from one source survives", 3, 3, []arrival{
			{"f", ""}, {"f", ""}, {"c", ""}, {"f", "f#1"}, {"f", "f#2"}, {"f", "f#4"}, {"f", "f#5"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPreauth(tt.max, tt.perSource)
			names := map[*handshake]string{}
			perSource := map[string]int{}
			for i, a := range tt.arrivals {
				perSource[a.source]++
				h, victim := p.admit(&fakeConn{}, a.source)
				names[h] = fmt.Sprintf("%s#%d", a.source, i+1)
				got := ""
				if victim != nil {
					got = names[victim]
					if p.leave(victim) {
						t.Fatalf("arrival %d: the victim can still leave the budget", i+1)
					}
				}
				if got != a.victim {
					t.Fatalf("arrival %d (%s): evicted %q, want %q", i+1, a.source, got, a.victim)
				}
			}
		})
	}
}

// TestPreauthModel: random arrivals and departures never exceed the
// budget or a source's share, never refuse a newcomer, and evict only
// connections still in the budget.
func TestPreauthModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		max := 1 + rng.IntN(8)
		per := 1 + rng.IntN(max)
		p := newPreauth(max, per)
		var live []*handshake
		for step := range 200 {
			if len(live) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(live))
				if !p.leave(live[i]) {
					t.Fatalf("round %d step %d: a live handshake could not leave", round, step)
				}
				live = append(live[:i], live[i+1:]...)
				continue
			}
			src := fmt.Sprintf("10.0.0.%d", rng.IntN(4))
			h, victim := p.admit(&fakeConn{}, src)
			if victim != nil {
				i := indexOf(live, victim)
				if i < 0 {
					t.Fatalf("round %d step %d: evicted one that had left", round, step)
				}
				live = append(live[:i], live[i+1:]...)
			}
			live = append(live, h)
			if p.len() != len(live) || len(live) > max {
				t.Fatalf("round %d step %d: budget holds %d, model %d, max %d", round, step, p.len(), len(live), max)
			}
			n := 0
			for _, x := range live {
				if x.source == src {
					n++
				}
			}
			if n > per {
				t.Fatalf("round %d step %d: source %s holds %d, share %d", round, step, src, n, per)
			}
		}
	}
}

func indexOf(hs []*handshake, h *handshake) int {
	for i, x := range hs {
		if x == h {
			return i
		}
	}
	return -1
}

func TestEvictClosesAndSignals(t *testing.T) {
	c := &fakeConn{}
	p := newPreauth(1, 1)
	h, _ := p.admit(c, "a")
	_, victim := p.admit(&fakeConn{}, "b")
	if victim != h {
		t.Fatalf("victim %v, want the first", victim)
	}
	evict(victim)
	if !c.closed {
		t.Error("the evicted connection is open")
	}
	select {
	case <-h.gone:
	default:
		t.Error("gone not closed")
	}
}
