package tracker

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
)

// The model test drives a Tracker and a reference model with the same
// random operations and compares every query after each one. The model
// keeps plain lists and answers each query by a linear scan in the order
// the contract names (added, named, restored, made), so an index that
// drifts from the files it indexes shows up as a difference.

type refFile struct {
	f, id     int
	key, path string
	sum       fingerprint.Sum
	pathSeq   int // when it got its path
	sumSeq    int // when it got its sum
	staleIn   string
	staleSeq  int
	prior     *Prior
	live      bool
}

type refPrior struct {
	p      *Prior
	holder int // -1 when none
	until  uint64
}

type refModel struct {
	files    []*refFile // in the order added
	queue    []*refPrior
	saved    []Saved[int] // in the order restored
	reserved map[string]bool
	scans    int
	seq      int
}

func (m *refModel) next() int { m.seq++; return m.seq }

func (m *refModel) file(f int) *refFile {
	for _, r := range m.files {
		if r.f == f && r.live {
			return r
		}
	}
	return nil
}

func (m *refModel) live() []*refFile {
	var out []*refFile
	for _, r := range m.files {
		if r.live {
			out = append(out, r)
		}
	}
	return out
}

func (m *refModel) keyUsed(k string) bool {
	for _, r := range m.live() {
		if r.key == k {
			return true
		}
	}
	return m.reserved[k]
}

func (m *refModel) releasePrior(r *refFile) {
	for _, q := range m.queue {
		if q.holder == r.f {
			q.holder = -1
		}
	}
	r.prior = nil
}

func (m *refModel) removePrior(p *Prior) (int, bool) {
	i := slices.IndexFunc(m.queue, func(q *refPrior) bool { return q.p == p })
	if i < 0 {
		return 0, false
	}
	q := m.queue[i]
	m.queue = slices.Delete(m.queue, i, i+1)
	if q.holder >= 0 {
		m.file(q.holder).prior = nil
		return q.holder, true
	}
	return 0, false
}

// universe is what the random operations draw from: few values, so they
// collide often.
var (
	paths = []string{"/a/x.log", "/a/x.log.1", "/a/y.log", "/b/x.log", "/b/z"}
	dirs  = []string{"/a", "/b", "/c"}
	sums  = []fingerprint.Sum{{}, {Len: 4, Hash: 1}, {Len: 4, Hash: 2}, {Len: 8, Hash: 1}, {Len: 8, Hash: 3}}
	ids   = []int{1, 2, 3, 4}
)

func TestTrackerMatchesModel(t *testing.T) {
	for seed := range uint64(100) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed) })
	}
}

func runModel(t *testing.T, seed uint64) {
	objs := map[int]*tf{}
	obj := func(n int) *tf {
		if objs[n] == nil {
			objs[n] = &tf{n: n}
		}
		return objs[n]
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	tk := New[*tf, int]()
	tk.maxPriors = 4
	m := &refModel{reserved: map[string]bool{}}
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	pickSum := func() fingerprint.Sum { return sums[rng.IntN(len(sums))] }
	var priors []*Prior // every prior made, indexed or not
	var gen uint64
	t0 := time.Unix(1e9, 0)
	nextF := 0
	var log []string

	// Positions are restored before anything else.
	for i := range rng.IntN(6) {
		s := Saved[int]{Key: fmt.Sprintf("s%d", i), ID: ids[rng.IntN(len(ids))], Path: pick(paths),
			Content: Content{Sum: pickSum(), Offset: int64(i)}, Size: 10}
		if rng.IntN(2) == 0 {
			s.Prev = &Content{Sum: pickSum(), Offset: 1}
		}
		tk.Restore(s)
		m.saved = append(m.saved, s)
		m.reserved[s.Key] = true
		log = append(log, fmt.Sprintf("Restore(%+v)", s))
	}
	check(t, tk, obj, m, gen, t0, log)

	for step := range 300 {
		live := m.live()
		var r *refFile
		if len(live) > 0 {
			r = live[rng.IntN(len(live))]
		}
		op := rng.IntN(15)
		if r == nil && op < 9 {
			op = 0
		}
		switch op {
		case 0: // Add
			nextF++
			base := fmt.Sprintf("k%d", rng.IntN(4))
			key := tk.UniqueKey(base)
			want := base
			for i := 2; m.keyUsed(want); i++ {
				want = fmt.Sprintf("%s~%d", base, i)
			}
			if key != want {
				t.Fatalf("UniqueKey(%q) = %q, model %q; ops: %q", base, key, want, log)
			}
			id, path := ids[rng.IntN(len(ids))], pick(paths)
			tk.Add(obj(nextF), key, id, path)
			m.files = append(m.files, &refFile{f: nextF, id: id, key: key, path: path, pathSeq: m.next(), live: true})
			log = append(log, fmt.Sprintf("Add(%d,%s,%d,%s)", nextF, key, id, path))
		case 1: // Retire
			tk.Retire(obj(r.f))
			m.releasePrior(r)
			r.live = false
			log = append(log, fmt.Sprintf("Retire(%d)", r.f))
		case 2: // SetPath
			p := pick(paths)
			tk.SetPath(obj(r.f), p)
			if p != r.path {
				r.path, r.pathSeq = p, m.next()
			}
			log = append(log, fmt.Sprintf("SetPath(%d,%s)", r.f, p))
		case 3: // SetSum
			s := pickSum()
			tk.SetSum(obj(r.f), s)
			r.sum, r.sumSeq = s, m.next()
			log = append(log, fmt.Sprintf("SetSum(%d,%v)", r.f, s))
		case 4: // SetPrior
			p := &Prior{Content: Content{Sum: pickSum(), Offset: int64(step)}}
			priors = append(priors, p)
			gotF, gotOK := tk.SetPrior(obj(r.f), p, gen, t0.Add(time.Duration(gen)*time.Second))
			got := num(gotF)
			m.releasePrior(r)
			want, wantOK := 0, false
			if p.Sum.Len > 0 {
				r.prior = p
				m.queue = append(m.queue, &refPrior{p: p, holder: r.f, until: gen + priorScans})
				if len(m.queue) > tk.maxPriors {
					want, wantOK = m.removePrior(m.queue[0].p)
				}
			}
			log = append(log, fmt.Sprintf("SetPrior(%d,%v)", r.f, p.Sum))
			if got != want || gotOK != wantOK {
				t.Fatalf("SetPrior dropped (%d,%v), model (%d,%v); ops: %q", got, gotOK, want, wantOK, log)
			}
		case 5: // RemovePrior
			if len(priors) == 0 {
				continue
			}
			p := priors[rng.IntN(len(priors))]
			gotF, gotOK := tk.RemovePrior(p)
			got := num(gotF)
			want, wantOK := m.removePrior(p)
			log = append(log, fmt.Sprintf("RemovePrior(%v@%d)", p.Sum, p.Offset))
			if got != want || gotOK != wantOK {
				t.Fatalf("RemovePrior = (%d,%v), model (%d,%v); ops: %q", got, gotOK, want, wantOK, log)
			}
		case 6: // ReleasePrior
			tk.ReleasePrior(obj(r.f))
			m.releasePrior(r)
			log = append(log, fmt.Sprintf("ReleasePrior(%d)", r.f))
		case 7: // MarkStale
			tk.MarkStale(obj(r.f))
			if r.staleIn == "" {
				r.staleIn, r.staleSeq = filepath.Dir(r.path), m.next()
			}
			log = append(log, fmt.Sprintf("MarkStale(%d)", r.f))
		case 8: // TakeStale
			d := pick(dirs)
			got := nums(tk.TakeStale(d))
			var want []int
			var stale []*refFile
			for _, x := range m.live() {
				if x.staleIn == d {
					stale = append(stale, x)
				}
			}
			slices.SortFunc(stale, func(a, b *refFile) int { return cmp.Compare(a.staleSeq, b.staleSeq) })
			for _, x := range stale {
				want = append(want, x.f)
				x.staleIn = ""
			}
			log = append(log, fmt.Sprintf("TakeStale(%s)", d))
			if !slices.Equal(got, want) {
				t.Fatalf("TakeStale(%s) = %v, model %v; ops: %q", d, got, want, log)
			}
		case 9: // a scan ends
			gen++
			got := nums(tk.ExpirePriors(gen))
			var want []int
			for _, q := range m.queue {
				if q.holder >= 0 && q.until <= gen {
					want = append(want, q.holder)
					m.file(q.holder).prior = nil
					q.holder = -1
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("ExpirePriors(%d) = %v, model %v; ops: %q", gen, got, want, log)
			}
			keepDir := pick(dirs)
			dropped := tk.EndScan(func(s Saved[int]) bool { return filepath.Dir(s.Path) == keepDir })
			var wantDropped []Saved[int]
			if len(m.saved) > 0 {
				m.scans++
				if m.scans >= 2 {
					kept := m.saved[:0]
					for _, s := range m.saved {
						if filepath.Dir(s.Path) == keepDir {
							kept = append(kept, s)
							continue
						}
						wantDropped = append(wantDropped, s)
						delete(m.reserved, s.Key)
					}
					m.saved = kept
					slices.SortFunc(wantDropped, func(a, b Saved[int]) int { return cmp.Compare(a.Key, b.Key) })
				}
			}
			log = append(log, fmt.Sprintf("scan %d, keep %s", gen, keepDir))
			if !equalSaved(dropped, wantDropped) {
				t.Fatalf("EndScan dropped %+v, model %+v; ops: %q", dropped, wantDropped, log)
			}
		case 10: // TakeSaved, then the keys released
			id := ids[rng.IntN(len(ids))]
			got := tk.TakeSaved(id)
			var want []Saved[int]
			rest := m.saved[:0]
			for _, s := range m.saved {
				if s.ID == id {
					want = append(want, s)
				} else {
					rest = append(rest, s)
				}
			}
			m.saved = rest
			log = append(log, fmt.Sprintf("TakeSaved(%d)", id))
			if !equalSaved(got, want) {
				t.Fatalf("TakeSaved(%d) = %+v, model %+v; ops: %q", id, got, want, log)
			}
			if len(got) > 0 && rng.IntN(2) == 0 {
				k := got[rng.IntN(len(got))].Key
				tk.ReleaseKey(k)
				delete(m.reserved, k)
				log = append(log, fmt.Sprintf("ReleaseKey(%s)", k))
			}
		case 11: // Consume what a copy continues
			sum, except := pickSum(), ids[rng.IntN(len(ids))]
			s, ok := tk.SavedWithSum(sum, except)
			if !ok {
				continue
			}
			tk.Consume(s)
			i := slices.IndexFunc(m.saved, func(x Saved[int]) bool { return x.Key == s.Key })
			m.saved = slices.Delete(m.saved, i, i+1)
			delete(m.reserved, s.Key)
			log = append(log, fmt.Sprintf("Consume(%s)", s.Key))
		case 12: // ClearPrev
			sum, except := pickSum(), ids[rng.IntN(len(ids))]
			s, ok := tk.SavedWithPrev(sum, except)
			if !ok {
				continue
			}
			tk.ClearPrev(s.ID, s.Key)
			for i := range m.saved {
				if m.saved[i].Key == s.Key {
					m.saved[i].Prev = nil
				}
			}
			log = append(log, fmt.Sprintf("ClearPrev(%s)", s.Key))
		default: // time passes
			gen++
			log = append(log, fmt.Sprintf("gen %d", gen))
		}
		check(t, tk, obj, m, gen, t0, log)
	}
}

func equalSaved(a, b []Saved[int]) bool {
	return slices.EqualFunc(a, b, func(x, y Saved[int]) bool {
		return x.Key == y.Key && x.ID == y.ID && x.Path == y.Path && x.Content == y.Content && x.Size == y.Size &&
			(x.Prev == nil) == (y.Prev == nil) && (x.Prev == nil || *x.Prev == *y.Prev)
	})
}

// check compares every query of tk with the model's answer.
func check(t *testing.T, tk *Tracker[*tf, int], obj func(int) *tf, m *refModel, gen uint64, t0 time.Time, log []string) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s; ops: %q", fmt.Sprintf(format, args...), log)
	}
	live := m.live()
	if tk.Len() != len(live) {
		fail("Len = %d, model %d", tk.Len(), len(live))
	}
	for _, r := range m.files {
		fF, ok := tk.Key(r.key)
		f := num(fF)
		want, wantOK := 0, false
		if x := m.byKey(r.key); x != nil {
			want, wantOK = x.f, true
		}
		if f != want || ok != wantOK {
			fail("Key(%s) = (%d,%v), model (%d,%v)", r.key, f, ok, want, wantOK)
		}
		if r.live {
			if p := tk.PriorOf(obj(r.f)); p != r.prior {
				fail("PriorOf(%d) = %p, model %p", r.f, p, r.prior)
			}
		}
	}
	for _, id := range ids {
		fF, ok := tk.ID(id)
		f := num(fF)
		want, wantOK := 0, false
		for _, r := range live {
			if r.id == id {
				want, wantOK = r.f, true
			}
		}
		if f != want || ok != wantOK {
			fail("ID(%d) = (%d,%v), model (%d,%v)", id, f, ok, want, wantOK)
		}
		if got, want := tk.SavedOn(id), filterSaved(m.saved, func(s Saved[int]) bool { return s.ID == id }); !equalSaved(got, want) {
			fail("SavedOn(%d) = %+v, model %+v", id, got, want)
		}
		for _, sum := range sums {
			p := tk.PriorWithSum(sum, id)
			var want *Prior
			for _, q := range m.queue {
				if q.p.Sum == sum && (q.holder < 0 || m.file(q.holder).id != id) {
					want = q.p
					break
				}
			}
			if p != want {
				fail("PriorWithSum(%v,%d) = %p, model %p", sum, id, p, want)
			}
			s, ok := tk.SavedWithSum(sum, id)
			ws := filterSaved(m.saved, func(s Saved[int]) bool { return s.ID != id && s.Sum.Len > 0 && s.Sum == sum })
			if ok != (len(ws) > 0) || ok && !equalSaved([]Saved[int]{s}, ws[:1]) {
				fail("SavedWithSum(%v,%d) = %+v,%v, model %+v", sum, id, s, ok, ws)
			}
			s, ok = tk.SavedWithPrev(sum, id)
			ws = filterSaved(m.saved, func(s Saved[int]) bool {
				return s.ID != id && s.Prev != nil && s.Prev.Sum.Len > 0 && s.Prev.Sum == sum
			})
			if ok != (len(ws) > 0) || ok && !equalSaved([]Saved[int]{s}, ws[:1]) {
				fail("SavedWithPrev(%v,%d) = %+v,%v, model %+v", sum, id, s, ok, ws)
			}
		}
	}
	for _, p := range paths {
		var named []*refFile
		for _, r := range live {
			if r.path == p {
				named = append(named, r)
			}
		}
		slices.SortFunc(named, func(a, b *refFile) int { return cmp.Compare(b.pathSeq, a.pathSeq) })
		if got, want := nums(tk.Named(p)), fs(named); !slices.Equal(got, want) {
			fail("Named(%s) = %v, model %v", p, got, want)
		}
		for _, at := range []uint64{0, gen / 2, gen} {
			since := t0.Add(time.Duration(at) * time.Second).Add(-time.Millisecond)
			want := slices.ContainsFunc(m.queue, func(q *refPrior) bool { return q.p.From == p && q.p.MadeAt.After(since) })
			if got := tk.RecentPrior(p, since); got != want {
				fail("RecentPrior(%s,%v) = %v, model %v", p, since, got, want)
			}
		}
	}
	lens := map[int]bool{}
	for _, sum := range sums {
		var with []*refFile
		for _, r := range live {
			if r.sum == sum && sum.Len > 0 {
				with = append(with, r)
			}
		}
		slices.SortFunc(with, func(a, b *refFile) int { return cmp.Compare(a.sumSeq, b.sumSeq) })
		if got, want := nums(tk.WithSum(sum)), fs(with); !slices.Equal(got, want) {
			fail("WithSum(%v) = %v, model %v", sum, got, want)
		}
	}
	for _, r := range live {
		if r.sum.Len > 0 {
			lens[r.sum.Len] = true
		}
	}
	for _, q := range m.queue {
		lens[q.p.Sum.Len] = true
	}
	for _, s := range m.saved {
		if s.Sum.Len > 0 {
			lens[s.Sum.Len] = true
		}
		if s.Prev != nil && s.Prev.Sum.Len > 0 {
			lens[s.Prev.Sum.Len] = true
		}
	}
	for _, max := range []int{4, 8} {
		var want []int
		for n := range lens {
			if n <= max {
				want = append(want, n)
			}
		}
		slices.Sort(want)
		if got := tk.Lengths(max); !slices.Equal(got, want) {
			fail("Lengths(%d) = %v, model %v", max, got, want)
		}
	}
	for k := range 4 {
		for _, key := range []string{fmt.Sprintf("k%d", k), fmt.Sprintf("k%d~2", k), fmt.Sprintf("s%d", k)} {
			if got, want := tk.KeyUsed(key), m.keyUsed(key); got != want {
				fail("KeyUsed(%s) = %v, model %v", key, got, want)
			}
		}
	}
	if got, want := tk.HasSaved(), len(m.saved) > 0; got != want {
		fail("HasSaved = %v, model %v", got, want)
	}
	var wantDirs []string
	for _, s := range m.saved {
		if d := filepath.Dir(s.Path); !slices.Contains(wantDirs, d) {
			wantDirs = append(wantDirs, d)
		}
	}
	slices.Sort(wantDirs)
	if got := tk.SavedDirs(); !slices.Equal(got, wantDirs) {
		fail("SavedDirs = %v, model %v", got, wantDirs)
	}
}

func (m *refModel) byKey(k string) *refFile {
	for _, r := range m.live() {
		if r.key == k {
			return r
		}
	}
	return nil
}

func filterSaved(ss []Saved[int], keep func(Saved[int]) bool) []Saved[int] {
	var out []Saved[int]
	for _, s := range ss {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

func fs(rs []*refFile) []int {
	var out []int
	for _, r := range rs {
		out = append(out, r.f)
	}
	return out
}

// tf is the file type of the model test: a number and its slot.
type tf struct {
	n    int
	slot Slot[int]
}

func (f *tf) Slot() *Slot[int] { return &f.slot }

// num is f's number, 0 for none.
func num(f *tf) int {
	if f == nil {
		return 0
	}
	return f.n
}

func nums(list []*tf) []int {
	var out []int
	for _, f := range list {
		out = append(out, f.n)
	}
	return out
}
