package wal

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// receivedRuns lists the received index as [start, end] pairs.
func receivedRuns(t *testing.T, w *WAL) [][2]uint64 {
	t.Helper()
	var out [][2]uint64
	_ = w.View(func(tx *ReadTx) error {
		tx.recv.each(func(r run, ok bool) bool {
			if !ok {
				t.Errorf("malformed received run at %d", r.start)
			}
			out = append(out, [2]uint64{r.start, r.end})
			return true
		})
		return nil
	})
	return out
}

// receivedIDs lists ReceivedFunc's ids and batch ids.
func receivedIDs(t *testing.T, w *WAL) (ids []uint64, batches []int64) {
	t.Helper()
	err := w.View(func(tx *ReadTx) error {
		return tx.ReceivedFunc(func(id uint64, batch, _ int64) bool {
			ids, batches = append(ids, id), append(batches, batch)
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids, batches
}

// receiveN appends n rows, claims them and marks them RECEIVED.
func receiveN(t *testing.T, w *WAL, n int, now int64) (first, last uint64) {
	t.Helper()
	first, last = appendN(t, w, n)
	claim(t, w, n, now)
	mustUpdate(t, w, func(tx *Tx) error { return tx.Receive(seq(first, last), now) })
	return first, last
}

// TestReceivedTransitions: what each operation does to a RECEIVED row.
func TestReceivedTransitions(t *testing.T) {
	cases := []struct {
		name string
		op   func(tx *Tx, id uint64, now int64) error
		want Status // 0: deleted
	}{
		{"ack retention 0 deletes", func(tx *Tx, id uint64, now int64) error { return tx.Ack([]uint64{id}, 0, now) }, 0},
		{"ack with retention keeps ACKED", func(tx *Tx, id uint64, now int64) error { return tx.Ack([]uint64{id}, time.Hour, now) }, StatusAcked},
		{"unreceive makes PENDING", func(tx *Tx, id uint64, now int64) error { return tx.Unreceive([]uint64{id}, now) }, StatusPending},
		{"receive again is skipped", func(tx *Tx, id uint64, now int64) error { return tx.Receive([]uint64{id}, now) }, StatusReceived},
		{"fail is skipped", func(tx *Tx, id uint64, now int64) error {
			_, err := tx.Fail([]uint64{id}, true, now, 1, "x", now)
			return err
		}, StatusReceived},
		{"release is skipped", func(tx *Tx, id uint64, now int64) error { return tx.Release([]uint64{id}, now) }, StatusReceived},
		{"resurrect leaves it", func(tx *Tx, _ uint64, now int64) error {
			n, err := tx.ResurrectSending(now)
			if n != 0 {
				t.Errorf("resurrected %d", n)
			}
			return err
		}, StatusReceived},
		{"claim does not take it", func(tx *Tx, _ uint64, now int64) error {
			rows, err := tx.Claim(10, now)
			if len(rows) != 0 {
				t.Errorf("claimed %v", ids(rows))
			}
			return err
		}, StatusReceived},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock(t0)
			w := openTest(t, clk)
			receiveN(t, w, 3, t0+5)
			if r := getRow(t, w, 2); r.Status != StatusReceived || r.UpdatedAt != t0+5 {
				t.Fatalf("after receive: %+v", r)
			}
			mustUpdate(t, w, func(tx *Tx) error { return tc.op(tx, 2, t0+7) })
			var got Status
			var ok bool
			_ = w.View(func(tx *ReadTx) error {
				r, found, err := tx.Get(2)
				got, ok = r.Status, found
				return err
			})
			if !ok {
				got = 0
			}
			if got != tc.want {
				t.Fatalf("row 2 is %v (found %v), want %v", got, ok, tc.want)
			}
			c := counts(t, w)
			if c.Total() != c.Pending+c.Sending+c.Received+c.Acked+c.Dead || c.Of(StatusReceived) != c.Received {
				t.Fatalf("counts %+v", c)
			}
			wantRecv := 2
			if tc.want == StatusReceived {
				wantRecv = 3
			}
			if c.Received != wantRecv {
				t.Fatalf("received %d, want %d", c.Received, wantRecv)
			}
		})
	}
}

// TestUnreceiveResendsFirst: rows the engine lost come back due now, with
// no attempt charged, and are claimed before rows appended after them.
func TestUnreceiveResendsFirst(t *testing.T) {
	clk := newClock(t0)
	w := openTest(t, clk)
	first, last := appendN(t, w, 4)
	claim(t, w, 4, t0)
	mustUpdate(t, w, func(tx *Tx) error {
		if _, err := tx.Fail([]uint64{first}, true, t0, 5, "busy", t0); err != nil {
			return err
		}
		return nil
	})
	claim(t, w, 1, t0)
	mustUpdate(t, w, func(tx *Tx) error { return tx.Receive(seq(first, last), t0+1) })
	appendN(t, w, 3)
	mustUpdate(t, w, func(tx *Tx) error { return tx.Unreceive([]uint64{last, first, first + 1}, t0+2) })
	got := claim(t, w, 3, t0+2)
	if !slices.Equal(ids(got), []uint64{first, first + 1, last}) {
		t.Fatalf("claimed %v, want the unreceived rows first", ids(got))
	}
	if got[0].Attempts != 1 || got[1].Attempts != 0 {
		t.Fatalf("attempts %d %d, want 1 0 (none charged)", got[0].Attempts, got[1].Attempts)
	}
	if r := getRow(t, w, first+2); r.Status != StatusReceived {
		t.Fatalf("row %d: %s, want RECEIVED", first+2, r.Status)
	}
}

// TestReceiveRuns: groups received in order merge into one run (one index
// entry), and acks and unreceives split it as they split the sending runs.
func TestReceiveRuns(t *testing.T) {
	w := openTest(t, newClock(t0))
	first, last := appendN(t, w, 10)
	claim(t, w, 10, t0)
	for id := first; id <= last; id += 2 {
		mustUpdate(t, w, func(tx *Tx) error { return tx.Receive([]uint64{id, id + 1}, t0+int64(id)) })
	}
	if runs := receivedRuns(t, w); !slices.Equal(runs, [][2]uint64{{1, 10}}) {
		t.Fatalf("runs %v, want one", runs)
	}
	if r := getRow(t, w, 9); r.UpdatedAt != t0+1 {
		t.Fatalf("row 9 updated %d, want the run's first receive %d", r.UpdatedAt, t0+1)
	}
	mustUpdate(t, w, func(tx *Tx) error {
		if err := tx.Ack([]uint64{3, 4}, 0, t0+20); err != nil {
			return err
		}
		return tx.Unreceive([]uint64{8}, t0+20)
	})
	if runs := receivedRuns(t, w); !slices.Equal(runs, [][2]uint64{{1, 2}, {5, 7}, {9, 10}}) {
		t.Fatalf("runs after split %v", runs)
	}
	gotIDs, batches := receivedIDs(t, w)
	if !slices.Equal(gotIDs, []uint64{1, 2, 5, 6, 7, 9, 10}) {
		t.Fatalf("received ids %v", gotIDs)
	}
	for i, id := range gotIDs {
		if r := getRow(t, w, id); r.BatchID != batches[i] {
			t.Fatalf("row %d: ReceivedFunc batch %d, row batch %d", id, batches[i], r.BatchID)
		}
	}
}

// TestAckReceivedThrough acks exactly the RECEIVED rows at or below the
// watermark, with and without retention, and leaves SENDING rows.
func TestAckReceivedThrough(t *testing.T) {
	for _, retention := range []time.Duration{0, time.Hour} {
		t.Run(retention.String(), func(t *testing.T) {
			w := openTest(t, newClock(t0))
			first, _ := appendN(t, w, 10)
			claim(t, w, 10, t0)
			mustUpdate(t, w, func(tx *Tx) error {
				if err := tx.Receive(seq(first, first+3), t0); err != nil {
					return err
				}
				return tx.Receive(seq(first+5, first+8), t0+1) // 5 stays SENDING
			})
			batch := getRow(t, w, first).BatchID
			cases := []struct {
				watermark int64
				want      int
			}{{batch - 1, 0}, {batch + 1, 2}, {batch + 6, 4}, {batch + 100, 2}, {batch + 100, 0}}
			for _, tc := range cases {
				var n int
				mustUpdate(t, w, func(tx *Tx) error {
					var err error
					n, err = tx.AckReceivedThrough(tc.watermark, retention, t0+2)
					return err
				})
				if n != tc.want {
					t.Fatalf("watermark %d: acked %d, want %d", tc.watermark, n, tc.want)
				}
			}
			c := counts(t, w)
			if c.Received != 0 || c.Sending != 2 || (retention > 0) != (c.Acked == 8) {
				t.Fatalf("counts %+v", c)
			}
			if r := getRow(t, w, first+4); r.Status != StatusSending {
				t.Fatalf("row %d: %s", first+4, r.Status)
			}
		})
	}
}

// TestReceivedCounts: Received and OldestReceived follow the rows.
func TestReceivedCounts(t *testing.T) {
	clk := newClock(t0)
	w := openTest(t, clk)
	if c := counts(t, w); c.Received != 0 || c.OldestReceived != 0 {
		t.Fatalf("empty: %+v", c)
	}
	first, _ := receiveN(t, w, 2, t0)
	clk.Add(1000)
	receiveN(t, w, 3, t0+1000)
	c := counts(t, w)
	if c.Received != 5 || c.OldestReceived != t0 || c.Total() != 5 {
		t.Fatalf("counts %+v", c)
	}
	mustUpdate(t, w, func(tx *Tx) error { return tx.Ack(seq(first, first+1), 0, t0+1000) })
	if c := counts(t, w); c.Received != 3 || c.OldestReceived != t0+1000 {
		t.Fatalf("after ack: %+v", c)
	}
	var seen []uint64
	_ = w.View(func(tx *ReadTx) error {
		return tx.ReceivedFunc(func(id uint64, _, created int64) bool {
			if created != t0+1000 {
				t.Errorf("row %d created %d", id, created)
			}
			seen = append(seen, id)
			return len(seen) < 2
		})
	})
	if len(seen) != 2 {
		t.Fatalf("ReceivedFunc did not stop: %v", seen)
	}
}

// TestDropUnsentDropsReceived: a block too old loses its RECEIVED rows as
// it loses its PENDING ones, counted as such; SENDING rows stay.
func TestDropUnsentDropsReceived(t *testing.T) {
	clk := newClock(t0)
	w := openTest(t, clk)
	first, _ := appendN(t, w, 4)
	claim(t, w, 3, t0)
	mustUpdate(t, w, func(tx *Tx) error { return tx.Receive(seq(first, first+1), t0) })
	var age Dropped
	mustUpdate(t, w, func(tx *Tx) error {
		var err error
		_, age, _, err = tx.DropUnsent(DropLimits{OlderThanMS: t0 + 1})
		return err
	})
	if age.Rows != 3 {
		t.Fatalf("dropped %+v, want the 2 RECEIVED and 1 PENDING rows", age)
	}
	c := counts(t, w)
	if c.Received != 0 || c.Pending != 0 || c.Sending != 1 || c.PayloadBytes != 2 {
		t.Fatalf("counts %+v", c)
	}
	if runs := receivedRuns(t, w); len(runs) != 0 {
		t.Fatalf("received runs left: %v", runs)
	}
}

// TestVerifyReceived: a WAL with RECEIVED rows verifies clean; a damaged
// received index is found.
func TestVerifyReceived(t *testing.T) {
	cases := []struct {
		name   string
		damage func(tx *bolt.Tx) error
	}{
		{"run beyond the rows", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketReceived).Put(u64key(1), receivedKind.encode(run{start: 1, end: 40, batch: 1, at: t0}))
		}},
		{"wrong batch id", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketReceived).Put(u64key(1), receivedKind.encode(run{start: 1, end: 3, batch: 7, at: t0}))
		}},
		{"malformed value", func(tx *bolt.Tx) error {
			return tx.Bucket(bucketReceived).Put(u64key(1), []byte{1, 2, 3})
		}},
		{"run lost", func(tx *bolt.Tx) error { return tx.Bucket(bucketReceived).Delete(u64key(1)) }},
		{"row also pending", func(tx *bolt.Tx) error { return tx.Bucket(bucketPending).Put(u64key(2), u64key(2)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "wal.db")
			w, err := Open(Options{Path: path, Now: newClock(t0).Now})
			if err != nil {
				t.Fatal(err)
			}
			receiveN(t, w, 3, t0)
			appendN(t, w, 2)
			probs, _, err := w.Verify(0)
			if err != nil || len(probs) != 0 {
				t.Fatalf("clean file: %v %v", probs, err)
			}
			_ = w.Close()
			tamper(t, path, tc.damage)
			ro, err := Open(Options{Path: path, ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			probs, _, err = ro.Verify(0)
			if err != nil || len(probs) == 0 {
				t.Fatalf("damage not found: %v %v", probs, err)
			}
			t.Log(probs)
		})
	}
}

// TestReceivedBucketAdded: a file written before the received index reads
// as having no RECEIVED rows, read-only, and gets the index at its first
// read-write open.
func TestReceivedBucketAdded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	w, err := Open(Options{Path: path, Now: newClock(t0).Now})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, w, 3)
	_ = w.Close()
	tamper(t, path, func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketReceived) })
	ro, err := Open(Options{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only: %v", err)
	}
	st := StatusReceived
	_ = ro.View(func(tx *ReadTx) error {
		if rows, err := tx.List(&st, 0, 0); err != nil || len(rows) != 0 || tx.Counts().Received != 0 {
			t.Errorf("received rows %v %v", rows, err)
		}
		if first, last := tx.RowIDRange(); first != 1 || last != 3 {
			t.Errorf("row ids %d..%d", first, last)
		}
		return nil
	})
	if probs, _, err := ro.Verify(0); err != nil || len(probs) != 0 {
		t.Fatalf("verify %v %v", probs, err)
	}
	_ = ro.Close()
	w = openAt(t, path, newClock(t0))
	claim(t, w, 2, t0)
	mustUpdate(t, w, func(tx *Tx) error { return tx.Receive([]uint64{1, 2}, t0) })
	if c := counts(t, w); c.Received != 2 || c.Pending != 1 {
		t.Fatalf("counts %+v", c)
	}
}

// TestSalvageReceived: RECEIVED rows come back RECEIVED with their batch
// ids when the received index reads, and PENDING (sent again) when it is
// lost.
func TestSalvageReceived(t *testing.T) {
	for _, lose := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "wal.db")
		w, err := Open(Options{Path: path, Now: newClock(t0).Now})
		if err != nil {
			t.Fatal(err)
		}
		first, _ := appendN(t, w, 6)
		claim(t, w, 6, t0)
		mustUpdate(t, w, func(tx *Tx) error {
			if _, err := tx.Fail([]uint64{first + 1}, true, t0, 5, "busy", t0); err != nil {
				return err
			}
			return tx.Receive([]uint64{first, first + 2, first + 3}, t0+1)
		})
		claim(t, w, 1, t0)
		mustUpdate(t, w, func(tx *Tx) error { return tx.Receive([]uint64{first + 1}, t0+2) })
		batch := map[uint64]int64{}
		for id := first; id <= first+3; id++ {
			batch[id] = getRow(t, w, id).BatchID
		}
		_ = w.Close()
		if lose {
			tamper(t, path, func(tx *bolt.Tx) error { return tx.Bucket(bucketReceived).Delete(u64key(first)) })
		}
		dst := filepath.Join(t.TempDir(), "salvaged.db")
		rep, err := Salvage(path, dst, SalvageOptions{Now: newClock(t0 + 10).Now})
		if err != nil {
			t.Fatal(err)
		}
		out := openAt(t, dst, newClock(t0+10))
		// Rows 4 and 5 were SENDING: PENDING in the copy.
		want, wantRows := StatusReceived, map[Status]int{StatusReceived: 4, StatusPending: 2}
		if lose {
			want, wantRows = StatusPending, map[Status]int{StatusPending: 6}
		}
		if !maps.Equal(rep.Rows, wantRows) {
			t.Fatalf("lose=%v: report %v", lose, rep.Rows)
		}
		for id := first; id <= first+3; id++ {
			r := getRow(t, out, id)
			if r.Status != want || r.BatchID != batch[id] {
				t.Fatalf("lose=%v: row %+v", lose, r)
			}
			if id == first+1 && r.Attempts != 1 {
				t.Fatalf("row %d lost its attempts: %+v", id, r)
			}
		}
		if !lose {
			if n := ackAll(t, out); n != 4 {
				t.Fatalf("acked %d received rows of the copy", n)
			}
		}
	}
}

func ackAll(t *testing.T, w *WAL) int {
	t.Helper()
	var n int
	mustUpdate(t, w, func(tx *Tx) error {
		var err error
		n, err = tx.AckReceivedThrough(1<<62, 0, t0)
		return err
	})
	return n
}
