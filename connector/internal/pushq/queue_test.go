package pushq

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
)

// A model test: random puts, polls and commits against a model of what
// each must do. TryPut takes a unit exactly when it fits (or the
// queue is empty); a unit's done runs exactly once, at the commit of its last
// event and not before; events come out in the order they went in.
func TestQueueModel(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			const max = 1000
			q := New(max)
			type unit struct {
				id, events int
				done       int
			}
			var units []*unit
			var want []string // payloads in put order, not yet polled
			var polled []int  // unit index of each polled, uncommitted event; -1 not last
			nextPayload := 0
			for step := 0; step < 300; step++ {
				switch r.IntN(4) {
				case 0, 1:
					n := 1 + r.IntN(4)
					var ps [][]byte
					for range n {
						ps = append(ps, fmt.Appendf(nil, "p%06d%s", nextPayload, make([]byte, r.IntN(200))))
						nextPayload++
					}
					u := &unit{id: len(units), events: n}
					before := q.Bytes()
					ok, err := q.TryPut(ps, func() { u.done++ })
					if err != nil {
						t.Fatal(err)
					}
					fits := before == 0 || before+Cost(ps) <= max
					if ok != fits {
						t.Fatalf("step %d: TryPut = %v with %d queued + %d, bound %d", step, ok, before, Cost(ps), max)
					}
					if ok {
						units = append(units, u)
						for _, p := range ps {
							want = append(want, string(p[:7]))
						}
					} else {
						nextPayload -= n
					}
				case 2:
					n := r.IntN(5)
					evs := q.Poll(nil, n)
					if len(evs) != min(n, len(want)) {
						t.Fatalf("step %d: polled %d of %d, max %d", step, len(evs), len(want), n)
					}
					for _, e := range evs {
						if got := string(e.Payload[:7]); got != want[0] {
							t.Fatalf("step %d: polled %s, want %s", step, got, want[0])
						}
						want = want[1:]
						polled = append(polled, 0)
					}
				case 3:
					n := r.IntN(len(polled) + 1)
					q.Committed(n)
					polled = polled[n:]
				}
			}
			q.Committed(len(polled))
			if got := len(q.Drain(nil)); got != len(want) {
				t.Fatalf("Drain gave %d events, %d were queued", got, len(want))
			}
			// Every unit fully polled and committed ran done once; the
			// ones with events still queued at Drain did not.
			committedEvents := nextPayload - len(want)
			seen := 0
			for _, u := range units {
				seen += u.events
				wantDone := 0
				if seen <= committedEvents {
					wantDone = 1
				}
				if u.done != wantDone {
					t.Fatalf("unit %d (%d events, %d of %d committed): done ran %d times, want %d",
						u.id, u.events, min(seen, committedEvents), seen, u.done, wantDone)
				}
			}
		})
	}
}

// done runs only when the unit's last event is committed, not at the
// commit of its first ones.
func TestDoneAtLastEvent(t *testing.T) {
	q := New(1 << 20)
	done := 0
	if ok, err := q.TryPut([][]byte{[]byte("a"), []byte("b"), []byte("c")}, func() { done++ }); !ok || err != nil {
		t.Fatal(ok, err)
	}
	evs := q.Poll(nil, 2)
	q.Committed(2)
	if done != 0 || len(evs) != 2 {
		t.Fatalf("done %d after 2 of 3 events", done)
	}
	q.Poll(nil, 5)
	q.Committed(1)
	if done != 1 {
		t.Fatalf("done %d after the last event", done)
	}
}

// Put waits for room and takes it once a Poll frees some; Stop ends the
// wait with ErrClosed; a ctx ending ends it with the ctx's error.
func TestPutWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(200)
		big := make([]byte, 100)
		if err := q.Put(t.Context(), [][]byte{big}, nil); err != nil {
			t.Fatal(err)
		}
		res := make(chan error, 1)
		go func() { res <- q.Put(t.Context(), [][]byte{big}, nil) }()
		synctest.Wait()
		select {
		case err := <-res:
			t.Fatalf("second Put returned %v while the queue was full", err)
		default:
		}
		if evs := q.Poll(nil, 1); len(evs) != 1 {
			t.Fatal(len(evs))
		}
		if err := <-res; err != nil {
			t.Fatal(err)
		}

		go func() { res <- q.Put(t.Context(), [][]byte{big}, nil) }()
		synctest.Wait()
		q.Stop()
		if err := <-res; !errors.Is(err, ErrClosed) {
			t.Fatalf("Put after Stop: %v", err)
		}

		q2 := New(200)
		_ = q2.Put(t.Context(), [][]byte{big}, nil)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := q2.Put(ctx, [][]byte{big}, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Put past its deadline: %v", err)
		}
	})
}

func TestRefusals(t *testing.T) {
	q := New(100)
	if _, err := q.TryPut(nil, nil); !errors.Is(err, ErrEmpty) {
		t.Fatalf("empty unit: %v", err)
	}
	// An empty queue takes one unit larger than the bound.
	if ok, _ := q.TryPut([][]byte{make([]byte, 500)}, nil); !ok {
		t.Fatal("an empty queue refused a large unit")
	}
	if !q.Full(1) {
		t.Fatal("Full false over the bound")
	}
	if ok, _ := q.TryPut([][]byte{[]byte("x")}, nil); ok {
		t.Fatal("took a unit over the bound")
	}
	evs := q.Drain([]input.Event{})
	if len(evs) != 1 {
		t.Fatalf("Drain gave %d events", len(evs))
	}
	if _, err := q.TryPut([][]byte{[]byte("x")}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryPut after Drain: %v", err)
	}
}
