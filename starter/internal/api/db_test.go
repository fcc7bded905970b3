package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/dbview"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// walDB is a running agent's WAL: a real one, held read-write.
type walDB struct {
	w       *wal.WAL
	updates int
}

func (d *walDB) WAL() *wal.WAL { return d.w }

func (d *walDB) UpdateWAL(_ context.Context, fn func(tx *wal.Tx) error) error {
	d.updates++
	return d.w.Update(fn)
}

// newWALDB holds rows 1..5: 1,2 DEAD, 3 ACKED, 4,5 PENDING, and one
// position.
func newWALDB(t *testing.T) *walDB {
	t.Helper()
	ms := t0.UnixMilli()
	w, err := wal.Open(wal.Options{Path: filepath.Join(t.TempDir(), "wal.db"), Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	err = w.Update(func(tx *wal.Tx) error {
		var rows []wal.NewRow
		for _, p := range []string{"a", "b", "c", "d", "e"} {
			rows = append(rows, wal.NewRow{SourceID: "in-1", Payload: []byte(p)})
		}
		if _, _, err := tx.Append(rows); err != nil {
			return err
		}
		if _, err := tx.Claim(3, ms); err != nil {
			return err
		}
		if _, err := tx.Fail([]uint64{1, 2}, true, ms, 1, "DECODE_FAILED", ms); err != nil {
			return err
		}
		if err := tx.Ack([]uint64{3}, time.Hour, ms); err != nil {
			return err
		}
		return tx.SavePositions([]wal.PositionUpdate{{SourceID: "in-1", Key: "/var/log/a.log", State: []byte(`{"offset":7}`)}})
	})
	if err != nil {
		t.Fatal(err)
	}
	return &walDB{w: w}
}

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return v
}

func TestDBReads(t *testing.T) {
	db := newWALDB(t)
	srv := serve(t, Options{Source: &fakeSource{st: running()}, DB: db, Settings: Settings{Token: "tok"}})

	if code, _ := request(t, http.MethodGet, srv.URL+"/db/summary", nil); code != http.StatusUnauthorized {
		t.Fatalf("/db/ without the token: %d", code)
	}
	code, body := get(t, srv.URL+"/db/summary", "tok")
	sum := decode[dbview.Summary](t, body)
	if code != http.StatusOK || sum.Counts.Dead != 2 || sum.Counts.Pending != 2 || sum.Counts.Acked != 1 || len(sum.Statuses) != len(wal.AllStatuses()) {
		t.Fatalf("summary %d: %s", code, body)
	}
	if !strings.Contains(body, `"status": "DEAD"`) {
		t.Errorf("statuses are not named in the JSON: %s", body)
	}
	if d := sum.Statuses[len(sum.Statuses)-1]; d.Status != wal.StatusDead || d.Oldest == nil || d.Oldest.ID != 1 || d.Oldest.Payload != nil {
		t.Errorf("DEAD line: %+v", d)
	}

	_, body = get(t, srv.URL+"/db/rows?status=dead&limit=1", "tok")
	page := decode[dbview.List](t, body)
	if len(page.Rows) != 1 || page.Rows[0].ID != 1 || !page.More || page.Rows[0].PayloadBytes != 1 || page.Rows[0].Payload != nil {
		t.Fatalf("list page: %s", body)
	}
	_, body = get(t, srv.URL+"/db/rows?after_id=3&limit=0", "tok")
	if page := decode[dbview.List](t, body); len(page.Rows) != 2 || page.More {
		t.Fatalf("list after 3: %s", body)
	}

	_, body = get(t, srv.URL+"/db/rows/4", "tok")
	if row := decode[wal.Row](t, body); row.ID != 4 || string(row.Payload) != "d" || row.Status != wal.StatusPending {
		t.Fatalf("row 4: %s", body)
	}
	if code, body := get(t, srv.URL+"/db/rows/99", "tok"); code != http.StatusNotFound || !strings.Contains(body, "no row with id(pk) 99") {
		t.Fatalf("row 99: %d %s", code, body)
	}
	// Refused, and the value (a secret pasted in the wrong place, say) is
	// not repeated.
	for _, bad := range []string{"/db/rows/x", "/db/rows?status=DELIVERED", "/db/rows?limit=-1", "/db/verify?max_problems=z",
		"/db/rows/S3CRETx", "/db/rows?status=S3CRETx", "/db/rows?after_id=S3CRETx", "/db/rows?limit=S3CRETx"} {
		if code, body := get(t, srv.URL+bad, "tok"); code != http.StatusBadRequest || !strings.Contains(body, `"error"`) || strings.Contains(body, "S3CRET") {
			t.Errorf("%s: %d %s", bad, code, body)
		}
	}

	_, body = get(t, srv.URL+"/db/positions?source_id=in-1", "tok")
	if pos := decode[[]dbview.Position](t, body); len(pos) != 1 || pos[0].Key != "/var/log/a.log" || pos[0].State != `{"offset":7}` {
		t.Fatalf("positions: %s", body)
	}
	_, body = get(t, srv.URL+"/db/info", "tok")
	if in := decode[dbview.Info](t, body); in.Path != db.w.Path() || in.FirstRowID != 1 || in.LastRowID != 5 || in.Counts.Total() != 5 {
		t.Fatalf("info: %s", body)
	}
	_, body = get(t, srv.URL+"/db/verify", "tok")
	if v := decode[dbview.Verification](t, body); len(v.Problems) != 0 || v.Counts.Total() != 5 {
		t.Fatalf("verify: %s", body)
	}
	if db.updates != 0 {
		t.Fatalf("reads wrote %d times", db.updates)
	}
}

// post sends the token file's token, as the CLI does.
func post(t *testing.T, url string) (int, string) {
	t.Helper()
	return request(t, http.MethodPost, url, map[string]string{"Authorization": "Bearer " + testFileToken})
}

func TestDBChangesGoThroughTheAgent(t *testing.T) {
	db := newWALDB(t)
	srv := serve(t, Options{Source: &fakeSource{st: running()}, DB: db})
	counts := func() wal.Counts {
		var c wal.Counts
		_ = db.w.View(func(tx *wal.ReadTx) error { c = tx.Counts(); return nil })
		return c
	}

	code, body := post(t, srv.URL+"/db/retry-dead?dry_run=true")
	res := decode[dbview.Result](t, body)
	if code != http.StatusOK || !res.DryRun || res.Rows != 2 || len(res.Sample) != 2 || db.updates != 0 || counts().Dead != 2 {
		t.Fatalf("dry run %d: %s (updates %d)", code, body, db.updates)
	}
	code, body = post(t, srv.URL+"/db/retry-dead")
	if res := decode[dbview.Result](t, body); code != http.StatusOK || res.DryRun || res.Rows != 2 || db.updates != 1 {
		t.Fatalf("retry-dead %d: %s", code, body)
	}
	if c := counts(); c.Dead != 0 || c.Pending != 4 {
		t.Fatalf("after retry-dead: %+v", c)
	}
	if code, body := post(t, srv.URL+"/db/unstick-sending"); code != http.StatusNotFound {
		t.Fatalf("a change the API does not make: %d %s", code, body)
	}
	if code, _ := get(t, srv.URL+"/db/retry-dead", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET of a change: %d", code)
	}
}

func TestDBWithoutWAL(t *testing.T) {
	srv := serve(t, Options{Source: &fakeSource{st: running()}, DB: &walDB{}})
	if code, body := get(t, srv.URL+"/db/summary", ""); code != http.StatusServiceUnavailable || !strings.Contains(body, "no WAL open") {
		t.Fatalf("%d %s", code, body)
	}
	if code, _ := post(t, srv.URL+"/db/purge-dead"); code != http.StatusServiceUnavailable {
		t.Fatalf("purge-dead: %d", code)
	}
}

// POST /db/reread hands the args to the agent's reread and answers its
// report, or its refusal as a 400 in its words; without the hook there
// is no route.
func TestDBReread(t *testing.T) {
	var got []dbview.RereadArgs
	reread := func(_ context.Context, a dbview.RereadArgs) (dbview.RereadReport, error) {
		got = append(got, a)
		if a.Path != "/var/log/a.log" {
			return dbview.RereadReport{}, errors.New("reread " + a.Path + ": not read by this input")
		}
		return dbview.RereadReport{Input: "in-1", Path: a.Path, Offset: a.OffsetOr0(), Reread: 9 - a.OffsetOr0()}, nil
	}
	srv := serve(t, Options{Source: &fakeSource{st: running()}, DB: newWALDB(t), Reread: reread})
	for _, tc := range []struct {
		query string
		code  int
		has   string
	}{
		{"?path=/var/log/a.log&offset=4&input=in-1", http.StatusOK, `"reread_bytes": 5`},
		{"?path=/var/log/a.log", http.StatusOK, `"reread_bytes": 9`},
		{"?path=/var/log/b.log", http.StatusBadRequest, "reread /var/log/b.log: not read"},
		{"?offset=3", http.StatusBadRequest, `no \"path\"`},
		{"?path=/var/log/a.log&offset=-1", http.StatusBadRequest, "negative"},
		{"?path=/var/log/a.log&offset=ten", http.StatusBadRequest, `offset of 3 bytes: want a byte offset`},
	} {
		code, body := post(t, srv.URL+"/db/reread"+tc.query)
		if code != tc.code || !strings.Contains(body, tc.has) {
			t.Errorf("POST /db/reread%s: %d %s; want %d with %s", tc.query, code, body, tc.code, tc.has)
		}
	}
	if len(got) != 3 || got[0].Input != "in-1" || got[0].OffsetOr0() != 4 || got[1].Offset != nil {
		t.Fatalf("the agent was asked %+v", got)
	}

	c, err := NewClient(Settings{Listen: strings.TrimPrefix(srv.URL, "http://"), Token: testFileToken})
	if err != nil {
		t.Fatal(err)
	}
	four := int64(4)
	rep, err := c.DBReread(context.Background(), dbview.RereadArgs{Path: "/var/log/a.log", Offset: &four})
	if err != nil || rep.Reread != 5 || rep.Input != "in-1" {
		t.Fatalf("DBReread = %+v, %v", rep, err)
	}
	if _, err := c.DBReread(context.Background(), dbview.RereadArgs{Path: "/x.log"}); err == nil || !strings.Contains(err.Error(), "reread /x.log: not read") {
		t.Fatalf("DBReread of a path not read = %v", err)
	}

	plain := serve(t, Options{Source: &fakeSource{st: running()}, DB: newWALDB(t)})
	if code, _ := post(t, plain.URL+"/db/reread?path=/var/log/a.log"); code != http.StatusNotFound {
		t.Fatalf("without the hook: %d, want 404", code)
	}
}
