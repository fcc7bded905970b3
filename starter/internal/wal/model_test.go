package wal

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestRandomizedAgainstModel applies random operations to a WAL and to a
// plain in-memory model, and after each one compares: the O(1) Counts with
// a full scan, the rows with the model, and Claim's choice with the oldest
// due PENDING rows of the model. With GapFree the model also predicts the
// batch ids of the stand-ins each operation appends, and checks that no
// batch id ever allocated is lost: a live row holds it or it was acked.
// Each runs on a clear WAL and on an encrypted one.
func TestRandomizedAgainstModel(t *testing.T) {
	for _, gapFree := range []bool{false, true} {
		for _, enc := range testEncryptions {
			t.Run(map[bool]string{false: "plain", true: "gap-free"}[gapFree]+"/"+enc.name, func(t *testing.T) {
				testAgainstModel(t, gapFree, enc.enc)
			})
		}
	}
}

func testAgainstModel(t *testing.T, gapFree bool, enc Encryption) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	clk := newClock(t0)
	w := openOpts(t, Options{Path: filepath.Join(t.TempDir(), "wal.db"), Now: clk.Now, GapFree: gapFree, Encryption: enc})
	type mrow struct {
		status    Status
		attempts  int
		notBefore int64
		size      int
		group     uint64 // first id of its append (its block)
		created   int64
		batch     int64
		standIn   bool
		deadGap   bool // DEAD with a stand-in
	}
	model := map[uint64]*mrow{}
	var allocated []int64     // every batch id appended
	acked := map[int64]bool{} // batch ids the engine committed
	var wantGaps []int64      // batch ids the operation under way must stand in for
	gap := func(r *mrow) {
		if gapFree {
			wantGaps = append(wantGaps, r.batch)
		}
	}
	const maxAttempts = 3
	byStatus := func(s Status) []uint64 {
		var out []uint64
		for id, r := range model {
			if r.status == s {
				out = append(out, id)
			}
		}
		slices.Sort(out)
		return out
	}
	pick := func(list []uint64) []uint64 {
		var out []uint64
		for _, id := range list {
			if rng.IntN(2) == 0 {
				out = append(out, id)
			}
		}
		return out
	}
	for step := 0; step < 400; step++ {
		now := clk.MS()
		op := rng.IntN(14)
		wantGaps = wantGaps[:0]
		mustUpdate(t, w, func(tx *Tx) error {
			switch op {
			case 0, 1: // append
				n := 1 + rng.IntN(20)
				rows := make([]NewRow, n)
				for i := range rows {
					rows[i] = NewRow{SourceID: "s", Payload: make([]byte, rng.IntN(64))}
				}
				batch := tx.NextBatchID()
				first, last, err := tx.Append(rows)
				if err != nil {
					return err
				}
				for id := first; id <= last; id++ {
					model[id] = &mrow{status: StatusPending, size: len(rows[id-first].Payload), group: first, created: now,
						batch: batch + int64(id-first)}
					allocated = append(allocated, batch+int64(id-first))
				}
			case 2, 3: // claim
				max := 1 + rng.IntN(15)
				var due []uint64
				for _, id := range byStatus(StatusPending) {
					if model[id].notBefore <= now {
						due = append(due, id)
					}
				}
				if len(due) > max {
					due = due[:max]
				}
				got, err := tx.Claim(max, now)
				if err != nil {
					return err
				}
				if !slices.Equal(ids(got), due) {
					t.Fatalf("step %d: claim %v, model says %v", step, ids(got), due)
				}
				for _, id := range due {
					model[id].status = StatusSending
				}
			case 4: // ack, of SENDING and RECEIVED rows
				sel := pick(append(byStatus(StatusSending), byStatus(StatusReceived)...))
				slices.Sort(sel)
				retention := time.Duration(rng.IntN(2)) * time.Second
				if err := tx.Ack(sel, retention, now); err != nil {
					return err
				}
				for _, id := range sel {
					acked[model[id].batch] = true
					if retention == 0 {
						delete(model, id)
					} else {
						model[id].status = StatusAcked
						model[id].notBefore = now // ack time, for cleanup
					}
				}
			case 5: // fail; RECEIVED rows are skipped
				sel := pick(append(byStatus(StatusSending), byStatus(StatusReceived)...))
				slices.Sort(sel)
				charge := rng.IntN(2) == 0
				nb := now + int64(rng.IntN(3))*100
				if _, err := tx.Fail(sel, charge, nb, maxAttempts, "r", now); err != nil {
					return err
				}
				for _, id := range sel {
					r := model[id]
					if r.status != StatusSending {
						continue
					}
					if charge {
						r.attempts++
					}
					if r.attempts >= maxAttempts && !r.standIn {
						r.status, r.deadGap = StatusDead, gapFree
						gap(r)
					} else {
						r.status, r.notBefore = StatusPending, nb
					}
				}
			case 6: // release one half, resurrect the rest sometimes
				sel := pick(byStatus(StatusSending))
				if err := tx.Release(sel, now); err != nil {
					return err
				}
				for _, id := range sel {
					model[id].status = StatusPending
				}
				if rng.IntN(4) == 0 {
					if _, err := tx.ResurrectSending(now); err != nil {
						return err
					}
					for _, id := range byStatus(StatusSending) {
						model[id].status = StatusPending
					}
				}
			case 7: // cleanup acked
				cut := now - int64(rng.IntN(300))
				max := rng.IntN(5)
				var want []uint64
				for _, id := range byStatus(StatusAcked) {
					if model[id].notBefore <= cut {
						want = append(want, id)
					}
				}
				slices.SortFunc(want, func(a, b uint64) int {
					if d := model[a].notBefore - model[b].notBefore; d != 0 {
						return int(d)
					}
					return int(a) - int(b)
				})
				if max > 0 && len(want) > max {
					want = want[:max]
				}
				n, err := tx.CleanupAcked(cut, max)
				if err != nil {
					return err
				}
				if n != len(want) {
					t.Fatalf("step %d: cleanup %d, model %d", step, n, len(want))
				}
				for _, id := range want {
					delete(model, id)
				}
			case 8: // operators
				if rng.IntN(2) == 0 {
					if _, err := tx.RetryDead(now); err != nil {
						return err
					}
					for _, id := range byStatus(StatusDead) {
						model[id].status, model[id].attempts, model[id].notBefore, model[id].deadGap = StatusPending, 0, 0, false
					}
				} else {
					if _, err := tx.PurgeDead(); err != nil {
						return err
					}
					for _, id := range byStatus(StatusDead) {
						if !model[id].deadGap {
							gap(model[id])
						}
						delete(model, id)
					}
				}
			case 9:
				clk.Add(int64(rng.IntN(150)))
			case 10: // drop unsent rows by age and size
				lim := DropLimits{MaxBytes: int64(rng.IntN(2000)), OlderThanMS: now - int64(rng.IntN(600)), MaxBlocks: 1 << 20}
				if rng.IntN(3) == 0 {
					lim.OlderThanMS = 0
				}
				var total int64
				groups := map[uint64][]uint64{}
				var order []uint64
				for id, r := range model {
					total += int64(r.size)
					if groups[r.group] == nil {
						order = append(order, r.group)
					}
					groups[r.group] = append(groups[r.group], id)
				}
				slices.Sort(order)
				var wantFull, wantAge int
				for _, g := range order {
					created := model[groups[g][0]].created
					var n *int
					switch {
					case lim.OlderThanMS > 0 && created < lim.OlderThanMS:
						n = &wantAge
					case lim.MaxBytes > 0 && total > lim.MaxBytes:
						n = &wantFull
					}
					if n == nil {
						break
					}
					for _, id := range groups[g] {
						if s := model[id].status; (s == StatusPending || s == StatusReceived) && !model[id].standIn {
							total -= int64(model[id].size)
							gap(model[id])
							delete(model, id)
							*n++
						}
					}
				}
				full, age, more, err := tx.DropUnsent(lim)
				if err != nil {
					return err
				}
				if more || full.Rows != wantFull || age.Rows != wantAge {
					t.Fatalf("step %d: drop %+v: full %d, age %d (more %v); model %d, %d", step, lim, full.Rows, age.Rows, more, wantFull, wantAge)
				}
			case 11: // the engine holds some rows in memory
				sel := pick(byStatus(StatusSending))
				if err := tx.Receive(sel, now); err != nil {
					return err
				}
				for _, id := range sel {
					model[id].status = StatusReceived
				}
			case 12: // the engine lost some: sent again, due now
				sel := pick(byStatus(StatusReceived))
				if err := tx.Unreceive(sel, now); err != nil {
					return err
				}
				for _, id := range sel {
					model[id].status, model[id].notBefore = StatusPending, min(model[id].notBefore, now)
				}
			case 13: // the engine committed up to a watermark
				recv := byStatus(StatusReceived)
				if len(recv) == 0 {
					break
				}
				w := model[recv[rng.IntN(len(recv))]].batch + int64(rng.IntN(3)) - 1
				retention := time.Duration(rng.IntN(2)) * time.Second
				var want int
				for _, id := range recv {
					if model[id].batch > w {
						continue
					}
					want++
					acked[model[id].batch] = true
					if retention == 0 {
						delete(model, id)
					} else {
						model[id].status, model[id].notBefore = StatusAcked, now
					}
				}
				n, err := tx.AckReceivedThrough(w, retention, now)
				if err != nil {
					return err
				}
				if n != want {
					t.Fatalf("step %d: AckReceivedThrough(%d) acked %d, model %d", step, w, n, want)
				}
			}
			return nil
		})
		// O(1) counters against a full scan and the model.
		_ = w.View(func(tx *ReadTx) error {
			c := tx.Counts()
			all, err := tx.List(nil, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			// The rows the model does not know are the operation's
			// stand-ins: one per batch id it predicted.
			var gotGaps []int64
			for _, r := range all {
				if model[r.ID] != nil {
					continue
				}
				g, ok := ParseStandIn(r.Payload)
				if !r.StandIn || !ok || g.BatchID != r.BatchID || r.Status != StatusPending {
					t.Fatalf("step %d: unknown row %+v", step, r)
				}
				first, _, _ := tx.findBlock(r.ID)
				model[r.ID] = &mrow{status: StatusPending, size: len(r.Payload), group: first, created: r.CreatedAt,
					batch: r.BatchID, standIn: true}
				gotGaps = append(gotGaps, r.BatchID)
			}
			slices.Sort(gotGaps)
			slices.Sort(wantGaps)
			if !slices.Equal(gotGaps, wantGaps) {
				t.Fatalf("step %d (op %d): stand-ins for batch ids %v, model %v", step, op, gotGaps, wantGaps)
			}
			if gapFree {
				live := map[int64]bool{}
				for _, r := range all {
					live[r.BatchID] = true
				}
				for _, b := range allocated {
					if !live[b] && !acked[b] {
						t.Fatalf("step %d (op %d): batch id %d is lost: no row holds it and it was never acked", step, op, b)
					}
				}
			}
			var scan Counts
			for _, r := range all {
				switch r.Status {
				case StatusPending:
					scan.Pending++
					if scan.OldestPending == 0 || r.CreatedAt < scan.OldestPending {
						scan.OldestPending = r.CreatedAt
					}
				case StatusSending:
					scan.Sending++
				case StatusReceived:
					scan.Received++
					if scan.OldestReceived == 0 {
						scan.OldestReceived = r.CreatedAt // List is in id order
					}
				case StatusAcked:
					scan.Acked++
				case StatusDead:
					scan.Dead++
				}
				scan.PayloadBytes += int64(len(r.Payload))
				m := model[r.ID]
				if m == nil || m.status != r.Status || m.attempts != r.Attempts || m.batch != r.BatchID {
					t.Fatalf("step %d: row %+v, model %+v", step, r, m)
				}
			}
			if len(all) != len(model) {
				t.Fatalf("step %d: %d rows, model %d", step, len(all), len(model))
			}
			if c.Pending != scan.Pending || c.Sending != scan.Sending || c.Acked != scan.Acked || c.Dead != scan.Dead ||
				c.Received != scan.Received || c.OldestReceived != scan.OldestReceived ||
				c.PayloadBytes != scan.PayloadBytes || c.OldestPending != scan.OldestPending {
				t.Fatalf("step %d: counts %+v, scan %+v", step, c, scan)
			}
			// Appends of 1..20 rows are blocks, and acks, fails and
			// cleanups pick rows at random: blocks are left partly acked
			// all the time. A block stays exactly while the model has a
			// row in it, and every row of the model is in a block.
			inBlock := 0
			c2 := tx.blocks.Cursor()
			for k, _ := c2.First(); k != nil; k, _ = c2.Next() {
				first, _ := keyID(k)
				h, err := parseBlockHeader(getBlock(tx.blocks, k))
				if err != nil {
					t.Fatalf("step %d: block %d: %v", step, first, err)
				}
				live := 0
				for id := h.first; id <= h.last(); id++ {
					if model[id] != nil {
						live++
					}
				}
				if live == 0 {
					t.Fatalf("step %d: block %d..%d kept after its last row left", step, h.first, h.last())
				}
				inBlock += live
			}
			if inBlock != len(model) {
				t.Fatalf("step %d: %d rows of the model in blocks, want %d", step, inBlock, len(model))
			}
			if step%50 == 0 {
				for _, p := range tx.Verify(10) {
					t.Fatalf("step %d: %s", step, p)
				}
			}
			return nil
		})
	}
}
