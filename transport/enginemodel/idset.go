package enginemodel

import (
	"slices"
	"sort"
)

// idSet is a set of batch ids kept as sorted, disjoint runs that never
// touch, so ids drained in order cost one run rather than one entry
// each: a source whose ids are never committed (no checkpoint) stays
// small. The zero value is empty.
type idSet struct {
	runs []idRun
	n    int // ids in the set
}

// idRun is the ids lo..hi, both included.
type idRun struct{ lo, hi int64 }

// find returns the index of the first run ending at or above id.
func (s *idSet) find(id int64) int {
	return sort.Search(len(s.runs), func(i int) bool { return s.runs[i].hi >= id })
}

func (s *idSet) has(id int64) bool {
	i := s.find(id)
	return i < len(s.runs) && s.runs[i].lo <= id
}

func (s *idSet) len() int { return s.n }

func (s *idSet) add(id int64) {
	i := s.find(id)
	if i < len(s.runs) && s.runs[i].lo <= id {
		return
	}
	// runs[i-1] ends below id, runs[i] starts above it.
	joinPrev := i > 0 && s.runs[i-1].hi == id-1
	joinNext := i < len(s.runs) && s.runs[i].lo == id+1
	switch {
	case joinPrev && joinNext:
		s.runs[i-1].hi = s.runs[i].hi
		s.runs = slices.Delete(s.runs, i, i+1)
	case joinPrev:
		s.runs[i-1].hi = id
	case joinNext:
		s.runs[i].lo = id
	default:
		s.runs = slices.Insert(s.runs, i, idRun{id, id})
	}
	s.n++
}

func (s *idSet) remove(id int64) {
	i := s.find(id)
	if i == len(s.runs) || s.runs[i].lo > id {
		return
	}
	r := s.runs[i]
	switch {
	case r.lo == id && r.hi == id:
		s.runs = slices.Delete(s.runs, i, i+1)
	case r.lo == id:
		s.runs[i].lo++
	case r.hi == id:
		s.runs[i].hi--
	default:
		s.runs[i].hi = id - 1
		s.runs = slices.Insert(s.runs, i+1, idRun{id + 1, r.hi})
	}
	s.n--
}

// removeThrough removes every id <= w.
func (s *idSet) removeThrough(w int64) {
	i := s.find(w + 1) // runs before i end at or below w
	for _, r := range s.runs[:i] {
		s.n -= int(r.hi - r.lo + 1)
	}
	s.runs = slices.Delete(s.runs, 0, i)
	if len(s.runs) > 0 && s.runs[0].lo <= w {
		s.n -= int(w - s.runs[0].lo + 1)
		s.runs[0].lo = w + 1
	}
}

// runFrom returns the highest h such that from..h are all in the set,
// or from-1 when from is not.
func (s *idSet) runFrom(from int64) int64 {
	i := s.find(from)
	if i < len(s.runs) && s.runs[i].lo <= from {
		return s.runs[i].hi
	}
	return from - 1
}

// ids lists the set in increasing order.
func (s *idSet) ids() []int64 {
	out := make([]int64, 0, s.n)
	for _, r := range s.runs {
		for id := r.lo; id <= r.hi; id++ {
			out = append(out, id)
		}
	}
	return out
}
