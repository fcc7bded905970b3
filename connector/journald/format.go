package journald

import (
	"encoding/base64"
	"sync/atomic"

	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
)

// The event JSON of one entry:
//
//	{"_index":0,"_ts":1700000000000,"payload":"MESSAGE","_SYSTEMD_UNIT":"a.service",...}
//
// _ts is __REALTIME_TIMESTAMP in milliseconds; the journal fields follow in
// journal order. A value that is not valid UTF-8 is written as the file
// input writes such lines (each invalid sequence as U+FFFD, counted), and
// its exact bytes follow in base64 under the name with "_base64" appended
// ("payload_base64", "BIN_base64"): journal field names are upper case, so
// no journal field has that name. A multiline group is an array of such
// objects, _index 0..n-1, as for files.

// formatter builds event JSON; it belongs to the goroutine driving Poll.
type formatter struct {
	invalid atomic.Int64 // invalid UTF-8 sequences replaced by U+FFFD; read by Stats
}

// appendObject appends one entry's object.
func (f *formatter) appendObject(dst []byte, idx int, e *entry) []byte {
	dst = append(dst, `{"_index":`...)
	dst = jsonenc.AppendInt(dst, int64(idx))
	dst = append(dst, `,"_ts":`...)
	dst = jsonenc.AppendInt(dst, e.realtime/1000)
	dst = f.appendValue(dst, []byte("payload"), e.msg)
	for _, fl := range e.fields {
		dst = f.appendValue(dst, fl.Name, fl.Value)
	}
	return append(dst, '}')
}

// appendValue appends `,"name":"value"`, and `,"name_base64":"…"` when the
// value is not valid UTF-8.
func (f *formatter) appendValue(dst, name, v []byte) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...) // journal field names need no escaping
	dst = append(dst, '"', ':')
	var bad int
	dst, bad = jsonenc.AppendString(dst, v)
	if bad == 0 {
		return dst
	}
	f.invalid.Add(int64(bad))
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, `_base64":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, v)
	return append(dst, '"')
}

// appendGroup appends a multiline group: one object for a single entry,
// else an array.
func (f *formatter) appendGroup(dst []byte, g []*entry) []byte {
	if len(g) == 1 {
		return f.appendObject(dst, 0, g[0])
	}
	dst = append(dst, '[')
	for i, e := range g {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = f.appendObject(dst, i, e)
	}
	return append(dst, ']')
}
