package agent

import (
	"runtime"
	"slices"
	"testing"
	"time"
	"weak"

	"github.com/edge-agent/edge-agent/transport"
)

// TestAcceptLetsPayloadsGo: once a job's result is in, the loop keeps
// its rows' ids for the commit that applies it, not their payloads. A
// WAL row's payload aliases its decoded block, so a result waiting for
// a long commit would otherwise hold whole blocks in memory while the
// jobs claimed after it hold more.
func TestAcceptLetsPayloadsGo(t *testing.T) {
	l := &loop{r: &Agent{now: time.Now}, jobs: newJobSlots(8)}
	block := new([512]byte) // stands in for a decoded block's payloads
	gone := weak.Make(block)
	j := l.jobs.add([]row{
		{ID: 7, BatchID: 70, Payload: block[:200:200]},
		{ID: 8, BatchID: 80, Payload: block[200:400:400]},
		{ID: 9, BatchID: 90, Payload: block[400:]},
	})
	block = nil
	l.accept(&jobResult{job: j, results: []transport.Result{
		{ID: 70, Outcome: transport.Received},
		{ID: 80, Outcome: transport.Failed},
		{ID: 90, Outcome: transport.NotSent},
	}})

	runtime.GC()
	if gone.Value() != nil {
		t.Fatal("the payloads of a job whose result is in are still reachable")
	}
	if l.jobs.free() != 8 {
		t.Fatalf("%d job slots free, want 8", l.jobs.free())
	}
	p := &plan{}
	retry := newRowRetries(Options{}, 0)
	planResults(p, l.uncommitted, &retry, time.Now(), false)
	if !slices.Equal(p.acks, []uint64{7}) || !slices.Equal(p.fails["failed"], []uint64{8}) || !slices.Equal(p.releases, []uint64{9}) {
		t.Fatalf("acks %v, fails %v, releases %v; want [7], [8], [9]", p.acks, p.fails, p.releases)
	}
}
