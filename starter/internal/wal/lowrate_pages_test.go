package wal

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// lowRateCommitPages replays the agent at 1 line/s with the default
// agent.commit-interval-ms (4 s): every commit acks the rows the one
// before claimed (retention 0), appends 4 rows with the position of the
// one file they came from and claims them. It returns the tree pages one
// commit writes, by bucket, averaged over commits; the meta page, written
// by every commit, is not counted.
func lowRateCommitPages(t *testing.T) (map[string]float64, float64) {
	t.Helper()
	w, err := Open(Options{Path: filepath.Join(t.TempDir(), "wal.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	lines := logLines(4)
	rows := make([]NewRow, len(lines))
	for i := range rows {
		rows[i] = NewRow{SourceID: "app-logs", Payload: lines[i]}
	}
	state := []byte(`{"offset":1234567,"dev":2049,"ino":1311234,"fingerprint":"5f2b9c0e"}`)
	var claimed []uint64
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	commit := func() {
		t.Helper()
		err := w.Update(func(tx *Tx) error {
			if len(claimed) > 0 {
				if err := tx.Ack(claimed, 0, now); err != nil {
					return err
				}
			}
			if _, _, err := tx.Append(rows); err != nil {
				return err
			}
			if err := tx.SavePositions([]PositionUpdate{{SourceID: "app-logs", Key: "/var/log/app/app.log", State: state}}); err != nil {
				return err
			}
			got, err := tx.Claim(1000, now)
			claimed = claimed[:0]
			for _, r := range got {
				claimed = append(claimed, r.ID)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		now += 4000
	}
	for range 50 { // past the first blocks' page splits
		commit()
	}
	const commits = 40
	total := map[string]int{}
	snap := pagesByBucket(t, w)
	for range commits {
		commit()
		next := pagesByBucket(t, w)
		for b, n := range newPages(snap, next) {
			total[b] += n
		}
		snap = next
	}
	out := map[string]float64{}
	sum := 0.0
	for b, n := range total {
		out[b] = float64(n) / commits
		sum += out[b]
	}
	return out, sum
}

// TestLowRateCommitPages: at a low rate a commit writes the new block's
// page and the root page, and no page for the positions: they ride in the
// root page, which the commit rewrites anyway.
func TestLowRateCommitPages(t *testing.T) {
	by, sum := lowRateCommitPages(t)
	var parts []string
	for _, b := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s=%.2f", b, by[b]))
	}
	t.Logf("%.2f tree pages per commit (+ the meta page): %s", sum, strings.Join(parts, " "))
	if got := by["positions"]; got != 0 {
		t.Errorf("%.2f positions pages per commit, want 0 (inline in the root page)", got)
	}
	if sum > 2.01 {
		t.Errorf("%.2f tree pages per commit, want at most 2 (the block and the root)", sum)
	}
}
