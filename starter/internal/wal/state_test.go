package wal

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestTransitionsFromSending drives one claimed row through each exit of
// SENDING and checks the row and the counters afterwards.
func TestTransitionsFromSending(t *testing.T) {
	type want struct {
		exists    bool
		status    Status
		attempts  int
		notBefore int64
		reason    string
		dead      int
	}
	cases := []struct {
		name     string
		attempts int // Fail(charge) calls before the step, each re-claimed
		step     func(tx *Tx, id uint64, now int64) (dead int, err error)
		want     want
	}{
		{"ack retention 0 deletes", 0, func(tx *Tx, id uint64, now int64) (int, error) {
			return 0, tx.Ack([]uint64{id}, 0, now)
		}, want{exists: false}},
		{"ack with retention keeps ACKED", 0, func(tx *Tx, id uint64, now int64) (int, error) {
			return 0, tx.Ack([]uint64{id}, time.Hour, now)
		}, want{exists: true, status: StatusAcked}},
		{"fail charged counts an attempt", 0, func(tx *Tx, id uint64, now int64) (int, error) {
			return tx.Fail([]uint64{id}, true, now+500, 3, "RETRY", now)
		}, want{exists: true, status: StatusPending, attempts: 1, notBefore: t0 + 500, reason: "RETRY"}},
		{"fail uncharged keeps attempts", 0, func(tx *Tx, id uint64, now int64) (int, error) {
			return tx.Fail([]uint64{id}, false, now+500, 3, "connection lost", now)
		}, want{exists: true, status: StatusPending, attempts: 0, notBefore: t0 + 500, reason: "connection lost"}},
		{"fail reaching max attempts goes DEAD", 2, func(tx *Tx, id uint64, now int64) (int, error) {
			return tx.Fail([]uint64{id}, true, now+500, 3, "DECODE_FAILED", now)
		}, want{exists: true, status: StatusDead, attempts: 3, notBefore: t0, reason: "DECODE_FAILED", dead: 1}},
		{"max attempts 0 means unlimited", 2, func(tx *Tx, id uint64, now int64) (int, error) {
			return tx.Fail([]uint64{id}, true, now, 0, "RETRY", now)
		}, want{exists: true, status: StatusPending, attempts: 3, notBefore: t0, reason: "RETRY"}},
		{"uncharged fail never kills", 2, func(tx *Tx, id uint64, now int64) (int, error) {
			return tx.Fail([]uint64{id}, false, now, 3, "unreachable", now)
		}, want{exists: true, status: StatusPending, attempts: 2, notBefore: t0, reason: "unreachable"}},
		{"release keeps attempts and not-before", 1, func(tx *Tx, id uint64, now int64) (int, error) {
			return 0, tx.Release([]uint64{id}, now)
		}, want{exists: true, status: StatusPending, attempts: 1, notBefore: t0, reason: "RETRY"}},
		{"resurrect returns to PENDING", 0, func(tx *Tx, id uint64, now int64) (int, error) {
			n, err := tx.ResurrectSending(now)
			if n != 1 {
				return 0, errorf("resurrected %d, want 1", n)
			}
			return 0, err
		}, want{exists: true, status: StatusPending}},
		{"unstick returns to PENDING", 0, func(tx *Tx, id uint64, now int64) (int, error) {
			n, err := tx.ResurrectSending(now)
			if n != 1 {
				return 0, errorf("unstuck %d, want 1", n)
			}
			return 0, err
		}, want{exists: true, status: StatusPending}},
		{"ack of an unknown id is skipped", 0, func(tx *Tx, id uint64, now int64) (int, error) {
			return 0, tx.Ack([]uint64{id + 100}, 0, now)
		}, want{exists: true, status: StatusSending}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock(t0)
			w := openTest(t, clk)
			id, _ := appendN(t, w, 1)
			for range tc.attempts {
				if got := claim(t, w, 10, t0); len(got) != 1 {
					t.Fatalf("claim: %v", got)
				}
				mustUpdate(t, w, func(tx *Tx) error {
					_, err := tx.Fail([]uint64{id}, true, t0, 0, "RETRY", t0)
					return err
				})
			}
			if got := claim(t, w, 10, t0); len(got) != 1 || got[0].Status != StatusSending || got[0].Attempts != tc.attempts {
				t.Fatalf("claim: %+v", got)
			}
			var dead int
			mustUpdate(t, w, func(tx *Tx) error {
				var err error
				dead, err = tc.step(tx, id, t0)
				return err
			})
			if dead != tc.want.dead {
				t.Errorf("dead = %d, want %d", dead, tc.want.dead)
			}
			var row Row
			var ok bool
			_ = w.View(func(tx *ReadTx) error { row, ok, _ = tx.Get(id); return nil })
			if ok != tc.want.exists {
				t.Fatalf("exists = %v, want %v", ok, tc.want.exists)
			}
			if !ok {
				if c := counts(t, w); c.Total() != 0 || c.PayloadBytes != 0 {
					t.Errorf("counts after delete: %+v", c)
				}
				return
			}
			if row.Status != tc.want.status || row.Attempts != tc.want.attempts || row.NotBefore != tc.want.notBefore || row.Reason != tc.want.reason {
				t.Errorf("row = %+v, want %+v", row, tc.want)
			}
			if c := counts(t, w); c.Of(tc.want.status) != 1 || c.Total() != 1 {
				t.Errorf("counts = %+v", c)
			}
		})
	}
}

func errorf(f string, a ...any) error { return &testErr{msg: fmt.Sprintf(f, a...)} }

type testErr struct{ msg string }

func (e *testErr) Error() string { return e.msg }

func TestClaimOrderAndLimit(t *testing.T) {
	w := openTest(t, newClock(t0))
	appendN(t, w, 10)
	got := claim(t, w, 4, t0)
	if !slices.Equal(ids(got), []uint64{1, 2, 3, 4}) {
		t.Fatalf("first claim %v", ids(got))
	}
	for _, r := range got {
		if r.Attempts != 0 {
			t.Errorf("claim charged an attempt: %+v", r)
		}
	}
	got = claim(t, w, 100, t0)
	if !slices.Equal(ids(got), []uint64{5, 6, 7, 8, 9, 10}) {
		t.Fatalf("second claim %v", ids(got))
	}
	if got := claim(t, w, 100, t0); len(got) != 0 {
		t.Fatalf("claimed SENDING rows again: %v", ids(got))
	}
	// Acked rows are never claimed again.
	mustUpdate(t, w, func(tx *Tx) error { return tx.Ack([]uint64{1, 2, 3}, time.Minute, t0) })
	mustUpdate(t, w, func(tx *Tx) error { _, err := tx.ResurrectSending(t0); return err })
	if got := claim(t, w, 100, t0); !slices.Equal(ids(got), []uint64{4, 5, 6, 7, 8, 9, 10}) {
		t.Fatalf("after resurrect %v", ids(got))
	}
}

func TestNotBeforeRespected(t *testing.T) {
	w := openTest(t, newClock(t0))
	appendN(t, w, 5)
	claim(t, w, 2, t0) // rows 1, 2
	mustUpdate(t, w, func(tx *Tx) error {
		_, err := tx.Fail([]uint64{1, 2}, true, t0+1000, 5, "RETRY", t0)
		return err
	})
	// The backed-off head does not block the rows behind it, and is not
	// returned before it is due.
	if got := claim(t, w, 10, t0+999); !slices.Equal(ids(got), []uint64{3, 4, 5}) {
		t.Fatalf("before due: %v", ids(got))
	}
	if c := counts(t, w); c.Pending != 2 || c.Delayed != 2 || c.OldestPending != t0 {
		t.Fatalf("counts: %+v", c)
	}
	if got := claim(t, w, 10, t0+1000); !slices.Equal(ids(got), []uint64{1, 2}) {
		t.Fatalf("when due: %v", ids(got))
	}
	if c := counts(t, w); c.Pending != 0 || c.Delayed != 0 || c.Sending != 5 {
		t.Fatalf("counts: %+v", c)
	}
	// Release keeps a future NotBefore: a row released before it was sent
	// waits out its backoff.
	mustUpdate(t, w, func(tx *Tx) error {
		_, err := tx.Fail([]uint64{3}, true, t0+5000, 5, "RETRY", t0+1000)
		return err
	})
	claimedLater := claim(t, w, 1, t0+5000)
	if !slices.Equal(ids(claimedLater), []uint64{3}) {
		t.Fatalf("claim 3: %v", ids(claimedLater))
	}
	mustUpdate(t, w, func(tx *Tx) error { return tx.Release([]uint64{3}, t0+1000) })
	if got := claim(t, w, 10, t0+4999); len(got) != 0 {
		t.Fatalf("released row claimed before NotBefore: %v", ids(got))
	}
	if got := claim(t, w, 10, t0+5000); !slices.Equal(ids(got), []uint64{3}) {
		t.Fatalf("released row when due: %v", ids(got))
	}
}

func TestCleanupAcked(t *testing.T) {
	w := openTest(t, newClock(t0))
	appendN(t, w, 3)
	claim(t, w, 3, t0)
	mustUpdate(t, w, func(tx *Tx) error { return tx.Ack([]uint64{1}, time.Second, t0) })
	mustUpdate(t, w, func(tx *Tx) error { return tx.Ack([]uint64{2, 3}, time.Second, t0+5000) })
	var n int
	mustUpdate(t, w, func(tx *Tx) (err error) { n, err = tx.CleanupAcked(t0+1000, 10); return })
	if n != 1 {
		t.Fatalf("cleanup deleted %d, want 1", n)
	}
	mustUpdate(t, w, func(tx *Tx) (err error) { n, err = tx.CleanupAcked(t0+1000, 10); return })
	if n != 0 {
		t.Fatalf("second pass deleted %d, want 0", n)
	}
	mustUpdate(t, w, func(tx *Tx) (err error) { n, err = tx.CleanupAcked(t0+9000, 1); return })
	if n != 1 {
		t.Fatalf("max not respected: %d", n)
	}
	if c := counts(t, w); c.Acked != 1 || c.Total() != 1 {
		t.Fatalf("counts %+v", c)
	}
}

func TestOperatorOps(t *testing.T) {
	w := openTest(t, newClock(t0))
	appendN(t, w, 4)
	claim(t, w, 4, t0)
	mustUpdate(t, w, func(tx *Tx) error {
		if _, err := tx.Fail([]uint64{1, 2}, true, t0, 1, "BAD_REQUEST", t0); err != nil {
			return err
		}
		return tx.Ack([]uint64{3}, time.Hour, t0)
	})
	if c := counts(t, w); c.Dead != 2 || c.Acked != 1 || c.Sending != 1 {
		t.Fatalf("setup counts %+v", c)
	}
	var n int
	mustUpdate(t, w, func(tx *Tx) (err error) { n, err = tx.RetryDead(t0 + 1); return })
	if n != 2 {
		t.Fatalf("retry dead %d", n)
	}
	if r := getRow(t, w, 1); r.Status != StatusPending || r.Attempts != 0 || r.Reason != "" {
		t.Fatalf("retried row %+v", r)
	}
	claim(t, w, 2, t0+1)
	mustUpdate(t, w, func(tx *Tx) error { _, err := tx.Fail([]uint64{1}, true, t0, 1, "x", t0); return err })
	mustUpdate(t, w, func(tx *Tx) (err error) { n, err = tx.PurgeDead(); return })
	if n != 1 {
		t.Fatalf("purge dead %d", n)
	}
	mustUpdate(t, w, func(tx *Tx) (err error) { n, err = tx.PurgeAcked(t0); return })
	if n != 1 {
		t.Fatalf("purge acked %d", n)
	}
	mustUpdate(t, w, func(tx *Tx) (err error) { n, err = tx.ResurrectSending(t0); return })
	if n != 2 {
		t.Fatalf("unstick %d", n)
	}
	if c := counts(t, w); c.Pending != 2 || c.Total() != 2 {
		t.Fatalf("final counts %+v", c)
	}
}

func TestPositionsAndMetaAtomicWithRows(t *testing.T) {
	w := openTest(t, newClock(t0))
	mustUpdate(t, w, func(tx *Tx) error {
		if _, _, err := tx.Append([]NewRow{{SourceID: "in", Payload: []byte("a")}}); err != nil {
			return err
		}
		if err := tx.SetMeta("input_started:in", []byte("1")); err != nil {
			return err
		}
		return tx.SavePositions([]PositionUpdate{{SourceID: "in", Key: "/var/log/a", State: []byte("42")},
			{SourceID: "in", Key: "/var/log/b", State: []byte("7")}, {SourceID: "other", Key: "k", State: []byte("1")}})
	})
	// A failing callback rolls back rows, positions and meta together.
	_ = w.Update(func(tx *Tx) error {
		_, _, _ = tx.Append([]NewRow{{SourceID: "in", Payload: []byte("b")}})
		_ = tx.SavePositions([]PositionUpdate{{SourceID: "in", Key: "/var/log/a", State: []byte("99")}})
		_ = tx.SetMeta("input_started:in", nil)
		return errorf("boom")
	})
	mustUpdate(t, w, func(tx *Tx) error {
		return tx.SavePositions([]PositionUpdate{{SourceID: "in", Key: "/var/log/b"}}) // delete
	})
	err := w.View(func(tx *ReadTx) error {
		pos, err := tx.Positions("in")
		if err != nil {
			return err
		}
		if len(pos) != 1 || string(pos["/var/log/a"]) != "42" {
			t.Errorf("positions %q", pos)
		}
		if v, _ := tx.Meta("input_started:in"); string(v) != "1" {
			t.Errorf("meta %q", v)
		}
		if v, _ := tx.Meta("missing"); v != nil {
			t.Errorf("missing meta %q", v)
		}
		if s, _ := tx.Sources(); !slices.Equal(s, []string{"in", "other"}) {
			t.Errorf("sources %v", s)
		}
		if c := tx.Counts(); c.Pending != 1 {
			t.Errorf("rolled back append is visible: %+v", c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestListAndGet(t *testing.T) {
	w := openTest(t, newClock(t0))
	appendN(t, w, 6)
	claim(t, w, 2, t0)
	mustUpdate(t, w, func(tx *Tx) error {
		_, err := tx.Fail([]uint64{1}, true, t0+100, 5, "RETRY", t0)
		return err
	})
	err := w.View(func(tx *ReadTx) error {
		pending := StatusPending
		rows, err := tx.List(&pending, 0, 0)
		if err != nil {
			return err
		}
		if !slices.Equal(ids(rows), []uint64{1, 3, 4, 5, 6}) {
			t.Errorf("pending list %v", ids(rows))
		}
		rows, _ = tx.List(&pending, 1, 2)
		if !slices.Equal(ids(rows), []uint64{3, 4}) {
			t.Errorf("paged list %v", ids(rows))
		}
		all, _ := tx.List(nil, 4, 0)
		if !slices.Equal(ids(all), []uint64{5, 6}) {
			t.Errorf("all after 4: %v", ids(all))
		}
		r, ok, err := tx.Get(2)
		if err != nil || !ok || r.Status != StatusSending || string(r.Payload) != "\x01x" {
			t.Errorf("get 2: %+v %v %v", r, ok, err)
		}
		if _, ok, _ := tx.Get(99); ok {
			t.Error("get 99 found")
		}
		if f, l := tx.RowIDRange(); f != 1 || l != 6 {
			t.Errorf("range %d..%d", f, l)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A claim bounded in bytes stops before the row that would take it past
// the bound, leaves the rest PENDING in order for the next claim, and
// still claims a first row bigger than the bound on its own.
func TestClaimFuncBoundedInBytes(t *testing.T) {
	w := openTest(t, newClock(t0))
	sizes := []int{100, 100, 100, 700, 100, 100, 50}
	mustUpdate(t, w, func(tx *Tx) error {
		rows := make([]NewRow, len(sizes))
		for i, n := range sizes {
			rows[i] = NewRow{SourceID: "src", Payload: bytes.Repeat([]byte{'a' + byte(i)}, n)}
		}
		_, _, err := tx.Append(rows)
		return err
	})
	claimBytes := func(limit, maxBytes int) ([]uint64, int, bool) {
		var got []uint64
		total, bounded := 0, false
		mustUpdate(t, w, func(tx *Tx) error {
			n, b, err := tx.ClaimFunc(limit, maxBytes, t0, func(r *Row) {
				got = append(got, r.ID)
				total += len(r.Payload)
			})
			if n != len(got) {
				t.Errorf("ClaimFunc returned %d, handed %d rows", n, len(got))
			}
			bounded = b
			return err
		})
		return got, total, bounded
	}
	for _, step := range []struct {
		limit, maxBytes int
		want            []uint64
		wantBytes       int
		wantBounded     bool // stopped at a bound, not for want of rows
	}{
		{10, 250, []uint64{1, 2}, 200, true}, // a third row would make 300
		{10, 500, []uint64{3}, 100, true},    // row 4 (700) does not fit behind it
		{10, 500, []uint64{4}, 700, true},    // but goes alone, over the bound
		{1, 1000, []uint64{5}, 100, true},    // the row limit still holds
		{10, 0, []uint64{6, 7}, 150, false},  // no bound in bytes; rows ran out
		{10, 100, nil, 0, false},             // nothing left
	} {
		got, total, bounded := claimBytes(step.limit, step.maxBytes)
		if !slices.Equal(got, step.want) || total != step.wantBytes || bounded != step.wantBounded {
			t.Fatalf("ClaimFunc(%d, %d): rows %v (%d bytes), bounded %v; want %v (%d bytes), bounded %v",
				step.limit, step.maxBytes, got, total, bounded, step.want, step.wantBytes, step.wantBounded)
		}
	}
}
