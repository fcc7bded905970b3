package wal

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// runModel is the reference for an index: its runs in a plain sorted
// slice, changed the obvious way. It knows the merge rule of each kind on
// its own, not through runKind.
type runModel struct {
	kind *runKind
	runs []run
}

func (m *runModel) joins(a, b run) bool {
	switch m.kind {
	case pendingKind:
		return a.end+1 == b.start
	case receivedKind:
		return a.end+1 == b.start && b.batch == a.batch+int64(b.start-a.start)
	}
	return false // sending: a run per claim
}

func (m *runModel) find(id uint64) (int, bool) {
	for i, r := range m.runs {
		if r.start <= id && id <= r.end {
			return i, true
		}
	}
	return 0, false
}

func (m *runModel) add(r run) {
	if r.start == r.end {
		if _, ok := m.find(r.start); ok {
			return
		}
	}
	var out []run
	for _, o := range m.runs {
		switch {
		case m.joins(o, r):
			r = run{start: o.start, end: r.end, batch: o.batch, at: min(o.at, r.at)}
		case m.joins(r, o):
			r = run{start: r.start, end: o.end, batch: r.batch, at: min(o.at, r.at)}
		default:
			out = append(out, o)
		}
	}
	m.runs = append(out, r)
	slices.SortFunc(m.runs, func(a, b run) int { return cmpU64(a.start, b.start) })
}

// remove takes lo..hi out of every run, splitting the ones it cuts.
func (m *runModel) remove(lo, hi uint64) {
	var out []run
	for _, o := range m.runs {
		if o.end < lo || o.start > hi {
			out = append(out, o)
			continue
		}
		if o.start < lo {
			out = append(out, run{start: o.start, end: lo - 1, batch: o.batch, at: o.at})
		}
		if o.end > hi {
			rest := run{start: hi + 1, end: o.end, at: o.at}
			if m.kind.batch {
				rest.batch = o.batch + int64(hi+1-o.start)
			}
			out = append(out, rest)
		}
	}
	m.runs = out
}

func (m *runModel) ids() []uint64 {
	var out []uint64
	for _, r := range m.runs {
		for id := r.start; id <= r.end; id++ {
			out = append(out, id)
		}
	}
	return out
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// openIndexDB is a bbolt file for index tests. Not a WAL: nothing in it
// needs to survive a crash, so it is not synced.
func openIndexDB(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "index.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// withIndex runs fn on an index of kind in a bucket of a bbolt file of its
// own, in one write transaction.
func withIndex(t *testing.T, db *bolt.DB, kind *runKind, fn func(x index)) {
	t.Helper()
	err := db.Update(func(btx *bolt.Tx) error {
		b, err := btx.CreateBucketIfNotExists([]byte(kind.name))
		if err != nil {
			return err
		}
		fn(index{b: b, kind: kind, path: "test"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIndexModel: random sequences of add, cut, removeRange and takeFront
// on each kind of run index leave exactly the runs of the reference
// model; every id keeps the batch id it was added with, however its runs
// were merged and split; runs stay sorted, disjoint and, for the kinds
// that merge, maximal; and find, contains, overlaps, in and ids answer
// from those runs.
func TestIndexModel(t *testing.T) {
	const maxID = 80
	for _, kind := range []*runKind{pendingKind, sendingKind, receivedKind} {
		for seed := range uint64(20) {
			t.Run(fmt.Sprintf("%s/seed=%d", kind.name, seed), func(t *testing.T) {
				db := openIndexDB(t)
				rng := rand.New(rand.NewPCG(seed, 35))
				m := &runModel{kind: kind}
				batchOf := map[uint64]int64{} // every id's batch id, as added
				nextBatch := int64(1000)
				for step := range 200 {
					withIndex(t, db, kind, func(x index) {
						op := indexStep(t, rng, x, m, batchOf, &nextBatch, maxID)
						checkIndex(t, rng, x, m, batchOf, maxID, fmt.Sprintf("step %d (%s)", step, op))
					})
				}
			})
		}
	}
}

// indexStep applies one random operation to x and to the model, and
// names it.
func indexStep(t *testing.T, rng *rand.Rand, x index, m *runModel, batchOf map[uint64]int64, nextBatch *int64, maxID uint64) string {
	t.Helper()
	var at int64
	if x.kind.at {
		at = int64(rng.IntN(1000))
	}
	switch n := rng.IntN(10); {
	case n < 5: // add a stretch of free ids (or, for a single id, maybe a taken one)
		start := 1 + rng.Uint64N(maxID)
		if _, taken := m.find(start); taken && rng.IntN(2) == 0 {
			r := run{start: start, end: start, at: at}
			if kind := x.kind; kind.batch {
				r.batch = batchOf[start]
			}
			if err := x.add(r); err != nil {
				t.Fatal(err)
			}
			m.add(r)
			return fmt.Sprintf("add taken %d", start)
		} else if taken {
			return "nothing"
		}
		end := start
		for end < maxID && rng.IntN(3) > 0 {
			if _, taken := m.find(end + 1); taken {
				break
			}
			end++
		}
		r := run{start: start, end: end, at: at}
		if x.kind.batch {
			// Mostly the batch ids of a queue (going on from the row
			// below), sometimes a stand-in's older one.
			r.batch = *nextBatch
			if b, ok := batchOf[start-1]; ok && rng.IntN(3) > 0 {
				r.batch = b + 1
			}
			*nextBatch += int64(end-start) + 1
			for id := start; id <= end; id++ {
				batchOf[id] = r.batch + int64(id-start)
			}
		}
		if err := x.add(r); err != nil {
			t.Fatal(err)
		}
		m.add(r)
		return fmt.Sprintf("add %d..%d batch %d at %d", r.start, r.end, r.batch, r.at)
	case n < 7: // cut a stretch out of one stored run
		if len(m.runs) == 0 {
			return "nothing"
		}
		o := m.runs[rng.IntN(len(m.runs))]
		a := o.start + rng.Uint64N(o.end-o.start+1)
		b := a + rng.Uint64N(o.end-a+1)
		stored, ok := x.find(a)
		if !ok {
			t.Fatalf("find(%d) of stored run %+v: none", a, o)
		}
		if err := x.cut(stored, a, b); err != nil {
			t.Fatal(err)
		}
		m.remove(a, b)
		return fmt.Sprintf("cut %d..%d of %d..%d", a, b, o.start, o.end)
	case n < 8: // remove a range across runs
		lo := 1 + rng.Uint64N(maxID)
		hi := lo + rng.Uint64N(20)
		if err := x.removeRange(lo, hi); err != nil {
			t.Fatal(err)
		}
		m.remove(lo, hi)
		return fmt.Sprintf("removeRange %d..%d", lo, hi)
	default: // take from the front
		n := rng.IntN(12)
		got, err := x.takeFront(n, func(k []byte) { t.Errorf("takeFront: malformed entry %x", k) })
		if err != nil {
			t.Fatal(err)
		}
		want := m.ids()
		want = want[:min(n, len(want))]
		if !slices.Equal(got, want) {
			t.Fatalf("takeFront(%d) = %v, want %v", n, got, want)
		}
		for _, id := range want {
			m.remove(id, id)
		}
		return fmt.Sprintf("takeFront %d", n)
	}
}

// checkIndex compares x with the model and checks its invariants.
func checkIndex(t *testing.T, rng *rand.Rand, x index, m *runModel, batchOf map[uint64]int64, maxID uint64, at string) {
	t.Helper()
	var got []run
	x.each(func(r run, ok bool) bool {
		if !ok {
			t.Fatalf("%s: malformed entry at %d", at, r.start)
		}
		got = append(got, r)
		return true
	})
	if !slices.Equal(got, m.runs) {
		t.Fatalf("%s: runs\n%+v\nwant\n%+v", at, got, m.runs)
	}
	for i, r := range got {
		if r.end < r.start || (i > 0 && got[i-1].end >= r.start) {
			t.Fatalf("%s: runs not sorted and disjoint: %+v", at, got)
		}
		if i > 0 && m.joins(got[i-1], r) {
			t.Fatalf("%s: runs %+v and %+v should be one", at, got[i-1], r)
		}
		if x.kind.batch {
			for id := r.start; id <= r.end; id++ {
				if r.batchOf(id) != batchOf[id] {
					t.Fatalf("%s: id %d has batch %d in run %+v, was added with %d", at, id, r.batchOf(id), r, batchOf[id])
				}
			}
		}
	}
	for id := range maxID + 25 {
		i, want := m.find(id)
		r, ok := x.find(id)
		if ok != want || (ok && r != m.runs[i]) || x.contains(id) != want {
			t.Fatalf("%s: find(%d) = %+v, %v; want %v", at, id, r, ok, want)
		}
	}
	lo := rng.Uint64N(maxID + 20)
	hi := lo + rng.Uint64N(30)
	var wantIn []idRange
	for _, r := range m.runs {
		if r.end >= lo && r.start <= hi {
			wantIn = append(wantIn, idRange{max(r.start, lo), min(r.end, hi)})
		}
	}
	if gotIn := x.in(lo, hi); !slices.Equal(gotIn, wantIn) {
		t.Fatalf("%s: in(%d, %d) = %v, want %v", at, lo, hi, gotIn, wantIn)
	}
	if x.overlaps(lo, hi) != (len(wantIn) > 0) {
		t.Fatalf("%s: overlaps(%d, %d) = %v", at, lo, hi, !(len(wantIn) > 0))
	}
	all := m.ids()
	limit := rng.IntN(10)
	var wantIDs []uint64
	for _, id := range all {
		if id > lo && (limit == 0 || len(wantIDs) < limit) {
			wantIDs = append(wantIDs, id)
		}
	}
	if gotIDs := x.ids(lo, limit); !slices.Equal(gotIDs, wantIDs) {
		t.Fatalf("%s: ids(%d, %d) = %v, want %v", at, lo, limit, gotIDs, wantIDs)
	}
	var first, last uint64
	if len(m.runs) > 0 {
		first, last = m.runs[0].start, m.runs[len(m.runs)-1].end
	}
	if x.firstID() != first || x.lastID() != last {
		t.Fatalf("%s: firstID, lastID = %d, %d, want %d, %d", at, x.firstID(), x.lastID(), first, last)
	}
}

// TestRunKindDecode: each kind decodes what it encodes, and refuses an
// entry of another width, a run that ends before it starts, a batch id
// that is not positive and a key that is not a row id.
func TestRunKindDecode(t *testing.T) {
	good := map[*runKind]run{
		pendingKind:  {start: 5, end: 9},
		sendingKind:  {start: 5, end: 9, at: 1234},
		receivedKind: {start: 5, end: 9, batch: 77, at: 1234},
	}
	for kind, r := range good {
		if got, ok := kind.decode(u64key(r.start), kind.encode(r)); !ok || got != r {
			t.Errorf("%s: round trip %+v -> %+v, %v", kind.name, r, got, ok)
		}
		for _, tc := range []struct {
			name string
			k, v []byte
		}{
			{"short key", []byte{5}, kind.encode(r)},
			{"short value", u64key(5), kind.encode(r)[:len(kind.encode(r))-1]},
			{"long value", u64key(5), append(kind.encode(r), 0)},
			{"end before start", u64key(10), kind.encode(r)},
		} {
			if _, ok := kind.decode(tc.k, tc.v); ok {
				t.Errorf("%s: %s decoded", kind.name, tc.name)
			}
		}
	}
	if _, ok := receivedKind.decode(u64key(5), receivedKind.encode(run{start: 5, end: 9, batch: 0})); ok {
		t.Error("received: batch id 0 decoded")
	}
	// The widths are the file format: pending 8, sending 16, received 24.
	for kind, w := range map[*runKind]int{pendingKind: 8, sendingKind: 16, receivedKind: 24} {
		if kind.width() != w {
			t.Errorf("%s: width %d, want %d", kind.name, kind.width(), w)
		}
	}
}

// TestIndexTakeFrontDropsMalformed: a malformed entry at the front is
// deleted and reported, and the ids behind it are still taken.
func TestIndexTakeFrontDropsMalformed(t *testing.T) {
	db := openIndexDB(t)
	withIndex(t, db, pendingKind, func(x index) {
		if err := x.b.Put(u64key(1), []byte{1}); err != nil {
			t.Fatal(err)
		}
		if err := x.add(run{start: 3, end: 5}); err != nil {
			t.Fatal(err)
		}
		var bad [][]byte
		got, err := x.takeFront(2, func(k []byte) { bad = append(bad, bytes.Clone(k)) })
		if err != nil || !slices.Equal(got, []uint64{3, 4}) || len(bad) != 1 || !bytes.Equal(bad[0], u64key(1)) {
			t.Fatalf("takeFront = %v, %v; malformed %x", got, err, bad)
		}
		if r, ok := x.find(5); !ok || r != (run{start: 5, end: 5}) {
			t.Fatalf("left %+v, %v; want 5..5", r, ok)
		}
	})
}

// FuzzRunDecode: no entry makes decode panic, and one that decodes
// encodes back to the same bytes.
func FuzzRunDecode(f *testing.F) {
	f.Add(u64key(5), receivedKind.encode(run{start: 5, end: 9, batch: 77, at: 1}))
	f.Add(u64key(5), pendingKind.encode(run{start: 5, end: 9}))
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, k, v []byte) {
		for _, kind := range []*runKind{pendingKind, sendingKind, receivedKind} {
			r, ok := kind.decode(k, v)
			if ok && (!bytes.Equal(kind.encode(r), v) || !bytes.Equal(u64key(r.start), k)) {
				t.Fatalf("%s: %x %x decoded to %+v, which encodes differently", kind.name, k, v, r)
			}
		}
	})
}
