package account

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// SeqMetaPrefix + input id is the WAL metadata key of the last "_seq"
// given to a row of that input (8 bytes, big-endian).
const SeqMetaPrefix = "input_seq:"

// Field names of a stamped row and of a gap record.
const (
	FieldInput = "_input"
	FieldSeq   = "_seq"
	FieldGap   = "_gap"
	// FieldTS is the event time (unix ms) the inputs write.
	FieldTS = "_ts"
	// FieldFile is the path the file input writes.
	FieldFile = "_file"
)

var (
	seqTag  = []byte(`,"` + FieldSeq + `":`)
	tsTag   = []byte(`"` + FieldTS + `":`)
	fileTag = []byte(`"` + FieldFile + `":"`)
)

// InputTag is the member `,"_input":"<id>"` for input id, made once per
// input and given to Stamp.
func InputTag(id string) []byte {
	q, _ := json.Marshal(id) // a string: cannot fail
	return append([]byte(`,"`+FieldInput+`":`), q...)
}

// Stamp appends to dst the payload with inputTag (InputTag) and
// `"_seq":<seq>` as its last members. ok=false, and dst unchanged, when
// the payload is not a JSON object (its first byte is not '{' or its last
// non-space byte not '}'): such a row is stored as it is and takes no
// number.
func Stamp(dst, payload, inputTag []byte, seq uint64) (out []byte, ok bool) {
	end := len(payload)
	for end > 0 && isSpace(payload[end-1]) {
		end--
	}
	if end < 2 || payload[0] != '{' || payload[end-1] != '}' {
		return dst, false
	}
	body := payload[:end-1]
	empty := len(bytes.TrimSpace(body[1:])) == 0
	dst = append(dst, body...)
	tag := inputTag
	if empty {
		tag = tag[1:] // no comma after '{'
	}
	dst = append(dst, tag...)
	dst = append(dst, seqTag...)
	dst = strconv.AppendUint(dst, seq, 10)
	return append(dst, '}'), true
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\r' || b == '\t' }

// Seq returns the "_seq" Stamp wrote into payload; ok=false when it has
// none.
func Seq(payload []byte) (uint64, bool) {
	i := bytes.LastIndex(payload, seqTag)
	if i < 0 {
		return 0, false
	}
	rest := payload[i+len(seqTag):]
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || n == len(rest) || rest[n] != '}' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	return v, err == nil
}

// TS returns the first top-level-looking "_ts" number of payload (the
// inputs write it near the start), 0 when there is none.
func TS(payload []byte) int64 {
	start, end, ok := numberAfter(payload, tsTag)
	if !ok {
		return 0
	}
	v, _ := strconv.ParseInt(string(payload[start:end]), 10, 64)
	return v
}

// numberAfter finds the first tag in payload and the integer after it.
func numberAfter(payload, tag []byte) (start, end int, ok bool) {
	i := bytes.Index(payload, tag)
	if i < 0 {
		return 0, 0, false
	}
	start = i + len(tag)
	end = start
	if end < len(payload) && payload[end] == '-' {
		end++
	}
	for end < len(payload) && payload[end] >= '0' && payload[end] <= '9' {
		end++
	}
	if end == start || (end == start+1 && payload[start] == '-') {
		return 0, 0, false
	}
	return start, end, true
}

// File returns the "_file" string of payload ("" when it has none).
func File(payload []byte) string {
	i := bytes.Index(payload, fileTag)
	if i < 0 {
		return ""
	}
	s := payload[i+len(fileTag)-1:]
	for j := 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			var out string
			if json.Unmarshal(s[:j+1], &out) != nil {
				return ""
			}
			return out
		}
	}
	return ""
}
