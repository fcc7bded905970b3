package otlp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/edge-agent/edge-agent/connector/input"
)

const testWait = 30 * time.Second

func open(t *testing.T, mod func(*Config)) *Input {
	t.Helper()
	cfg := NewDefaultConfig()
	cfg.HTTPListen, cfg.GRPCListen = "127.0.0.1:0", "127.0.0.1:0"
	if mod != nil {
		mod(cfg)
	}
	in, err := New(cfg, input.Settings{ID: "otel"})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Open(t.Context(), input.OpenOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}

// scheduler polls and commits at once, keeping every event.
type scheduler struct {
	mu     sync.Mutex
	events []map[string]any
	stop   chan struct{}
	done   chan struct{}
}

func runScheduler(t *testing.T, in *Input) *scheduler {
	s := &scheduler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			evs, _ := in.Poll(context.Background(), nil, 256)
			if len(evs) > 0 {
				s.mu.Lock()
				for _, e := range evs {
					var o map[string]any
					if err := json.Unmarshal(e.Payload, &o); err != nil {
						t.Errorf("event not JSON: %s", e.Payload)
					}
					s.events = append(s.events, o)
				}
				s.mu.Unlock()
				in.Committed(len(evs))
				continue
			}
			select {
			case <-in.Wakeup():
			case <-s.stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(s.stop); <-s.done })
	return s
}

func (s *scheduler) stored() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.events...)
}

// The OTel Go SDK's OTLP log exporters, HTTP and gRPC, as the clients:
// every field of the records arrives mapped as documented.
func TestSDKExporters(t *testing.T) {
	in := open(t, nil)
	s := runScheduler(t, in)
	for _, tc := range []struct {
		name string
		exp  func(ctx context.Context) (sdklog.Exporter, error)
	}{
		{"http", func(ctx context.Context) (sdklog.Exporter, error) {
			return otlploghttp.New(ctx, otlploghttp.WithEndpoint(in.HTTPAddr()), otlploghttp.WithInsecure(),
				otlploghttp.WithCompression(otlploghttp.GzipCompression))
		}},
		{"grpc", func(ctx context.Context) (sdklog.Exporter, error) {
			return otlploggrpc.New(ctx, otlploggrpc.WithEndpoint(in.GRPCAddr()), otlploggrpc.WithInsecure())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), testWait)
			defer cancel()
			exp, err := tc.exp(ctx)
			if err != nil {
				t.Fatal(err)
			}
			lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(exp)),
				sdklog.WithResource(resource.NewSchemaless(attribute.String("service.name", "gw-"+tc.name))))
			defer lp.Shutdown(context.Background())
			logger := lp.Logger("edge/test", otellog.WithInstrumentationVersion("1.2.3"))
			tid, _ := trace.TraceIDFromHex("0102030405060708090a0b0c0d0e0f10")
			sid, _ := trace.SpanIDFromHex("a1a2a3a4a5a6a7a8")
			sctx := trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
			before := len(s.stored())
			for i := range 3 {
				var r otellog.Record
				r.SetTimestamp(time.Unix(1700000000, int64(i)*1e6))
				r.SetSeverity(otellog.SeverityWarn)
				r.SetSeverityText("WARN")
				r.SetBody(attribute.MapValue(attribute.String("msg", "hello"), attribute.Int("i", i)))
				r.AddAttributes(attribute.String("k", "v"), attribute.Bool("b", true), attribute.Int64("n", -7))
				logger.Emit(sctx, r) // the simple processor exports at once and waits for the answer
			}
			if err := lp.ForceFlush(ctx); err != nil {
				t.Fatal(err)
			}
			got := s.stored()[before:]
			if len(got) != 3 {
				t.Fatalf("%d events, want 3: %v", len(got), got)
			}
			e := got[2]
			js, _ := json.Marshal(e)
			for _, want := range []string{
				`"_ts":1700000000002`, `"timestamp":"2023-11-14T22:13:20.002Z"`, `"severity_number":13`, `"severity_text":"WARN"`,
				`"body":{"i":2,"msg":"hello"}`, `"attributes":{"b":true,"k":"v","n":-7}`,
				`"trace_id":"0102030405060708090a0b0c0d0e0f10"`, `"span_id":"a1a2a3a4a5a6a7a8"`, `"flags":1`,
				`"resource":{"service.name":"gw-` + tc.name + `"}`, `"scope":{"name":"edge/test","version":"1.2.3"}`,
			} {
				if !strings.Contains(string(js), want) {
					t.Errorf("event lacks %s: %s", want, js)
				}
			}
		})
	}
}

func request(bodies ...string) *collogspb.ExportLogsServiceRequest {
	var recs []*logspb.LogRecord
	for _, b := range bodies {
		recs = append(recs, &logspb.LogRecord{TimeUnixNano: 1, Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: b}}})
	}
	return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: recs}}}}}
}

func postProto(t *testing.T, in *Input, req *collogspb.ExportLogsServiceRequest) (int, http.Header, []byte) {
	t.Helper()
	b, _ := proto.Marshal(req)
	resp, err := http.Post("http://"+in.HTTPAddr()+"/v1/logs", "application/x-protobuf", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}

// An export succeeds only once every record is committed.
func TestSuccessOnlyAfterCommit(t *testing.T) {
	in := open(t, nil)
	done := make(chan int, 1)
	go func() { code, _, _ := postProto(t, in, request("a", "b")); done <- code }()
	var n int
	deadline := time.After(testWait)
	for n < 2 {
		evs, _ := in.Poll(t.Context(), nil, 10)
		n += len(evs)
		if len(evs) == 0 {
			select {
			case <-in.Wakeup():
			case <-deadline:
				t.Fatal("never polled")
			}
		}
	}
	in.Committed(1)
	select {
	case c := <-done:
		t.Fatalf("answered %d with 1 of 2 records committed", c)
	default:
	}
	in.Committed(1)
	if c := <-done; c != 200 {
		t.Fatalf("answered %d", c)
	}
}

// Full: HTTP 429 with Retry-After, gRPC UNAVAILABLE with RetryInfo;
// a record over max-record-bytes is rejected in partial_success.
func TestBackpressureAndPartialSuccess(t *testing.T) {
	in := open(t, func(c *Config) { c.MaxPendingBytes, c.MaxRecordBytes = 64<<10, 4<<10 })
	big := strings.Repeat("x", 40<<10)
	first, _ := proto.Marshal(request(big[:3000]))
	go func() { // fits, then waits for a commit
		if resp, err := http.Post("http://"+in.HTTPAddr()+"/v1/logs", "application/x-protobuf", bytes.NewReader(first)); err == nil {
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(testWait)
	for in.q.Bytes() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("first export never queued")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Fill the queue past its bound with records under max-record-bytes.
	fill := request()
	for range 30 {
		fill.ResourceLogs[0].ScopeLogs[0].LogRecords = append(fill.ResourceLogs[0].ScopeLogs[0].LogRecords, request(big[:3000]).ResourceLogs[0].ScopeLogs[0].LogRecords[0])
	}
	code, h, _ := postProto(t, in, fill)
	if code != 429 || h.Get("Retry-After") != "1" {
		t.Fatalf("HTTP when full: %d %v", code, h)
	}
	conn, err := grpc.NewClient(in.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = collogspb.NewLogsServiceClient(conn).Export(t.Context(), fill)
	st := status.Convert(err)
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	if st.Code() != codes.Unavailable || retry == nil || retry.GetRetryDelay().AsDuration() != time.Second {
		t.Fatalf("gRPC when full: %v %v", st, retry)
	}

	runScheduler(t, in)
	resp, err := collogspb.NewLogsServiceClient(conn).Export(t.Context(), request("ok", big))
	if err != nil {
		t.Fatal(err)
	}
	if ps := resp.GetPartialSuccess(); ps.GetRejectedLogRecords() != 1 || !strings.Contains(ps.GetErrorMessage(), "max-record-bytes") {
		t.Fatalf("partial success: %v", ps)
	}
}

// OTLP/JSON, with its hex trace and span ids.
func TestJSON(t *testing.T) {
	in := open(t, nil)
	s := runScheduler(t, in)
	body := `{"resourceLogs":[{"resource":{"attributes":[{"key":"host","value":{"stringValue":"gw7"}}]},
	 "scopeLogs":[{"logRecords":[{"timeUnixNano":"1700000000000000000","severityNumber":9,
	 "body":{"stringValue":"json hello"},"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174"}]}]}]}`
	resp, err := http.Post("http://"+in.HTTPAddr()+"/v1/logs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	got := s.stored()
	if len(got) != 1 || got[0]["trace_id"] != "5b8efff798038103d269b633813fc60c" || got[0]["span_id"] != "eee19b7ec3c1b174" ||
		got[0]["body"] != "json hello" || got[0]["_ts"] != float64(1700000000000) {
		t.Fatalf("event %v", got)
	}
	resp, err = http.Post("http://"+in.HTTPAddr()+"/v1/logs", "application/json", strings.NewReader("{not otlp"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("bad JSON: %d", resp.StatusCode)
	}
}

// FuzzExport: any bytes that decode as an export map to events that are
// each one line of valid JSON.
func FuzzExport(f *testing.F) {
	seed, _ := proto.Marshal(request("a", "b\nc"))
	f.Add(seed)
	nested := &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "\xff"}}
	for range 100 {
		nested = &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{nested}}}}
	}
	r := request("x")
	r.ResourceLogs[0].ScopeLogs[0].LogRecords[0].Body = nested
	deep, _ := proto.Marshal(r)
	f.Add(deep)
	f.Fuzz(func(t *testing.T, b []byte) {
		var req collogspb.ExportLogsServiceRequest
		if proto.Unmarshal(b, &req) != nil {
			return
		}
		var m mapper
		_ = m.request(&req, time.UnixMilli(1), func(ev []byte) error {
			if bytes.ContainsAny(ev, "\r\n") || !json.Valid(ev) {
				t.Fatalf("event %q", ev)
			}
			return nil
		})
	})
}
