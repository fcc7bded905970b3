package processing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// event is the decoded event JSON object processors read and write: in
// the tagged model (top) while tagged is set, else in the map model
// (fields). Numbers stay json.Number so nothing is rounded on the way
// through.
type event struct {
	fields map[string]any
	top    node
	tagged bool
	// dirty: a processor changed the event, so it is encoded again;
	// otherwise the input's bytes go on unchanged.
	dirty bool
}

// mapFields is the event in the map model, moved there first from the
// tagged one; it stays there.
func (e *event) mapFields() map[string]any {
	if e.tagged {
		for i := range e.top.kids {
			e.fields[e.top.kids[i].key] = toAny(&e.top.kids[i].val)
		}
		e.top, e.tagged = node{}, false
	}
	return e.fields
}

// encode renders the event as encodeEvent does, from either model.
func (e *event) encode(size int) ([]byte, error) {
	if !e.tagged {
		return encodeEvent(e.fields, size)
	}
	b, err := appendNode(make([]byte, 0, size), &e.top, 0)
	if err != nil {
		return nil, fmt.Errorf("encode event JSON: %w", err)
	}
	return b, nil
}

// decodeEvent parses one event JSON object.
func decodeEvent(raw []byte) (map[string]any, error) {
	v, err := readJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("decode event JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("decode event JSON: not an object")
	}
	return m, nil
}

// numberOf is a JSON number's value: int64 or float64 when that keeps it
// exactly, so expressions compare and add numbers; json.Number otherwise
// (an integer beyond int64, a float that would be rounded), written back
// as it came.
func numberOf(s string, isInt bool) any {
	if isInt {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
		return json.Number(s)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && strconv.FormatFloat(f, 'g', -1, 64) == s {
		return f
	}
	return json.Number(s)
}

func isJSONNumber(v any) bool {
	_, ok := v.(json.Number)
	return ok
}

// encodeEvent renders fields as one line of JSON (no trailing newline),
// in a buffer of size bytes to start with (the caller's guess).
func encodeEvent(fields map[string]any, size int) ([]byte, error) {
	b, err := writeJSON(make([]byte, 0, size), fields)
	if err != nil {
		return nil, fmt.Errorf("encode event JSON: %w", err)
	}
	return b, nil
}

// encodeStd encodes what the codec has no case for (values an expression
// made) with encoding/json, HTML characters unescaped.
func encodeStd(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := b.Bytes()
	return out[:len(out)-1], nil
}

// path is a dotted field name split into its parts ("payload.level").
type path []string

func parsePath(s string) path { return strings.Split(s, ".") }

func (p path) String() string { return strings.Join(p, ".") }

// get returns the value at p, descending through objects.
func (p path) get(m map[string]any) (any, bool) {
	var cur any = m
	for _, k := range p {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// set writes v at p, creating objects on the way; a non-object in the way
// is replaced by one.
func (p path) set(m map[string]any, v any) {
	obj := m
	for _, k := range p[:len(p)-1] {
		next, ok := obj[k].(map[string]any)
		if !ok {
			next = make(map[string]any)
			obj[k] = next
		}
		obj = next
	}
	obj[p[len(p)-1]] = v
}

// remove deletes p and reports whether it was there.
func (p path) remove(m map[string]any) bool {
	obj := m
	for _, k := range p[:len(p)-1] {
		next, ok := obj[k].(map[string]any)
		if !ok {
			return false
		}
		obj = next
	}
	_, ok := obj[p[len(p)-1]]
	delete(obj, p[len(p)-1])
	return ok
}

// validPath reports a problem with a dotted field name, or nil.
func validPath(s string) error {
	if s == "" {
		return fmt.Errorf("empty field name")
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return fmt.Errorf("field %q has an empty part: write names separated by single dots", s)
		}
	}
	return nil
}

// text renders a field value as the text processors match on: strings
// as they are, everything else as its JSON.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return string(x)
	case nil:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
