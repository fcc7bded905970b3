package otlp

import (
	"encoding/base64"
	"encoding/hex"
	"math"
	"strconv"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
)

// The event JSON of one log record, fields in this order, empty ones
// left out:
//
//	{"_ts":1700000000000,"timestamp":"2023-11-14T22:13:20.123456789Z",
//	 "observed_timestamp":"…","severity_number":9,"severity_text":"INFO",
//	 "event_name":"…","body":<the body as JSON>,"attributes":{…},
//	 "trace_id":"<32 hex>","span_id":"<16 hex>","flags":1,
//	 "dropped_attributes_count":2,
//	 "resource":{…},"resource_schema_url":"…",
//	 "scope":{"name":"…","version":"…","attributes":{…}},"scope_schema_url":"…"}
//
// _ts is the record's time in milliseconds, else its observed time, else
// when the agent received it. AnyValues map to JSON: strings, booleans,
// integers and doubles as themselves (NaN and infinities as strings),
// bytes as base64 strings, arrays as arrays, key-value lists as objects.

// maxDepth bounds the nesting of AnyValues mapped (deeper: null), so a
// hostile request cannot make the mapping recurse without end.
const maxDepth = 64

// mapper turns records into events. Not safe for concurrent use.
type mapper struct {
	// invalid counts invalid UTF-8 sequences replaced.
	invalid int64
	// resource and scope are the current ones' JSON, built once per
	// ResourceLogs and ScopeLogs.
	resource, scope []byte
}

// request maps every record of req, calling emit with each event (a new
// slice) and the record's place for error messages; emit's error ends it.
func (m *mapper) request(req *collogspb.ExportLogsServiceRequest, recv time.Time, emit func(ev []byte) error) error {
	for _, rl := range req.GetResourceLogs() {
		m.resource = m.resource[:0]
		if attrs := rl.GetResource().GetAttributes(); len(attrs) > 0 {
			m.resource = append(m.resource, `,"resource":`...)
			m.resource = m.kvs(m.resource, attrs, 0)
		}
		if u := rl.GetSchemaUrl(); u != "" {
			m.resource = append(m.resource, `,"resource_schema_url":`...)
			m.resource = m.str(m.resource, u)
		}
		for _, sl := range rl.GetScopeLogs() {
			m.scope = m.scopeJSON(m.scope[:0], sl)
			for _, lr := range sl.GetLogRecords() {
				if err := emit(m.record(nil, lr, recv)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (m *mapper) scopeJSON(dst []byte, sl *logspb.ScopeLogs) []byte {
	s := sl.GetScope()
	if s.GetName() != "" || s.GetVersion() != "" || len(s.GetAttributes()) > 0 {
		dst = append(dst, `,"scope":{`...)
		n := len(dst)
		if s.GetName() != "" {
			dst = append(dst, `"name":`...)
			dst = m.str(dst, s.GetName())
		}
		if s.GetVersion() != "" {
			dst = comma(dst, n)
			dst = append(dst, `"version":`...)
			dst = m.str(dst, s.GetVersion())
		}
		if len(s.GetAttributes()) > 0 {
			dst = comma(dst, n)
			dst = append(dst, `"attributes":`...)
			dst = m.kvs(dst, s.GetAttributes(), 0)
		}
		dst = append(dst, '}')
	}
	if u := sl.GetSchemaUrl(); u != "" {
		dst = append(dst, `,"scope_schema_url":`...)
		dst = m.str(dst, u)
	}
	return dst
}

// comma adds a comma unless dst ends at n (the start of an object's
// members).
func comma(dst []byte, n int) []byte {
	if len(dst) > n {
		return append(dst, ',')
	}
	return dst
}

func (m *mapper) record(dst []byte, lr *logspb.LogRecord, recv time.Time) []byte {
	ts := recv
	switch {
	case lr.GetTimeUnixNano() != 0:
		ts = unixNano(lr.GetTimeUnixNano())
	case lr.GetObservedTimeUnixNano() != 0:
		ts = unixNano(lr.GetObservedTimeUnixNano())
	}
	dst = append(dst, `{"_ts":`...)
	dst = jsonenc.AppendInt(dst, ts.UnixMilli())
	if n := lr.GetTimeUnixNano(); n != 0 {
		dst = append(dst, `,"timestamp":"`...)
		dst = unixNano(n).UTC().AppendFormat(dst, time.RFC3339Nano)
		dst = append(dst, '"')
	}
	if n := lr.GetObservedTimeUnixNano(); n != 0 {
		dst = append(dst, `,"observed_timestamp":"`...)
		dst = unixNano(n).UTC().AppendFormat(dst, time.RFC3339Nano)
		dst = append(dst, '"')
	}
	if n := lr.GetSeverityNumber(); n != 0 {
		dst = append(dst, `,"severity_number":`...)
		dst = jsonenc.AppendInt(dst, int64(n))
	}
	if s := lr.GetSeverityText(); s != "" {
		dst = append(dst, `,"severity_text":`...)
		dst = m.str(dst, s)
	}
	if s := lr.GetEventName(); s != "" {
		dst = append(dst, `,"event_name":`...)
		dst = m.str(dst, s)
	}
	if b := lr.GetBody(); b != nil {
		dst = append(dst, `,"body":`...)
		dst = m.any(dst, b, 0)
	}
	if attrs := lr.GetAttributes(); len(attrs) > 0 {
		dst = append(dst, `,"attributes":`...)
		dst = m.kvs(dst, attrs, 0)
	}
	if id := lr.GetTraceId(); len(id) > 0 && !allZero(id) {
		dst = append(dst, `,"trace_id":"`...)
		dst = hex.AppendEncode(dst, id)
		dst = append(dst, '"')
	}
	if id := lr.GetSpanId(); len(id) > 0 && !allZero(id) {
		dst = append(dst, `,"span_id":"`...)
		dst = hex.AppendEncode(dst, id)
		dst = append(dst, '"')
	}
	if f := lr.GetFlags(); f != 0 {
		dst = append(dst, `,"flags":`...)
		dst = jsonenc.AppendUint(dst, uint64(f))
	}
	if n := lr.GetDroppedAttributesCount(); n != 0 {
		dst = append(dst, `,"dropped_attributes_count":`...)
		dst = jsonenc.AppendUint(dst, uint64(n))
	}
	dst = append(dst, m.resource...)
	dst = append(dst, m.scope...)
	return append(dst, '}')
}

func unixNano(n uint64) time.Time {
	if n > math.MaxInt64 {
		n = math.MaxInt64
	}
	return time.Unix(0, int64(n))
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func (m *mapper) str(dst []byte, s string) []byte {
	dst, n := jsonenc.AppendString(dst, []byte(s))
	m.invalid += int64(n)
	return dst
}

// kvs maps a key-value list to a JSON object.
func (m *mapper) kvs(dst []byte, kvs []*commonpb.KeyValue, depth int) []byte {
	dst = append(dst, '{')
	for i, kv := range kvs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = m.str(dst, kv.GetKey())
		dst = append(dst, ':')
		dst = m.any(dst, kv.GetValue(), depth+1)
	}
	return append(dst, '}')
}

// any maps one AnyValue; an unset one, or one nested deeper than
// maxDepth, is null.
func (m *mapper) any(dst []byte, v *commonpb.AnyValue, depth int) []byte {
	if v == nil || depth > maxDepth {
		return append(dst, "null"...)
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return m.str(dst, x.StringValue)
	case *commonpb.AnyValue_BoolValue:
		return strconv.AppendBool(dst, x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return jsonenc.AppendInt(dst, x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		f := x.DoubleValue
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return strconv.AppendQuote(dst, strconv.FormatFloat(f, 'g', -1, 64))
		}
		return strconv.AppendFloat(dst, f, 'g', -1, 64)
	case *commonpb.AnyValue_BytesValue:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, x.BytesValue)
		return append(dst, '"')
	case *commonpb.AnyValue_ArrayValue:
		dst = append(dst, '[')
		for i, e := range x.ArrayValue.GetValues() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = m.any(dst, e, depth+1)
		}
		return append(dst, ']')
	case *commonpb.AnyValue_KvlistValue:
		return m.kvs(dst, x.KvlistValue.GetValues(), depth)
	}
	return append(dst, "null"...)
}
