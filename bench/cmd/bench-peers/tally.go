package main

import (
	"bytes"
	"sync"
)

// parseSeq finds seq=NNNNNNNNN in a record, whatever encoding carries the
// msg string (EdgeSocket JSON event, OTLP protobuf); ok is false without.
func parseSeq(rec []byte) (seq int, ok bool) {
	for i := bytes.Index(rec, []byte("seq=")); i >= 0; {
		j := i + len("seq=")
		if j+seqDigits > len(rec) {
			return 0, false
		}
		n, d := 0, 0
		for ; d < seqDigits && rec[j+d] >= '0' && rec[j+d] <= '9'; d++ {
			n = n*10 + int(rec[j+d]-'0')
		}
		if d == seqDigits {
			return n, true
		}
		k := bytes.Index(rec[j:], []byte("seq="))
		if k < 0 {
			return 0, false
		}
		i = j + k
	}
	return 0, false
}

// tally counts what a sink received: each wanted sequence number once.
// Lines the chain must drop (unwanted) and records still holding a secret
// are counted apart, so a chain that lets them through fails the run.
// done is closed when every wanted line came.
type tally struct {
	mu       sync.Mutex
	seen     []uint64
	n        int
	want     int
	unique   int
	dups     int
	bad      int
	leaked   int // lines that should have been dropped
	secrets  int // records with an e-mail address or card number in clear
	wanted   func(seq int) bool
	done     chan struct{}
	doneOnce sync.Once
}

// newTally expects the lines below n for which wanted is true.
func newTally(n int, wanted func(int) bool) *tally {
	t := &tally{seen: make([]uint64, (n+63)/64), n: n, wanted: wanted, done: make(chan struct{})}
	for i := range n {
		if wanted(i) {
			t.want++
		}
	}
	return t
}

func (t *tally) add(rec []byte) {
	seq, ok := parseSeq(rec)
	secret := bytes.Contains(rec, []byte(secretEmail)) || bytes.Contains(rec, []byte(secretCard))
	t.mu.Lock()
	defer t.mu.Unlock()
	if secret {
		t.secrets++
	}
	switch {
	case !ok || seq >= t.n:
		t.bad++
	case !t.wanted(seq):
		t.leaked++
	case t.seen[seq/64]&(1<<(seq%64)) != 0:
		t.dups++
	default:
		t.seen[seq/64] |= 1 << (seq % 64)
		t.unique++
		if t.unique == t.want {
			t.doneOnce.Do(func() { close(t.done) })
		}
	}
}

type counts struct{ unique, want, dups, bad, leaked, secrets int }

func (t *tally) counts() counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return counts{t.unique, t.want, t.dups, t.bad, t.leaked, t.secrets}
}
