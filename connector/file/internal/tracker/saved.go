package tracker

import (
	"cmp"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
)

// Saved is a position the last run saved: Key, the file's identity and
// name then, the content it was delivered up to, its size then (a lower
// bound of what it held) and Prev, the content it held before a
// truncation, when a copy of that may still show up.
type Saved[I comparable] struct {
	Key  string
	ID   I
	Path string
	Content
	Size int64
	Prev *Content
}

// savedIndex holds the positions restored that no file has claimed yet,
// by identity and by fingerprint, and the keys they keep reserved.
type savedIndex[I comparable] struct {
	saved map[I][]Saved[I]
	keys  map[string]struct{} // reserved: not to be given to a new file
	// savedBySum and savedByPrev list the keys of the positions by their
	// Sum and their Prev's, in the order restored.
	savedBySum  map[fingerprint.Sum][]string
	savedByPrev map[fingerprint.Sum][]string
	savedByKey  map[string]I
	// savedLens counts the fingerprint lengths of the positions and of
	// their Prev.
	savedLens map[int]int
	scans     int
}

func newSaved[I comparable]() savedIndex[I] {
	return savedIndex[I]{
		saved:       make(map[I][]Saved[I]),
		keys:        make(map[string]struct{}),
		savedBySum:  make(map[fingerprint.Sum][]string),
		savedByPrev: make(map[fingerprint.Sum][]string),
		savedByKey:  make(map[string]I),
		savedLens:   make(map[int]int),
	}
}

// Restore adds a position saved by the last run; its key is reserved
// until the position is taken, consumed or dropped. Every position is
// restored before any is taken.
func (tk *Tracker[F, I]) Restore(s Saved[I]) {
	tk.saved[s.ID] = append(tk.saved[s.ID], s)
	tk.keys[s.Key] = struct{}{}
	tk.indexSaved(s, 1)
}

// indexSaved adds s to (d 1) or removes it from (d -1) the indexes by
// fingerprint and the length counts.
func (tk *Tracker[F, I]) indexSaved(s Saved[I], d int) {
	if d > 0 {
		tk.savedByKey[s.Key] = s.ID
		if s.Sum.Len > 0 {
			tk.savedBySum[s.Sum] = append(tk.savedBySum[s.Sum], s.Key)
		}
		if p := s.Prev; p != nil && p.Sum.Len > 0 {
			tk.savedByPrev[p.Sum] = append(tk.savedByPrev[p.Sum], s.Key)
		}
	} else {
		delete(tk.savedByKey, s.Key)
		deleteFrom(tk.savedBySum, s.Sum, s.Key)
		if p := s.Prev; p != nil {
			deleteFrom(tk.savedByPrev, p.Sum, s.Key)
		}
	}
	tk.countLen(s.Sum.Len, d)
	if s.Prev != nil {
		tk.countLen(s.Prev.Sum.Len, d)
	}
}

// countLen adds d to the count of saved fingerprints n bytes long.
func (tk *Tracker[F, I]) countLen(n, d int) {
	if n <= 0 {
		return
	}
	if c := tk.savedLens[n] + d; c > 0 {
		tk.savedLens[n] = c
	} else {
		delete(tk.savedLens, n)
	}
}

// savedKey is the unclaimed position under key, or nil.
func (tk *Tracker[F, I]) savedKey(key string) *Saved[I] {
	id, ok := tk.savedByKey[key]
	if !ok {
		return nil
	}
	ss := tk.saved[id]
	for i := range ss {
		if ss[i].Key == key {
			return &ss[i]
		}
	}
	return nil
}

// HasSaved reports whether any saved position is still unclaimed.
func (tk *Tracker[F, I]) HasSaved() bool { return len(tk.saved) > 0 }

// SavedOn returns the unclaimed positions saved for identity id, in the
// order they were restored. The caller must not change them.
func (tk *Tracker[F, I]) SavedOn(id I) []Saved[I] { return tk.saved[id] }

// TakeSaved removes and returns the positions saved for id. Their keys
// stay reserved until ReleaseKey: the file that claims one may need a key
// of its own that must not be one of theirs.
func (tk *Tracker[F, I]) TakeSaved(id I) []Saved[I] {
	ss := tk.saved[id]
	delete(tk.saved, id)
	for _, s := range ss {
		tk.indexSaved(s, -1)
	}
	return ss
}

// ReleaseKey ends the reservation of a key taken with TakeSaved.
func (tk *Tracker[F, I]) ReleaseKey(key string) { delete(tk.keys, key) }

// KeyUsed reports whether key names a tracked file or a reserved position.
func (tk *Tracker[F, I]) KeyUsed(key string) bool {
	if _, ok := tk.byKey[key]; ok {
		return true
	}
	_, ok := tk.keys[key]
	return ok
}

// UniqueKey returns base, or base with a "~n" suffix when base is used.
func (tk *Tracker[F, I]) UniqueKey(base string) string {
	key := base
	for i := 2; tk.KeyUsed(key); i++ {
		key = base + "~" + strconv.Itoa(i)
	}
	return key
}

// SavedWithSum returns the first position restored whose content starts
// with sum, saved for another identity than except.
func (tk *Tracker[F, I]) SavedWithSum(sum fingerprint.Sum, except I) (Saved[I], bool) {
	for _, k := range tk.savedBySum[sum] {
		if s := tk.savedKey(k); s.ID != except {
			return *s, true
		}
	}
	return Saved[I]{}, false
}

// SavedWithPrev returns the first position restored whose Prev starts
// with sum, saved for another identity than except.
func (tk *Tracker[F, I]) SavedWithPrev(sum fingerprint.Sum, except I) (Saved[I], bool) {
	for _, k := range tk.savedByPrev[sum] {
		if s := tk.savedKey(k); s.ID != except {
			return *s, true
		}
	}
	return Saved[I]{}, false
}

// Consume removes the position s (found by SavedWithSum): a copy of its
// file continues it. Its key is released.
func (tk *Tracker[F, I]) Consume(s Saved[I]) {
	ss := tk.saved[s.ID]
	i := slices.IndexFunc(ss, func(x Saved[I]) bool { return x.Key == s.Key })
	if i < 0 {
		return
	}
	tk.indexSaved(ss[i], -1)
	if ss = slices.Delete(ss, i, i+1); len(ss) == 0 {
		delete(tk.saved, s.ID)
	} else {
		tk.saved[s.ID] = ss
	}
	delete(tk.keys, s.Key)
}

// ClearPrev drops the Prev of the position key saved for id (found by
// SavedWithPrev): a copy continues it; the position itself stays.
func (tk *Tracker[F, I]) ClearPrev(id I, key string) {
	ss := tk.saved[id]
	for i := range ss {
		if p := ss[i].Prev; ss[i].Key == key && p != nil {
			deleteFrom(tk.savedByPrev, p.Sum, key)
			tk.countLen(p.Sum.Len, -1)
			ss[i].Prev = nil
		}
	}
}

// SavedDirs returns the directories of the unclaimed positions' paths,
// sorted.
func (tk *Tracker[F, I]) SavedDirs() []string {
	set := make(map[string]struct{})
	for _, ss := range tk.saved {
		for _, s := range ss {
			if s.Path != "" {
				set[filepath.Dir(s.Path)] = struct{}{}
			}
		}
	}
	dirs := make([]string, 0, len(set))
	for d := range set {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	return dirs
}

// EndScan counts a scan that ran while positions were unclaimed; from the
// second on it drops those whose file was not found, except those keep
// says to keep (a file under a directory that could not be listed), and
// returns them sorted by key, their keys released. Positions do not
// accumulate forever.
func (tk *Tracker[F, I]) EndScan(keep func(Saved[I]) bool) []Saved[I] {
	if len(tk.saved) == 0 {
		return nil
	}
	tk.scans++
	if tk.scans < 2 {
		return nil
	}
	var dropped []Saved[I]
	for id, ss := range tk.saved {
		kept := ss[:0]
		for _, s := range ss {
			if keep(s) {
				kept = append(kept, s)
				continue
			}
			tk.indexSaved(s, -1)
			delete(tk.keys, s.Key)
			dropped = append(dropped, s)
		}
		if len(kept) == 0 {
			delete(tk.saved, id)
		} else {
			tk.saved[id] = kept
		}
	}
	slices.SortFunc(dropped, func(a, b Saved[I]) int { return cmp.Compare(a.Key, b.Key) })
	return dropped
}
