package tap

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func payload(s string) func() []byte { return func() []byte { return []byte(s) } }

func drain(s *Sub) []Event {
	var out []Event
	for {
		select {
		case ev, ok := <-s.C():
			if !ok {
				return out
			}
			out = append(out, ev)
		default:
			return out
		}
	}
}

// A subscriber gets its stage's events of its input only.
func TestFilter(t *testing.T) {
	tests := []struct {
		name string
		f    Filter
		want []string
	}{
		{"every input", Filter{Stage: StageProcessed}, []string{"p-a", "p-b"}},
		{"one input", Filter{Stage: StageProcessed, Input: "b"}, []string{"p-b"}},
		{"sent", Filter{Stage: StageSent}, []string{"s-a"}},
		{"input stage", Filter{Stage: StageInput, Input: "a"}, []string{"i-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHub(nil)
			s, err := h.Subscribe(tt.f)
			if err != nil {
				t.Fatal(err)
			}
			h.Publish(StageInput, "a", payload("i-a"))
			h.Publish(StageProcessed, "a", payload("p-a"))
			h.Publish(StageProcessed, "b", payload("p-b"))
			h.Publish(StageSent, "a", payload("s-a"))
			var got []string
			for _, ev := range drain(s) {
				got = append(got, string(ev.Payload))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// Rate events a second pass, the rest are sampled out and counted; the
// bucket refills with the clock.
func TestRate(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	h := NewHub(c.now)
	s, _ := h.Subscribe(Filter{Stage: StageSent, Rate: 5})
	for range 20 {
		h.Publish(StageSent, "a", payload("x"))
	}
	if got := len(drain(s)); got != 5 {
		t.Fatalf("%d events in the first second, want 5", got)
	}
	c.t = c.t.Add(400 * time.Millisecond)
	for range 20 {
		h.Publish(StageSent, "a", payload("x"))
	}
	if got := len(drain(s)); got != 2 {
		t.Fatalf("%d events after 0.4 s, want 2", got)
	}
	if out, _, del := s.Counts(); out != 33 || del != 7 {
		t.Fatalf("sampled out %d, delivered %d; want 33, 7", out, del)
	}
}

// A reader that never reads costs the publisher nothing but drops: every
// Publish returns, the channel holds Buffer events, the rest are counted.
func TestStuckReaderNeverBlocks(t *testing.T) {
	h := NewHub(nil)
	s, _ := h.Subscribe(Filter{Stage: StageProcessed, Rate: MaxRate, Buffer: 4})
	const n = 100 // within one burst of MaxRate
	for range n {
		h.Publish(StageProcessed, "a", payload("x"))
	}
	_, dropped, delivered := s.Counts()
	if delivered != 4 || dropped != n-4 {
		t.Fatalf("delivered %d, dropped %d; want 4, %d", delivered, dropped, n-4)
	}
}

// Payloads are made only for an event somebody takes, once for all.
func TestPayloadLazy(t *testing.T) {
	h := NewHub(nil)
	calls := 0
	p := func() []byte { calls++; return []byte("x") }
	h.Publish(StageSent, "a", p)
	if calls != 0 {
		t.Fatal("payload made with nobody tapping")
	}
	s1, _ := h.Subscribe(Filter{Stage: StageSent})
	s2, _ := h.Subscribe(Filter{Stage: StageSent})
	h.Publish(StageSent, "a", p)
	h.Publish(StageProcessed, "a", p)
	if calls != 1 || len(drain(s1)) != 1 || len(drain(s2)) != 1 {
		t.Fatalf("payload made %d times", calls)
	}
	s1.Close()
	s1.Close()
	if !h.Active(StageSent) {
		t.Fatal("stage inactive with one subscriber left")
	}
	s2.Close()
	if h.Active(StageSent) {
		t.Fatal("stage active with no subscriber")
	}
}

// Close ends every subscription and refuses new ones.
func TestClose(t *testing.T) {
	h := NewHub(nil)
	s, _ := h.Subscribe(Filter{Stage: StageInput})
	h.Close()
	h.Close()
	if _, ok := <-s.C(); ok {
		t.Fatal("channel open after Close")
	}
	s.Close()
	if _, err := h.Subscribe(Filter{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("subscribe after Close: %v", err)
	}
	h.Publish(StageInput, "a", payload("x")) // no panic on a closed hub
	var nilHub *Hub
	if nilHub.Active(StageInput) {
		t.Fatal("a nil hub taps")
	}
}

func TestParseStage(t *testing.T) {
	for _, s := range []Stage{StageInput, StageProcessed, StageSent} {
		got, err := ParseStage(s.String())
		if err != nil || got != s {
			t.Errorf("ParseStage(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseStage("queued"); err == nil {
		t.Error("ParseStage accepted queued")
	}
}

// Publishers, subscribers coming and going, and Close race freely.
func TestConcurrentUse(t *testing.T) {
	h := NewHub(nil)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 500 {
				h.Publish(StageProcessed, "a", payload("x"))
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			s, err := h.Subscribe(Filter{Stage: StageProcessed, Buffer: 2})
			if err != nil {
				return // closed
			}
			drain(s)
			s.Close()
		}
	})
	wg.Go(func() {
		for range 50 {
			h.Publish(StageSent, "b", payload("y"))
		}
		h.Close()
	})
	wg.Wait()
	if h.Active(StageProcessed) {
		t.Fatal("a stage is active after Close")
	}
}
