package processing

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Fields dedup adds to the event it emits.
const (
	repeatsField = "_repeats"
	firstTSField = "_first_ts"
	lastTSField  = "_last_ts"
)

// dedup folds events of one key within a window into the first, emitted
// when the window closes with _repeats (how many events it stands for)
// and the first and last time (Unix milliseconds).
type dedup struct {
	n       *counts
	window  time.Duration
	maxKeys int
	key     keyFunc
	byKey   map[string]*heldEvent
	order   []*heldEvent // by first arrival: windows close in this order
	over    *atomic.Uint64
}

type heldEvent struct {
	it          *item
	key         string
	first, last time.Time
	count       uint64
}

func newDedup(i int, c *DedupConfig, n *counts) (processor, error) {
	d := &dedup{n: n, window: c.Window, maxKeys: c.MaxKeys, byKey: make(map[string]*heldEvent)}
	var errs []error
	if d.window == 0 {
		d.window = defaultDedupWindow
	}
	if d.window < 0 {
		errs = append(errs, stepError(i, "dedup.window-ms", fmt.Errorf("must be > 0, got %d", c.Window.Milliseconds())))
	}
	if d.maxKeys == 0 {
		d.maxKeys = defaultMaxKeys
	}
	if d.maxKeys < 0 || d.maxKeys > maxMaxKeys {
		errs = append(errs, stepError(i, "dedup.max-keys", fmt.Errorf("must be 1 to %d, got %d", maxMaxKeys, c.MaxKeys)))
	}
	var err error
	if d.key, err = newKey(i, "dedup.key", c.Key); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.over = n.counter("keys_over_cap")
	return d, nil
}

func (d *dedup) counts() *counts { return d.n }

func (d *dedup) apply(it *item, now time.Time) verdict {
	k, err := d.key(it.ev.mapFields())
	if err != nil {
		d.n.errs.Add(1)
		return pass
	}
	if h, ok := d.byKey[k]; ok {
		h.count++
		h.last = now
		return folded
	}
	if len(d.byKey) >= d.maxKeys {
		d.over.Add(1)
		return pass
	}
	h := &heldEvent{it: it, key: k, first: now, last: now, count: 1}
	d.byKey[k] = h
	d.order = append(d.order, h)
	return held
}

func (d *dedup) release(now time.Time, all bool, emit func(*item)) {
	n := 0
	for _, h := range d.order {
		if !all && now.Sub(h.first) < d.window {
			break
		}
		n++
		delete(d.byKey, h.key)
		f := h.it.ev.mapFields()
		f[repeatsField] = int64(h.count)
		f[firstTSField] = h.first.UnixMilli()
		f[lastTSField] = h.last.UnixMilli()
		h.it.ev.dirty = true
		emit(h.it)
	}
	clear(d.order[:n])
	d.order = d.order[:copy(d.order, d.order[n:])]
}
