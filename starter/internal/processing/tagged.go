package processing

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The tagged event model: a JSON value as a node whose kind says what it
// holds, strings kept as slices of the text read (escaped ones in one
// buffer per text), numbers as their JSON text, an object's members
// sorted by key. Reading and writing it costs no map and no boxed value
// per member. The steps that have a case for it (parse json, drop/keep,
// redact, set) run on it; any other step first turns the event into the
// map model (event.mapFields), where it stays. Both models read, change
// and write an event the same way, byte for byte.

// kind is what a node holds.
type kind uint8

const (
	kindNull kind = iota
	kindFalse
	kindTrue
	kindString
	kindInt    // s: an integer's JSON text
	kindFloat  // s: a number's JSON text with a fraction or an exponent
	kindObject // kids: members sorted by key, each key once
	kindArray  // kids: elements (keys empty), in order
)

type node struct {
	kind kind
	// plain: a string needs no escaping (ASCII read without escapes), so
	// it is written by copy; keyPlain: so does the key of the member this
	// is the value of. False is always safe.
	plain    bool
	keyPlain bool
	s        string
	kids     []entry
}

// entry is an object's member or an array's element.
type entry struct {
	key string
	val node
}

func stringNode(s string) node { return node{kind: kindString, s: s} }

// find is the index of key among an object's members, or where it would
// be inserted.
func (n *node) find(key string) (int, bool) {
	for i := range n.kids {
		if n.kids[i].key == key {
			return i, true
		}
	}
	for i := range n.kids {
		if n.kids[i].key > key {
			return i, false
		}
	}
	return len(n.kids), false
}

// put sets an object's member.
func (n *node) put(key string, v node) {
	v.keyPlain = false // v may have been another key's value
	i, ok := n.find(key)
	if ok {
		n.kids[i].val = v
		return
	}
	// kids may share its array's room with other objects' (the reader's
	// store): Insert copies when the capacity is used up, which it is.
	n.kids = slices.Insert(n.kids, i, entry{key: key, val: v})
}

// getNode returns the node at p within the object top.
func (p path) getNode(top *node) (*node, bool) {
	cur := top
	for _, k := range p {
		if cur.kind != kindObject {
			return nil, false
		}
		i, ok := cur.find(k)
		if !ok {
			return nil, false
		}
		cur = &cur.kids[i].val
	}
	return cur, true
}

// setNode writes v at p within the object top, creating objects on the
// way; a non-object in the way is replaced by one (as path.set).
func (p path) setNode(top *node, v node) {
	obj := top
	for _, k := range p[:len(p)-1] {
		i, ok := obj.find(k)
		if !ok {
			obj.kids = slices.Insert(obj.kids, i, entry{key: k, val: node{kind: kindObject}})
		} else if obj.kids[i].val.kind != kindObject {
			obj.kids[i].val = node{kind: kindObject}
		}
		obj = &obj.kids[i].val
	}
	obj.put(p[len(p)-1], v)
}

// docStore is the room the reader keeps nodes' members in, reused from
// one event to the next.
type docStore struct {
	kids  []entry // every object's and array's members, one after another
	stack []entry // members of the objects and arrays being read
}

// maxStoreEntries bounds the room a store keeps for the next event.
const maxStoreEntries = 4096

// reset lets go of what the last event's nodes referenced.
func (st *docStore) reset() {
	// Not cleared: what the room still references is bounded by it, and
	// clearing costs a write barrier per pointer while the collector runs.
	if cap(st.kids) > maxStoreEntries {
		st.kids = nil
	}
	st.kids = st.kids[:0]
	if cap(st.stack) > maxStoreEntries {
		st.stack = nil
	}
	st.stack = st.stack[:0]
}

// docReader reads JSON into nodes, with the map model's reader's rules
// and errors (jsonReader's strings, numbers' text, depth bound).
type docReader struct {
	jsonReader
	st *docStore
}

// readDoc parses exactly one JSON value from s (surrounding space
// allowed), as readJSONString does.
func readDoc(s string, st *docStore) (node, error) {
	r := docReader{jsonReader: jsonReader{s: s}, st: st}
	v, err := r.value()
	if err != nil {
		return node{}, err
	}
	if err := r.end(); err != nil {
		return node{}, err
	}
	return v, nil
}

// readDocObject parses exactly one JSON object, as readObjectInto does.
func readDocObject(s string, st *docStore) (node, error) {
	r := docReader{jsonReader: jsonReader{s: s}, st: st}
	r.space()
	if r.i >= len(r.s) || r.s[r.i] != '{' {
		return node{}, errNotObject
	}
	v, err := r.object()
	if err != nil {
		return node{}, err
	}
	if err := r.end(); err != nil {
		return node{}, err
	}
	return v, nil
}

func (r *docReader) value() (node, error) {
	r.space()
	if r.i >= len(r.s) {
		return node{}, r.fail()
	}
	switch c := r.s[r.i]; {
	case c == '{':
		return r.object()
	case c == '[':
		return r.array()
	case c == '"':
		s, plain, err := r.strPlain()
		return node{kind: kindString, s: s, plain: plain}, err
	case c == 't':
		return node{kind: kindTrue}, r.word("true")
	case c == 'f':
		return node{kind: kindFalse}, r.word("false")
	case c == 'n':
		return node{}, r.word("null")
	case c == '-' || c >= '0' && c <= '9':
		s, isInt, err := r.scanNumber()
		if isInt {
			return node{kind: kindInt, s: s}, err
		}
		return node{kind: kindFloat, s: s}, err
	}
	return node{}, r.fail()
}

func (r *docReader) object() (node, error) {
	if r.depth++; r.depth > maxDepth {
		return node{}, fmt.Errorf("JSON nested deeper than %d at byte %d", maxDepth, r.i)
	}
	r.i++ // {
	r.space()
	if r.i < len(r.s) && r.s[r.i] == '}' {
		r.i++
		r.depth--
		return node{kind: kindObject}, nil
	}
	mark := len(r.st.stack)
	for {
		r.space()
		if r.i >= len(r.s) || r.s[r.i] != '"' {
			return node{}, r.fail()
		}
		k, keyPlain, err := r.strPlain()
		if err != nil {
			return node{}, err
		}
		r.space()
		if r.i >= len(r.s) || r.s[r.i] != ':' {
			return node{}, r.fail()
		}
		r.i++
		v, err := r.value()
		if err != nil {
			return node{}, err
		}
		v.keyPlain = keyPlain
		r.st.stack = append(r.st.stack, entry{key: k, val: v})
		if end, err := r.separator('}'); err != nil {
			return node{}, err
		} else if end {
			return node{kind: kindObject, kids: r.keep(mark, true)}, nil
		}
	}
}

func (r *docReader) array() (node, error) {
	if r.depth++; r.depth > maxDepth {
		return node{}, fmt.Errorf("JSON nested deeper than %d at byte %d", maxDepth, r.i)
	}
	r.i++ // [
	r.space()
	if r.i < len(r.s) && r.s[r.i] == ']' {
		r.i++
		r.depth--
		return node{kind: kindArray}, nil
	}
	mark := len(r.st.stack)
	for {
		v, err := r.value()
		if err != nil {
			return node{}, err
		}
		r.st.stack = append(r.st.stack, entry{val: v})
		if end, err := r.separator(']'); err != nil {
			return node{}, err
		} else if end {
			return node{kind: kindArray, kids: r.keep(mark, false)}, nil
		}
	}
}

// separator reads what follows a member: a comma (more follow) or the
// container's closing byte (end, one level up).
func (r *docReader) separator(closing byte) (end bool, err error) {
	r.space()
	if r.i >= len(r.s) {
		return true, r.fail()
	}
	switch r.s[r.i] {
	case ',':
		r.i++
		return false, nil
	case closing:
		r.i++
		r.depth--
		return true, nil
	}
	return true, r.fail()
}

// keep moves the members read since mark off the stack into the store;
// an object's are sorted by key, a repeated key's last value kept (as a
// map keeps it).
func (r *docReader) keep(mark int, object bool) []entry {
	ms := r.st.stack[mark:]
	start := len(r.st.kids)
	if !object || sortedUnique(ms) {
		r.st.kids = append(r.st.kids, ms...)
	} else {
		r.st.kids = appendSorted(r.st.kids, ms)
	}
	end := len(r.st.kids)
	if object && r.depth == 0 {
		// An event's or a parsed text's own members: room for the
		// fields steps add, without a copy.
		r.st.kids = append(r.st.kids, make([]entry, topRoom)...)
	}
	r.st.stack = r.st.stack[:mark]
	// Capped, so a member put later copies rather than overwrite the next
	// object's.
	return r.st.kids[start:end:len(r.st.kids)]
}

// topRoom is the members a top-level object can gain in place.
const topRoom = 4

// appendSorted appends ms sorted by key, of a repeated key the last;
// the members are moved once, in order, since every move of one costs
// write barriers while the collector runs.
func appendSorted(dst []entry, ms []entry) []entry {
	var small [32]int
	order := small[:0]
	if len(ms) > len(small) {
		order = make([]int, 0, len(ms))
	}
	for i := range ms {
		order = append(order, i)
	}
	// Stable, so of equal keys the last read is last.
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(ms[a].key, ms[b].key) })
	for k, i := range order {
		if k+1 < len(order) && ms[order[k+1]].key == ms[i].key {
			continue
		}
		dst = append(dst, ms[i])
	}
	return dst
}

func sortedUnique(ms []entry) bool {
	for i := 1; i < len(ms); i++ {
		if ms[i-1].key >= ms[i].key {
			return false
		}
	}
	return true
}

// appendNode writes n as appendValue writes the map model's value for
// it, and fails where that fails (nesting).
func appendNode(dst []byte, n *node, depth int) ([]byte, error) {
	if depth > maxDepth {
		return dst, fmt.Errorf("value nested deeper than %d", maxDepth)
	}
	switch n.kind {
	case kindNull:
		return append(dst, "null"...), nil
	case kindFalse:
		return append(dst, "false"...), nil
	case kindTrue:
		return append(dst, "true"...), nil
	case kindString:
		if n.plain {
			dst = append(dst, '"')
			dst = append(dst, n.s...)
			return append(dst, '"'), nil
		}
		return appendString(dst, n.s), nil
	case kindInt:
		// The integer's text is the text its value prints as, but for -0.
		if n.s == "-0" {
			return append(dst, '0'), nil
		}
		return append(dst, n.s...), nil
	case kindFloat:
		if f, ok := exactFloat(n.s); ok {
			return appendFloat(dst, f)
		}
		return append(dst, n.s...), nil
	case kindObject:
		dst = append(dst, '{')
		for i := range n.kids {
			if i > 0 {
				dst = append(dst, ',')
			}
			if e := &n.kids[i]; e.val.keyPlain {
				dst = append(dst, '"')
				dst = append(dst, e.key...)
				dst = append(dst, '"', ':')
			} else {
				dst = appendString(dst, e.key)
				dst = append(dst, ':')
			}
			var err error
			if dst, err = appendNode(dst, &n.kids[i].val, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case kindArray:
		dst = append(dst, '[')
		for i := range n.kids {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendNode(dst, &n.kids[i].val, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	return dst, fmt.Errorf("node of unknown kind %d", n.kind)
}

// exactFloat is a non-integer number's float64 when that keeps it
// exactly (numberOf's rule).
func exactFloat(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil && strconv.FormatFloat(f, 'g', -1, 64) == s
}

// toAny is n in the map model, as readJSON reads its text.
func toAny(n *node) any {
	switch n.kind {
	case kindFalse:
		return false
	case kindTrue:
		return true
	case kindString:
		return n.s
	case kindInt:
		if v, ok := smallInt(n.s); ok {
			return v
		}
		return numberOf(n.s, true)
	case kindFloat:
		return numberOf(n.s, false)
	case kindObject:
		m := make(map[string]any, max(len(n.kids), 8))
		for i := range n.kids {
			m[n.kids[i].key] = toAny(&n.kids[i].val)
		}
		return m
	case kindArray:
		a := make([]any, len(n.kids))
		for i := range n.kids {
			a[i] = toAny(&n.kids[i].val)
		}
		return a
	}
	return nil
}

// nodeText is text(toAny(n)) without building the value when it is a
// scalar.
func nodeText(n *node) string {
	switch n.kind {
	case kindString:
		return n.s
	case kindNull:
		return ""
	case kindObject, kindArray:
		return text(toAny(n))
	}
	b, err := appendNode(nil, n, 0)
	if err != nil {
		return text(toAny(n))
	}
	return string(b)
}
