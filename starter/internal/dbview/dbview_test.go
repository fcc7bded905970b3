package dbview

import (
	"encoding/binary"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// TestReadInfoAndPositionsBySchema: `db info` reports the file's own
// schema version, and `db positions` reads both layouts.
func TestReadInfoAndPositionsBySchema(t *testing.T) {
	for _, schema := range []int{3, 4} {
		path := filepath.Join(t.TempDir(), "wal.db")
		w, err := wal.Open(wal.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if schema == 3 { // an empty file of the earlier layout, as bbolt alone makes it
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				v := binary.BigEndian.AppendUint32(nil, 3)
				return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), v)
			})
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		w, err = wal.Open(wal.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		ups := []wal.PositionUpdate{{SourceID: "app", Key: "/var/log/app.log", State: []byte(`{"offset":42}`)}, {SourceID: "b", Key: "k", State: []byte{1}}}
		if err := w.Update(func(tx *wal.Tx) error { return tx.SavePositions(ups) }); err != nil {
			t.Fatal(err)
		}
		in, err := ReadInfo(w)
		if err != nil || in.SchemaVersion != schema {
			t.Errorf("schema %d: info %+v, %v", schema, in, err)
		}
		all, err := ReadPositions(w, "")
		if err != nil {
			t.Fatal(err)
		}
		one, err := ReadPositions(w, "app")
		if err != nil {
			t.Fatal(err)
		}
		srcs := func(ps []Position) (out []string) {
			for _, p := range ps {
				out = append(out, p.SourceID+"/"+p.Key)
			}
			return out
		}
		if got := srcs(all); !slices.Equal(got, []string{"app//var/log/app.log", "b/k"}) {
			t.Errorf("schema %d: all positions %q", schema, got)
		}
		if got := srcs(one); !slices.Equal(got, []string{"app//var/log/app.log"}) {
			t.Errorf("schema %d: positions of app %q", schema, got)
		}
		_ = w.Close()
	}
}
