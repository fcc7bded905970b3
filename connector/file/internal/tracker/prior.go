package tracker

import (
	"slices"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
)

// SetPrior records p as the content f held before a truncation, made in
// scan gen at the scan time at, under f's current name. An older prior of
// f stays findable until it expires. A prior of empty content (Sum.Len 0)
// is not kept. When MaxPriors is exceeded the oldest prior goes; if a
// file held it, that file is returned (its saved state changed).
func (tk *Tracker[F, I]) SetPrior(f F, p *Prior, gen uint64, at time.Time) (dropped F, ok bool) {
	e := tk.mustEntry(f)
	tk.ReleasePrior(f)
	if p == nil || p.Sum.Len == 0 {
		return dropped, false
	}
	p.until, p.MadeAt, p.From = gen+priorScans, at, e.path
	e.prior = p
	tk.holder[p] = f
	tk.priors[p.Sum] = append(tk.priors[p.Sum], p)
	tk.lens[p.Sum.Len]++
	tk.queue = append(tk.queue, p)
	if len(tk.queue) > tk.maxPriors {
		return tk.RemovePrior(tk.queue[0])
	}
	return dropped, false
}

// PriorOf is the prior f's saved state carries, or nil.
func (tk *Tracker[F, I]) PriorOf(f F) *Prior {
	if e := tk.entry(f); e != nil {
		return e.prior
	}
	return nil
}

// RemovePrior forgets p, which a copy now continues or which is no longer
// true. It returns the file whose state carried p, if any. A prior not
// indexed (made from a saved position) is left alone.
func (tk *Tracker[F, I]) RemovePrior(p *Prior) (holder F, ok bool) {
	list := tk.priors[p.Sum]
	if !slices.Contains(list, p) {
		return holder, false
	}
	deleteFrom(tk.priors, p.Sum, p)
	tk.queue = without(tk.queue, p)
	tk.dropLen(p.Sum.Len)
	holder, ok = tk.holder[p]
	if ok {
		delete(tk.holder, p)
		tk.entry(holder).prior = nil
	}
	return holder, ok
}

// ReleasePrior takes f's prior off f's saved state; it stays findable.
func (tk *Tracker[F, I]) ReleasePrior(f F) {
	e := tk.entry(f)
	if e == nil || e.prior == nil {
		return
	}
	delete(tk.holder, e.prior)
	e.prior = nil
}

// ExpirePriors takes off their files' saved state the priors made before
// scan gen-1 (whose copy did not show up: it may be outside the globs, or
// there was none, a plain truncation) and returns those files. The priors
// stay findable in memory, up to MaxPriors.
func (tk *Tracker[F, I]) ExpirePriors(gen uint64) []F {
	var out []F
	for _, p := range tk.queue {
		if f, ok := tk.holder[p]; ok && p.until <= gen {
			delete(tk.holder, p)
			tk.entry(f).prior = nil
			out = append(out, f)
		}
	}
	return out
}

// PriorWithSum returns the oldest prior of content sum that is not held
// by a file of identity except (a file is not a copy of its own past).
func (tk *Tracker[F, I]) PriorWithSum(sum fingerprint.Sum, except I) *Prior {
	for _, p := range tk.priors[sum] {
		f, held := tk.holder[p]
		if !held || tk.entry(f).id != except {
			return p
		}
	}
	return nil
}

// RecentPrior reports whether a prior was made under the name from after
// since.
func (tk *Tracker[F, I]) RecentPrior(from string, since time.Time) bool {
	for _, p := range tk.queue {
		if p.From == from && p.MadeAt.After(since) {
			return true
		}
	}
	return false
}
