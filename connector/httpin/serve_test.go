package httpin

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// 200 comes only once every record of the request is committed: not
// when they are polled, not when some are committed.
func TestAnswerOnlyAfterCommit(t *testing.T) {
	in := open(t, nil)
	replies := make(chan reply, 1)
	go func() { replies <- post(t, nil, in.url(), []byte("{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n")) }()
	var evs []string
	deadline := time.After(testWait)
	for len(evs) < 3 {
		got, _ := in.Poll(t.Context(), nil, 10)
		for _, e := range got {
			evs = append(evs, string(e.Payload))
		}
		if len(got) == 0 {
			select {
			case <-in.Wakeup():
			case <-deadline:
				t.Fatal("records never polled")
			}
		}
	}
	if !slices.Equal(evs, []string{`{"a":1}`, `{"a":2}`, `{"a":3}`}) {
		t.Fatalf("events %v", evs)
	}
	select {
	case r := <-replies:
		t.Fatalf("answered %d before any commit", r.status)
	default:
	}
	in.Committed(2)
	select {
	case r := <-replies:
		t.Fatalf("answered %d with 2 of 3 records committed", r.status)
	default:
	}
	in.Committed(1)
	if r := <-replies; r.status != 200 || r.body != "{\"accepted\":3}\n" {
		t.Fatalf("after the commit: %d %s", r.status, r.body)
	}
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

func zst(b []byte) []byte {
	w, _ := zstd.NewWriter(nil)
	return w.EncodeAll(b, nil)
}

// Each body shape and encoding gives its records, in order.
func TestBodies(t *testing.T) {
	in := open(t, func(c *Config) { c.Path = "/ingest" })
	in.now = func() time.Time { return time.UnixMilli(1700000000000) }
	s := runScheduler(t, in)
	ndjson := []byte("{\"a\": 1}\r\n\n{\"b\":[1, 2]}\n")
	for _, tc := range []struct {
		name    string
		body    []byte
		headers []string
		want    []string
	}{
		{"ndjson", ndjson, nil, []string{`{"a":1}`, `{"b":[1,2]}`}},
		{"ndjson typed", []byte(`{"a":1}`), []string{"Content-Type", "application/x-ndjson"}, []string{`{"a":1}`}},
		{"array", []byte("[\n {\"a\": 1},\n {\"b\": 2}\n]"), []string{"Content-Type", "application/json"}, []string{`{"a":1}`, `{"b":2}`}},
		{"one object over lines", []byte("{\n  \"a\": 1,\n  \"b\": \"x\"\n}\n"), nil, []string{`{"a":1,"b":"x"}`}},
		{"lines", []byte("first line\nsecond \"quoted\"\n"), nil, []string{`{"_ts":1700000000000,"message":"first line"}`, `{"_ts":1700000000000,"message":"second \"quoted\""}`}},
		{"text/plain json-looking", []byte("{not parsed}\n"), []string{"Content-Type", "text/plain; charset=utf-8"}, []string{`{"_ts":1700000000000,"message":"{not parsed}"}`}},
		{"gzip", gz(ndjson), []string{"Content-Encoding", "gzip"}, []string{`{"a":1}`, `{"b":[1,2]}`}},
		{"zstd", zst(ndjson), []string{"Content-Encoding", "zstd"}, []string{`{"a":1}`, `{"b":[1,2]}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.stored())
			r := post(t, nil, "http://"+in.Addr()+"/ingest", tc.body, tc.headers...)
			if r.status != 200 || r.body != fmt.Sprintf("{\"accepted\":%d}\n", len(tc.want)) {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if got := s.stored()[before:]; !slices.Equal(got, tc.want) {
				t.Fatalf("stored %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A bad record makes a 400 naming its line, and nothing of the request
// is kept; the refusals (401, 404, 405, 413, 415) keep nothing either.
func TestRefusals(t *testing.T) {
	in := open(t, func(c *Config) { c.BearerToken, c.MaxBodyBytes = "tok-123", 4096 })
	s := runScheduler(t, in)
	auth := []string{"Authorization", "Bearer tok-123"}
	bomb := zst(bytes.Repeat([]byte("{\"a\":1}\n"), 10_000))
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		body    []byte
		headers []string
		status  int
		want    string
	}{
		{"bad ndjson line", "POST", "/", []byte("{\"a\":1}\n{\"a\":2}\n{oops\n{\"a\":4}\n"), auth, 400, "line 3: not JSON"},
		{"not an object", "POST", "/", []byte("{\"a\":1}\n[1]\n"), append(auth, "Content-Type", "application/x-ndjson"), 400, "line 2: not a JSON object"},
		{"bad array element", "POST", "/", []byte("[\n{\"a\":1},\n{\"a\":2},\n3\n]"), auth, 400, "line 4: not a JSON object"},
		{"not utf-8", "POST", "/", []byte("{\"a\":\"\xff\"}\n{\"b\":1}\n"), auth, 400, "line 1: not UTF-8"},
		{"no token", "POST", "/", []byte("{\"a\":1}"), nil, 401, "bearer token"},
		{"wrong token", "POST", "/", []byte("{\"a\":1}"), []string{"Authorization", "Bearer nope"}, 401, "bearer token"},
		{"GET", "GET", "/", nil, auth, 405, "only POST"},
		{"other path", "POST", "/x", []byte("{}"), auth, 404, "no such path"},
		{"too large", "POST", "/", bytes.Repeat([]byte("x"), 5000), auth, 413, "max-body-bytes"},
		{"zstd bomb", "POST", "/", bomb, append(auth, "Content-Encoding", "zstd"), 413, "decompressed body is over"},
		{"brotli", "POST", "/", []byte("x"), append(auth, "Content-Encoding", "br"), 415, "Content-Encoding"},
		{"corrupt gzip", "POST", "/", []byte("not gzip"), append(auth, "Content-Encoding", "gzip"), 400, "gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), tc.method, "http://"+in.Addr()+tc.path, bytes.NewReader(tc.body))
			for i := 0; i+1 < len(tc.headers); i += 2 {
				req.Header.Set(tc.headers[i], tc.headers[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(b.String(), tc.want) {
				t.Fatalf("%d %s, want %d …%s…", resp.StatusCode, b.String(), tc.status, tc.want)
			}
			if strings.Contains(b.String(), "oops") {
				t.Fatalf("the answer quotes the body: %s", b.String())
			}
		})
	}
	r := post(t, nil, in.url(), []byte(`{"ok":1}`), auth...)
	if r.status != 200 {
		t.Fatalf("a good request after the refusals: %d %s", r.status, r.body)
	}
	if got := s.stored(); !slices.Equal(got, []string{`{"ok":1}`}) {
		t.Fatalf("stored %q: a refused request kept records", got)
	}
}

// A request that does not fit the queue, or comes when
// max-concurrent-requests are in progress, is answered 429 with
// Retry-After, and kept nowhere.
func TestBackpressure429(t *testing.T) {
	in := open(t, func(c *Config) { c.MaxBodyBytes, c.MaxPendingBytes, c.MaxConcurrentRequests = 64<<10, 64<<10, 2 })
	big := []byte(fmt.Sprintf("{\"x\":%q}\n", strings.Repeat("y", 40<<10)))
	first := make(chan reply, 1)
	go func() { first <- post(t, nil, in.url(), big) }() // fits, then waits for a commit that does not come
	waitFor(t, "the first request queued", func() bool { return in.q.Bytes() > 0 })
	r := post(t, nil, in.url(), big)
	if r.status != 429 || r.header.Get("Retry-After") != "1" || !strings.Contains(r.body, "queue is full") {
		t.Fatalf("queue full: %d %v %s", r.status, r.header, r.body)
	}
	// Two requests in progress (the first, and one more waiting), then a
	// third is refused at once.
	second := make(chan reply, 1)
	go func() { second <- post(t, nil, in.url(), []byte("{\"small\":1}")) }()
	waitFor(t, "two requests in progress", func() bool { return len(in.slots) == 2 })
	r = post(t, nil, in.url(), []byte("{\"small\":2}"))
	if r.status != 429 || !strings.Contains(r.body, "max-concurrent-requests") {
		t.Fatalf("concurrency cap: %d %s", r.status, r.body)
	}
	s := runScheduler(t, in)
	if r := <-first; r.status != 200 {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	if r := <-second; r.status != 200 && r.status != 429 {
		t.Fatalf("second: %d %s", r.status, r.body)
	}
	if n := in.Stats().DroppedQueueFull; n < 2 {
		t.Fatalf("refusals counted: %d", n)
	}
	for _, e := range s.stored() {
		if strings.Contains(e, `"small":2`) {
			t.Fatal("a refused request was stored")
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	transporttest.Eventually(t, testWait, what, cond)
}

// A flood: 64 senders (16 in -short) each posting 20 requests (5) of 50 records, retrying
// 429s (and a request that got no answer: a loaded machine may reset a
// connection), beside 20 slow senders that never finish their headers.
// Every record of every request is stored, once unless its request was
// resent after getting no answer; the slow senders are cut by the header
// timeout; connections stay within max-connections.
func TestFlood(t *testing.T) {
	in := open(t, func(c *Config) {
		c.MaxBodyBytes, c.MaxPendingBytes, c.MaxConcurrentRequests, c.MaxConnections = 64<<10, 256<<10, 8, 100
		c.ReadHeaderTimeout = 500 * time.Millisecond
	})
	s := runScheduler(t, in)
	var slow []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", in.Addr())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\n"))
		slow = append(slow, c)
	}
	senders, requests, records := 64, 20, 50
	if testing.Short() { // the arm64 run under qemu: a smaller flood
		senders, requests = 16, 5
	}
	client := &http.Client{Timeout: testWait, Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := map[string]bool{}
	deadline := time.Now().Add(2 * testWait)
	refused, unanswered, peakConns := 0, 0, int64(0)
	for i := range senders {
		wg.Go(func() {
			for j := range requests {
				var body bytes.Buffer
				for k := range records {
					fmt.Fprintf(&body, "{\"id\":\"%d-%d-%d\"}\n", i, j, k)
				}
				for attempt := 0; ; attempt++ {
					if time.Now().After(deadline) {
						t.Errorf("request %d-%d not stored after %d attempts in %v", i, j, attempt, testWait)
						return
					}
					if attempt > 0 {
						time.Sleep(2 * time.Millisecond) // a short Retry-After: the test's senders are impatient
					}
					r, err := postE(t, client, in.url(), body.Bytes())
					mu.Lock()
					peakConns = max(peakConns, in.stats.connections.Load())
					if err != nil {
						unanswered++
						mu.Unlock()
						continue
					}
					if r.status == 429 {
						refused++
						mu.Unlock()
						continue
					}
					mu.Unlock()
					if r.status != 200 {
						t.Errorf("request %d-%d: %d %s", i, j, r.status, r.body)
						return
					}
					mu.Lock()
					ok[fmt.Sprintf("%d-%d", i, j)] = true
					mu.Unlock()
					break
				}
			}
		})
	}
	wg.Wait()
	counts := map[string]int{}
	for _, e := range s.stored() {
		counts[e]++
	}
	for key := range ok {
		for k := range records {
			if e := fmt.Sprintf(`{"id":"%s-%d"}`, key, k); counts[e] < 1 || (counts[e] > 1 && unanswered == 0) {
				t.Fatalf("%s stored %d times (%d requests resent unanswered)", e, counts[e], unanswered)
			}
		}
	}
	if len(counts) != senders*requests*records {
		t.Fatalf("stored %d distinct records, want %d", len(counts), senders*requests*records)
	}
	for _, c := range slow {
		_ = c.SetReadDeadline(time.Now().Add(testWait))
		var b [512]byte
		n, _ := c.Read(b[:])
		if n > 0 && !strings.Contains(string(b[:n]), "408") {
			t.Fatalf("a slow sender got %q", b[:n])
		}
		c.Close()
	}
	if peakConns > 100 {
		t.Fatalf("%d connections open at once, max-connections 100", peakConns)
	}
	t.Logf("flood: %d requests stored, %d answered 429 and retried, %d unanswered and resent, peak %d connections", len(ok), refused, unanswered, peakConns)
}

// mTLS: a sender with a certificate signed by client-ca-file is served;
// one without is refused at the handshake.
func TestMutualTLS(t *testing.T) {
	pk := transporttest.NewPKI(t)
	in := open(t, func(c *Config) {
		c.TLS = TLSConfig{CertFile: pk.Server.CertFile, KeyFile: pk.Server.KeyFile, ClientCAFile: pk.CAFile}
	})
	s := runScheduler(t, in)
	caPEM, _ := os.ReadFile(pk.CAFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(pk.Client.CertFile, pk.Client.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + in.Addr() + "/"
	withCert := &http.Client{Timeout: testWait, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
	if r := post(t, withCert, url, []byte(`{"m":1}`)); r.status != 200 {
		t.Fatalf("with a client certificate: %d %s", r.status, r.body)
	}
	without := &http.Client{Timeout: testWait, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"m":2}`))
	if resp, err := without.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("without a client certificate: %d", resp.StatusCode)
	}
	if got := s.stored(); !slices.Equal(got, []string{`{"m":1}`}) {
		t.Fatalf("stored %q", got)
	}
}

// curl, as an operator would use it: a gzip'd NDJSON file with a bearer
// token, and a plain-lines body.
func TestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("curl is required under CI: %v", err)
		}
		t.Skip("SKIP: curl not installed; the curl test did not run")
	}
	in := open(t, func(c *Config) { c.BearerToken = "tok-123" })
	s := runScheduler(t, in)
	dir := t.TempDir()
	file := filepath.Join(dir, "events.ndjson.gz")
	if err := os.WriteFile(file, gz([]byte("{\"n\":1}\n{\"n\":2}\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(curl, "-sS", "--fail-with-body", "-H", "Authorization: Bearer tok-123",
		"-H", "Content-Type: application/x-ndjson", "-H", "Content-Encoding: gzip",
		"--data-binary", "@"+file, in.url()).CombinedOutput()
	if err != nil || string(out) != "{\"accepted\":2}\n" {
		t.Fatalf("curl: %v: %s", err, out)
	}
	out, err = exec.Command(curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer tok-123",
		"--data-binary", "{broken\n", in.url()).CombinedOutput()
	if err != nil || string(out) != "400" {
		t.Fatalf("curl bad record: %v: %s", err, out)
	}
	if got := s.stored(); !slices.Equal(got, []string{`{"n":1}`, `{"n":2}`}) {
		t.Fatalf("stored %q", got)
	}
}
