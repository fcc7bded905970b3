package wal

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// openLanes opens path with lanes and checks consistency and closes it
// when the test ends (or at close, which a test may call first).
func openLanes(t *testing.T, path string, clk *fakeClock, lanes ...string) (w *WAL, closeIt func()) {
	t.Helper()
	w, err := Open(Options{Path: path, Now: clk.Now, Lanes: lanes, SendOrderBatchIDs: len(lanes) > 0})
	if err != nil {
		t.Fatalf("open with lanes %v: %v", lanes, err)
	}
	closed := false
	closeIt = func() {
		if closed {
			return
		}
		closed = true
		checkConsistent(t, w)
		if err := w.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	t.Cleanup(closeIt)
	return w, closeIt
}

// appendLaned appends one row per lane letter of spec ("a" alarm, "d"
// default, "x" debug), payload "<lane><n>", and returns the payloads in
// append order.
func appendLaned(t *testing.T, w *WAL, spec string, from int) []string {
	t.Helper()
	names := map[rune]string{'a': "alarm", 'd': "", 'x': "debug"}
	var rows []NewRow
	var payloads []string
	for i, c := range spec {
		p := fmt.Sprintf("%c%d", c, from+i)
		rows = append(rows, NewRow{SourceID: "src", Payload: []byte(p), Lane: names[c]})
		payloads = append(payloads, p)
	}
	mustUpdate(t, w, func(tx *Tx) error { _, _, err := tx.Append(rows); return err })
	return payloads
}

func payloads(rows []Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = string(r.Payload)
	}
	return out
}

func only(ps []string, lane byte) []string {
	var out []string
	for _, p := range ps {
		if p[0] == lane {
			out = append(out, p)
		}
	}
	return out
}

// Claim takes the named lanes in their order, then the default lane, and
// keeps append order within each; so does a claim after a restart, and a
// row returned by Fail goes back to its own lane.
func TestLanesClaimOrderSurvivesRestart(t *testing.T) {
	clk := newClock(t0)
	path := filepath.Join(t.TempDir(), "wal.db")
	w, closeIt := openLanes(t, path, clk, "alarm", "debug")
	in := appendLaned(t, w, "dxaddaxd", 0)
	in = append(in, appendLaned(t, w, "axdd", len(in))...)
	closeIt()

	w, _ = openLanes(t, path, clk, "alarm", "debug")
	got := payloads(claim(t, w, 3, clk.MS()))
	if want := only(in, 'a'); !slices.Equal(got, want) {
		t.Fatalf("first claim after restart = %v, want the alarm lane in order %v", got, want)
	}
	// The alarm rows fail and come back: still first, still in order.
	mustUpdate(t, w, func(tx *Tx) error {
		_, err := tx.Fail(tx.SendingIDs(), true, clk.MS(), 10, "test", clk.MS())
		return err
	})
	got = payloads(claim(t, w, 100, clk.MS()))
	want := append(append(only(in, 'a'), only(in, 'x')...), only(in, 'd')...)
	if !slices.Equal(got, want) {
		t.Fatalf("claim = %v, want %v", got, want)
	}
}

// With SendOrderBatchIDs the batch ids grow in claim order whatever the
// append order was.
func TestLanesBatchIDsFollowClaimOrder(t *testing.T) {
	clk := newClock(t0)
	w, _ := openLanes(t, filepath.Join(t.TempDir(), "wal.db"), clk, "alarm")
	appendLaned(t, w, "ddddaadda", 0)
	rows := claim(t, w, 100, clk.MS())
	for i := 1; i < len(rows); i++ {
		if rows[i].BatchID <= rows[i-1].BatchID {
			t.Fatalf("batch ids in claim order %v: not increasing at %d", claimedBatchIDs(rows), i)
		}
	}
	if rows[0].Payload[0] != 'a' {
		t.Fatalf("first claimed %q, want an alarm row", rows[0].Payload)
	}
}

func claimedBatchIDs(rows []Row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.BatchID
	}
	return out
}

// ClaimFrom takes a range of a lane: the rows appended since a row id
// first (newest-first draining), then the backlog below it, each in
// append order; Backlog reports both.
func TestClaimFromRanges(t *testing.T) {
	clk := newClock(t0)
	w, _ := openLanes(t, filepath.Join(t.TempDir(), "wal.db"), clk, "alarm")
	old := appendLaned(t, w, "ddadd", 0)
	var mark uint64
	_ = w.View(func(tx *ReadTx) error { mark = tx.NextRowID(); return nil })
	clk.Add(1000)
	fresh := appendLaned(t, w, "dadd", len(old))

	var back, front LaneBacklog
	_ = w.View(func(tx *ReadTx) error {
		var err error
		if back, err = tx.Backlog("", 0, mark); err != nil {
			return err
		}
		front, err = tx.Backlog("", mark, 0)
		return err
	})
	if back.Rows != 4 || front.Rows != 3 || back.OldestCreated != t0 || front.OldestCreated != t0+1000 {
		t.Fatalf("backlog %+v, new %+v; want 4 rows from t0 and 3 rows from t0+1000", back, front)
	}
	size := func(ps []string) (n int64) {
		for _, p := range ps {
			n += int64(len(p))
		}
		return n
	}
	if want := size(only(old, 'd')); back.Bytes != want {
		t.Errorf("backlog bytes %d, want %d", back.Bytes, want)
	}
	if want := size(only(fresh, 'd')); front.Bytes != want {
		t.Errorf("new rows' bytes %d, want %d", front.Bytes, want)
	}
	_ = w.View(func(tx *ReadTx) error {
		for _, c := range []struct {
			r        ClaimRange
			limit, n int
		}{{ClaimRange{}, 100, 7}, {ClaimRange{}, 5, 5}, {ClaimRange{From: mark}, 100, 3}, {ClaimRange{Below: mark}, 100, 4}, {ClaimRange{Lane: "alarm"}, 100, 2}} {
			if n := tx.DueUpTo(c.r, c.limit); n != c.n {
				t.Errorf("DueUpTo(%+v, %d) = %d, want %d", c.r, c.limit, n, c.n)
			}
		}
		return nil
	})
	var got []string
	mustUpdate(t, w, func(tx *Tx) error {
		if !tx.HasDue(ClaimRange{From: mark}) {
			t.Error("HasDue(new rows) = false")
		}
		for _, r := range []ClaimRange{{From: mark}, {Below: mark}, {Lane: "alarm"}} {
			_, _, err := tx.ClaimFrom(r, 100, 0, clk.MS(), func(r *Row) { got = append(got, string(r.Payload)) })
			if err != nil {
				return err
			}
		}
		_, _, err := tx.ClaimFrom(ClaimRange{Lane: "nope"}, 1, 0, clk.MS(), func(*Row) {})
		if err == nil || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("claim from an unknown lane: err = %v, want one naming it", err)
		}
		return nil
	})
	want := append(append(only(fresh, 'd'), only(old, 'd')...), only(append(old, fresh...), 'a')...)
	if !slices.Equal(got, want) {
		t.Fatalf("claimed %v, want %v", got, want)
	}
}

// A WAL opened without a lane it held rows of folds them into the default
// lane: every row is still claimed once, and Verify finds nothing wrong.
func TestLanesFoldedWhenDropped(t *testing.T) {
	clk := newClock(t0)
	path := filepath.Join(t.TempDir(), "wal.db")
	w, closeIt := openLanes(t, path, clk, "alarm", "debug")
	in := appendLaned(t, w, "daxdaxdd", 0)
	closeIt()

	w, closeIt = openLanes(t, path, clk, "debug")
	got := payloads(claim(t, w, 100, clk.MS()))
	want := append(only(in, 'x'), "d0", "a1", "d3", "a4", "d6", "d7")
	if !slices.Equal(got, want) {
		t.Fatalf("claim with alarm dropped = %v, want %v", got, want)
	}
	mustUpdate(t, w, func(tx *Tx) error { return tx.Release(tx.SendingIDs(), clk.MS()) })
	closeIt()

	w, _ = openLanes(t, path, clk)
	if got := payloads(claim(t, w, 100, clk.MS())); len(got) != len(in) {
		t.Fatalf("claim without lanes = %v, want all %d rows", got, len(in))
	}
}

// Acking every row of a laned block deletes the block and its lane entry.
func TestLaneBlockEntriesGoWithTheirBlocks(t *testing.T) {
	clk := newClock(t0)
	w, _ := openLanes(t, filepath.Join(t.TempDir(), "wal.db"), clk, "alarm")
	for i := range 5 {
		appendLaned(t, w, "aadd", 4*i)
		rows := claim(t, w, 100, clk.MS())
		mustUpdate(t, w, func(tx *Tx) error { return tx.Ack(ids(rows), 0, clk.MS()) })
	}
	_ = w.View(func(tx *ReadTx) error {
		if n := tx.pend.laneBlocks.Stats().KeyN; n != 0 {
			t.Errorf("lane_blocks holds %d entries after every row was acked", n)
		}
		return nil
	})
}

func TestLaneOptionsChecked(t *testing.T) {
	for _, o := range []Options{
		{Lanes: []string{""}},
		{Lanes: []string{"a", "a"}},
		{Lanes: []string{strings.Repeat("x", MaxLaneName+1)}},
	} {
		o.Path = filepath.Join(t.TempDir(), "wal.db")
		if w, err := Open(o); err == nil {
			_ = w.Close()
			t.Errorf("Open(%+v) succeeded", o)
		}
	}
}

// The db commands of a stopped agent open read-only without its lanes:
// they still see every row and find the file consistent.
func TestLanesSeenReadOnly(t *testing.T) {
	clk := newClock(t0)
	path := filepath.Join(t.TempDir(), "wal.db")
	w, closeIt := openLanes(t, path, clk, "alarm")
	appendLaned(t, w, "dada", 0)
	closeIt()
	ro, err := Open(Options{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	checkConsistent(t, ro)
	pending := StatusPending
	_ = ro.View(func(tx *ReadTx) error {
		rows, err := tx.List(&pending, 0, 0)
		if err != nil || len(rows) != 4 {
			t.Errorf("List(PENDING) = %d rows, %v; want 4", len(rows), err)
		}
		return nil
	})
}

// A model of a WAL with lanes under random appends, claims, fails (with
// backoffs on an injected clock), releases, acks and restarts: every
// claim returns the due rows of the highest lane with any, lowest row id
// first, exactly as the model holds them; Verify finds nothing wrong.
func TestLanesModel(t *testing.T) {
	lanes := []string{"alarm", "warn"}
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			clk := newClock(t0)
			path := filepath.Join(t.TempDir(), "wal.db")
			w, closeIt := openLanes(t, path, clk, lanes...)
			type mrow struct {
				lane      int // index in laneOrder
				notBefore int64
			}
			laneOrder := []string{"alarm", "warn", ""}
			pending := map[uint64]mrow{} // due or backed off
			sending := map[uint64]mrow{}
			var next uint64 = 1
			for step := range 300 {
				switch op := rng.IntN(10); {
				case op < 3: // append a group of mixed lanes
					var rows []NewRow
					for range 1 + rng.IntN(8) {
						l := rng.IntN(3)
						rows = append(rows, NewRow{SourceID: "s", Payload: []byte{byte(l)}, Lane: laneOrder[l]})
					}
					mustUpdate(t, w, func(tx *Tx) error { _, _, err := tx.Append(rows); return err })
					for _, r := range rows {
						pending[next] = mrow{lane: int(r.Payload[0])}
						next++
					}
				case op < 6: // claim
					n := 1 + rng.IntN(6)
					var due []uint64
					for id, r := range pending {
						if r.notBefore <= clk.MS() {
							due = append(due, id)
						}
					}
					slices.SortFunc(due, func(a, b uint64) int {
						if la, lb := pending[a].lane, pending[b].lane; la != lb {
							return la - lb
						}
						return int(a) - int(b)
					})
					want := due[:min(n, len(due))]
					got := ids(claim(t, w, n, clk.MS()))
					if !slices.Equal(got, want) {
						t.Fatalf("step %d: claim %d = %v, want %v", step, n, got, want)
					}
					for _, id := range got {
						sending[id] = pending[id]
						delete(pending, id)
					}
				case op < 8 && len(sending) > 0: // fail or release some
					var some []uint64
					for id := range sending {
						if rng.IntN(2) == 0 {
							some = append(some, id)
						}
					}
					slices.Sort(some)
					backoff := int64(rng.IntN(3)) * 100
					mustUpdate(t, w, func(tx *Tx) error {
						if backoff == 0 {
							return tx.Release(some, clk.MS())
						}
						_, err := tx.Fail(some, false, clk.MS()+backoff, 0, "test", clk.MS())
						return err
					})
					for _, id := range some {
						r := sending[id]
						r.notBefore = clk.MS() + backoff
						pending[id] = r
						delete(sending, id)
					}
				case op < 9 && len(sending) > 0: // ack all in flight
					var all []uint64
					for id := range sending {
						all = append(all, id)
					}
					slices.Sort(all)
					mustUpdate(t, w, func(tx *Tx) error { return tx.Ack(all, 0, clk.MS()) })
					clear(sending)
				default: // time passes; now and then a restart
					clk.Add(int64(rng.IntN(150)))
					if rng.IntN(4) == 0 {
						closeIt()
						w, closeIt = openLanes(t, path, clk, lanes...)
						// A restart returns the rows in flight to PENDING.
						mustUpdate(t, w, func(tx *Tx) error { _, err := tx.ResurrectSending(clk.MS()); return err })
						for id, r := range sending {
							r.notBefore = 0
							pending[id] = r
						}
						clear(sending)
					}
				}
			}
			checkConsistent(t, w)
		})
	}
}

// With LaneOrder the size drops take the default lane's oldest groups
// before any alarm row, even older ones; without, the oldest groups go
// whatever their lane. Age drops ignore lanes.
func TestDropByLane(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order []string
		want  string // the lanes of the groups kept, oldest first
	}{
		{"lowest lane first", []string{"", "alarm"}, "aaa"},
		{"oldest first", nil, "dda"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock(t0)
			w, _ := openLanes(t, filepath.Join(t.TempDir(), "wal.db"), clk, "alarm")
			const group = 10
			payload := strings.Repeat("x", 100)
			lanes := "adadda" // one group each, oldest first
			for _, c := range lanes {
				rows := make([]NewRow, group)
				for i := range rows {
					rows[i] = NewRow{SourceID: "s", Payload: []byte(string(c) + payload), Lane: map[rune]string{'a': "alarm"}[c]}
				}
				mustUpdate(t, w, func(tx *Tx) error { _, _, err := tx.Append(rows); return err })
				clk.Add(10)
			}
			per := int64(group * (len(payload) + 1))
			var full Dropped
			mustUpdate(t, w, func(tx *Tx) error {
				var err error
				full, _, _, err = tx.DropUnsent(DropLimits{MaxBytes: 3 * per, LaneOrder: tc.order})
				return err
			})
			if full.Rows != 3*group {
				t.Fatalf("dropped %d rows, want 3 groups of %d", full.Rows, group)
			}
			var kept strings.Builder
			for _, r := range claim(t, w, 1000, clk.MS()) {
				if r.ID%group == 1 {
					kept.WriteByte(r.Payload[0])
				}
			}
			// Claims take the alarm lane first: compare the multisets.
			got := []byte(kept.String())
			slices.Sort(got)
			want := []byte(tc.want)
			slices.Sort(want)
			if string(got) != string(want) {
				t.Errorf("groups kept %q, want %q", kept.String(), tc.want)
			}
		})
	}
}
