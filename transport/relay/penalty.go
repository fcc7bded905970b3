package relay

import (
	"sync"
	"time"
)

// penaltyForget is how long after its last failure a source's failures
// are forgotten.
const penaltyForget = time.Minute

// maxPenaltySources bounds the sources remembered, so that a flood from
// many addresses cannot grow the table without bound.
const maxPenaltySources = 4096

// penalties slow down token guessing: a source address whose attempts
// failed waits before its next token is checked, base after one failure,
// doubling with each further one up to max. The wait holds the
// connection's place in the pre-authentication budget, so one source's
// guesses are bounded by its share of that budget over the wait. A
// success does not forget the failures (a guesser sharing an address with
// a collector gains nothing from it); a quiet penaltyForget does. Safe
// for concurrent use.
type penalties struct {
	base, max time.Duration
	now       func() time.Time

	mu sync.Mutex
	m  map[string]*penalty
}

type penalty struct {
	failures int
	last     time.Time
}

func newPenalties(base, max time.Duration, now func() time.Time) *penalties {
	return &penalties{base: base, max: max, now: now, m: make(map[string]*penalty)}
}

// delay is the wait before checking a token from source now; 0 when
// slowing is off or the source has no recent failure.
func (p *penalties) delay(source string) time.Duration {
	if p.base <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.m[source]
	if e == nil {
		return 0
	}
	if p.now().Sub(e.last) >= penaltyForget {
		delete(p.m, source)
		return 0
	}
	return backoff(p.base, p.max, e.failures)
}

// backoff is base·2^(failures-1), at most max.
func backoff(base, max time.Duration, failures int) time.Duration {
	d := base
	for i := 1; i < failures && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// failed records a failed attempt from source.
func (p *penalties) failed(source string) {
	if p.base <= 0 {
		return
	}
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.m[source]
	if e == nil {
		if len(p.m) >= maxPenaltySources {
			p.shed(now)
		}
		e = &penalty{}
		p.m[source] = e
	} else if now.Sub(e.last) >= penaltyForget {
		e.failures = 0
	}
	e.failures++
	e.last = now
}

// shed makes room: it forgets the sources quiet for penaltyForget, and if
// none is, one arbitrary source. p.mu is held.
func (p *penalties) shed(now time.Time) {
	for s, e := range p.m {
		if now.Sub(e.last) >= penaltyForget {
			delete(p.m, s)
		}
	}
	if len(p.m) < maxPenaltySources {
		return
	}
	for s := range p.m {
		delete(p.m, s)
		return
	}
}

// sources is how many sources are being slowed down now.
func (p *penalties) sources() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}
