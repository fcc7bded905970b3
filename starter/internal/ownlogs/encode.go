package ownlogs

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

// record is the event the agent's log hub encodes for each record.
type record struct {
	Time      string         `json:"time"`
	Level     string         `json:"level"`
	Msg       string         `json:"msg"`
	Component string         `json:"component"`
	Attrs     map[string]any `json:"attrs"`
}

// Resource names the agent in every request.
type Resource struct {
	ServiceName, InstanceID, Version, Host string
}

// encode makes one OTLP/HTTP request body of recs. A record that is not
// the hub's JSON is shipped with its bytes as the body.
func encode(res Resource, recs [][]byte) ([]byte, error) {
	lrs := make([]*logspb.LogRecord, 0, len(recs))
	for _, raw := range recs {
		lrs = append(lrs, logRecord(raw))
	}
	req := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: &resourcepb.Resource{Attributes: resourceAttrs(res)},
		ScopeLogs: []*logspb.ScopeLogs{{
			Scope:      &commonpb.InstrumentationScope{Name: "edge-agent", Version: res.Version},
			LogRecords: lrs,
		}},
	}}}
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode own logs: %w", err)
	}
	return b, nil
}

func resourceAttrs(res Resource) []*commonpb.KeyValue {
	var kvs []*commonpb.KeyValue
	add := func(k, v string) {
		if v != "" {
			kvs = append(kvs, &commonpb.KeyValue{Key: k, Value: str(v)})
		}
	}
	add("service.name", res.ServiceName)
	add("service.instance.id", res.InstanceID)
	add("service.version", res.Version)
	add("host.name", res.Host)
	return kvs
}

func logRecord(raw []byte) *logspb.LogRecord {
	var r record
	if err := json.Unmarshal(raw, &r); err != nil {
		// proto strings are UTF-8: a record is never refused for its bytes.
		return &logspb.LogRecord{Body: str(strings.ToValidUTF8(string(raw), "\uFFFD"))}
	}
	lr := &logspb.LogRecord{Body: str(r.Msg), SeverityText: r.Level, SeverityNumber: severity(r.Level)}
	if t, err := time.Parse(time.RFC3339Nano, r.Time); err == nil {
		lr.TimeUnixNano = uint64(t.UnixNano())
	}
	if r.Component != "" {
		lr.Attributes = append(lr.Attributes, &commonpb.KeyValue{Key: "component", Value: str(r.Component)})
	}
	for _, k := range sortedKeys(r.Attrs) {
		if k == "component" && r.Component != "" {
			continue // the logger's own component attribute, said once
		}
		lr.Attributes = append(lr.Attributes, &commonpb.KeyValue{Key: k, Value: anyValue(r.Attrs[k], 0)})
	}
	return lr
}

// severity maps slog's level names (WARN, ERROR+2…) to OTLP's numbers.
func severity(level string) logspb.SeverityNumber {
	base, _, _ := strings.Cut(strings.ToUpper(level), "+")
	base, _, _ = strings.Cut(base, "-")
	switch base {
	case "DEBUG":
		return logspb.SeverityNumber_SEVERITY_NUMBER_DEBUG
	case "INFO":
		return logspb.SeverityNumber_SEVERITY_NUMBER_INFO
	case "WARN":
		return logspb.SeverityNumber_SEVERITY_NUMBER_WARN
	case "ERROR":
		return logspb.SeverityNumber_SEVERITY_NUMBER_ERROR
	}
	return logspb.SeverityNumber_SEVERITY_NUMBER_UNSPECIFIED
}

func str(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

// maxDepth is the deepest an attribute nests before it is shipped as
// text: a receiver's decoder limits nesting too.
const maxDepth = 32

// anyValue maps a decoded JSON value to an OTLP value.
func anyValue(v any, depth int) *commonpb.AnyValue {
	if depth >= maxDepth {
		b, _ := json.Marshal(v)
		return str(string(b))
	}
	switch x := v.(type) {
	case string:
		return str(x)
	case bool:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: x}}
	case float64:
		if x == float64(int64(x)) {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(x)}}
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: x}}
	case map[string]any:
		kv := &commonpb.KeyValueList{}
		for _, k := range sortedKeys(x) {
			kv.Values = append(kv.Values, &commonpb.KeyValue{Key: k, Value: anyValue(x[k], depth+1)})
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: kv}}
	case []any:
		arr := &commonpb.ArrayValue{}
		for _, e := range x {
			arr.Values = append(arr.Values, anyValue(e, depth+1))
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
	case nil:
		return &commonpb.AnyValue{}
	}
	return str(fmt.Sprint(v))
}
