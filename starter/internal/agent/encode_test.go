package agent

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/edge-agent/edge-agent/transport/codec"
)

// tagEncoder writes "<payload>#" and fails on payloads starting with "bad".
type tagEncoder struct{}

var errBadPayload = errors.New("bad payload")

func (tagEncoder) Encode(dst, raw []byte) ([]byte, error) {
	if len(raw) >= 3 && string(raw[:3]) == "bad" {
		return dst, errBadPayload
	}
	return append(append(dst, raw...), '#'), nil
}

// Encoding a job in parts on several cores keeps the job's order, pairs
// every payload with its own batch id, and reports exactly the rows that
// failed, whatever the number of parts.
func TestEncodeInPartsKeepsOrder(t *testing.T) {
	for _, tt := range []struct{ rows, workers int }{
		{1, 4}, {63, 4}, {64, 4}, {65, 2}, {1000, 1}, {1000, 2}, {1000, 3}, {4096, 8}, {129, 64},
	} {
		t.Run(fmt.Sprintf("%d rows, %d workers", tt.rows, tt.workers), func(t *testing.T) {
			s := &sendLoop{enc: tagEncoder{}}
			for round := range 2 { // the second round reuses the parts' arenas
				j := &job{}
				for i := range tt.rows {
					p := strconv.Itoa(round*100000 + i)
					if i%97 == 5 {
						p = "bad" + p
					}
					j.rows = append(j.rows, row{ID: uint64(i + 1), BatchID: int64(1000 + i), Payload: []byte(p)})
				}
				batches, failed := s.encode(j, &s.sets[0], tt.workers)
				k := 0
				for i, r := range j.rows {
					if i%97 == 5 {
						if !errors.Is(failed[i], errBadPayload) {
							t.Fatalf("row %d: failure %v, want errBadPayload", i, failed[i])
						}
						continue
					}
					if k >= len(batches) {
						t.Fatalf("only %d batches for %d rows", len(batches), len(j.rows))
					}
					b := batches[k]
					if b.ID != r.BatchID || string(b.Payload) != string(r.Payload)+"#" {
						t.Fatalf("batch %d = %d %q, want %d %q#", k, b.ID, b.Payload, r.BatchID, r.Payload)
					}
					k++
				}
				if k != len(batches) || len(failed)+len(batches) != len(j.rows) {
					t.Fatalf("%d batches and %d failures for %d rows", len(batches), len(failed), len(j.rows))
				}
			}
		})
	}
}

// BenchmarkEncodeJob is the sender's PACKET cost per event (gzip at the
// default level, AES-GCM) for a full job, on every core the runtime has.
func BenchmarkEncodeJob(b *testing.B) {
	enc, err := codec.NewEncoder(codec.Options{Mode: codec.ModePacket, Compression: codec.CompressionGzip,
		Encryption: codec.EncryptionAESGCM, Key: make([]byte, codec.KeySize)})
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			s := &sendLoop{enc: enc}
			j := &job{}
			for i := range 4096 {
				j.rows = append(j.rows, row{BatchID: int64(i + 1),
					Payload: fmt.Appendf(nil, `{"_index":0,"_file":"/var/log/app.log","_line":%d,"payload":"GET /api/v1/orders status=200 user=42 latency_ms=13 seq=%09d"}`, i, i)})
			}
			b.ReportAllocs()
			for b.Loop() {
				s.encode(j, &s.sets[0], workers)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(j.rows)), "ns/event")
		})
	}
}
