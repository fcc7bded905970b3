package ownlogs

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"
)

// collector is a stand-in OTLP/HTTP logs endpoint: it fails the first
// fail requests with 503, then keeps what it is sent.
type collector struct {
	mu      sync.Mutex
	fail    int
	auth    []string
	records []*logspb.LogRecord
	res     map[string]string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail > 0 {
		c.fail--
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req collogspb.ExportLogsServiceRequest
	if r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	c.auth = append(c.auth, r.Header.Get("Authorization"))
	c.res = map[string]string{}
	for _, rl := range req.ResourceLogs {
		for _, kv := range rl.GetResource().GetAttributes() {
			c.res[kv.Key] = kv.GetValue().GetStringValue()
		}
		for _, sl := range rl.ScopeLogs {
			c.records = append(c.records, sl.LogRecords...)
		}
	}
}

func (c *collector) got() []*logspb.LogRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*logspb.LogRecord(nil), c.records...)
}

// hub is a fake log hub: it remembers the sink attached.
type hub struct {
	mu   sync.Mutex
	sink Sink
}

func (h *hub) attach(s Sink) func() {
	h.mu.Lock()
	h.sink = s
	h.mu.Unlock()
	return func() { h.mu.Lock(); h.sink = nil; h.mu.Unlock() }
}

func (h *hub) attached() Sink {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sink
}

type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}
func (l *logLines) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Records offered while an endpoint is set reach it as OTLP log records;
// a failing endpoint is logged once, its recovery once; "" detaches.
func TestShipsToTheOfferedEndpoint(t *testing.T) {
	col := &collector{fail: 1}
	srv := httptest.NewServer(col)
	defer srv.Close()
	h := &hub{}
	var lines logLines
	s := New(Options{Attach: h.attach, Resource: Resource{ServiceName: "edge-agent", InstanceID: "uid-1"},
		Logger: slog.New(slog.NewTextHandler(&lines, nil))})
	done := make(chan struct{})
	go func() { defer close(done); s.Run(t.Context()) }()
	if h.attached() != nil {
		t.Fatal("attached before an endpoint was offered")
	}
	if err := s.Apply("ftp://x", nil); err == nil {
		t.Fatal("an ftp endpoint was taken")
	}
	if err := s.Apply(srv.URL+"/v1/logs", map[string]string{"Authorization": "Bearer k"}); err != nil {
		t.Fatal(err)
	}
	sink := h.attached()
	if sink == nil {
		t.Fatal("not attached once an endpoint is set")
	}
	sink.Offer([]byte(`{"time":"2026-01-02T03:04:05Z","level":"WARN","msg":"engine gone","component":"input:app","attrs":{"n":3,"g":{"k":"v"}}}`))
	sink.Offer([]byte(`not json`))
	waitFor(t, "2 records at the endpoint", func() bool { return len(col.got()) == 2 })
	r := col.got()[0]
	if r.GetBody().GetStringValue() != "engine gone" || r.SeverityNumber != logspb.SeverityNumber_SEVERITY_NUMBER_WARN ||
		r.TimeUnixNano != uint64(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()) || len(r.Attributes) != 3 ||
		r.Attributes[0].GetValue().GetStringValue() != "input:app" || r.Attributes[2].Key != "n" || r.Attributes[2].GetValue().GetIntValue() != 3 {
		t.Errorf("record %v", r)
	}
	if col.got()[1].GetBody().GetStringValue() != "not json" || col.res["service.instance.id"] != "uid-1" || col.auth[0] != "Bearer k" {
		t.Errorf("record %v, resource %v, auth %v", col.got()[1], col.res, col.auth)
	}
	// The collector answered before the shipper counted and logged.
	waitFor(t, "the shipper to count the post", func() bool {
		_, shipped, _ := s.Counts()
		return shipped == 2 && strings.Contains(lines.String(), "again")
	})
	if _, _, failures := s.Counts(); failures != 1 {
		t.Errorf("failures %d, want 1", failures)
	}
	out := lines.String()
	if strings.Count(out, "cannot ship own logs") != 1 || strings.Count(out, "reach the OpAMP server's log endpoint again") != 1 {
		t.Errorf("log:\n%s", out)
	}
	if err := s.Apply("", nil); err != nil || h.attached() != nil {
		t.Fatalf("withdraw: %v, still attached %v", err, h.attached() != nil)
	}
}

// Offer never blocks: beyond the queue records are dropped and counted.
func TestOfferDropsWhenFull(t *testing.T) {
	s := New(Options{Attach: (&hub{}).attach})
	for range QueueRecords + 10 {
		s.Offer([]byte("x"))
	}
	if dropped, _, _ := s.Counts(); dropped != 10 {
		t.Fatalf("dropped %d, want 10", dropped)
	}
}

func TestSeverity(t *testing.T) {
	for in, want := range map[string]logspb.SeverityNumber{
		"DEBUG": logspb.SeverityNumber_SEVERITY_NUMBER_DEBUG, "INFO": logspb.SeverityNumber_SEVERITY_NUMBER_INFO,
		"WARN": logspb.SeverityNumber_SEVERITY_NUMBER_WARN, "ERROR+2": logspb.SeverityNumber_SEVERITY_NUMBER_ERROR,
		"DEBUG-4": logspb.SeverityNumber_SEVERITY_NUMBER_DEBUG, "x": logspb.SeverityNumber_SEVERITY_NUMBER_UNSPECIFIED,
	} {
		if got := severity(in); got != want {
			t.Errorf("severity(%q) = %v, want %v", in, got, want)
		}
	}
}

// The encoder takes any bytes (a record is the hub's JSON, or not).
func FuzzEncode(f *testing.F) {
	f.Add([]byte(`{"time":"2026-01-02T03:04:05Z","level":"WARN","msg":"m","attrs":{"a":[1,"x",{"b":null}]}}`))
	f.Add([]byte(`{`))
	f.Add([]byte(`{"attrs":{"a":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}}`))
	f.Fuzz(func(t *testing.T, rec []byte) {
		b, err := encode(Resource{ServiceName: "edge-agent"}, [][]byte{rec})
		if err != nil {
			t.Fatalf("encode %q: %v", rec, err)
		}
		var req collogspb.ExportLogsServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil || len(req.ResourceLogs[0].ScopeLogs[0].LogRecords) != 1 {
			t.Fatalf("encoded %q does not decode: %v", rec, err)
		}
	})
}
