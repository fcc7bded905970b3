package tracker

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
)

// Content is what a file held: the fingerprint of its first bytes and
// how far it was delivered (offset just past the last line, line its
// number).
type Content struct {
	Sum          fingerprint.Sum
	Offset, Line int64
}

// Prior is content a file no longer holds (truncated, rewritten, or its
// inode reused), kept so that a copy of it (copytruncate) continues from
// where it was delivered. From is the file's name when it was made and
// MadeAt the scan time then.
type Prior struct {
	Content
	From   string
	MadeAt time.Time
	until  uint64 // the last scan whose copy keeps it in its holder's state
}

// MaxPriors bounds the priors kept: a copy is found by the next scans, or
// when a closed file whose inode it reused is next read, which with more
// files than max-open-files can be much later; the oldest go first.
const MaxPriors = 1024

// priorScans is how many scans after it is made a prior stays in its
// holder's state: a copy made before the truncate is listed by any scan
// that starts after the truncation was noticed.
const priorScans = 2

// File is what the tracker tracks: a comparable value (a pointer in
// practice) that carries the tracker's record of it, so that tracking a
// file costs no allocation of its own.
type File[I comparable] interface {
	comparable
	Slot() *Slot[I]
}

// Slot is the tracker's record of one file, kept in the file's own value;
// its fields are the tracker's alone.
type Slot[I comparable] struct {
	key, path string
	id        I
	sum       fingerprint.Sum
	staleIn   string // the directory it is listed stale in; "" when not stale
	prior     *Prior
	tracked   bool
}

// Tracker indexes the files F known by identity I, and the positions
// saved by the last run.
type Tracker[F File[I], I comparable] struct {
	n      int // files tracked
	byKey  map[string]F
	byID   multi[I, F] // more than one only briefly
	byPath multi[string, F]
	bySum  map[fingerprint.Sum][]F
	priors map[fingerprint.Sum][]*Prior
	holder map[*Prior]F
	queue  []*Prior    // the indexed priors, oldest first
	lens   map[int]int // entries of bySum and priors by fingerprint length
	stale  map[string][]F
	// maxPriors is MaxPriors; tests lower it.
	maxPriors int

	savedIndex[I]
}

// New returns an empty tracker.
func New[F File[I], I comparable]() *Tracker[F, I] {
	return &Tracker[F, I]{
		byKey:      make(map[string]F),
		byID:       newMulti[I, F](),
		byPath:     newMulti[string, F](),
		bySum:      make(map[fingerprint.Sum][]F),
		priors:     make(map[fingerprint.Sum][]*Prior),
		holder:     make(map[*Prior]F),
		lens:       make(map[int]int),
		stale:      make(map[string][]F),
		maxPriors:  MaxPriors,
		savedIndex: newSaved[I](),
	}
}

// Len is the number of files tracked.
func (tk *Tracker[F, I]) Len() int { return tk.n }

// Add tracks f under key (from UniqueKey), identity id and path, with an
// empty fingerprint (SetSum indexes it). Adding a tracked file or a key in
// use is a programming error and panics.
func (tk *Tracker[F, I]) Add(f F, key string, id I, path string) {
	e := f.Slot()
	if e.tracked {
		panic("tracker: file added twice")
	}
	if tk.KeyUsed(key) {
		panic("tracker: key " + key + " added twice")
	}
	*e = Slot[I]{key: key, id: id, path: path, tracked: true}
	tk.n++
	tk.byKey[key] = f
	tk.byID.add(id, f)
	tk.byPath.add(path, f)
}

// Retire takes f out of every index. Its prior, if any, stays findable
// (a copy may still continue it) until it expires or is removed.
func (tk *Tracker[F, I]) Retire(f F) {
	e := tk.entry(f)
	if e == nil {
		return
	}
	tk.ReleasePrior(f)
	tk.unindexSum(f, e)
	if e.staleIn != "" {
		deleteFrom(tk.stale, e.staleIn, f)
	}
	tk.byPath.remove(e.path, f)
	tk.byID.remove(e.id, f)
	delete(tk.byKey, e.key)
	*e = Slot[I]{}
	tk.n--
}

// Key returns the file tracked under key.
func (tk *Tracker[F, I]) Key(key string) (F, bool) {
	f, ok := tk.byKey[key]
	return f, ok
}

// ID returns the file with identity id (the one added last, when a file
// reused the identity of one not retired yet).
func (tk *Tracker[F, I]) ID(id I) (F, bool) {
	return tk.byID.get(id)
}

// Named returns the files tracked under path, the one named last first
// (a rotated file still being finished shares its old name with its
// successor). The slice is the caller's.
func (tk *Tracker[F, I]) Named(path string) []F {
	return tk.byPath.all(path)
}

// SetPath records the name f is matched under now.
func (tk *Tracker[F, I]) SetPath(f F, path string) {
	e := tk.mustEntry(f)
	if e.path == path {
		return
	}
	tk.byPath.remove(e.path, f)
	e.path = path
	tk.byPath.add(path, f)
}

// SetSum indexes f by the fingerprint of its first bytes; an empty one
// (Len 0) matches nothing and is not indexed.
func (tk *Tracker[F, I]) SetSum(f F, sum fingerprint.Sum) {
	e := tk.mustEntry(f)
	tk.unindexSum(f, e)
	e.sum = sum
	if sum.Len > 0 {
		tk.bySum[sum] = append(tk.bySum[sum], f)
		tk.lens[sum.Len]++
	}
}

// WithSum returns the files whose fingerprint is sum, oldest first. The
// slice is the caller's: it may change the tracker while it walks it.
func (tk *Tracker[F, I]) WithSum(sum fingerprint.Sum) []F {
	return slices.Clone(tk.bySum[sum])
}

// Lengths returns, in increasing order, the fingerprint lengths up to
// max that some file, prior or saved position has: those a new file's
// first bytes must be hashed at to find what it may be a copy of.
func (tk *Tracker[F, I]) Lengths(max int) []int {
	if len(tk.lens) == 0 && len(tk.savedLens) == 0 {
		return nil
	}
	out := make([]int, 0, len(tk.lens)+len(tk.savedLens))
	for n := range tk.lens {
		if n <= max {
			out = append(out, n)
		}
	}
	for n := range tk.savedLens {
		if _, dup := tk.lens[n]; !dup && n <= max {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// MarkStale notes that f's fingerprint covers less than it may and the
// file now holds more: it is looked at again (TakeStale) before a new
// file in the directory it is in now (where copies are made) is matched
// against it. It stays listed there until taken or retired.
func (tk *Tracker[F, I]) MarkStale(f F) {
	e := tk.mustEntry(f)
	if e.staleIn != "" {
		return
	}
	e.staleIn = filepath.Dir(e.path)
	tk.stale[e.staleIn] = append(tk.stale[e.staleIn], f)
}

// TakeStale returns the files of dir marked stale, oldest first, and
// clears their mark.
func (tk *Tracker[F, I]) TakeStale(dir string) []F {
	list := tk.stale[dir]
	delete(tk.stale, dir)
	for _, f := range list {
		f.Slot().staleIn = ""
	}
	return list
}

func (tk *Tracker[F, I]) mustEntry(f F) *Slot[I] {
	e := tk.entry(f)
	if e == nil {
		panic("tracker: file not tracked")
	}
	return e
}

// entry is f's record, nil when f is not tracked.
func (tk *Tracker[F, I]) entry(f F) *Slot[I] {
	if e := f.Slot(); e.tracked {
		return e
	}
	return nil
}

func (tk *Tracker[F, I]) unindexSum(f F, e *Slot[I]) {
	if e.sum.Len == 0 {
		return
	}
	deleteFrom(tk.bySum, e.sum, f)
	tk.dropLen(e.sum.Len)
	e.sum = fingerprint.Sum{}
}

func (tk *Tracker[F, I]) dropLen(n int) {
	if c := tk.lens[n] - 1; c > 0 {
		tk.lens[n] = c
	} else {
		delete(tk.lens, n)
	}
}

// deleteFrom removes v from the list m[k], and the list once empty.
func deleteFrom[K, V comparable](m map[K][]V, k K, v V) {
	if list := without(m[k], v); len(list) > 0 {
		m[k] = list
	} else {
		delete(m, k)
	}
}

func without[V comparable](list []V, v V) []V {
	return slices.DeleteFunc(list, func(x V) bool { return x == v })
}
