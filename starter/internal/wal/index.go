package wal

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// A run index (pending, sending, received) holds rows of one status as
// runs of consecutive row ids: key = the run's first id, value = its last
// id (inclusive) followed by what its kind keeps for the whole run (the
// batch id of the first row, the time the run got its status), 8 bytes
// each, big-endian. Runs are disjoint. An index type owns the encoding and
// every merge and split of runs; the callers see runs and ids.

// run is a stretch start..end of consecutive row ids of one index.
type run struct {
	start, end uint64
	batch      int64 // batch id of start (received index); 0 in the others
	at         int64 // unix ms it got its status (sending, received); 0 in pending
}

// batchOf is the batch id of id, a row of r (received runs).
func (r run) batchOf(id uint64) int64 { return r.batch + int64(id-r.start) }

// runKind is what an index keeps per run and when two runs are one.
type runKind struct {
	name       string
	batch, at  bool // the value holds a batch id / a time after the end
	mergeBatch bool // runs merge only when batch ids go on too
	merges     bool // touching runs added by add merge into one
}

var (
	// pendingKind: due PENDING rows; runs that touch merge (appends
	// produce consecutive ids: a group costs one write).
	pendingKind = &runKind{name: "pending", merges: true}
	// sendingKind: SENDING rows, one run per claim, never merged (each
	// keeps its claim time).
	sendingKind = &runKind{name: "sending", at: true}
	// receivedKind: RECEIVED rows; touching runs merge when their batch
	// ids go on too, keeping the older receive time.
	receivedKind = &runKind{name: "received", batch: true, at: true, merges: true, mergeBatch: true}
)

// runKindOf is the kind of the run index named name; nil for another
// bucket.
func runKindOf(name []byte) *runKind {
	switch bucketRole(name) {
	case string(bucketPending):
		return pendingKind
	case string(bucketSending):
		return sendingKind
	case string(bucketReceived):
		return receivedKind
	}
	return nil
}

func (k *runKind) width() int {
	n := 8
	if k.batch {
		n += 8
	}
	if k.at {
		n += 8
	}
	return n
}

// decode is the run stored under key k with value v; ok=false for an entry
// that is malformed, in which case r.start is the key's id and r.end the
// value's first field, when they have them.
func (k *runKind) decode(key, v []byte) (r run, ok bool) {
	r.start, ok = keyID(key)
	if len(v) >= 8 {
		r.end = binary.BigEndian.Uint64(v)
	}
	if !ok || len(v) != k.width() || r.end < r.start {
		return r, false
	}
	off := 8
	if k.batch {
		r.batch = int64(binary.BigEndian.Uint64(v[off:]))
		off += 8
		if r.batch <= 0 {
			return r, false
		}
	}
	if k.at {
		r.at = int64(binary.BigEndian.Uint64(v[off:]))
	}
	return r, true
}

func (k *runKind) encode(r run) []byte {
	v := make([]byte, k.width())
	binary.BigEndian.PutUint64(v, r.end)
	off := 8
	if k.batch {
		binary.BigEndian.PutUint64(v[off:], uint64(r.batch))
		off += 8
	}
	if k.at {
		binary.BigEndian.PutUint64(v[off:], uint64(r.at))
	}
	return v
}

// joins reports whether b, starting right after a ends, is kept as one
// run with a.
func (k *runKind) joins(a, b run) bool {
	return k.merges && a.end+1 == b.start && (!k.mergeBatch || a.batchOf(b.start) == b.batch)
}

// index is one run index of a transaction. A nil bucket (a read-only view
// of a file older than the index) reads as empty. Not safe for
// concurrent use; writes need a writable transaction.
type index struct {
	b    *bolt.Bucket
	kind *runKind
	path string // the WAL's, for errors
}

func (x index) err(err error) error {
	return fmt.Errorf("wal %s: %s index: %w", x.path, x.kind.name, err)
}

// candidate returns the entry with the greatest key <= id: the only run
// that may hold id. nil when there is none.
func (x index) candidate(id uint64) (k, v []byte) {
	c := x.b.Cursor()
	k, v = c.Seek(u64key(id))
	if k != nil {
		if s, _ := keyID(k); s == id {
			return k, v
		}
		return c.Prev()
	}
	return cursorLast(c)
}

// find returns the run holding id; ok=false when no run does.
func (x index) find(id uint64) (run, bool) {
	if x.b == nil {
		return run{}, false
	}
	k, v := x.candidate(id)
	if k == nil {
		return run{}, false
	}
	r, ok := x.kind.decode(k, v)
	if !ok || id < r.start || id > r.end {
		return run{}, false
	}
	return r, true
}

func (x index) contains(id uint64) bool {
	_, ok := x.find(id)
	return ok
}

// overlaps reports whether a run overlaps lo..hi. Two seeks.
func (x index) overlaps(lo, hi uint64) bool {
	if x.b == nil {
		return false
	}
	c := x.b.Cursor()
	k, _ := c.Seek(u64key(lo))
	var v []byte
	if k != nil {
		if s, _ := keyID(k); s <= hi {
			return true
		}
		k, v = c.Prev()
	} else {
		k, v = cursorLast(c)
	}
	if k == nil || len(v) < 8 {
		return false
	}
	return binary.BigEndian.Uint64(v) >= lo
}

// in returns the well-formed runs that overlap lo..hi, in order, clipped
// to it.
func (x index) in(lo, hi uint64) []idRange {
	var out []idRange
	if x.b == nil || lo > hi {
		return out
	}
	c := x.b.Cursor()
	k, v := x.candidate(lo)
	if k == nil {
		k, v = c.First()
	} else {
		c.Seek(k)
	}
	for ; k != nil; k, v = c.Next() {
		r, ok := x.kind.decode(k, v)
		if !ok {
			continue
		}
		if r.start > hi {
			break
		}
		if r.end >= lo {
			out = append(out, idRange{max(r.start, lo), min(r.end, hi)})
		}
	}
	return out
}

// each calls fn for each entry in key order until it returns false;
// ok=false marks a malformed one (decode).
func (x index) each(fn func(r run, ok bool) bool) {
	if x.b == nil {
		return
	}
	c := x.b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if !fn(x.kind.decode(k, v)) {
			return
		}
	}
}

// ids returns up to limit (all when <= 0) ids > afterID of the
// well-formed runs, in order.
func (x index) ids(afterID uint64, limit int) []uint64 {
	var out []uint64
	x.each(func(r run, ok bool) bool {
		if !ok {
			return true
		}
		for id := max(r.start, afterID+1); id <= r.end; id++ {
			if limit > 0 && len(out) >= limit {
				return false
			}
			out = append(out, id)
		}
		return true
	})
	return out
}

// firstID and lastID are the lowest key and the end of the last entry; 0
// when the index is empty.
func (x index) firstID() uint64 {
	if x.b == nil {
		return 0
	}
	k, _ := x.b.Cursor().First()
	id, _ := keyID(k)
	return id
}

func (x index) lastID() uint64 {
	if x.b == nil {
		return 0
	}
	_, v := cursorLast(x.b.Cursor())
	if len(v) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// put stores r as it is, replacing an entry with its first id.
func (x index) put(r run) error {
	if err := x.b.Put(u64key(r.start), x.kind.encode(r)); err != nil {
		return x.err(err)
	}
	return nil
}

func (x index) delete(start uint64) error {
	if err := x.b.Delete(u64key(start)); err != nil {
		return x.err(err)
	}
	return nil
}

// add stores r, whose ids are in no run, merged with the runs just below
// and above it when they join (runKind.joins); a merged run keeps the
// older time. A single id already in a run changes nothing. At most two
// seeks and two writes.
func (x index) add(r run) error {
	c := x.b.Cursor()
	k, v := c.Seek(u64key(r.start))
	var succ run
	hasSucc := false
	if k != nil {
		s, ok := x.kind.decode(k, v)
		if ok && s.start == r.start && r.start == r.end {
			return nil // already there
		}
		if ok && x.kind.joins(r, s) {
			succ, hasSucc = s, true
		}
		k, v = c.Prev()
	} else {
		k, v = cursorLast(c)
	}
	if k != nil {
		p, ok := x.kind.decode(k, v)
		if ok && r.start == r.end && p.start <= r.start && r.start <= p.end {
			return nil // already there
		}
		if ok && x.kind.joins(p, r) {
			r.start, r.batch, r.at = p.start, p.batch, min(p.at, r.at)
		}
	}
	if hasSucc {
		if err := x.delete(succ.start); err != nil {
			return err
		}
		r.end, r.at = succ.end, min(r.at, succ.at)
	}
	return x.put(r)
}

// cut removes a..b, which lie inside the stored run r, from it: what is
// left on either side stays a run with r's time (and its own first batch
// id). At most three writes.
func (x index) cut(r run, a, b uint64) error {
	if r.start < a {
		if err := x.put(run{start: r.start, end: a - 1, batch: r.batch, at: r.at}); err != nil {
			return err
		}
	} else if err := x.delete(r.start); err != nil {
		return err
	}
	if b < r.end {
		rest := run{start: b + 1, end: r.end, at: r.at}
		if x.kind.batch {
			rest.batch = r.batchOf(b + 1)
		}
		return x.put(rest)
	}
	return nil
}

// removeRange takes lo..hi out of every run; malformed entries are left.
func (x index) removeRange(lo, hi uint64) error {
	var hit []run
	for _, part := range x.in(lo, hi) {
		r, _ := x.find(part.lo)
		hit = append(hit, r)
	}
	for _, r := range hit {
		if err := x.cut(r, max(r.start, lo), min(r.end, hi)); err != nil {
			return err
		}
	}
	return nil
}

// takeFront removes and returns up to n ids from the front of the index.
// A malformed entry on the way is deleted and reported through bad, so
// that it cannot stop the queue.
func (x index) takeFront(n int, bad func(key []byte)) ([]uint64, error) {
	var out []uint64
	for len(out) < n {
		k, v := x.b.Cursor().First()
		if k == nil {
			break
		}
		r, ok := x.kind.decode(k, v)
		if err := x.b.Delete(k); err != nil {
			return nil, x.err(err)
		}
		if !ok {
			bad(k)
			continue
		}
		take := min(uint64(n-len(out)), r.end-r.start+1)
		for id := r.start; id < r.start+take; id++ {
			out = append(out, id)
		}
		if r.start+take <= r.end {
			rest := run{start: r.start + take, end: r.end, at: r.at}
			if x.kind.batch {
				rest.batch = r.batchOf(rest.start)
			}
			if err := x.put(rest); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// takeRange removes and returns up to n ids in from..below-1 (below 0:
// no upper bound), lowest first. With from 0 and below 0 it is
// takeFront. Malformed entries met are deleted and reported through bad.
func (x index) takeRange(from, below uint64, n int, bad func(key []byte)) ([]uint64, error) {
	if from == 0 && below == 0 {
		return x.takeFront(n, bad)
	}
	var out []uint64
	for len(out) < n {
		k, v := x.candidate(from)
		if k == nil {
			if k, v = x.b.Cursor().First(); k == nil {
				break
			}
		}
		r, ok := x.kind.decode(k, v)
		if !ok {
			if err := x.b.Delete(k); err != nil {
				return nil, x.err(err)
			}
			bad(k)
			continue
		}
		if r.end < from {
			// candidate ends below from: the next run, if any.
			c := x.b.Cursor()
			c.Seek(k)
			if k, v = c.Next(); k == nil {
				break
			}
			if r, ok = x.kind.decode(k, v); !ok {
				if err := x.b.Delete(k); err != nil {
					return nil, x.err(err)
				}
				bad(k)
				continue
			}
		}
		lo := max(r.start, from)
		if below != 0 && lo >= below {
			break
		}
		hi := min(r.end, lo+uint64(n-len(out))-1)
		if below != 0 {
			hi = min(hi, below-1)
		}
		for id := lo; id <= hi; id++ {
			out = append(out, id)
		}
		if err := x.cut(r, lo, hi); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// eachFrom is each over the well-formed runs clipped to from..below-1
// (below 0: no upper bound).
func (x index) eachFrom(from, below uint64, fn func(r run) bool) {
	if x.b == nil {
		return
	}
	c := x.b.Cursor()
	k, v := x.candidate(from)
	if k == nil {
		k, v = c.First()
	} else {
		c.Seek(k)
	}
	for ; k != nil; k, v = c.Next() {
		r, ok := x.kind.decode(k, v)
		if !ok || r.end < from {
			continue
		}
		if below != 0 && r.start >= below {
			return
		}
		r.start = max(r.start, from)
		if below != 0 {
			r.end = min(r.end, below-1)
		}
		if !fn(r) {
			return
		}
	}
}

// cursorLast is c.Last, safe on a bucket that deletes in this
// transaction emptied: bbolt's Last can loop for ever when every leaf
// page left is empty (its backward walk restarts at the first page).
// First walks forward and stops at the end.
func cursorLast(c *bolt.Cursor) (k, v []byte) {
	if k, _ := c.First(); k == nil {
		return nil, nil
	}
	return c.Last()
}
