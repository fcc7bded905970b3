package account

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// maxAuditLine bounds one line Audit reads.
const maxAuditLine = 64 << 20

// Stream is what Audit found for one host and input.
type Stream struct {
	Host  string `json:"host"`
	Input string `json:"input"`
	// Max is the highest "_seq" a row or a gap range reached.
	Max uint64 `json:"max_seq"`
	// Rows counts the rows delivered with a "_seq" (a duplicate counts
	// each time).
	Rows int64 `json:"rows"`
	// GapRecords and GapRows count the gap records with a range and the
	// rows they cover; CountOnly the rows of records with no range.
	GapRecords int64 `json:"gap_records"`
	GapRows    int64 `json:"gap_rows"`
	CountOnly  int64 `json:"count_only_gap_rows,omitempty"`
	// LossRecords and UnreadBytes count the records of bytes the input
	// never read (a file rotated away or deleted first) and
	// those bytes: never rows, so outside 1..Max.
	LossRecords int64 `json:"loss_records,omitempty"`
	UnreadBytes int64 `json:"unread_bytes,omitempty"`
	// Duplicates counts sequence numbers covered more than once (by rows
	// sent again, or by a row and a gap record): at-least-once delivery
	// allows them.
	Duplicates int64 `json:"duplicates"`
	// Missing are the ranges of 1..Max that no row or gap covers.
	Missing [][2]uint64 `json:"missing,omitempty"`
	// BadRecords counts gap records whose count disagrees with their
	// range.
	BadRecords int64 `json:"bad_records,omitempty"`
}

// MissingCount is how many sequence numbers Missing holds.
func (s Stream) MissingCount() uint64 {
	var n uint64
	for _, m := range s.Missing {
		n += m[1] - m[0] + 1
	}
	return n
}

// Report is Audit's answer.
type Report struct {
	Streams []Stream `json:"streams"`
	// Lines counts the lines read; Unreadable those that are not JSON;
	// Unstamped the rows found with neither "_seq" nor "_gap" (stored
	// before agent.account was on, or not JSON objects).
	Lines      int64 `json:"lines"`
	Unreadable int64 `json:"unreadable"`
	Unstamped  int64 `json:"unstamped"`
}

// OK reports whether every stream is complete and consistent.
func (r Report) OK() bool {
	for _, s := range r.Streams {
		if !s.OK() {
			return false
		}
	}
	return true
}

// OK reports whether the stream has no missing number and no
// inconsistent gap record.
func (s Stream) OK() bool { return len(s.Missing) == 0 && s.BadRecords == 0 }

// entry is one row or gap record found.
type entry struct {
	host, input string
	lo, hi      uint64
	gap         bool
	count       int64
	unread      int64 // bytes never read; -1 when not such a record
}

// Audit reads delivered rows, one JSON value a line, as a sink writes
// them: the event object itself, or an envelope holding it as "payload"
// (an object, or a string of JSON). It checks, per host ("_host") and
// input ("_input"), that the rows' "_seq" and the gap records' ranges
// cover 1..max exactly once. Gap records always name their host; when no
// row of an input carries "_host" (add-host-fields off), its gap records
// are counted under no host too.
func Audit(r io.Reader) (Report, error) {
	var rep Report
	var entries []entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxAuditLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		rep.Lines++
		var v any
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		if d.Decode(&v) != nil {
			rep.Unreadable++
			continue
		}
		collect(v, &entries, &rep, 0)
	}
	if err := sc.Err(); err != nil {
		return rep, fmt.Errorf("audit: line %d: %w", rep.Lines+1, err)
	}
	rep.Streams = streams(entries)
	return rep, nil
}

// collect finds the stamped rows and gap records in v.
func collect(v any, out *[]entry, rep *Report, depth int) {
	if depth > 3 {
		return
	}
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			collect(e, out, rep, depth+1)
		}
	case map[string]any:
		if e, ok := parseEntry(x); ok {
			*out = append(*out, e)
			return
		}
		switch p := x["payload"].(type) {
		case map[string]any, []any:
			collect(p, out, rep, depth+1)
			return
		case string:
			var inner any
			d := json.NewDecoder(bytes.NewReader([]byte(p)))
			d.UseNumber()
			if d.Decode(&inner) == nil {
				if _, ok := inner.(map[string]any); ok {
					collect(inner, out, rep, depth+1)
					return
				}
			}
		}
		if _, standIn := x["edge_agent_gap"]; !standIn {
			rep.Unstamped++
		}
	default:
		rep.Unstamped++ // a row that is not an object
	}
}

func parseEntry(m map[string]any) (entry, bool) {
	input, _ := m[FieldInput].(string)
	host, _ := m["_host"].(string)
	if g, _ := m[FieldGap].(bool); g {
		e := entry{host: host, input: input, gap: true}
		e.lo, _ = number(m["first_seq"])
		e.hi, _ = number(m["last_seq"])
		c, _ := number(m["count"])
		e.count = int64(c)
		e.unread = -1
		if _, ok := m["offsets"]; ok {
			b, _ := number(m["bytes"])
			e.unread = int64(b)
		}
		return e, true
	}
	seq, ok := number(m[FieldSeq])
	if !ok || seq == 0 {
		return entry{}, false
	}
	return entry{host: host, input: input, lo: seq, hi: seq, count: 1}, true
}

func number(v any) (uint64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	var u uint64
	_, err := fmt.Sscan(n.String(), &u)
	return u, err == nil
}

// streams sorts the entries into streams and sweeps each for missing and
// duplicate numbers.
func streams(entries []entry) []Stream {
	hosted := map[string]bool{} // inputs whose rows carry _host
	for _, e := range entries {
		if !e.gap && e.host != "" {
			hosted[e.input] = true
		}
	}
	type key struct{ host, input string }
	by := map[key][]entry{}
	for _, e := range entries {
		if e.gap && !hosted[e.input] {
			e.host = ""
		}
		k := key{e.host, e.input}
		by[k] = append(by[k], e)
	}
	out := make([]Stream, 0, len(by))
	for k, es := range by {
		s := Stream{Host: k.host, Input: k.input}
		var ranges [][2]uint64
		for _, e := range es {
			switch {
			case !e.gap:
				s.Rows++
			case e.lo == 0 && e.hi == 0:
				s.CountOnly += e.count
				if e.unread >= 0 {
					s.LossRecords++
					s.UnreadBytes += e.unread
				}
				continue
			case e.hi < e.lo || e.lo == 0 || int64(e.hi-e.lo+1) != e.count:
				s.BadRecords++
				continue
			default:
				s.GapRecords++
				s.GapRows += e.count
			}
			ranges = append(ranges, [2]uint64{e.lo, e.hi})
		}
		slices.SortFunc(ranges, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
		var hi uint64
		for _, r := range ranges {
			if r[0] > hi+1 {
				s.Missing = append(s.Missing, [2]uint64{hi + 1, r[0] - 1})
			}
			if r[0] <= hi {
				s.Duplicates += int64(min(r[1], hi) - r[0] + 1)
			}
			hi = max(hi, r[1])
		}
		s.Max = hi
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Stream) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Input, b.Input))
	})
	return out
}
