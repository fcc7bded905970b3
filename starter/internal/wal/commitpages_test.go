package wal

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/wal/boltraw"
)

// pagesByBucket maps every page of the WAL's current tree (overflow pages
// included) to the top-level bucket it belongs to; "root" for the pages
// of the root bucket itself. bbolt never writes a page in place, so the
// pages of one snapshot missing from the one before are exactly what the
// commit between them wrote.
func pagesByBucket(tb testing.TB, w *WAL) map[uint64]string {
	tb.Helper()
	f, err := os.Open(w.path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	m, err := boltraw.ReadMeta(f, st.Size())
	if err != nil {
		tb.Fatal(err)
	}
	walk := func(only []byte) map[uint64]bool {
		tw := boltraw.NewWalk(f, st.Size(), m)
		tw.Enter = func(path [][]byte) bool { return only != nil && string(path[0]) == string(only) }
		tw.Run()
		if len(tw.Damage) > 0 {
			tb.Fatalf("walk: %v", tw.Damage)
		}
		return tw.Seen
	}
	root := walk(nil)
	out := map[uint64]string{}
	for id := range root {
		if id > 1 {
			out[id] = "root"
		}
	}
	for _, b := range allBuckets {
		for id := range walk(b) {
			if !root[id] {
				out[id] = string(b)
			}
		}
	}
	return out
}

// newPages counts, by bucket, the pages of after that before lacks.
func newPages(before, after map[uint64]string) map[string]int {
	out := map[string]int{}
	for id, b := range after {
		if _, ok := before[id]; !ok {
			out[b]++
		}
	}
	return out
}

// BenchmarkCommitPages replays a loaded agent with fsync on (groups of
// 4,096 rows of ~200 bytes, claims of 2,048, acks with retention 0, a
// backlog of a few groups because the input reads ahead of the engine)
// and reports the pages each kind of transaction writes, by bucket:
// the fixed cost of a commit that is paid again every transaction.
// Run with -benchtime=50x; -v prints the pages by bucket.
func BenchmarkCommitPages(b *testing.B) {
	const group, claim = 4096, 2048
	lines := logLines(group)
	rows := make([]NewRow, group)
	for i := range rows {
		rows[i] = NewRow{SourceID: "app", Payload: lines[i]}
	}
	pos := []PositionUpdate{{SourceID: "app", Key: "/var/log/app.log", State: make([]byte, 48)}}
	w, err := Open(Options{Path: filepath.Join(b.TempDir(), "wal.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	type kind struct {
		name string
		fn   func(tx *Tx, claimed *[]uint64) error
	}
	kinds := []kind{
		{"append", func(tx *Tx, _ *[]uint64) error {
			if _, _, err := tx.Append(rows); err != nil {
				return err
			}
			return tx.SavePositions(pos)
		}},
		{"claim", func(tx *Tx, claimed *[]uint64) error {
			got, err := tx.Claim(claim, time.Now().UnixMilli())
			for _, r := range got {
				*claimed = append(*claimed, r.ID)
			}
			return err
		}},
		{"ack", func(tx *Tx, claimed *[]uint64) error {
			err := tx.Ack(*claimed, 0, time.Now().UnixMilli())
			*claimed = (*claimed)[:0]
			return err
		}},
	}
	for range 200 {
		if err := w.Update(func(tx *Tx) error { return kinds[0].fn(tx, nil) }); err != nil {
			b.Fatal(err)
		}
	}
	total := map[string]map[string]int{}
	var claimed []uint64
	snap := pagesByBucket(b, w)
	for b.Loop() {
		// Per group appended: two claims and their acks, each alone.
		for _, k := range []kind{kinds[0], kinds[1], kinds[2], kinds[1], kinds[2]} {
			if err := w.Update(func(tx *Tx) error { return k.fn(tx, &claimed) }); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			next := pagesByBucket(b, w)
			if total[k.name] == nil {
				total[k.name] = map[string]int{}
			}
			for bk, n := range newPages(snap, next) {
				total[k.name][bk] += n
			}
			snap = next
			b.StartTimer()
		}
	}
	for _, k := range []string{"append", "claim", "ack"} {
		per := float64(b.N)
		if k != "append" {
			per *= 2
		}
		sum := 0
		var parts []string
		for _, bk := range slices.Sorted(maps.Keys(total[k])) {
			sum += total[k][bk]
			parts = append(parts, fmt.Sprintf("%s=%.1f", bk, float64(total[k][bk])/per))
		}
		b.ReportMetric(float64(sum)/per, k+"-pages/tx")
		b.Logf("%s: %.1f pages/tx: %s", k, float64(sum)/per, strings.Join(parts, " "))
	}
}
