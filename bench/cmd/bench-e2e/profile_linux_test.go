//go:build linux

package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestSaveProfile: -pprof asks the agent's API for a CPU profile of
// -pprof-seconds and saves the body under the run's name; a refusal is an
// error naming the URL, not an empty file.
func TestSaveProfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		wantErr bool
	}{
		{"saved", http.StatusOK, false},
		{"refused", http.StatusNotFound, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked = r.URL.Path + "?" + r.URL.RawQuery
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte("profile bytes"))
			}))
			defer srv.Close()
			dir := t.TempDir()
			b := &bench{o: options{pprofDir: dir, pprofSeconds: 3}}
			err := <-b.startProfile(context.Background(), func() string { return srv.Listener.Addr().String() }, "nosync-1.pprof")
			if asked != "/debug/pprof/profile?seconds=3" {
				t.Errorf("asked %q", asked)
			}
			got, rerr := os.ReadFile(filepath.Join(dir, "nosync-1.pprof"))
			if tc.wantErr {
				if err == nil || rerr == nil {
					t.Fatalf("err %v, file %q: want an error and no file", err, got)
				}
				return
			}
			if err != nil || string(got) != "profile bytes" {
				t.Fatalf("err %v, file %q", err, got)
			}
		})
	}
}

// TestAPIListening: the API's address comes from the agent's log line
// once it listens, and from no other line.
func TestAPIListening(t *testing.T) {
	for _, tc := range []struct {
		name, log, want string
	}{
		{"none yet", `{"time":"2026-01-01T00:00:00Z","level":"INFO","msg":"config in effect"}` + "\n", ""},
		{"listening", `{"level":"INFO","msg":"config in effect"}` + "\n" +
			`{"time":"2026-01-01T00:00:00Z","level":"INFO","msg":"HTTP API listening","address":"127.0.0.1:40123"}` + "\n", "127.0.0.1:40123"},
		{"quoted elsewhere", `{"level":"INFO","msg":"note","detail":"\"HTTP API listening\""}` + "\n", ""},
		{"torn last line", `{"level":"INFO","msg":"HTTP API listening","addr`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := apiListening(tc.log); got != tc.want {
				t.Errorf("apiListening = %q, want %q", got, tc.want)
			}
		})
	}
}
