package wal

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkEncryption prices queue.encryption in CPU: the agent's steady
// step (claim and ack a group, append the next, save a position) and a
// cold read of every row (each block decoded from the file, as after a
// restart), clear and sealed. Fsync is off so that the figures are the
// CPU's, not the disk's; cpu-ns/op is user+system time per step (target:
// sealed within 10 % of clear).
//
//	go test -run '^$' -bench Encryption -count 5 ./internal/wal/
func BenchmarkEncryption(b *testing.B) {
	const group = 256
	rows := make([]NewRow, group)
	for i := range rows {
		rows[i] = NewRow{SourceID: "app", Payload: payload(i)}
	}
	pos := []PositionUpdate{{SourceID: "app", Key: "/var/log/app.log", State: make([]byte, 48)}}
	for _, enc := range testEncryptions {
		b.Run("steady/"+enc.name, func(b *testing.B) {
			w, err := Open(Options{Path: filepath.Join(b.TempDir(), "wal.db"), Encryption: enc.enc})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			if err := w.Update(func(tx *Tx) error { _, _, err := tx.Append(rows); return err }); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(group * benchPayload)
			cpu := cpuTime()
			for b.Loop() {
				if err := w.Update(func(tx *Tx) error {
					if err := steadyStep(tx, rows); err != nil {
						return err
					}
					return tx.SavePositions(pos)
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
	for _, enc := range testEncryptions {
		// The block codec alone, no bbolt: encode a group and decode it
		// again, as a claim after a restart does.
		b.Run("codec/"+enc.name, func(b *testing.B) {
			kr := plainKeys
			if enc.enc.Key != nil {
				e, err := newSealEntry(1, enc.enc.Key)
				if err != nil {
					b.Fatal(err)
				}
				kr, _, _ = buildKeyring([]sealEntry{e}, enc.enc.Key)
			}
			e := blockEncoder{keys: kr}
			b.SetBytes(group * benchPayload)
			stored := 0
			cpu := cpuTime()
			for b.Loop() {
				v, _ := e.encode(1, 1, t0, rows, false)
				if blk := decodeBlock(1, v, kr); blk.err != nil {
					b.Fatal(blk.err)
				}
				stored = len(v)
				e.release()
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(stored), "stored-bytes")
		})
	}
	for _, enc := range testEncryptions {
		b.Run(fmt.Sprintf("cold-read/%s", enc.name), func(b *testing.B) {
			w, err := Open(Options{Path: filepath.Join(b.TempDir(), "wal.db"), Encryption: enc.enc})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			for range 64 {
				if err := w.Update(func(tx *Tx) error { _, _, err := tx.Append(rows); return err }); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(64 * group * benchPayload)
			cpu := cpuTime()
			for b.Loop() {
				if err := w.View(func(tx *ReadTx) error {
					got, err := tx.List(nil, 0, 0)
					if err == nil && len(got) != 64*group {
						err = fmt.Errorf("%d rows", len(got))
					}
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the user and system time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
