package wal

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkClaimPath prices a claim and its ack with no fsync, so that
// the CPU of the claim path shows and not the disk: a backlog of 10,000
// rows, each step claiming 256 from its front (ClaimFunc, as the agent
// does), acking them and appending 256 behind.
func BenchmarkClaimPath(b *testing.B) {
	const group, backlog = 256, 10_000
	w, err := Open(Options{Path: filepath.Join(b.TempDir(), "wal.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	rows := make([]NewRow, group)
	for i := range rows {
		rows[i] = NewRow{SourceID: "app", Payload: payload(i)}
	}
	for done := 0; done < backlog; done += group {
		if err := w.Update(func(tx *Tx) error { _, _, err := tx.Append(rows); return err }); err != nil {
			b.Fatal(err)
		}
	}
	ids := make([]uint64, 0, group)
	b.ResetTimer()
	for b.Loop() {
		err := w.Update(func(tx *Tx) error {
			now := time.Now().UnixMilli()
			ids = ids[:0]
			n, _, err := tx.ClaimFunc(group, 0, now, func(r *Row) { ids = append(ids, r.ID) })
			if err != nil {
				return err
			}
			if n != group {
				return fmt.Errorf("claimed %d, want %d", n, group)
			}
			if err := tx.Ack(ids, 0, now); err != nil {
				return err
			}
			_, _, err = tx.Append(rows)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*group)/b.Elapsed().Seconds(), "rows/s")
}
