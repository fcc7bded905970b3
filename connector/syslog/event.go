package syslog

import (
	"bytes"
	"github.com/edge-agent/edge-agent/connector/syslog/message"
	"slices"
	"time"

	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
)

// The event JSON of one message, fields in this order, absent ones left
// out (parse_error only when the message did not parse, then without the
// parsed fields):
//
//	{"_ts":1700000000000,"_peer":"192.0.2.7:51234","format":"rfc5424",
//	 "facility":4,"facility_name":"auth","severity":2,"severity_name":"crit",
//	 "timestamp":"2003-10-11T22:14:15.003Z","hostname":"mymachine",
//	 "app_name":"su","procid":"77","msgid":"ID47",
//	 "structured_data":{"exampleSDID@32473":{"iut":"3"}},
//	 "msg":"'su root' failed","payload":"<34>1 2003-10-11T22:14:15.003Z ..."}
//
// _ts is the message's own time in milliseconds when it names an instant,
// else the time it was received. payload is the message as received
// (without framing and a trailing LF) in payload: raw; in payload: parsed
// it is left out, and a message that did not parse is all "msg".

var facilityNames = [...]string{"kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news",
	"uucp", "cron", "authpriv", "ftp", "ntp", "security", "console", "solaris-cron",
	"local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"}

var severityNames = [...]string{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"}

// encoder builds event JSON; it counts the invalid UTF-8 sequences it
// replaced. Not safe for concurrent use: one per reader goroutine.
type encoder struct {
	raw     bool
	invalid int64
}

// appendEvent appends the event JSON for msg, received at recv from peer
// (already a JSON string literal), parsed into m, or not when perr != nil.
func (e *encoder) appendEvent(dst, msg, peerJSON []byte, recv time.Time, m *message.Message, perr error) []byte {
	ts := recv
	if perr == nil && !m.Time.IsZero() {
		ts = m.Time
	}
	dst = append(dst, `{"_ts":`...)
	dst = jsonenc.AppendInt(dst, ts.UnixMilli())
	dst = append(dst, `,"_peer":`...)
	dst = append(dst, peerJSON...)
	if perr != nil {
		dst = append(dst, `,"parse_error":`...)
		dst = e.str(dst, []byte(perr.Error()))
		if !e.raw {
			dst = append(dst, `,"msg":`...)
			dst = e.str(dst, msg)
		}
	} else {
		dst = e.appendFields(dst, m)
	}
	if e.raw {
		dst = append(dst, `,"payload":`...)
		dst = e.str(dst, msg)
	}
	return append(dst, '}')
}

func (e *encoder) appendFields(dst []byte, m *message.Message) []byte {
	dst = append(dst, `,"format":"`...)
	dst = append(dst, m.Format...)
	dst = append(dst, `","facility":`...)
	dst = jsonenc.AppendInt(dst, int64(m.Facility))
	dst = append(dst, `,"facility_name":"`...)
	dst = append(dst, facilityNames[m.Facility]...)
	dst = append(dst, `","severity":`...)
	dst = jsonenc.AppendInt(dst, int64(m.Severity))
	dst = append(dst, `,"severity_name":"`...)
	dst = append(dst, severityNames[m.Severity]...)
	dst = append(dst, '"')
	for _, f := range [...]struct {
		key string
		v   []byte
	}{{`,"timestamp":`, m.Timestamp}, {`,"hostname":`, m.Hostname}, {`,"app_name":`, m.AppName},
		{`,"procid":`, m.ProcID}, {`,"msgid":`, m.MsgID}} {
		if f.v != nil {
			dst = append(dst, f.key...)
			dst = e.str(dst, f.v)
		}
	}
	if len(m.SD) > 0 {
		dst = append(dst, `,"structured_data":`...)
		dst = e.appendSD(dst, m.SD)
	}
	dst = append(dst, `,"msg":`...)
	return e.str(dst, m.Msg)
}

// appendSD writes the elements as an object of objects. An SD-ID given
// twice is merged into one object, and a parameter name given more than
// once for an SD-ID (RFC 5424 allows it) becomes an array of its values
// in order, so the JSON never holds a key twice.
func (e *encoder) appendSD(dst []byte, sd []message.SDElement) []byte {
	type param struct {
		name []byte
		vals [][]byte
	}
	type object struct {
		id     []byte
		params []param
	}
	var objs []object
	for _, el := range sd {
		oi := slices.IndexFunc(objs, func(o object) bool { return bytes.Equal(o.id, el.ID) })
		if oi < 0 {
			objs = append(objs, object{id: el.ID})
			oi = len(objs) - 1
		}
		o := &objs[oi]
		for _, p := range el.Params {
			pi := slices.IndexFunc(o.params, func(q param) bool { return bytes.Equal(q.name, p.Name) })
			if pi < 0 {
				o.params = append(o.params, param{name: p.Name})
				pi = len(o.params) - 1
			}
			o.params[pi].vals = append(o.params[pi].vals, p.Value)
		}
	}
	dst = append(dst, '{')
	for i, o := range objs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = e.str(dst, o.id)
		dst = append(dst, ":{"...)
		for k, p := range o.params {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = e.str(dst, p.name)
			dst = append(dst, ':')
			if len(p.vals) == 1 {
				dst = e.str(dst, p.vals[0])
				continue
			}
			dst = append(dst, '[')
			for n, v := range p.vals {
				if n > 0 {
					dst = append(dst, ',')
				}
				dst = e.str(dst, v)
			}
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

func (e *encoder) str(dst, s []byte) []byte {
	dst, bad := jsonenc.AppendString(dst, s)
	e.invalid += int64(bad)
	return dst
}
