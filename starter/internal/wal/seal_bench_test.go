package wal

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// BenchmarkEncryption prices queue.encryption in CPU: the agent's steady
// step (claim and ack a group, append the next, save a position), a cold
// read of every row (each block decoded from the file, as after a
// restart) and the block codec alone, clear and sealed, on log-like
// lines (and the codec on the other WAL benchmarks' payload too). Fsync is off so that the figures are the
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
	// Log-like lines that s2 shrinks about 2x rather than 20x: the seal's
	// share grows with the stored bytes.
	rng := rand.New(rand.NewPCG(1, 2))
	logs := make([]NewRow, group)
	for i := range logs {
		logs[i] = NewRow{SourceID: "app", Payload: fmt.Appendf(nil,
			`{"ts":"2026-12-07T19:%02d:%02d.%03dZ","level":"info","req":"%016x","user":%d,"msg":"GET /api/v1/items/%d took %dms","trace":"%032x"}`,
			i%60, rng.IntN(60), rng.IntN(1000), rng.Uint64(), rng.IntN(100000), rng.IntN(1e6), rng.IntN(900), rng.Uint64())}
	}
	for _, enc := range testEncryptions {
		b.Run("steady/"+enc.name, func(b *testing.B) {
			w, err := Open(Options{Path: filepath.Join(b.TempDir(), "wal.db"), Encryption: enc.enc})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			if err := w.Update(func(tx *Tx) error { _, _, err := tx.Append(logs); return err }); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(rawLen(logs)))
			cpu := cpuTime()
			for b.Loop() {
				if err := w.Update(func(tx *Tx) error {
					if err := steadyStep(tx, logs); err != nil {
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
	for _, data := range []struct {
		name string
		rows []NewRow
	}{{"codec", rows}, {"codec-logs", logs}} {
		for _, enc := range testEncryptions {
			// The block codec alone, no bbolt: encode a group and decode it
			// again, as a claim after a restart does.
			b.Run(data.name+"/"+enc.name, func(b *testing.B) {
				benchCodec(b, enc.enc, data.rows)
			})
		}
	}
	for _, enc := range testEncryptions {
		b.Run(fmt.Sprintf("cold-read/%s", enc.name), func(b *testing.B) {
			w, err := Open(Options{Path: filepath.Join(b.TempDir(), "wal.db"), Encryption: enc.enc})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			for range 16 {
				if err := w.Update(func(tx *Tx) error { _, _, err := tx.Append(logs); return err }); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(16 * rawLen(logs)))
			cpu := cpuTime()
			for b.Loop() {
				if err := w.View(func(tx *ReadTx) error {
					got, err := tx.List(nil, 0, 0)
					if err == nil && len(got) != 16*group {
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
func benchCodec(b *testing.B, enc Encryption, rows []NewRow) {
	kr := plainKeys
	if enc.Key != nil {
		e, err := newSealEntry(1, enc.Key)
		if err != nil {
			b.Fatal(err)
		}
		kr, _, _ = buildKeyring([]sealEntry{e}, enc.Key)
	}
	e := blockEncoder{keys: kr}
	b.SetBytes(int64(rawLen(rows)))
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
}

func rawLen(rows []NewRow) int {
	n := 0
	for _, r := range rows {
		n += len(r.Payload)
	}
	return n
}
