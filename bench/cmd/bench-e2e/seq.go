package main

import (
	"bytes"
	"sync"
)

// parseSeq finds the sequence number in a record as the agent delivers
// it: the line inside the event JSON, where a JSON line's quotes are
// escaped (seq\":\"NNNNNNNNN). ok is false when there is none.
func parseSeq(rec []byte) (seq int, ok bool) {
	i := bytes.Index(rec, []byte("seq"))
	for ; i >= 0; i = nextSeq(rec, i) {
		j := i + 3
		for j < len(rec) && (rec[j] == '=' || rec[j] == '"' || rec[j] == ':' || rec[j] == '\\') {
			j++
		}
		if j+seqDigits > len(rec) {
			return 0, false
		}
		n, digits := 0, 0
		for ; digits < seqDigits && rec[j+digits] >= '0' && rec[j+digits] <= '9'; digits++ {
			n = n*10 + int(rec[j+digits]-'0')
		}
		if digits == seqDigits && j > i+3 {
			return n, true
		}
	}
	return 0, false
}

func nextSeq(rec []byte, i int) int {
	k := bytes.Index(rec[i+3:], []byte("seq"))
	if k < 0 {
		return -1
	}
	return i + 3 + k
}

// tally counts the sequence numbers a sink received: unique ones, repeats
// and records without one. done is closed when every number below n came.
type tally struct {
	mu       sync.Mutex
	seen     []uint64 // bitmap of n bits
	n        int
	unique   int
	dups     int
	bad      int
	done     chan struct{}
	doneOnce sync.Once
}

func newTally(n int) *tally {
	return &tally{seen: make([]uint64, (n+63)/64), n: n, done: make(chan struct{})}
}

func (t *tally) add(rec []byte) {
	seq, ok := parseSeq(rec)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case !ok || seq >= t.n:
		t.bad++
	case t.seen[seq/64]&(1<<(seq%64)) != 0:
		t.dups++
	default:
		t.seen[seq/64] |= 1 << (seq % 64)
		t.unique++
		if t.unique == t.n {
			t.doneOnce.Do(func() { close(t.done) })
		}
	}
}

func (t *tally) counts() (unique, dups, bad int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unique, t.dups, t.bad
}

// complete reports whether every line arrived.
func (t *tally) complete() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}
