package journald

import (
	"bytes"
	"strconv"
	"strings"
)

// entry is one journal entry as the reader queues it: what the event
// needs, copied out of the parser's buffer into one allocation.
type entry struct {
	cursor   string
	realtime int64 // __REALTIME_TIMESTAMP, µs since the epoch; 0 if absent
	msg      []byte
	fields   []field // the fields the event carries, in journal order
	// bytes is the entry's size in the export stream; mem what it holds.
	bytes int64
	mem   int
	// truncated counts the values cut to max-message-bytes.
	truncated int
}

// selector picks the fields an event carries.
type selector struct {
	include map[string]bool // nil: every field but MESSAGE and __*
	exclude map[string]bool
}

func newSelector(include, exclude []string) selector {
	var s selector
	if len(include) > 0 {
		s.include = make(map[string]bool, len(include))
		for _, f := range include {
			s.include[f] = true
		}
	}
	if len(exclude) > 0 {
		s.exclude = make(map[string]bool, len(exclude))
		for _, f := range exclude {
			s.exclude[f] = true
		}
	}
	return s
}

func (s selector) keep(name []byte) bool {
	if string(name) == "MESSAGE" {
		return false
	}
	if s.include != nil {
		if !s.include[string(name)] {
			return false
		}
	} else if bytes.HasPrefix(name, []byte("__")) {
		return false
	}
	return !s.exclude[string(name)]
}

// newEntry copies what the event needs out of a parsed entry.
func newEntry(r *rawEntry, sel selector) *entry {
	size := 0
	for _, f := range r.Fields {
		size += len(f.Name) + len(f.Value)
	}
	e := &entry{bytes: r.Bytes}
	buf := make([]byte, 0, size)
	keep := func(b []byte) []byte {
		at := len(buf)
		buf = append(buf, b...)
		return buf[at:len(buf):len(buf)]
	}
	for _, f := range r.Fields {
		if f.Truncated {
			e.truncated++
		}
		switch string(f.Name) {
		case "__CURSOR":
			e.cursor = string(f.Value)
		case "__REALTIME_TIMESTAMP":
			e.realtime, _ = strconv.ParseInt(string(f.Value), 10, 64)
		case "MESSAGE":
			e.msg = keep(f.Value)
		}
		if sel.keep(f.Name) {
			e.fields = append(e.fields, field{Name: keep(f.Name), Value: keep(f.Value), Truncated: f.Truncated})
		}
	}
	e.mem = cap(buf) + len(e.cursor) + 64*len(e.fields) + 128
	return e
}

// sameEntry reports whether two cursors name the same entry: the same
// sequence-number space and number when both carry them (s= and i=), else
// the same string.
func sameEntry(a, b string) bool {
	sa, ia := cursorPart(a, "s="), cursorPart(a, "i=")
	sb, ib := cursorPart(b, "s="), cursorPart(b, "i=")
	if sa != "" && ia != "" && sb != "" && ib != "" {
		return sa == sb && ia == ib
	}
	return a == b
}

// cursorPart returns the value of one key=value part of a cursor.
func cursorPart(c, key string) string {
	for part := range strings.SplitSeq(c, ";") {
		if v, ok := strings.CutPrefix(part, key); ok {
			return v
		}
	}
	return ""
}
