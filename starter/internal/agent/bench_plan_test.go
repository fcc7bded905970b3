package agent

import (
	"fmt"
	"testing"

	"github.com/edge-agent/edge-agent/connector/input"
)

// BenchmarkPlanFlush is the loop's bookkeeping per event when a group is
// written: one row and the last position per key. Events from one file
// (the common case) and from 8 files interleaved.
func BenchmarkPlanFlush(b *testing.B) {
	for _, files := range []int{1, 8} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			const n = 2048
			l := &loop{}
			for i := range n {
				key := fmt.Sprintf("/var/log/app-%d.log", i%files)
				l.buf.events = append(l.buf.events, input.Event{Payload: []byte(`{"payload":"x"}`),
					Pos: input.Position{Key: key, State: []byte(`{"offset":1}`)}})
				l.buf.ids = append(l.buf.ids, "in")
			}
			b.ReportAllocs()
			for b.Loop() {
				p := &plan{}
				l.buf.planFlush(p)
				if p.rows() != n || len(p.writes[0].positions) != files {
					b.Fatalf("%d rows, %d positions", p.rows(), len(p.writes[0].positions))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
	}
}
