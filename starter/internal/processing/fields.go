package processing

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// fieldOp is set, set-expr, rename, move, copy, remove or keep-fields.
type fieldOp struct {
	n     *counts
	apply func(m map[string]any) error
	// applyNode, when set, is apply on the tagged model.
	applyNode func(top *node)
}

func (f *fieldOp) counts() *counts { return f.n }

func (f *fieldOp) runsTagged() bool { return f.applyNode != nil }

func (f *fieldOp) applyItem(it *item) verdict {
	if it.ev.tagged && f.applyNode != nil {
		f.applyNode(&it.ev.top)
		it.ev.dirty = true
		return pass
	}
	if err := f.apply(it.ev.mapFields()); err != nil {
		f.n.errs.Add(1)
	}
	it.ev.dirty = true
	return pass
}

type fieldProc struct{ *fieldOp }

func (f fieldProc) apply(it *item, _ time.Time) verdict { return f.applyItem(it) }

// pair is one from → to of rename, move or copy, or field → value of set.
type pair struct {
	from path
	to   path
	val  any // set's value: a string, boxed once
	x    *expression
}

// sortedPairs orders a map's entries so a step always runs the same way.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func newFieldOp(i int, s *Step, n *counts) (processor, error) {
	kind := n.kind
	var errs []error
	key := func(k string) string { return kind + "." + k }
	var pairs []pair
	mapping := map[string]map[string]string{"set": s.Set, "set-expr": s.SetExpr, "rename": s.Rename, "move": s.Move, "copy": s.Copy}[kind]
	for _, k := range sortedKeys(mapping) {
		v := mapping[k]
		if err := validPath(k); err != nil {
			errs = append(errs, stepError(i, key(k), err))
			continue
		}
		p := pair{from: parsePath(k), val: v}
		switch kind {
		case "set-expr":
			x, err := compileExpr(v, false)
			if err != nil {
				errs = append(errs, stepError(i, key(k), err))
				continue
			}
			p.x = x
		case "rename":
			if v == "" || strings.Contains(v, ".") {
				errs = append(errs, stepError(i, key(k), fmt.Errorf("new name %q: a plain name (rename keeps the field where it is; move takes it elsewhere)", v)))
				continue
			}
			p.to = append(append(path{}, p.from[:len(p.from)-1]...), v)
		case "move", "copy":
			if err := validPath(v); err != nil {
				errs = append(errs, stepError(i, key(k), err))
				continue
			}
			p.to = parsePath(v)
		}
		pairs = append(pairs, p)
	}
	var list []path
	for j, f := range append(s.Remove, s.KeepFields...) {
		if err := validPath(f); err != nil {
			errs = append(errs, stepError(i, fmt.Sprintf("%s[%d]", kind, j), err))
			continue
		}
		list = append(list, parsePath(f))
	}
	if (kind == "remove" || kind == "keep-fields") && len(list) == 0 && len(errs) == 0 {
		errs = append(errs, stepError(i, kind, errors.New("lists no field")))
	}
	if len(pairs) == 0 && mapping != nil && len(errs) == 0 {
		errs = append(errs, stepError(i, kind, errors.New("names no field")))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	op := &fieldOp{n: n}
	switch kind {
	case "set":
		op.apply = func(m map[string]any) error {
			for _, p := range pairs {
				p.from.set(m, p.val)
			}
			return nil
		}
		op.applyNode = func(top *node) {
			for _, p := range pairs {
				p.from.setNode(top, stringNode(p.val.(string)))
			}
		}
	case "set-expr":
		op.apply = func(m map[string]any) error {
			var first error
			for _, p := range pairs {
				v, err := p.x.eval(m)
				if err != nil {
					first = cmpOr(first, err)
					continue
				}
				p.from.set(m, jsonValue(v))
			}
			return first
		}
	case "rename", "move":
		op.apply = func(m map[string]any) error {
			for _, p := range pairs {
				if v, ok := p.from.get(m); ok {
					p.from.remove(m)
					p.to.set(m, v)
				}
			}
			return nil
		}
	case "copy":
		op.apply = func(m map[string]any) error {
			for _, p := range pairs {
				if v, ok := p.from.get(m); ok {
					p.to.set(m, deepCopy(v))
				}
			}
			return nil
		}
	case "remove":
		op.apply = func(m map[string]any) error {
			for _, p := range list {
				p.remove(m)
			}
			return nil
		}
	case "keep-fields":
		op.apply = func(m map[string]any) error {
			kept := make(map[string]any, len(list))
			for _, p := range list {
				if v, ok := p.get(m); ok {
					p.set(kept, v)
				}
			}
			clear(m)
			for k, v := range kept {
				m[k] = v
			}
			return nil
		}
	}
	return fieldProc{op}, nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// jsonValue turns an expression's result into something encoding/json
// writes as the operator expects (ints stay ints).
func jsonValue(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case time.Duration:
		return x.String()
	}
	return v
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	}
	return v
}

// truncater cuts text fields to max bytes, marker included.
type truncater struct {
	n      *counts
	fields []path
	max    int
	marker string
}

func newTruncate(i int, c *TruncateConfig, n *counts) (processor, error) {
	t := &truncater{n: n, max: c.MaxBytes, marker: defaultTruncMark}
	if c.Marker != nil {
		t.marker = *c.Marker
	}
	var errs []error
	fields := c.Fields
	if len(fields) == 0 {
		fields = []string{defaultField}
	}
	for j, f := range fields {
		if err := validPath(f); err != nil {
			errs = append(errs, stepError(i, fmt.Sprintf("truncate.fields[%d]", j), err))
		}
		t.fields = append(t.fields, parsePath(f))
	}
	if t.max <= len(t.marker) {
		errs = append(errs, stepError(i, "truncate.max-bytes", fmt.Errorf("must be more than the marker's %d bytes, got %d", len(t.marker), t.max)))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *truncater) counts() *counts { return t.n }

func (t *truncater) apply(it *item, _ time.Time) verdict {
	fields := it.ev.mapFields()
	for _, p := range t.fields {
		v, ok := p.get(fields)
		s, isText := v.(string)
		if !ok || !isText || len(s) <= t.max {
			continue
		}
		p.set(fields, cutUTF8(s, t.max-len(t.marker))+t.marker)
		it.ev.dirty = true
		t.n.counter("truncated").Add(1)
	}
	return pass
}

// cutUTF8 returns s's longest prefix of at most n bytes that ends on a
// character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
