package processing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// event is the decoded event JSON object processors read and write.
// Numbers stay json.Number so nothing is rounded on the way through.
type event struct {
	fields map[string]any
	// dirty: a processor changed fields, so the event is encoded again;
	// otherwise the input's bytes go on unchanged.
	dirty bool
}

// decodeEvent parses one event JSON object.
func decodeEvent(raw []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode event JSON: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("decode event JSON: not an object")
	}
	numbers(m)
	return m, nil
}

// numbers turns the json.Numbers inside v into int64 or float64 where
// that keeps their value, so expressions compare and add them as numbers;
// others (an integer beyond int64, a float that would round) stay
// json.Number and are written back exactly.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(string(x), 64); err == nil && strconv.FormatFloat(f, 'g', -1, 64) == strings.TrimLeft(string(x), "+") {
			return f
		}
		return x
	case map[string]any:
		for k, e := range x {
			switch e.(type) {
			case json.Number, map[string]any, []any:
				x[k] = numbers(e)
			}
		}
	case []any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	}
	return v
}

// encodeEvent renders fields as one line of JSON (no trailing newline);
// HTML characters are not escaped, so text reads as it was written.
func encodeEvent(fields map[string]any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fields); err != nil {
		return nil, fmt.Errorf("encode event JSON: %w", err)
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
