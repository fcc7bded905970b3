package mqtt

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
)

// The event JSON of one message, fields in this order:
//
//	{"_ts":1700000000000,"topic":"site/line1/temp","qos":1,"retained":false,
//	 "message":"21.5"}
//
// _ts is when the agent received it, in milliseconds. The topic's key is
// topic-field (left out when ""). In payload: text the payload is the
// JSON string "message" (invalid UTF-8 replaced by U+FFFD). In payload:
// json it is the JSON value "payload", compacted to one line; a payload
// that is not JSON (or not UTF-8) is "message" as in text, with
// "parse_error" saying why.

// encoder builds event JSON. Not safe for concurrent use.
type encoder struct {
	json bool
	// topicKey is `"<topic-field>":`, empty to leave the topic out.
	topicKey []byte
	// invalid counts invalid UTF-8 sequences replaced; parseErrors the
	// json payloads that were not JSON.
	invalid, parseErrors int64
	scratch              bytes.Buffer
}

func newEncoder(payloadMode, topicField string) *encoder {
	e := &encoder{json: payloadMode == PayloadJSON}
	if topicField != "" {
		e.topicKey, _ = jsonenc.AppendString(nil, []byte(topicField))
		e.topicKey = append(e.topicKey, ':')
	}
	return e
}

// appendEvent appends the event JSON of one message to dst.
func (e *encoder) appendEvent(dst []byte, topic string, qos byte, retained bool, payload []byte, recv time.Time) []byte {
	dst = append(dst, `{"_ts":`...)
	dst = jsonenc.AppendInt(dst, recv.UnixMilli())
	if len(e.topicKey) > 0 {
		dst = append(dst, ',')
		dst = append(dst, e.topicKey...)
		dst = e.str(dst, []byte(topic))
	}
	dst = append(dst, `,"qos":`...)
	dst = jsonenc.AppendInt(dst, int64(qos))
	if retained {
		dst = append(dst, `,"retained":true`...)
	} else {
		dst = append(dst, `,"retained":false`...)
	}
	if e.json {
		perr := ""
		switch {
		case !utf8.Valid(payload):
			perr = "payload is not UTF-8"
		default:
			e.scratch.Reset()
			if err := json.Compact(&e.scratch, payload); err != nil {
				// The error is not kept: it may quote the payload, and
				// nothing a sender sends is echoed into errors.
				perr = "payload is not JSON"
			} else if e.scratch.Len() == 0 {
				perr = "payload is empty"
			}
		}
		if perr == "" {
			dst = append(dst, `,"payload":`...)
			dst = append(dst, e.scratch.Bytes()...)
			return append(dst, '}')
		}
		e.parseErrors++
		dst = append(dst, `,"parse_error":`...)
		dst = e.str(dst, []byte(perr))
	}
	dst = append(dst, `,"message":`...)
	dst = e.str(dst, payload)
	return append(dst, '}')
}

func (e *encoder) str(dst, s []byte) []byte {
	dst, n := jsonenc.AppendString(dst, s)
	e.invalid += int64(n)
	return dst
}
