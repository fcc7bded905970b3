package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/connector/component"
	"github.com/edge-agent/edge-agent/starter/internal/agent"
	"github.com/edge-agent/edge-agent/starter/internal/output"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeSource hands out whatever status the test set.
type fakeSource struct {
	mu sync.Mutex
	st agent.Status
}

func (f *fakeSource) Snapshot() agent.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeSource) set(fn func(*agent.Status)) {
	f.mu.Lock()
	fn(&f.st)
	f.mu.Unlock()
}

func running() agent.Status {
	return agent.Status{
		AgentID: "agent-1", InputID: "in-1", OutputID: "out-1", InputType: "file",
		State: "running", StartedAt: t0.Add(-90 * time.Second), LastTurn: t0.Add(-time.Second),
		EventsRead: 11, Acked: 7, Failed: 3, Released: 1, Reconnects: 2,
		Queue: agent.QueueStatus{Pending: 5, Sending: 4, Dead: 2, SizeBytes: 1234, FileBytes: 65536, OldestPendingAge: 42 * time.Second,
			Commit: agent.CommitEstimate{Disk: 20 * time.Millisecond, PerRow: 2 * time.Microsecond, GroupCeiling: 20971}},
		FsyncLatency: agent.Histogram{Bounds: []time.Duration{time.Millisecond, 10 * time.Millisecond}, Counts: []uint64{0, 2}, Count: 2, Sum: 40 * time.Millisecond},
		Connection:   "connected",
		SendLatency:  agent.Histogram{Bounds: []time.Duration{time.Millisecond, time.Second}, Counts: []uint64{1, 3}, Count: 4, Sum: 1500 * time.Millisecond},
		Input: &component.Description{Values: []component.Value{
			{Key: "bytes_read", N: 999, Metric: "bytes_read_total", Total: true, Help: "h"},
			{Key: "files_open", N: 3, Kind: component.Gauge, Metric: "files_open", Total: true, Help: "h"},
			{Key: "truncated_lines", N: 1, Metric: "lines_truncated_total", Total: true, Help: "h"},
			{N: 22, Metric: "unread_bytes_lost_total", Total: true, Help: "h"},
		}},
		Files: []component.FileStatus{{Path: "/var/log/a.log", Identity: "1:2:ab", Offset: 10, Size: 25, Lag: 15, Open: true}},
	}
}

// testFileToken is the token file's token of every server serve starts.
const testFileToken = "file-token-of-the-test"

func serve(t *testing.T, o Options) *httptest.Server {
	t.Helper()
	o.FileToken = testFileToken
	if o.Now == nil {
		o.Now = func() time.Time { return t0 }
	}
	srv := httptest.NewServer(Handler(o))
	t.Cleanup(srv.Close)
	return srv
}

// get sends token, or the token file's when token is empty, as the CLI
// does; the tests of what is refused use request.
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	if token == "" {
		token = testFileToken
	}
	return request(t, http.MethodGet, url, map[string]string{"Authorization": "Bearer " + token})
}

// request sends exactly the headers given ("Host" sets the Host header).
func request(t *testing.T, method, url string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestMetricsFromSnapshot(t *testing.T) {
	src := &fakeSource{st: running()}
	srv := serve(t, Options{Source: src, Version: "v1.2.3", Commit: "abc"})
	code, body := get(t, srv.URL+"/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	for _, want := range []string{
		"edge_agent_events_read_total 11",
		"edge_agent_bytes_read_total 999",
		"edge_agent_events_acked_total 7",
		`edge_agent_wal_rows{status="pending"} 5`,
		`edge_agent_wal_rows{status="sending"} 4`,
		`edge_agent_wal_rows{status="dead"} 2`,
		"edge_agent_wal_bytes 1234",
		"edge_agent_wal_file_bytes 65536",
		"edge_agent_oldest_pending_age_seconds 42",
		`edge_agent_send_batches_total{result="received"} 7`,
		`edge_agent_send_batches_total{result="failed"} 3`,
		`edge_agent_send_batches_total{result="not_sent"} 1`,
		`edge_agent_send_latency_seconds_bucket{le="0.001"} 1`,
		`edge_agent_send_latency_seconds_bucket{le="1"} 3`,
		`edge_agent_send_latency_seconds_bucket{le="+Inf"} 4`,
		"edge_agent_send_latency_seconds_sum 1.5",
		"edge_agent_send_latency_seconds_count 4",
		`edge_agent_wal_fsync_seconds_bucket{le="0.01"} 2`,
		"edge_agent_wal_fsync_seconds_count 2",
		"edge_agent_wal_commit_group_max_events 20971",
		"edge_agent_reconnects_total 2",
		"edge_agent_files_open 3",
		"edge_agent_lines_truncated_total 1",
		"edge_agent_unread_bytes_lost_total 22",
		"edge_agent_backpressure_active 0",
		`edge_agent_config_reloads_total{result="success"} 0`,
		`edge_agent_build_info{commit="abc",version="v1.2.3"} 1`,
		"go_goroutines ",
	} {
		if !strings.Contains(body, want+"\n") && !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// Read at scrape time: a later snapshot shows in the next scrape.
	src.set(func(s *agent.Status) {
		s.Acked, s.Backpressure, s.Input = 8, true, nil
		s.ConfigReloads = agent.ReloadCounts{OK: 2, Failed: 1}
	})
	_, body = get(t, srv.URL+"/metrics", "")
	if !strings.Contains(body, "edge_agent_events_acked_total 8\n") || !strings.Contains(body, "edge_agent_backpressure_active 1\n") ||
		!strings.Contains(body, `edge_agent_config_reloads_total{result="success"} 2`+"\n") ||
		!strings.Contains(body, `edge_agent_config_reloads_total{result="failure"} 1`+"\n") {
		t.Errorf("second scrape does not follow the snapshot:\n%s", body)
	}
	if strings.Contains(body, "edge_agent_files_open") {
		t.Errorf("input metrics exported although the input reports no stats")
	}
}

func TestHealthz(t *testing.T) {
	cases := []struct {
		name   string
		change func(*agent.Status)
		code   int
		reason string
	}{
		{"running", func(*agent.Status) {}, 200, "ok"},
		{"starting", func(s *agent.Status) { s.State, s.LastTurn = "starting", time.Time{} }, 200, "ok"},
		{"engine unavailable is retried, not unhealthy", func(s *agent.Status) { s.Connection = "unavailable" }, 200, "ok"},
		{"stopping", func(s *agent.Status) { s.State = "stopping" }, 503, "agent is stopping"},
		{"WAL not writable", func(s *agent.Status) { s.WALError = "no space left on device" }, 503, "WAL not writable: no space left on device"},
		{"loop stalled", func(s *agent.Status) { s.LastTurn = t0.Add(-2 * time.Minute) }, 503, "scheduler loop has not turned for 2m0s"},
		{"token refused", func(s *agent.Status) { s.Connection, s.LastError = "auth_failed", "AUTH_FAILED" }, 503, "engine refused the agent (auth_failed): AUTH_FAILED"},
		{"key refused", func(s *agent.Status) { s.Connection, s.LastError = "decrypt_failed", "DECRYPT_FAILED" }, 503, "engine refused the agent (decrypt_failed): DECRYPT_FAILED"},
		{"rejected", func(s *agent.Status) { s.Connection, s.LastError = "rejected", "REJECTED" }, 503, "engine rejected the connection: REJECTED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := running()
			c.change(&st)
			srv := serve(t, Options{Source: &fakeSource{st: st}})
			code, body := get(t, srv.URL+"/healthz", "")
			if code != c.code || strings.TrimSpace(body) != c.reason {
				t.Fatalf("got %d %q, want %d %q", code, body, c.code, c.reason)
			}
		})
	}
}

func TestReadyz(t *testing.T) {
	for state, want := range map[string]int{"starting": 503, "running": 200, "stopping": 503, "stopped": 503} {
		st := running()
		st.State = state
		srv := serve(t, Options{Source: &fakeSource{st: st}})
		if code, body := get(t, srv.URL+"/readyz", ""); code != want {
			t.Errorf("%s: %d %q, want %d", state, code, body, want)
		}
	}
}

func TestDebugStatusJSON(t *testing.T) {
	st := running()
	st.LastError, st.LastErrorAt = "engine unavailable", t0.Add(-time.Minute)
	connected := true
	mgmt := &Management{InstanceUID: "01932c07-a5a4-7b4e-8f3e-2b9d6a1c0e55", ConfigSource: "remote",
		Endpoint: "ws://127.0.0.1:4320/v1/opamp", Connected: &connected, RemoteConfig: "APPLIED"}
	srv := serve(t, Options{Source: &fakeSource{st: st}, Version: "v1.2.3", ConfigHash: "cafe",
		Management: func() *Management { return mgmt }})
	code, body := get(t, srv.URL+"/debug/status", "")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	var got Status
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	if !got.Running || got.Source != "api" || got.State != "running" || got.AgentID != "agent-1" ||
		got.Version != "v1.2.3" || got.ConfigHash != "cafe" || got.UptimeSeconds != 90 ||
		got.Connection != "connected" || got.LastError != "engine unavailable" || got.LastErrorAt == nil ||
		!got.LastErrorAt.Equal(t0.Add(-time.Minute)) {
		t.Errorf("status document: %+v", got)
	}
	if m := got.Management; m == nil || m.InstanceUID != mgmt.InstanceUID || m.ConfigSource != "remote" ||
		m.Connected == nil || !*m.Connected || m.RemoteConfig != "APPLIED" {
		t.Errorf("management: %+v", got.Management)
	}
	commit := got.WAL.Commit
	got.WAL.Commit = nil
	if !reflect.DeepEqual(got.WAL, WALStatus{Pending: 5, Sending: 4, Dead: 2, Bytes: 1234, FileBytes: 65536, OldestPendingAgeSeconds: 42}) {
		t.Errorf("wal: %+v", got.WAL)
	}
	if commit == nil || *commit != (CommitStatus{FsyncSeconds: 0.02, RowSeconds: 2e-6, GroupMaxEvents: 20971}) {
		t.Errorf("wal.commit: %+v", commit)
	}
	if len(got.Files) != 1 || got.Files[0] != (File{Path: "/var/log/a.log", Identity: "1:2:ab", Offset: 10, Size: 25, Lag: 15, Open: true}) {
		t.Errorf("files: %+v", got.Files)
	}
	if got.Counters == nil || got.Counters.Acked != 7 || got.Input == nil || !hasFigure(*got.Input, "files_open", 3) {
		t.Errorf("counters %+v input %+v", got.Counters, got.Input)
	}
	if got.Counters != nil && (got.Counters.Sends != 4 || got.Counters.SendSeconds != 1.5) {
		t.Errorf("send latency: %d sends, %v s", got.Counters.Sends, got.Counters.SendSeconds)
	}
	if h := got.Health; h == nil || !h.Healthy || h.Components["output"] != (ComponentHealth{Healthy: true, Status: "connected"}) ||
		h.Components["wal"].Status != "writable" || h.Components["input"].Status != "running" {
		t.Errorf("health: %+v", got.Health)
	}
}

// The status carries the same judgement as /healthz, per component.
func TestDebugStatusHealth(t *testing.T) {
	st := running()
	st.Connection, st.LastError = "auth_failed", "AUTH_FAILED"
	srv := serve(t, Options{Source: &fakeSource{st: st}})
	_, body := get(t, srv.URL+"/debug/status", "")
	var got Status
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	want := ComponentHealth{Status: "auth_failed", LastError: "engine refused the agent (auth_failed): AUTH_FAILED"}
	if h := got.Health; h == nil || h.Healthy || h.Reason != want.LastError || h.Components["output"] != want {
		t.Errorf("health: %+v", got.Health)
	}
}

func TestTokenRequired(t *testing.T) {
	srv := serve(t, Options{Source: &fakeSource{st: running()}, Settings: Settings{Listen: "0.0.0.0:0", Token: "s3cret"}})
	for _, path := range []string{"/metrics", "/healthz", "/readyz", "/debug/status"} {
		if code, _ := request(t, http.MethodGet, srv.URL+path, nil); code != http.StatusUnauthorized {
			t.Errorf("%s without token: %d, want 401", path, code)
		}
		if code, _ := get(t, srv.URL+path, "wrong"); code != http.StatusUnauthorized {
			t.Errorf("%s with a wrong token: %d, want 401", path, code)
		}
		code, body := get(t, srv.URL+path, "s3cret")
		if code != http.StatusOK {
			t.Errorf("%s with the token: %d", path, code)
		}
		if strings.Contains(body, "s3cret") {
			t.Errorf("%s shows the token", path)
		}
	}
}

// TestPprofOnlyWhenAsked: the profiler is not reachable by default.
func TestPprofOnlyWhenAsked(t *testing.T) {
	off := serve(t, Options{Source: &fakeSource{st: running()}})
	if code, _ := get(t, off.URL+"/debug/pprof/", ""); code != http.StatusNotFound {
		t.Errorf("pprof without http.pprof: %d, want 404", code)
	}
	on := serve(t, Options{Source: &fakeSource{st: running()}, Settings: Settings{Pprof: true}})
	if code, body := get(t, on.URL+"/debug/pprof/", ""); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof with http.pprof: %d", code)
	}
}

func TestClientReadsStatus(t *testing.T) {
	srv := serve(t, Options{Source: &fakeSource{st: running()}, Settings: Settings{Token: "tok"}})
	c, err := NewClient(Settings{Listen: strings.TrimPrefix(srv.URL, "http://"), Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.AgentID != "agent-1" || st.WAL.Pending != 5 {
		t.Fatalf("client status: %+v", st)
	}
	bad, err := NewClient(Settings{Listen: strings.TrimPrefix(srv.URL, "http://")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Status(context.Background()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("without the token: %v, want a 401 error", err)
	}
}

func TestSettingsValidate(t *testing.T) {
	for _, c := range []struct {
		s       Settings
		problem string
	}{
		{DefaultSettings(), ""},
		{Settings{Listen: "off"}, ""},
		{Settings{Listen: "OFF"}, ""},
		{Settings{Listen: "localhost:9466"}, ""},
		{Settings{Listen: "[::1]:9466"}, ""},
		{Settings{Listen: "0.0.0.0:9466", Token: "t"}, ""},
		{Settings{Listen: "0.0.0.0:9466"}, "listen: \"0.0.0.0:9466\" is reachable from other hosts"},
		{Settings{Listen: ":9466"}, "reachable from other hosts"},
		{Settings{Listen: "10.1.2.3:9466", Token: "  "}, "reachable from other hosts"},
		{Settings{Listen: "9466"}, "must be host:port"},
		{Settings{Listen: "127.0.0.1:"}, "needs a port"},
	} {
		err := c.s.Validate()
		switch {
		case c.problem == "" && err != nil:
			t.Errorf("%+v: %v", c.s, err)
		case c.problem != "" && (err == nil || !strings.Contains(err.Error(), c.problem)):
			t.Errorf("%+v: %v, want %q", c.s, err, c.problem)
		}
	}
}

func TestStartBindFailureNamesKey(t *testing.T) {
	s, err := Start(Options{Source: &fakeSource{st: running()}, Settings: Settings{Listen: "127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	_, err = Start(Options{Source: &fakeSource{}, Settings: Settings{Listen: s.Addr()}})
	if err == nil || !strings.HasPrefix(err.Error(), "http.listen") {
		t.Fatalf("binding a taken port: %v, want an error naming http.listen", err)
	}
}

// The send-rate cap shows in /debug/status (absent without one) with the
// backlog's ETA, and the time spent waiting for it in /metrics.
func TestRateLimitStatusAndMetrics(t *testing.T) {
	src := &fakeSource{st: running()}
	srv := serve(t, Options{Source: src})
	status := func() Status {
		t.Helper()
		_, body := get(t, srv.URL+"/debug/status", "")
		var got Status
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("%v in %s", err, body)
		}
		return got
	}
	if got := status(); got.RateLimit != nil {
		t.Errorf("rate_limit %+v without a cap, want it absent", got.RateLimit)
	}
	src.set(func(s *agent.Status) {
		s.SendThrottled = 1500 * time.Millisecond
		s.RateLimit = agent.RateLimitStatus{RateLimit: output.RateLimit{EventsPerSecond: 10, BytesPerSecond: 2048},
			EventBurst: 10, ByteBurst: 2048, BacklogETA: 90 * time.Second}
	})
	got := status()
	if want := (RateLimit{EventsPerSecond: 10, BytesPerSecond: 2048, BurstEvents: 10, BurstBytes: 2048, BacklogETASeconds: 90}); got.RateLimit == nil || *got.RateLimit != want {
		t.Errorf("rate_limit %+v, want %+v", got.RateLimit, want)
	}
	if got.Counters == nil || got.Counters.SendThrottledSeconds != 1.5 {
		t.Errorf("counters %+v, want send_throttled_seconds 1.5", got.Counters)
	}
	if _, body := get(t, srv.URL+"/metrics", ""); !strings.Contains(body, "edge_agent_send_throttled_seconds_total 1.5\n") {
		t.Errorf("/metrics lacks edge_agent_send_throttled_seconds_total 1.5:\n%s", body)
	}
}

// TestMetricsConnectionState: exactly the state the last send found is 1,
// every known state has a series (so a rule selecting auth_failed sees 0
// before the first refusal), and a state the list lacks still shows.
func TestMetricsConnectionState(t *testing.T) {
	for _, tc := range []struct{ conn, one string }{
		{"connected", "connected"},
		{"unavailable", "unavailable"},
		{"auth_failed", "auth_failed"},
		{"decrypt_failed", "decrypt_failed"},
		{"something_new", "something_new"},
	} {
		st := running()
		st.Connection = tc.conn
		srv := serve(t, Options{Source: &fakeSource{st: st}})
		_, body := get(t, srv.URL+"/metrics", "")
		for _, s := range append(output.ConnectionStates(), tc.one) {
			want := fmt.Sprintf(`edge_agent_output_connection_state{state=%q} %d`, s, map[bool]int{true: 1}[s == tc.one])
			if !strings.Contains(body, want+"\n") {
				t.Errorf("connection %s: /metrics lacks %q", tc.conn, want)
			}
		}
	}
}

// TestMetricsWALFilesystem: with the WAL's path, its filesystem's size and
// free bytes are exported; without it, neither is.
func TestMetricsWALFilesystem(t *testing.T) {
	srv := serve(t, Options{Source: &fakeSource{st: running()}, WALPath: filepath.Join(t.TempDir(), "wal.db")})
	_, body := get(t, srv.URL+"/metrics", "")
	if runtime.GOOS == "linux" {
		for _, name := range []string{"edge_agent_wal_filesystem_avail_bytes", "edge_agent_wal_filesystem_size_bytes"} {
			if !regexp.MustCompile(`(?m)^` + name + ` [1-9][0-9.e+]*$`).MatchString(body) {
				t.Errorf("/metrics lacks a positive %s", name)
			}
		}
	}
	srv = serve(t, Options{Source: &fakeSource{st: running()}})
	if _, body := get(t, srv.URL+"/metrics", ""); strings.Contains(body, "edge_agent_wal_filesystem_") {
		t.Error("filesystem figures exported without a WAL path")
	}
}

// The output's congestion window is in /debug/status while the transport
// keeps one, and absent when it keeps none.
func TestStatusWindow(t *testing.T) {
	for _, window := range []int{0, 512} {
		st := running()
		st.Window = window
		srv := serve(t, Options{Source: &fakeSource{st: st}})
		_, body := get(t, srv.URL+"/debug/status", "")
		var got map[string]any
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("%v in %s", err, body)
		}
		w, ok := got["window"]
		if window == 0 && ok {
			t.Errorf("window %v without one, want it absent", w)
		}
		if window > 0 && w != float64(window) {
			t.Errorf("window %v, want %d", w, window)
		}
	}
}

// The output's own series are what it describes (with output.endpoints,
// a series per endpoint), and status lists each endpoint; the agent-wide
// connection state is still there.
func TestMetricsAndStatusPerEndpoint(t *testing.T) {
	st := running()
	st.Connection = "connected"
	st.Endpoints = []output.EndpointStatus{
		{Endpoint: "a:1", State: "unavailable", LastError: "connection refused", Sent: 3},
		{Endpoint: "b:2", State: "connected", Active: true, Sent: 10, Received: 9, Switches: 1},
	}
	st.Output = component.Description{Values: []component.Value{
		{Metric: "output_endpoint_active", Kind: component.Gauge, N: 1, Labels: []component.Label{{Name: "endpoint", Value: "b:2"}}, Help: "Active."},
		{Metric: "output_widgets_total", N: 5, Help: "Widgets of an output type the api never heard of."},
	}}
	srv := serve(t, Options{Source: &fakeSource{st: st}})
	_, body := get(t, srv.URL+"/metrics", "")
	for _, want := range []string{
		`edge_agent_output_endpoint_active{endpoint="b:2"} 1`,
		`edge_agent_output_widgets_total 5`,
		"# TYPE edge_agent_output_endpoint_active gauge",
		`edge_agent_output_connection_state{state="connected"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	_, body = get(t, srv.URL+"/debug/status", "")
	var doc Status
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Endpoints) != 2 || doc.Endpoints[0].LastError != "connection refused" || !doc.Endpoints[1].Active || doc.Endpoints[1].Received != 9 {
		t.Fatalf("status endpoints = %+v", doc.Endpoints)
	}
	srv = serve(t, Options{Source: &fakeSource{st: running()}})
	if _, body := get(t, srv.URL+"/metrics", ""); strings.Contains(body, "edge_agent_output_endpoint_") {
		t.Error("per-endpoint series exported with a single endpoint")
	}
}
