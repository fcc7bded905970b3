package wal

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The schema-2 fixture (testdata/schema2.wal) was written by the schema-2
// build with -update-schema2; testdata/schema2.json is everything the
// public API showed of it then. The migration test opens a copy with the
// current build and compares the public view with that dump, so the dump
// must come from the old code, not from the code under test.
var updateSchema2 = flag.Bool("update-schema2", false, "rewrite testdata/schema2.wal and .json (needs the schema-2 build)")

const (
	schema2WAL  = "testdata/schema2.wal"
	schema2Dump = "testdata/schema2.json"
	// fixtureNow is the clock of the fixture and of the views compared
	// with it: backed-off rows are still backed off at this time.
	fixtureNow = t0 + 10_000
)

// fixtureSources are the inputs of the fixture's rows and positions.
var fixtureSources = []string{"app-log", "sys-log", "audit"}

// fixtureMetaKeys are the agent metadata keys the fixture sets.
var fixtureMetaKeys = []string{"input_started:app-log", "agent_id"}

// publicView is what the public API shows of a WAL.
type publicView struct {
	Rows        []Row                        `json:"rows"`
	Counts      Counts                       `json:"counts"`
	NextBatchID int64                        `json:"next_batch_id"`
	FirstID     uint64                       `json:"first_id"`
	LastID      uint64                       `json:"last_id"`
	SendingIDs  []uint64                     `json:"sending_ids"`
	ByStatus    map[string][]uint64          `json:"by_status"`
	Oldest      map[string]uint64            `json:"oldest"`
	AckedBefore int                          `json:"acked_before"`
	Sources     []string                     `json:"sources"`
	Positions   map[string]map[string][]byte `json:"positions"`
	Meta        map[string][]byte            `json:"meta"`
}

func readPublicView(t testing.TB, w *WAL) publicView {
	t.Helper()
	var v publicView
	err := w.View(func(tx *ReadTx) error {
		var err error
		if v.Rows, err = tx.List(nil, 0, 0); err != nil {
			return err
		}
		for i := range v.Rows {
			r, ok, err := tx.Get(v.Rows[i].ID)
			if err != nil || !ok {
				t.Errorf("get %d: ok=%v err=%v", v.Rows[i].ID, ok, err)
				continue
			}
			v.Rows[i] = r
		}
		v.Counts = tx.Counts()
		v.NextBatchID = tx.NextBatchID()
		v.FirstID, v.LastID = tx.RowIDRange()
		v.SendingIDs = tx.SendingIDs()
		v.ByStatus, v.Oldest = map[string][]uint64{}, map[string]uint64{}
		for _, s := range AllStatuses() {
			rows, err := tx.List(&s, 0, 0)
			if err != nil {
				return err
			}
			v.ByStatus[s.String()] = ids(rows)
			r, ok, err := tx.OldestRow(s)
			if err != nil {
				return err
			}
			if ok {
				v.Oldest[s.String()] = r.ID
			}
		}
		v.AckedBefore = tx.CountAckedOlderThan(fixtureNow)
		if v.Sources, err = tx.Sources(); err != nil {
			return err
		}
		v.Positions = map[string]map[string][]byte{}
		for _, s := range v.Sources {
			if v.Positions[s], err = tx.Positions(s); err != nil {
				return err
			}
		}
		v.Meta = map[string][]byte{}
		for _, k := range fixtureMetaKeys {
			if v.Meta[k], err = tx.Meta(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read public view: %v", err)
	}
	return v
}

// buildSchema2Fixture fills a WAL with rows in every status: due and
// backed-off PENDING (with attempts and reasons), SENDING, ACKED kept by
// retention, DEAD, from several inputs, plus positions and metadata.
func buildSchema2Fixture(t *testing.T, path string) {
	clk := newClock(t0)
	w, err := Open(Options{Path: path, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	mustUpdate(t, w, func(tx *Tx) error {
		var rows []NewRow
		for i := range 40 {
			src := fixtureSources[i%len(fixtureSources)]
			rows = append(rows, NewRow{SourceID: src, Payload: []byte(src + " line " + string(rune('a'+i%26)) + " of the fixture")})
		}
		rows = append(rows, NewRow{SourceID: "app-log", Payload: nil})
		if _, _, err := tx.Append(rows); err != nil {
			return err
		}
		return tx.SavePositions([]PositionUpdate{
			{SourceID: "app-log", Key: "inode:1", State: []byte(`{"offset":4096}`)},
			{SourceID: "app-log", Key: "inode:2", State: []byte(`{"offset":12}`)},
			{SourceID: "sys-log", Key: "inode:7", State: []byte(`{"offset":99}`)},
		})
	})
	clk.Add(1000)
	mustUpdate(t, w, func(tx *Tx) error {
		if _, _, err := tx.Append([]NewRow{{SourceID: "audit", Payload: []byte("second group")}, {SourceID: "audit", Payload: []byte("second group, row 2")}}); err != nil {
			return err
		}
		if err := tx.SetMeta("input_started:app-log", []byte("1700000000000")); err != nil {
			return err
		}
		return tx.SetMeta("agent_id", []byte("fixture-agent"))
	})
	now := clk.Add(1000)
	// Claim 30: ack some with retention, some at once, fail some (charged
	// and not, one to DEAD), release some, leave the rest SENDING.
	var claimed []Row
	mustUpdate(t, w, func(tx *Tx) (err error) { claimed, err = tx.Claim(30, now); return err })
	id := func(i int) uint64 { return claimed[i].ID }
	mustUpdate(t, w, func(tx *Tx) error {
		if err := tx.Ack([]uint64{id(0), id(1), id(2)}, time.Hour, now); err != nil {
			return err
		}
		if err := tx.Ack([]uint64{id(3), id(4), id(6)}, 0, now); err != nil {
			return err
		}
		if _, err := tx.Fail([]uint64{id(7), id(8)}, true, now+60_000, 5, "engine refused: busy", now); err != nil {
			return err
		}
		if _, err := tx.Fail([]uint64{id(9)}, false, now-1, 5, "connection reset", now); err != nil {
			return err
		}
		if _, err := tx.Fail([]uint64{id(10), id(11)}, true, now, 1, "engine refused: bad event", now); err != nil {
			return err
		}
		return tx.Release([]uint64{id(12), id(13)}, now)
	})
	now = clk.Add(500)
	mustUpdate(t, w, func(tx *Tx) error { return tx.Ack([]uint64{id(14)}, time.Hour, now) })
}

func TestGenerateSchema2Fixture(t *testing.T) {
	if !*updateSchema2 {
		t.Skip("writes the schema-2 fixture; run with -update-schema2 on the schema-2 build")
	}
	if SchemaVersion != 2 {
		t.Fatalf("this build writes schema %d: the fixture must come from the schema-2 build", SchemaVersion)
	}
	path := filepath.Join(t.TempDir(), "wal.db")
	buildSchema2Fixture(t, path)
	w, err := Open(Options{Path: path, ReadOnly: true, Now: newClock(fixtureNow).Now})
	if err != nil {
		t.Fatal(err)
	}
	view := readPublicView(t, w)
	checkConsistent(t, w)
	// A compacted copy: the live file carries the 1 MiB disk reserve.
	small := filepath.Join(t.TempDir(), "compact.db")
	if err := w.Compact(small); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(small)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.MarshalIndent(view, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(schema2WAL, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(schema2Dump, append(js, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// loadSchema2 copies the schema-2 fixture into a temp dir.
func loadSchema2(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(schema2WAL)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wal.db")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func wantSchema2View(t *testing.T) publicView {
	t.Helper()
	raw, err := os.ReadFile(schema2Dump)
	if err != nil {
		t.Fatal(err)
	}
	var v publicView
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", schema2Dump, err)
	}
	return v
}

func diffViews(t *testing.T, got, want publicView) {
	t.Helper()
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	if string(g) != string(w) {
		t.Errorf("public view differs from %s:\ngot  %s", schema2Dump, g)
	}
}

// TestSchema2FixtureView: a read-write open of the schema-2 fixture shows
// exactly what the schema-2 build showed.
func TestSchema2FixtureView(t *testing.T) {
	path := loadSchema2(t)
	w := openAt(t, path, newClock(fixtureNow))
	diffViews(t, readPublicView(t, w), wantSchema2View(t))
}
