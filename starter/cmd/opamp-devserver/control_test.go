package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/edge-agent/edge-agent/starter/opampdev"
)

func TestControlAPI(t *testing.T) {
	srv, err := opampdev.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(t.Context())
	h := (&control{srv: srv, saveDir: t.TempDir()}).handler()
	tests := []struct {
		method, path, body string
		code               int
		has                string
	}{
		{"GET", "/agents", "", http.StatusOK, "[]"},
		{"POST", "/agents/any/tasks/backlog", "", http.StatusNotFound, "no agent is connected"},
		{"POST", "/agents/any/tasks/reread", `{"path":`, http.StatusBadRequest, "must be JSON"},
		{"POST", "/agents/any/tasks/reread", `{"path":"/var/log/app.log","offset":10}`, http.StatusNotFound, "no agent is connected"},
		{"POST", "/agents/0190a000-0000-7000-8000-000000000000/tasks/backlog", "", http.StatusConflict, "is not connected"},
		{"POST", "/connections/edgesocket", `{"endpoint":"127.0.0.1:9000","token":"t"}`, http.StatusOK, `"offered"`},
		{"POST", "/connections/edgesocket", `{"cert_file":"/no/such.pem"}`, http.StatusBadRequest, "no/such.pem"},
		{"POST", "/connections/opamp", `{"endpoint":"ws://127.0.0.1:1/v1/opamp"}`, http.StatusOK, `"offered"`},
		{"POST", "/connections/opamp", `{`, http.StatusBadRequest, "body"},
		{"POST", "/connections/own_logs", `{"endpoint":"http://127.0.0.1:1/v1/logs","headers":{"Authorization":"Bearer k"}}`, http.StatusOK, `"offered"`},
		{"POST", "/connections/own_logs", `{`, http.StatusBadRequest, "body"},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body)))
		if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.has) {
			t.Errorf("%s %s: %d %s, want %d with %q", tt.method, tt.path, rec.Code, rec.Body, tt.code, tt.has)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Errorf("%s %s: not JSON: %s", tt.method, tt.path, rec.Body)
		}
	}
}
