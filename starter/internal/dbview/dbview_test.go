package dbview

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// TestReadInfoAndPositions: `db info` reports the file's schema version,
// and `db positions` lists every input's positions, or one input's.
func TestReadInfoAndPositions(t *testing.T) {
	w, err := wal.Open(wal.Options{Path: filepath.Join(t.TempDir(), "wal.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ups := []wal.PositionUpdate{{SourceID: "app", Key: "/var/log/app.log", State: []byte(`{"offset":42}`)}, {SourceID: "b", Key: "k", State: []byte{1}}}
	if err := w.Update(func(tx *wal.Tx) error { return tx.SavePositions(ups) }); err != nil {
		t.Fatal(err)
	}
	in, err := ReadInfo(w)
	if err != nil || in.SchemaVersion != wal.SchemaVersion {
		t.Errorf("info %+v, %v; want schema %d", in, err, wal.SchemaVersion)
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
		t.Errorf("all positions %q", got)
	}
	if got := srcs(one); !slices.Equal(got, []string{"app//var/log/app.log"}) {
		t.Errorf("positions of app %q", got)
	}
}
