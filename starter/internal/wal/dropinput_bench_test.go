package wal

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkDropUnsent drops the oldest half of 64 groups of 64 rows of
// four inputs, without policies (whole groups) and with one first and one
// never input (rows by input).
func BenchmarkDropUnsent(b *testing.B) {
	for _, tc := range []struct {
		name   string
		inputs map[string]DropPolicy
	}{
		{"no policy", nil},
		{"first and never", map[string]DropPolicy{"in0": DropFirst, "in1": DropNever}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			const groups, per, size = 64, 64, 100
			payload := make([]byte, size)
			for b.Loop() {
				b.StopTimer()
				w, err := Open(Options{Path: filepath.Join(b.TempDir(), "wal.db")})
				if err != nil {
					b.Fatal(err)
				}
				for g := range groups {
					rows := make([]NewRow, per)
					for i := range rows {
						rows[i] = NewRow{SourceID: fmt.Sprint("in", i%4), Payload: payload}
					}
					if err := w.Update(func(tx *Tx) error { _, _, err := tx.Append(rows); return err }); err != nil {
						b.Fatal(g, err)
					}
				}
				b.StartTimer()
				if err := w.Update(func(tx *Tx) error {
					_, _, _, err := tx.DropUnsent(DropLimits{MaxBytes: groups * per * size / 2, Inputs: tc.inputs})
					return err
				}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
