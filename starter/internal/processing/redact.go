package processing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Redact actions.
const (
	actionMask   = "mask"
	actionHash   = "hash"
	actionRemove = "remove"
)

// hashPrefix starts a hashed value, so a reader knows it is one.
const hashPrefix = "hmac:"

type redactor struct {
	n         *counts
	detectors []*detector
	hits      []*atomic.Uint64 // per detector
	pairHits  *atomic.Uint64   // secret-pair on an object key, or nil
	action    string
	keepLast  []int // per detector
	key       []byte
	fields    []path
}

func newRedactor(i int, c *RedactConfig, n *counts) (processor, error) {
	r := &redactor{n: n, action: strings.ToLower(c.Action)}
	var errs []error
	fail := func(key string, err error) { errs = append(errs, stepError(i, "redact."+key, err)) }
	if r.action == "" {
		r.action = actionMask
	}
	switch r.action {
	case actionMask, actionRemove:
	case actionHash:
		key, err := readHashKey(c.HashKeyFile)
		if err != nil {
			fail("hash-key-file", err)
		}
		r.key = key
	default:
		fail("action", fmt.Errorf("%q: use mask, hash or remove", c.Action))
	}
	if c.KeepLast != nil && *c.KeepLast < 0 {
		fail("keep-last", fmt.Errorf("must be >= 0, got %d", *c.KeepLast))
	}
	builtin := builtinDetectors()
	var picked []*detector
	for j, name := range c.Detectors {
		k := slices.IndexFunc(builtin, func(d *detector) bool { return d.name == strings.ToLower(name) })
		if k < 0 {
			fail(fmt.Sprintf("detectors[%d]", j), fmt.Errorf("unknown detector %q: use one of %s, or patterns for your own", name, strings.Join(DetectorNames(), ", ")))
			continue
		}
		picked = append(picked, builtin[k])
	}
	// Built-ins run in their own order, whatever the list's.
	for _, d := range builtin {
		if slices.Contains(picked, d) {
			r.detectors = append(r.detectors, d)
		}
	}
	for _, name := range sortedKeys(c.Patterns) {
		if slices.Contains(DetectorNames(), name) {
			fail("patterns."+name, fmt.Errorf("%q is a built-in detector's name: pick another", name))
			continue
		}
		re, err := compilePattern(c.Patterns[name])
		if err != nil {
			fail("patterns."+name, err)
			continue
		}
		r.detectors = append(r.detectors, &detector{name: name, re: re, maybe: func(string) bool { return true }})
	}
	if len(r.detectors) == 0 && len(errs) == 0 {
		fail("detectors", errors.New("no detector: list built-in detectors or give patterns"))
	}
	fields := c.Fields
	if len(fields) == 0 {
		fields = []string{defaultField}
	}
	for j, f := range fields {
		if err := validPath(f); err != nil {
			fail(fmt.Sprintf("fields[%d]", j), err)
		}
		r.fields = append(r.fields, parsePath(f))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, d := range r.detectors {
		r.hits = append(r.hits, n.counter("redacted_"+d.name))
		keep := 0
		if d.name == "credit-card" {
			keep = defaultCardKeep
		}
		if c.KeepLast != nil {
			keep = *c.KeepLast
		}
		r.keepLast = append(r.keepLast, keep)
		if d.name == "secret-pair" {
			r.pairHits = r.hits[len(r.hits)-1]
		}
	}
	return r, nil
}

// readHashKey reads hash's key: the same key on every host makes the same
// value hash the same way, so joins across hosts still work.
func readHashKey(file string) ([]byte, error) {
	if file == "" {
		return nil, errors.New("action hash needs a key file: give hash-key-file")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read the hash key: %w", err)
	}
	b = []byte(strings.TrimSpace(string(b)))
	if len(b) < minHashKeyBytes {
		return nil, fmt.Errorf("hash key file %s holds %d bytes; use at least %d random bytes", file, len(b), minHashKeyBytes)
	}
	return b, nil
}

func (r *redactor) counts() *counts { return r.n }

func (r *redactor) runsTagged() bool { return true }

func (r *redactor) apply(it *item, _ time.Time) verdict {
	if it.ev.tagged {
		for _, p := range r.fields {
			if n, ok := p.getNode(&it.ev.top); ok && r.node(n) {
				it.ev.dirty = true
			}
		}
		return pass
	}
	fields := it.ev.mapFields()
	for _, p := range r.fields {
		v, ok := p.get(fields)
		if !ok {
			continue
		}
		if nv, changed := r.value(v); changed {
			p.set(fields, nv)
			it.ev.dirty = true
		}
	}
	return pass
}

// node is value on the tagged model, in place.
func (r *redactor) node(n *node) bool {
	changed := false
	switch n.kind {
	case kindString:
		if t, c := r.text(n.s); c {
			*n = stringNode(t)
			return true
		}
	case kindObject:
		for i := range n.kids {
			e := &n.kids[i]
			if r.pairHits != nil && secretKeyRE.MatchString(e.key) {
				if s := nodeText(&e.val); s != "" {
					e.val = stringNode(r.replace(s, r.keepOf("secret-pair")))
					r.pairHits.Add(1)
					changed = true
				}
				continue
			}
			if r.node(&e.val) {
				changed = true
			}
		}
	case kindArray:
		for i := range n.kids {
			if r.node(&n.kids[i].val) {
				changed = true
			}
		}
	}
	return changed
}

// value redacts every string inside v; objects and lists are changed in
// place.
func (r *redactor) value(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if t, changed := r.text(x); changed {
			return t, true
		}
		return v, false // v, not x: no new interface value
	case map[string]any:
		changed := false
		for k, e := range x {
			if r.pairHits != nil && secretKeyRE.MatchString(k) {
				if s := text(e); s != "" {
					x[k] = r.replace(s, r.keepOf("secret-pair"))
					r.pairHits.Add(1)
					changed = true
				}
				continue
			}
			if ne, c := r.value(e); c {
				x[k] = ne
				changed = true
			}
		}
		return x, changed
	case []any:
		changed := false
		for k, e := range x {
			if ne, c := r.value(e); c {
				x[k] = ne
				changed = true
			}
		}
		return x, changed
	}
	return v, false
}

func (r *redactor) keepOf(name string) int {
	for k, d := range r.detectors {
		if d.name == name {
			return r.keepLast[k]
		}
	}
	return 0
}

// text runs every detector over s.
func (r *redactor) text(s string) (string, bool) {
	changed := false
	for k, d := range r.detectors {
		if !d.maybe(s) {
			continue
		}
		locs := d.matches(s)
		if len(locs) == 0 {
			continue
		}
		var b strings.Builder
		last, hit := 0, false
		for _, loc := range locs {
			start, end := loc[0], loc[1]
			if start < last {
				continue
			}
			b.WriteString(s[last:start])
			b.WriteString(r.replace(s[start:end], r.keepLast[k]))
			last, hit = end, true
			r.hits[k].Add(1)
		}
		if !hit {
			continue
		}
		b.WriteString(s[last:])
		s = b.String()
		changed = true
	}
	return s, changed
}

// replace is what a match becomes under the action.
func (r *redactor) replace(m string, keepLast int) string {
	switch r.action {
	case actionRemove:
		return ""
	case actionHash:
		h := hmac.New(sha256.New, r.key)
		h.Write([]byte(m))
		return hashPrefix + hex.EncodeToString(h.Sum(nil)[:16])
	}
	n := utf8.RuneCountInString(m)
	if keepLast >= n {
		keepLast = 0 // a value this short is masked whole
	}
	tail := m
	for range n - keepLast {
		_, size := utf8.DecodeRuneInString(tail)
		tail = tail[size:]
	}
	return strings.Repeat("*", n-keepLast) + tail
}
