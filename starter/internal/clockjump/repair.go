package clockjump

import (
	"bytes"
	"strconv"
)

var (
	tsTag       = []byte(`"_ts":`)
	repairedTag = []byte(`,"_ts_repaired":true}`)
)

// Repair appends to dst payload with its first "_ts" number moved by ms
// and "_ts_repaired": true as its last member. ok=false, dst unchanged,
// when payload is not an object with a "_ts" integer.
func Repair(dst, payload []byte, ms int64) (out []byte, ok bool) {
	end := len(bytes.TrimRight(payload, " \t\r\n"))
	if end < 2 || payload[0] != '{' || payload[end-1] != '}' {
		return dst, false
	}
	i := bytes.Index(payload[:end], tsTag)
	if i < 0 {
		return dst, false
	}
	start := i + len(tsTag)
	j := start
	if j < end && payload[j] == '-' {
		j++
	}
	for j < end && payload[j] >= '0' && payload[j] <= '9' {
		j++
	}
	ts, err := strconv.ParseInt(string(payload[start:j]), 10, 64)
	if err != nil || j >= end || (payload[j] != ',' && payload[j] != '}' && payload[j] != ' ') {
		return dst, false
	}
	dst = append(dst, payload[:start]...)
	dst = strconv.AppendInt(dst, ts+ms, 10)
	dst = append(dst, payload[j:end-1]...)
	return append(dst, repairedTag...), true
}
