package wal

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/edge-agent/edge-agent/transport/enginemodel"
	"github.com/edge-agent/edge-agent/transport/protocol"
)

// claimState is what the claim path and the settle see of a WAL whose
// rows get their batch ids at claim: per payload, the batch id a claim
// gave its row and its status; and per unsettled batch id (UnsettledFunc)
// the payload of its row.
type claimState struct {
	batch     map[string]int64
	status    map[string]Status
	unsettled map[int64]string
}

func readClaimState(t *testing.T, w *WAL) claimState {
	t.Helper()
	s := claimState{batch: map[string]int64{}, status: map[string]Status{}, unsettled: map[int64]string{}}
	err := w.View(func(tx *ReadTx) error {
		if !tx.claimsIDs() {
			return fmt.Errorf("the file does not give ids at claim")
		}
		for id := uint64(1); id < tx.NextRowID(); id++ {
			r, ok, err := tx.row(id)
			if err != nil || !ok {
				continue
			}
			p := string(r.Payload)
			s.status[p] = r.Status
			if b, ok := tx.claimedBatch(id, nil); ok {
				s.batch[p] = b
			}
		}
		return tx.UnsettledFunc(func(id uint64, b int64) bool {
			r, _, _ := tx.row(id)
			s.unsettled[b] = string(r.Payload)
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A WAL giving batch ids at claim, with rows acked, held as received by
// the engine, PENDING again under their ids (one the engine has, one it
// does not), SENDING and never sent, loses one block to damage; salvage
// copies the rest. The copy is in the same mode; every copied row keeps
// its id for the claim path and the settle; the ids of the lost rows
// have stand-ins listed for the settle and the gap record; and a
// collector run on the copy against the engine model delivers every row
// and leaves the engine's watermark covering every id.
func TestSalvageKeepsClaimIDs(t *testing.T) {
	clk := newClock(t0)
	path := filepath.Join(t.TempDir(), "wal.db")
	origin := &GapOrigin{Host: "h1", AgentID: "a1"}
	opts := Options{Path: path, Now: clk.Now, SendOrderBatchIDs: true, GapFree: true, GapRecords: origin}
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	job, err := enginemodel.NewJob(enginemodel.JobConfig{Source: enginemodel.SourceConfig{QueueCapacity: 64}})
	if err != nil {
		t.Fatal(err)
	}
	src := job.Source()
	seq := new(uint64)
	var blocks []uint64
	var produced []string
	for range 3 { // blocks A, B, C of 5 rows each
		rows := stampedRows("app", 5, seq, clk.MS())
		for _, r := range rows {
			produced = append(produced, string(r.Payload))
		}
		mustUpdate(t, w, func(tx *Tx) error {
			first, _, err := tx.Append(rows)
			blocks = append(blocks, first)
			return err
		})
	}
	claimN := func(n int) []Row {
		var out []Row
		mustUpdate(t, w, func(tx *Tx) error {
			out = out[:0]
			_, _, err := tx.ClaimFunc(n, 0, clk.MS(), func(r *Row) {
				row := *r
				row.Payload = slices.Clone(r.Payload)
				out = append(out, row)
			})
			return err
		})
		if len(out) != n {
			t.Fatalf("claimed %d rows, want %d", len(out), n)
		}
		return out
	}
	given := map[int64]bool{}
	var maxSent int64
	sendAll := func(rows []Row) {
		for _, r := range rows {
			given[r.BatchID] = true
			if reply := src.Batch(r.BatchID, r.Payload); reply != protocol.ReplyReceived {
				t.Fatalf("engine answered %s to id %d", reply, r.BatchID)
			}
			maxSent = max(maxSent, r.BatchID)
		}
	}
	// A and B's first two rows: received, the first three committed.
	first := claimN(7)
	sendAll(first)
	mustUpdate(t, w, func(tx *Tx) error { return tx.Receive(ids(first), clk.MS()) })
	job.Drain(1 << 20)
	job.Checkpoint()
	mustUpdate(t, w, func(tx *Tx) error {
		_, err := tx.AckReceivedThrough(first[2].BatchID, 0, clk.MS())
		return err
	})
	// B's last three and C's first: the engine got the first two, the
	// answers were lost, all four released (PENDING under their ids).
	second := claimN(4)
	sendAll(second[:2])
	mustUpdate(t, w, func(tx *Tx) error { return tx.Release(ids(second), clk.MS()) })
	// The four again under their ids, then C's second under a new one:
	// all sent, the answers lost; the four released again, C's second
	// SENDING when the agent stopped.
	third := claimN(5)
	for i, r := range third[:4] {
		if r.BatchID != second[i].BatchID {
			t.Fatalf("claim after a release: row %d under id %d, want its id %d", r.ID, r.BatchID, second[i].BatchID)
		}
	}
	sendAll(third)
	mustUpdate(t, w, func(tx *Tx) error { return tx.Release(ids(third[:4]), clk.MS()) })
	third = third[4:]
	before := readClaimState(t, w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	corruptBlock(t, path, blocks[1], func(v []byte) { v[len(v)-3] ^= 0x01 })

	dst := filepath.Join(t.TempDir(), "salvaged.db")
	clk.Add(1000)
	rep, err := Salvage(path, dst, SalvageOptions{Now: clk.Now, GapOrigin: origin})
	if err != nil {
		t.Fatal(err)
	}
	// Block B held ids first[5], first[6] (received) and second[0..2].
	lostIDs := [][2]int64{{first[5].BatchID, second[2].BatchID}}
	if !slices.Equal(rep.LostClaimIDs, lostIDs) {
		t.Fatalf("lost claim ids %v, want %v", rep.LostClaimIDs, lostIDs)
	}
	if len(rep.GapRecords) == 0 || !slices.Equal(rep.GapRecords[0].BatchIDs, lostIDs) {
		t.Fatalf("gap records %+v, want the first to list ids %v", rep.GapRecords, lostIDs)
	}
	lost := slices.Clone(produced[5:10])
	// Copied with claim ids: A's two received rows, C's first two.
	if rep.ClaimIDs != 4 {
		t.Fatalf("%d copied rows keep a claim id, want 4", rep.ClaimIDs)
	}

	out, err := Open(Options{Path: dst, Now: clk.Now, SendOrderBatchIDs: true, GapFree: true, GapRecords: origin})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = out.Close() }()
	checkConsistent(t, out)
	after := readClaimState(t, out)
	for p, b := range before.batch {
		if slices.Contains(lost, p) {
			if _, ok := after.batch[p]; ok {
				t.Errorf("lost row %q has an id in the copy", p)
			}
			continue
		}
		if after.batch[p] != b {
			t.Errorf("row %q: claim id %d in the copy, %d before", p, after.batch[p], b)
		}
	}
	// The settle: every id unsettled before (and the SENDING row's, PENDING
	// again) is unsettled in the copy, under the same row or a stand-in
	// when the row was lost.
	want := maps.Clone(before.unsettled)
	want[third[0].BatchID] = string(third[0].Payload)
	if len(after.unsettled) != len(want) {
		t.Errorf("unsettled in the copy %v, want ids %v", after.unsettled, want)
	}
	for b, p := range want {
		got, ok := after.unsettled[b]
		switch {
		case !ok:
			t.Errorf("id %d (%q) is not unsettled in the copy", b, p)
		case slices.Contains(lost, p):
			if g, isGap := ParseStandIn([]byte(got)); !isGap || g.BatchID != b || g.Reason != ReasonSalvageLost {
				t.Errorf("id %d of lost row %q: %q in the copy, want a stand-in", b, p, got)
			}
		case got != p:
			t.Errorf("id %d: %q in the copy, %q before", b, got, p)
		}
	}
	for _, p := range produced[:5] {
		if before.status[p] != after.status[p] {
			t.Errorf("row %q: %v in the copy, %v before", p, after.status[p], before.status[p])
		}
	}

	// The agent runs on the copy: the link is healthy.
	c := &modelCollector{t: t, w: out, clk: clk, job: job, src: src, given: given, sent: map[int64]bool{},
		lane: map[string]string{}, lastNew: map[string]uint64{"": third[0].ID}, dropped: map[string]bool{}, hist: map[int64][]string{}}
	for b := range given {
		c.maxGiven = max(c.maxGiven, b)
	}
	for b := range given {
		c.sent[b] = true
	}
	c.maxSent = maxSent
	for round := 0; ; round++ {
		if round == 50 {
			t.Fatalf("copy not empty after %d healthy rounds: %+v; engine %+v", round, counts(t, out), src.Figures())
		}
		clk.Add(60_000)
		c.job.Drain(1 << 20)
		c.send(64, nil, 0)
		c.job.Drain(1 << 20)
		c.job.Checkpoint()
		c.poll()
		if n := counts(t, out); n.Pending+n.Sending+n.Received == 0 {
			break
		}
	}
	committed := map[string]bool{}
	for _, r := range job.Committed() {
		committed[string(r.Payload)] = true
	}
	for _, p := range produced {
		if !committed[p] && !slices.Contains(lost, p) {
			t.Errorf("%q copied and never committed", p)
		}
	}
	reply := src.Commit(c.maxSent)
	wm, ok := strings.CutPrefix(reply, protocol.ReplyACK+":")
	if n, err := strconv.ParseInt(wm, 10, 64); !ok || err != nil || n < c.maxSent {
		t.Fatalf("__COMMIT__:%d = %s: the watermark stalls below the ids sent", c.maxSent, reply)
	}
}

// The ids of rows the claim_ids index no longer names (entries on a page
// that could not be read) are still carried when claim_retry or the
// received index names them.
func TestSalvageClaimIDsWithoutTheirIndex(t *testing.T) {
	clk := newClock(t0)
	path := filepath.Join(t.TempDir(), "wal.db")
	w, err := Open(Options{Path: path, Now: clk.Now, SendOrderBatchIDs: true, GapFree: true})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, w, 4)
	rows := claim(t, w, 4, clk.MS())
	mustUpdate(t, w, func(tx *Tx) error {
		if err := tx.Receive(ids(rows[:2]), clk.MS()); err != nil {
			return err
		}
		return tx.Release(ids(rows[2:]), clk.MS())
	})
	before := readClaimState(t, w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(btx *bolt.Tx) error {
		if err := btx.DeleteBucket(bucketClaimIDs); err != nil {
			return err
		}
		_, err := btx.CreateBucket(bucketClaimIDs)
		return err
	})
	if cerr := db.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	dst := filepath.Join(t.TempDir(), "salvaged.db")
	rep, err := Salvage(path, dst, SalvageOptions{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ClaimIDs != 4 || len(rep.LostClaimIDs) != 0 {
		t.Fatalf("%d rows keep their ids, lost %v; want 4 and none", rep.ClaimIDs, rep.LostClaimIDs)
	}
	out, err := Open(Options{Path: dst, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = out.Close() }()
	after := readClaimState(t, out)
	if fmt.Sprint(after.batch) != fmt.Sprint(before.batch) || fmt.Sprint(after.unsettled) != fmt.Sprint(before.unsettled) {
		t.Fatalf("copy: ids %v, unsettled %v; before: %v, %v", after.batch, after.unsettled, before.batch, before.unsettled)
	}
}

// A row copied under a new row id (its block's key damaged) keeps the
// batch id its claim gave it, under the new row id.
func TestSalvageRenumberedKeepClaimIDs(t *testing.T) {
	clk := newClock(t0)
	path := filepath.Join(t.TempDir(), "wal.db")
	w, err := Open(Options{Path: path, Now: clk.Now, SendOrderBatchIDs: true, GapFree: true})
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]NewRow, fixRows)
	for i := range rows {
		rows[i] = NewRow{SourceID: "app", Payload: fmt.Appendf(nil, `{"_line":%d,"pad":"%040d"}`, i+1, i)}
	}
	mustUpdate(t, w, func(tx *Tx) error {
		for i := 0; i < len(rows); i += fixBlock {
			if _, _, err := tx.Append(rows[i : i+fixBlock]); err != nil {
				return err
			}
		}
		return nil
	})
	sent := claim(t, w, fixRows, clk.MS())
	mustUpdate(t, w, func(tx *Tx) error {
		if err := tx.Receive(ids(sent[:fixRows/2]), clk.MS()); err != nil {
			return err
		}
		return tx.Release(ids(sent[fixRows/2:]), clk.MS())
	})
	before := readClaimState(t, w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(damages, func(d damage) bool { return d.name == "row key byte flipped in order" })
	damages[i].apply(t, path)
	rep, err := Salvage(path, filepath.Join(t.TempDir(), "salvaged.db"), SalvageOptions{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Renumbered) != fixBlock || rep.ClaimIDs != fixRows || len(rep.LostClaimIDs) != 0 {
		t.Fatalf("renumbered %d rows, %d keep their ids, lost %v; want %d, %d, none", len(rep.Renumbered), rep.ClaimIDs, rep.LostClaimIDs, fixBlock, fixRows)
	}
	out, err := Open(Options{Path: rep.Dest, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = out.Close() }()
	after := readClaimState(t, out)
	if !maps.Equal(after.batch, before.batch) || !maps.Equal(after.unsettled, before.unsettled) {
		t.Fatalf("the copy's ids or unsettled rows differ from the source's")
	}
	checkConsistent(t, out)
}
