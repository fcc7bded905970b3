package wal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/account"
)

// stampedRows makes n rows of input id stamped with the next numbers of
// *seq, with event times from ts.
func stampedRows(id string, n int, seq *uint64, ts int64) []NewRow {
	rows := make([]NewRow, n)
	for i := range rows {
		*seq++
		ev := fmt.Appendf(nil, `{"_file":"/var/log/%s.log","_ts":%d,"payload":"line %d"}`, id, ts+int64(i), *seq)
		p, _ := account.Stamp(nil, ev, account.InputTag(id), *seq)
		rows[i] = NewRow{SourceID: id, Payload: p}
	}
	return rows
}

// For random schedules of appends, claims, acks, failures to DEAD,
// drops for size and age and purges, the rows delivered plus the rows the
// gap records cover are every row produced, each once, per input; with
// GapFree as without. The audit of what was delivered says so.
func TestGapRecordsAddUp(t *testing.T) {
	var gaps, dead int64
	for seed := range uint64(40) {
		for _, gapFree := range []bool{false, true} {
			t.Run(fmt.Sprintf("seed%d/gapfree=%v", seed, gapFree), func(t *testing.T) {
				g, d := checkGapSchedule(t, seed, gapFree)
				gaps += g
				dead += d
			})
		}
	}
	// The schedules must give rows up, for each reason, or the test
	// proves nothing.
	if gaps == 0 || dead == 0 {
		t.Fatalf("the schedules gave up %d rows, %d of them DEAD", gaps, dead)
	}
	t.Logf("rows given up and accounted for: %d, of them DEAD: %d", gaps, dead)
}

// checkGapSchedule runs one schedule and returns the rows the gap records
// cover and how many of them went DEAD.
func checkGapSchedule(t *testing.T, seed uint64, gapFree bool) (gapRows, deadRows int64) {
	rng := rand.New(rand.NewPCG(seed, 38))
	clk := newClock(t0)
	w, err := Open(Options{Path: filepath.Join(t.TempDir(), "wal.db"), Now: clk.Now, GapFree: gapFree,
		GapRecords: &GapOrigin{Host: "h1", AgentID: "a1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkConsistent(t, w); _ = w.Close() })
	inputs := []string{"app", "web"}
	seqs := map[string]*uint64{"app": new(uint64), "web": new(uint64)}
	var delivered bytes.Buffer
	var sending []uint64
	deliver := func(r *Row) {
		delivered.Write(r.Payload)
		delivered.WriteByte('\n')
	}
	for range 60 {
		clk.Add(int64(rng.IntN(2000)))
		mustUpdate(t, w, func(tx *Tx) error {
			switch rng.IntN(6) {
			case 0, 1:
				id := inputs[rng.IntN(2)]
				_, _, err := tx.Append(stampedRows(id, 1+rng.IntN(40), seqs[id], clk.MS()))
				return err
			case 2:
				_, _, err := tx.ClaimFunc(1+rng.IntN(30), 0, clk.MS(), func(r *Row) { sending = append(sending, r.ID) })
				return err
			case 3:
				if len(sending) == 0 {
					return nil
				}
				k := rng.IntN(len(sending) + 1)
				done := sending[:k]
				var err error
				switch rng.IntN(3) {
				case 0: // delivered
					for _, id := range done {
						r, ok, gerr := tx.Get(id)
						if gerr != nil || !ok {
							return fmt.Errorf("get %d: %v %v", id, ok, gerr)
						}
						deliver(&r)
					}
					err = tx.Ack(done, 0, clk.MS())
				case 1: // refused: DEAD at the second attempt
					_, err = tx.Fail(done, true, clk.MS(), 2, "refused", clk.MS())
				default:
					err = tx.Release(done, clk.MS())
				}
				sending = append([]uint64(nil), sending[k:]...)
				return err
			case 4:
				lim := DropLimits{MaxBytes: int64(rng.IntN(4000))}
				if rng.IntN(2) == 0 {
					lim.OlderThanMS = clk.MS() - int64(rng.IntN(20000))
				}
				_, _, _, err := tx.DropUnsent(lim)
				return err
			default:
				if rng.IntN(3) == 0 {
					_, err := tx.PurgeDead()
					return err
				}
				return nil
			}
		})
	}
	// The engine comes back: everything left is delivered.
	mustUpdate(t, w, func(tx *Tx) error { return tx.Release(sending, clk.MS()) })
	for range 1000 {
		n := 0
		mustUpdate(t, w, func(tx *Tx) error {
			var ids []uint64
			c, _, err := tx.ClaimFunc(100, 0, clk.MS()+1e9, func(r *Row) { deliver(r); ids = append(ids, r.ID) })
			n = c
			if err != nil {
				return err
			}
			return tx.Ack(ids, 0, clk.MS())
		})
		if n == 0 {
			break
		}
	}
	for _, l := range bytes.Split(delivered.Bytes(), []byte("\n")) {
		if bytes.Contains(l, []byte(`"reason":"dead: refused"`)) {
			deadRows += int64(bytes.Count(l, []byte(`"_gap":true`)))
		}
	}
	if gapFree {
		checkBatchIDsTied(t, delivered.Bytes())
	}
	rep, err := account.Audit(&delivered)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Unreadable != 0 {
		t.Fatalf("audit: %+v", rep)
	}
	for _, s := range rep.Streams {
		want := *seqs[s.Input]
		if s.Max != want || uint64(s.Rows+s.GapRows) != want || s.Duplicates != 0 || s.Host != "" {
			t.Errorf("input %s: max %d, %d rows + %d in gaps, %d duplicates, host %q; want %d produced, each once",
				s.Input, s.Max, s.Rows, s.GapRows, s.Duplicates, s.Host, want)
		}
		gapRows += s.GapRows
	}
	if len(rep.Streams) > len(inputs) {
		t.Errorf("streams %+v", rep.Streams)
	}
	return gapRows, deadRows
}

// checkBatchIDsTied checks, in CHECKPOINT delivery (GapFree), that the
// batch ids the gap records list are exactly those of the stand-ins
// delivered, and that each record lists as many as it counts.
func checkBatchIDsTied(t *testing.T, ndjson []byte) {
	t.Helper()
	standIns, listed := map[int64]bool{}, map[int64]bool{}
	for _, l := range bytes.Split(ndjson, []byte("\n")) {
		if g, ok := ParseStandIn(l); ok {
			standIns[g.BatchID] = true
			continue
		}
		var r account.Record
		if json.Unmarshal(l, &r) != nil || !r.Gap {
			continue
		}
		n := int64(0)
		for _, run := range r.BatchIDs {
			for id := run[0]; id <= run[1]; id++ {
				listed[id] = true
				n++
			}
		}
		if n != r.Count {
			t.Errorf("gap record %+v lists %d batch ids for %d rows", r, n, r.Count)
		}
	}
	if !maps.Equal(standIns, listed) {
		t.Errorf("stand-ins delivered for %d batch ids, gap records list %d, not the same ids", len(standIns), len(listed))
	}
}

// The gap records of a drop for size take room too: the drop goes on
// until they fit, so it leaves the payload within MaxBytes whenever rows
// are left to drop. Without that, a small queue stayed above its bound
// after every drop and its input paused for good under drop-oldest.
func TestDropLeavesRoomForItsGapRecords(t *testing.T) {
	for _, lanes := range []bool{false, true} {
		t.Run(fmt.Sprintf("lanes=%v", lanes), func(t *testing.T) {
			clk := newClock(t0)
			opts := Options{Path: filepath.Join(t.TempDir(), "wal.db"), Now: clk.Now, GapRecords: &GapOrigin{Host: "h1", AgentID: "a1"}}
			lim := DropLimits{MaxBytes: 12_000}
			if lanes {
				opts.Lanes, opts.SendOrderBatchIDs = []string{"alarm"}, true
				lim.LaneOrder = []string{"", "alarm"}
			}
			w, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { checkConsistent(t, w); _ = w.Close() })
			var seq uint64
			var dropped int
			for i := range 40 {
				clk.Add(10)
				mustUpdate(t, w, func(tx *Tx) error {
					if _, _, err := tx.Append(stampedRows("app", 4, &seq, clk.MS())); err != nil {
						return err
					}
					full, _, _, err := tx.DropUnsent(lim)
					dropped += full.Rows
					// Gap records are never dropped: they alone may
					// exceed the bound.
					if c := tx.Counts(); err == nil && c.PayloadBytes > lim.MaxBytes && int64(c.Pending) > c.StandIns {
						t.Errorf("append %d: %d payload bytes after the drop, bound %d, %d rows left to drop",
							i, c.PayloadBytes, lim.MaxBytes, int64(c.Pending)-c.StandIns)
					}
					return err
				})
			}
			if dropped == 0 {
				t.Fatal("nothing dropped: the test proves nothing")
			}
		})
	}
}
