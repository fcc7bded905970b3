package api

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/dbview"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// guarded is a server with every route on (db, reread, diagnostics,
// pprof), the token file's token testFileToken, and http.token conf.
type guarded struct {
	srv     *httptest.Server
	db      *walDB
	mu      sync.Mutex
	rereads int
	bundles int
	log     bytes.Buffer
	logMu   sync.Mutex
}

func newGuarded(t *testing.T, conf string) *guarded {
	t.Helper()
	g := &guarded{db: newWALDB(t)}
	logger := slog.New(slog.NewTextHandler(lockedWriter{&g.logMu, &g.log}, nil))
	g.srv = serve(t, Options{
		Source: &fakeSource{st: running()}, DB: g.db, Logger: logger,
		Settings: Settings{Listen: "127.0.0.1:0", Token: conf, Pprof: true},
		Reread: func(context.Context, dbview.RereadArgs) (dbview.RereadReport, error) {
			g.mu.Lock()
			g.rereads++
			g.mu.Unlock()
			return dbview.RereadReport{Input: "in-1", Path: "/var/log/a.log"}, nil
		},
		Diagnostics: func(context.Context) ([]byte, error) {
			g.mu.Lock()
			g.bundles++
			g.mu.Unlock()
			return []byte("bundle"), nil
		},
	})
	return g
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (g *guarded) logText() string {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	return g.log.String()
}

// state is everything a request could have changed or obtained.
type state struct {
	counts           wal.Counts
	updates          int
	rereads, bundles int
}

func (g *guarded) state(t *testing.T) state {
	t.Helper()
	var c wal.Counts
	if err := g.db.w.View(func(tx *wal.ReadTx) error { c = tx.Counts(); return nil }); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return state{counts: c, updates: g.db.updates, rereads: g.rereads, bundles: g.bundles}
}

type route struct{ method, path string }

// changes are every route that changes the agent's state.
var changes = []route{
	{http.MethodPost, "/db/retry-dead"},
	{http.MethodPost, "/db/purge-dead"},
	{http.MethodPost, "/db/reread?path=/var/log/a.log&offset=0"},
}

// protectedReads carry event data, paths or internals.
var protectedReads = []route{
	{http.MethodGet, "/debug/status"},
	{http.MethodGet, "/debug/diagnostics"},
	{http.MethodGet, "/debug/pprof/"},
	{http.MethodGet, "/db/info"},
	{http.MethodGet, "/db/summary"},
	{http.MethodGet, "/db/rows"},
	{http.MethodGet, "/db/rows/1"},
	{http.MethodGet, "/db/positions"},
	{http.MethodGet, "/db/verify"},
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

func with(h map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for hk, hv := range h {
		out[hk] = hv
	}
	return out
}

// TestGuardRefusesWithoutCredential: on the loopback default (no
// http.token) every change and every protected read is refused without
// the token, or with a wrong one, and nothing changes or is served.
func TestGuardRefusesWithoutCredential(t *testing.T) {
	g := newGuarded(t, "")
	before := g.state(t)
	for _, r := range append(append([]route{}, changes...), protectedReads...) {
		for name, hdr := range map[string]map[string]string{
			"no credential":        nil,
			"wrong token":          bearer("guess"),
			"empty bearer":         {"Authorization": "Bearer "},
			"token without Bearer": {"Authorization": testFileToken},
		} {
			code, body := request(t, r.method, g.srv.URL+r.path, hdr)
			if code != http.StatusUnauthorized {
				t.Errorf("%s %s, %s: %d, want 401\n%s", r.method, r.path, name, code, body)
			}
			if strings.Contains(body, "in-1") || strings.Contains(body, "/var/log") || strings.Contains(body, "bundle") {
				t.Errorf("%s %s, %s: the refusal shows data: %s", r.method, r.path, name, body)
			}
		}
	}
	if after := g.state(t); after != before {
		t.Fatalf("refused requests changed the agent: %+v, was %+v", after, before)
	}
	if before.counts.Dead != 2 {
		t.Fatalf("the WAL should hold 2 DEAD rows: %+v", before.counts)
	}
}

// TestGuardRefusesForeignHostAndOrigin: a Host that is not this server
// (DNS rebinding) or an Origin of another site is 403, even with the
// token, and nothing changes.
func TestGuardRefusesForeignHostAndOrigin(t *testing.T) {
	g := newGuarded(t, "conf-token")
	port := g.srv.URL[strings.LastIndex(g.srv.URL, ":")+1:]
	before := g.state(t)
	for _, tok := range []string{testFileToken, "conf-token"} {
		for name, hdr := range map[string]map[string]string{
			"rebound name":          with(bearer(tok), "Host", "evil.example:"+port),
			"loopback, other port":  with(bearer(tok), "Host", "127.0.0.1:1"),
			"loopback, no port":     with(bearer(tok), "Host", "localhost"),
			"foreign Origin":        with(bearer(tok), "Origin", "http://evil.example"),
			"foreign Origin, port":  with(bearer(tok), "Origin", "http://evil.example:"+port),
			"null Origin":           with(bearer(tok), "Origin", "null"),
			"other port Origin":     with(bearer(tok), "Origin", "http://127.0.0.1:1"),
			"https Origin for http": with(bearer(tok), "Origin", "https://127.0.0.1:"+port),
		} {
			for _, r := range append(append([]route{}, changes...), protectedReads...) {
				if code, body := request(t, r.method, g.srv.URL+r.path, hdr); code != http.StatusForbidden {
					t.Errorf("%s %s, %s: %d, want 403\n%s", r.method, r.path, name, code, body)
				}
			}
		}
	}
	if after := g.state(t); after != before {
		t.Fatalf("refused requests changed the agent: %+v, was %+v", after, before)
	}
	if !strings.Contains(g.logText(), "API request refused") {
		t.Errorf("refusals not logged:\n%s", g.logText())
	}
}

// TestGuardServesWithCredential: either token opens every route, by the
// address the server listens on, localhost, and with its own Origin; each
// change is logged with who asked and which credential, never the token.
func TestGuardServesWithCredential(t *testing.T) {
	g := newGuarded(t, "conf-token")
	addr := strings.TrimPrefix(g.srv.URL, "http://")
	port := addr[strings.LastIndex(addr, ":")+1:]
	for _, r := range protectedReads {
		for name, hdr := range map[string]map[string]string{
			"token file":           bearer(testFileToken),
			"http.token":           bearer("conf-token"),
			"localhost":            with(bearer(testFileToken), "Host", "localhost:"+port),
			"own Origin":           with(bearer(testFileToken), "Origin", "http://"+addr),
			"own Origin localhost": with(with(bearer(testFileToken), "Host", "localhost:"+port), "Origin", "http://localhost:"+port),
		} {
			if code, body := request(t, r.method, g.srv.URL+r.path, hdr); code != http.StatusOK {
				t.Errorf("%s %s, %s: %d\n%s", r.method, r.path, name, code, body)
			}
		}
	}

	code, body := request(t, http.MethodPost, g.srv.URL+"/db/purge-dead", with(bearer(testFileToken), "Origin", "http://"+addr))
	if res := decode[dbview.Result](t, body); code != http.StatusOK || res.Rows != 2 || g.state(t).counts.Dead != 0 {
		t.Fatalf("purge-dead with the token file's token: %d %s", code, body)
	}
	if code, body := request(t, http.MethodPost, g.srv.URL+"/db/retry-dead", bearer("conf-token")); code != http.StatusOK {
		t.Fatalf("retry-dead with http.token: %d %s", code, body)
	}
	if code, body := request(t, http.MethodPost, g.srv.URL+"/db/reread?path=/var/log/a.log", bearer(testFileToken)); code != http.StatusOK || g.state(t).rereads != 1 {
		t.Fatalf("reread with the token: %d %s", code, body)
	}
	log := g.logText()
	for _, want := range []string{
		`change=purge-dead rows=2`, `credential="token file"`, `change=retry-dead rows=0`, `credential=token `,
		"remote=127.0.0.1:", "file position moved on request through the API",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, testFileToken) || strings.Contains(log, "conf-token") {
		t.Errorf("the log shows a token:\n%s", log)
	}
}

// TestGuardChangesArePostOnly: a change asked with another method is
// refused with the token too, and changes nothing.
func TestGuardChangesArePostOnly(t *testing.T) {
	g := newGuarded(t, "")
	before := g.state(t)
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		for _, r := range changes {
			if code, body := request(t, m, g.srv.URL+r.path, bearer(testFileToken)); code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d, want 405\n%s", m, r.path, code, body)
			}
		}
	}
	if after := g.state(t); after != before {
		t.Fatalf("requests by another method changed the agent: %+v, was %+v", after, before)
	}
}

// TestGuardLeavesProbesOpen: health, readiness and metrics need no
// credential on the default (no http.token), by any Host (a scraper's
// name for this host); other methods on them are not open.
func TestGuardLeavesProbesOpen(t *testing.T) {
	g := newGuarded(t, "")
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		for _, hdr := range []map[string]string{nil, {"Host": "agent-7.example:9466"}} {
			if code, body := request(t, http.MethodGet, g.srv.URL+p, hdr); code != http.StatusOK {
				t.Errorf("GET %s %v: %d\n%s", p, hdr, code, body)
			}
		}
		if code, _ := request(t, http.MethodPost, g.srv.URL+p, nil); code != http.StatusUnauthorized {
			t.Errorf("POST %s without a credential: %d, want 401", p, code)
		}
	}
}

func TestCredential(t *testing.T) {
	for _, tc := range []struct{ header, conf, file, want string }{
		{"Bearer a", "a", "b", CredToken},
		{"Bearer b", "a", "b", CredTokenFile},
		{"Bearer c", "a", "b", ""},
		{"Bearer ", "", "", ""},
		{"", "", "", ""},
		{"Bearer a", "", "", ""},
		{"bearer a", "a", "", ""},
	} {
		if got := credential(tc.header, tc.conf, tc.file); got != tc.want {
			t.Errorf("credential(%q, %q, %q) = %q, want %q", tc.header, tc.conf, tc.file, got, tc.want)
		}
	}
}

// TestStatusJSONIsTheServedStatus: the diagnostics bundle's status.json,
// built without a credential, is what /debug/status serves with one.
func TestStatusJSONIsTheServedStatus(t *testing.T) {
	o := Options{Source: &fakeSource{st: running()}, Version: "v9", Now: func() time.Time { return t0 }}
	doc, err := StatusJSON(o)
	if err != nil {
		t.Fatal(err)
	}
	code, body := get(t, serve(t, o).URL+"/debug/status", "")
	if code != http.StatusOK || body != string(doc) || !strings.Contains(body, `"agent_id": "agent-1"`) {
		t.Fatalf("StatusJSON:\n%s\n/debug/status (%d):\n%s", doc, code, body)
	}
}
