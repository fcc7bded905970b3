package wal

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dropRow is one row of a drop test: its input ("n" normal, "f" first,
// "v" never), its lane ("" or "alarm") and its group (one Append each).
type dropRow struct {
	input, lane string
	group       int
}

// payload is 8 bytes, unique per row: input, lane letter, group, index.
func (r dropRow) payload(i int) string {
	l := "d"
	if r.lane != "" {
		l = "a"
	}
	return fmt.Sprintf("%s%s%02d%04d", r.input, l, r.group, i)
}

const dropRowBytes = 8

// parseGroups reads "nf|vn|a:n" style specs: groups split by "|", each
// row an input letter, "a:" before a letter puts it in the alarm lane.
func parseGroups(spec string) []dropRow {
	var out []dropRow
	for g, grp := range strings.Split(spec, "|") {
		lane := ""
		for _, c := range grp {
			if c == ':' {
				continue
			}
			if c == 'a' {
				lane = "alarm"
				continue
			}
			out = append(out, dropRow{input: string(c), lane: lane, group: g})
			lane = ""
		}
	}
	return out
}

func allNormal(m map[string]DropPolicy) bool {
	for _, p := range m {
		if p != DropNormal {
			return false
		}
	}
	return true
}

var testPolicies = map[string]DropPolicy{"f": DropFirst, "v": DropNever}

// fillDrop opens a WAL with the alarm lane, appends rows (a group per
// Append, clk 10 ms apart) and returns the payloads by row index.
func fillDrop(t *testing.T, clk *fakeClock, rows []dropRow) (*WAL, []string) {
	t.Helper()
	w, _ := openLanes(t, filepath.Join(t.TempDir(), "wal.db"), clk, "alarm")
	pays := make([]string, len(rows))
	for i := 0; i < len(rows); {
		var batch []NewRow
		g := rows[i].group
		for ; i < len(rows) && rows[i].group == g; i++ {
			pays[i] = rows[i].payload(i)
			batch = append(batch, NewRow{SourceID: rows[i].input, Payload: []byte(pays[i]), Lane: rows[i].lane})
		}
		mustUpdate(t, w, func(tx *Tx) error { _, _, err := tx.Append(batch); return err })
		clk.Add(10)
	}
	return w, pays
}

// keptPayloads claims every row left and returns their payloads sorted.
func keptPayloads(t *testing.T, w *WAL, clk *fakeClock) []string {
	t.Helper()
	got := payloads(claim(t, w, 1<<20, clk.MS()))
	slices.Sort(got)
	return got
}

func TestDropByInput(t *testing.T) {
	for _, tc := range []struct {
		name     string
		groups   string
		maxRows  int // MaxBytes in rows; 0: none
		ageGroup int // OlderThanMS drops the groups before this one; 0: none
		order    []string
		inputs   map[string]DropPolicy
		kept     string // the kept rows' "<input><lane>" pairs, sorted, space-separated
	}{
		{name: "first before older normal rows", groups: "nn|ff|nn", maxRows: 4, inputs: testPolicies,
			kept: "nd nd nd nd"},
		{name: "first rows oldest first", groups: "f|f|f|n", maxRows: 2, inputs: testPolicies,
			kept: "fd nd"},
		{name: "normal rows once no first row is left", groups: "nn|ff|nn", maxRows: 2, inputs: testPolicies,
			kept: "nd nd"},
		{name: "whole groups of normal rows", groups: "nn|ff|nn", maxRows: 1, inputs: testPolicies,
			kept: ""},
		{name: "never rows stay over the bound", groups: "vv|nn|vv", maxRows: 2, inputs: testPolicies,
			kept: "vd vd vd vd"},
		{name: "never rows in a mixed group stay", groups: "vnfv|n", maxRows: 2, inputs: testPolicies,
			kept: "vd vd"},
		{name: "never rows outlive max-age", groups: "vn|vf|n", ageGroup: 2, inputs: testPolicies,
			kept: "nd vd vd"},
		{name: "first rows before the lane order", groups: "n|a:f|n", maxRows: 2, order: []string{"", "alarm"}, inputs: testPolicies,
			kept: "nd nd"},
		{name: "normal rows follow the lane order", groups: "a:n|n|f|n", maxRows: 2, order: []string{"", "alarm"}, inputs: testPolicies,
			kept: "na nd"},
		{name: "only normal policies drop as without", groups: "nn|vv|ff", maxRows: 2, inputs: map[string]DropPolicy{"n": DropNormal},
			kept: "fd fd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := parseGroups(tc.groups)
			run := func(inputs map[string]DropPolicy) ([]string, Dropped, Dropped) {
				clk := newClock(t0)
				w, _ := fillDrop(t, clk, rows)
				lim := DropLimits{MaxBytes: int64(tc.maxRows * dropRowBytes), LaneOrder: tc.order, Inputs: inputs}
				if tc.ageGroup > 0 {
					lim.OlderThanMS = t0 + int64(tc.ageGroup)*10
				}
				var full, age Dropped
				mustUpdate(t, w, func(tx *Tx) error {
					var err error
					full, age, _, err = tx.DropUnsent(lim)
					return err
				})
				return keptPayloads(t, w, clk), full, age
			}
			kept, full, age := run(tc.inputs)
			var got []string
			for _, p := range kept {
				got = append(got, p[:2])
			}
			slices.Sort(got)
			if s := strings.Join(got, " "); s != tc.kept {
				t.Errorf("kept %q, want %q (rows %v)", s, tc.kept, kept)
			}
			if n := full.Rows + age.Rows; n != len(rows)-len(kept) {
				t.Errorf("Dropped counts %d rows, %d are gone", n, len(rows)-len(kept))
			}
			for _, s := range append(slices.Clone(full.Sources), age.Sources...) {
				if p, listed := tc.inputs[s]; listed && p == DropNever {
					t.Errorf("input %s (never) named among the dropped: %v %v", s, full.Sources, age.Sources)
				}
			}
			if allNormal(tc.inputs) {
				// The rows kept are those kept without any policy.
				if without, _, _ := run(nil); !slices.Equal(kept, without) {
					t.Errorf("with only normal policies kept %v, without policies %v", kept, without)
				}
			}
		})
	}
}

// Over random mixes of inputs, lanes, groups, bounds and ages: a drop
// never takes a never row; takes every other row older than the age;
// takes a normal row for size only once no first row is left; takes
// within each policy whole groups oldest first (for normal rows, when
// no lane order applies); and leaves the queue within its bound unless
// only never rows are left.
func TestDropByInputProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 1))
	letters := []string{"n", "f", "v"}
	for iter := range 80 {
		var rows []dropRow
		groups := 1 + rng.IntN(8)
		for g := range groups {
			lane := ""
			if rng.IntN(3) == 0 {
				lane = "alarm"
			}
			for range 1 + rng.IntN(6) {
				rows = append(rows, dropRow{input: letters[rng.IntN(3)], lane: lane, group: g})
			}
		}
		bound := 1 + rng.IntN(len(rows)+1)
		lim := DropLimits{MaxBytes: int64(bound * dropRowBytes), Inputs: testPolicies, MaxBlocks: 3}
		laned := rng.IntN(2) == 0
		if laned {
			lim.LaneOrder = []string{"", "alarm"}
		}
		ageGroup := 0 // groups before it are past the age
		if rng.IntN(3) == 0 {
			ageGroup = rng.IntN(groups + 1)
			lim.OlderThanMS = t0 + int64(ageGroup)*10
		}
		clk := newClock(t0)
		w, pays := fillDrop(t, clk, rows)
		mustUpdate(t, w, func(tx *Tx) error {
			for range 100 {
				_, _, more, err := tx.DropUnsent(lim)
				if err != nil || !more {
					return err
				}
			}
			return fmt.Errorf("DropUnsent still has more after 100 calls")
		})
		kept := map[string]bool{}
		for _, p := range keptPayloads(t, w, clk) {
			kept[p] = true
		}
		var keptNever, keptFirst, keptNormal int
		sizeDroppedNormal := false
		lastDropped := map[string]int{"n": -1, "f": -1}
		firstKept := map[string]int{"n": 1 << 30, "f": 1 << 30}
		for i, r := range rows {
			aged := r.group < ageGroup
			if kept[pays[i]] {
				switch {
				case r.input == "v":
					keptNever++
				case aged:
					t.Errorf("case %d: row %s past the age kept", iter, pays[i])
				case r.input == "f":
					keptFirst++
				default:
					keptNormal++
				}
				if r.input != "v" {
					firstKept[r.input] = min(firstKept[r.input], r.group)
				}
				continue
			}
			if r.input == "v" {
				t.Errorf("case %d: never row %s dropped", iter, pays[i])
			}
			if !aged {
				sizeDroppedNormal = sizeDroppedNormal || r.input == "n"
				lastDropped[r.input] = max(lastDropped[r.input], r.group)
			}
		}
		if sizeDroppedNormal && keptFirst > 0 {
			t.Errorf("case %d: a normal row dropped for size while %d first rows are left", iter, keptFirst)
		}
		for _, in := range []string{"n", "f"} {
			if in == "n" && laned {
				continue
			}
			if lastDropped[in] >= firstKept[in] {
				t.Errorf("case %d: input %s lost a row of group %d but kept one of group %d", iter, in, lastDropped[in], firstKept[in])
			}
		}
		if n := keptNever + keptFirst + keptNormal; n > bound && keptFirst+keptNormal > 0 {
			t.Errorf("case %d: %d rows kept over a bound of %d, %d of them droppable", iter, n, bound, keptFirst+keptNormal)
		}
		if t.Failed() {
			t.Logf("rows %v, bound %d rows, lanes %v, age before group %d", rows, bound, laned, ageGroup)
			return
		}
	}
}
