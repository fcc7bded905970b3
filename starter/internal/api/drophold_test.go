package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A queue held by queue-drop: never rows shows as wal.drop_held; the key
// is absent otherwise.
func TestDropHeldInStatus(t *testing.T) {
	for _, held := range []bool{true, false} {
		st := running()
		st.Drops.Held = held
		srv := serve(t, Options{Source: &fakeSource{st: st}})
		code, body := get(t, srv.URL+"/debug/status", "")
		if code != http.StatusOK {
			t.Fatalf("status: %d", code)
		}
		var doc Status
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.WAL.DropHeld != held {
			t.Errorf("held %v: wal.drop_held %v", held, doc.WAL.DropHeld)
		}
		if !held && strings.Contains(body, "drop_held") {
			t.Errorf("drop_held present while not held: %s", body)
		}
	}
}
