package processing

import (
	"errors"
	"fmt"
	"hash/fnv"
	"time"
)

// filter is drop: <expression> (true drops) or keep: <expression> (false
// drops). An expression that fails on an event keeps it, counted as an
// error: a filter never loses what it could not judge.
type filter struct {
	n    *counts
	x    *expression
	drop bool
}

func newFilter(i int, kind, src string, n *counts) (processor, error) {
	x, err := compileExpr(src, true)
	if err != nil {
		return nil, stepError(i, kind, err)
	}
	return &filter{n: n, x: x, drop: kind == "drop"}, nil
}

func (f *filter) counts() *counts { return f.n }

func (f *filter) runsTagged() bool { return f.x.reads != nil }

func (f *filter) apply(it *item, _ time.Time) verdict {
	var ok bool
	var err error
	if it.ev.tagged && f.x.reads != nil {
		ok, err = f.x.testNode(&it.ev.top)
	} else {
		ok, err = f.x.test(it.ev.mapFields())
	}
	if err != nil {
		f.n.errs.Add(1)
		return pass
	}
	if ok == f.drop {
		return dropped
	}
	return pass
}

// keyFunc is dedup's and sample's key: the text of an expression's value,
// or of the payload.
type keyFunc func(m map[string]any) (string, error)

func newKey(i int, key, src string) (keyFunc, error) {
	if src == "" {
		return func(m map[string]any) (string, error) { return text(m[defaultField]), nil }, nil
	}
	x, err := compileExpr(src, false)
	if err != nil {
		return nil, stepError(i, key, err)
	}
	return func(m map[string]any) (string, error) {
		v, err := x.eval(m)
		if err != nil {
			return "", err
		}
		return text(v), nil
	}, nil
}

// sampler keeps the events whose key hashes to 0 mod N, and every event
// unless keeps.
type sampler struct {
	n      *counts
	oneIn  uint64
	key    keyFunc
	unless *expression
}

func newSampler(i int, c *SampleConfig, n *counts) (processor, error) {
	s := &sampler{n: n, oneIn: uint64(max(c.OneIn, 0))}
	var errs []error
	if c.OneIn < 1 {
		errs = append(errs, stepError(i, "sample.one-in", fmt.Errorf("must be >= 1, got %d", c.OneIn)))
	}
	var err error
	if s.key, err = newKey(i, "sample.key", c.Key); err != nil {
		errs = append(errs, err)
	}
	if c.Unless != "" {
		if s.unless, err = compileExpr(c.Unless, true); err != nil {
			errs = append(errs, stepError(i, "sample.unless", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *sampler) counts() *counts { return s.n }

func (s *sampler) apply(it *item, _ time.Time) verdict {
	if s.unless != nil {
		keep, err := s.unless.test(it.ev.mapFields())
		if err != nil {
			s.n.errs.Add(1)
		} else if keep {
			return pass
		}
	}
	k, err := s.key(it.ev.mapFields())
	if err != nil {
		s.n.errs.Add(1)
		return pass
	}
	if sampleHash(k)%s.oneIn == 0 {
		return pass
	}
	return sampledOut
}

// sampleHash is FNV-1a 64: the same key samples the same way on every
// host and after every restart.
func sampleHash(k string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(k))
	return h.Sum64()
}
