package wal

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strings"

	"github.com/edge-agent/edge-agent/starter/internal/account"
)

// Gap records for the rows salvage loses (SalvageOptions.GapOrigin).
//
// A block that does not decode loses its rows' payloads, so their
// "_seq" numbers are not known. They are inferred: rows are appended in
// id order and each input numbers its rows in that order, so the rows of
// input I in a lost block [a, b] hold the numbers of I that lie between
// the highest number of I among the rows copied with an id below a and
// the lowest among those above b (or the input's last number, from the
// source's metadata), and that no copied row or gap record holds, at
// most as many as the block held, the highest first. Rows acknowledged
// and deleted before the damage leave holes of the same kind: a range
// may take some in, and they then count twice in an audit (a duplicate,
// never a hole). Rows of a lost block left over once the ranges are
// counted get a record with a count and no range.

// ReasonSalvageLost is the reason of the gap records of rows salvage
// could not copy.
const ReasonSalvageLost = "lost: salvage"

// seqRow is a copied row of an input, with its id and number.
type seqRow struct {
	id, seq uint64
	input   string
}

// lostBlock is a block salvage could not read: its id range, and how
// many of its rows still existed (0: not known).
type lostBlock struct {
	first, last uint64
	rows        int
}

// noteSeqs records what a copied row tells of the numbering: its "_seq",
// or the range of a gap record. ordered is false for rows whose id is not
// their own (renumbered).
func (s *salvager) noteSeqs(r *Row, ordered bool) {
	if s.gapOrigin == nil {
		return
	}
	if r.StandIn {
		var g struct {
			Gap      bool   `json:"_gap"`
			Input    string `json:"_input"`
			FirstSeq uint64 `json:"first_seq"`
			LastSeq  uint64 `json:"last_seq"`
		}
		if json.Unmarshal(r.Payload, &g) == nil && g.Gap && g.FirstSeq > 0 && g.LastSeq >= g.FirstSeq {
			s.gapRanges[g.Input] = append(s.gapRanges[g.Input], [2]uint64{g.FirstSeq, g.LastSeq})
		}
		return
	}
	seq, ok := account.Seq(r.Payload)
	if !ok {
		return
	}
	if !ordered {
		s.gapRanges[r.SourceID] = append(s.gapRanges[r.SourceID], [2]uint64{seq, seq})
		return
	}
	s.seqRows = append(s.seqRows, seqRow{id: r.ID, seq: seq, input: r.SourceID})
}

// lostRowsIn counts the rows of ids first..last that still existed in
// the source (all of them when an index was damaged).
func (s *salvager) lostRowsIn(first, last uint64) int {
	n := 0
	for id := first; id <= last && id-first < blockMaxRows; id++ {
		if _, known := s.states[id]; known || s.indexDamaged || s.inIndex(id) {
			n++
		}
	}
	return n
}

// lastSeqs are the inputs' last numbers, from the source's metadata.
func (s *salvager) lastSeqs() map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range s.appMeta {
		if id, ok := strings.CutPrefix(k, account.SeqMetaPrefix); ok && len(v) == 8 {
			out[id] = binary.BigEndian.Uint64(v)
		}
	}
	return out
}

// salvageGaps returns the gap records of the rows of the lost blocks,
// made at now (unix ms). None when the source numbered no row.
func (s *salvager) salvageGaps(now int64) []account.Record {
	last := s.lastSeqs()
	if len(s.lost) == 0 || (len(last) == 0 && len(s.seqRows) == 0) {
		return nil
	}
	slices.SortFunc(s.seqRows, func(a, b seqRow) int { return cmp.Compare(a.id, b.id) })
	held := map[string][][2]uint64{} // per input: numbers copied, as sorted, merged ranges
	byInput := map[string][]seqRow{}
	for _, r := range s.seqRows {
		byInput[r.input] = append(byInput[r.input], r)
		held[r.input] = append(held[r.input], [2]uint64{r.seq, r.seq})
	}
	inputs := map[string]bool{}
	for id := range last {
		inputs[id] = true
	}
	for id, rs := range s.gapRanges {
		held[id] = append(held[id], rs...)
		inputs[id] = true
	}
	for id := range byInput {
		inputs[id] = true
	}
	for id := range held {
		held[id] = mergeSeqRanges(held[id])
	}
	names := make([]string, 0, len(inputs))
	for id := range inputs {
		names = append(names, id)
	}
	slices.Sort(names)
	var out []account.Record
	taken := map[string][][2]uint64{} // ranges already given a record
	lostRows, covered := 0, int64(0)
	for _, b := range s.lost {
		lostRows += b.rows
		for _, in := range names {
			rows := byInput[in]
			i, _ := slices.BinarySearchFunc(rows, b.first, func(r seqRow, id uint64) int { return cmp.Compare(r.id, id) })
			var lo, hi uint64
			if i > 0 {
				lo = rows[i-1].seq
			}
			j, _ := slices.BinarySearchFunc(rows, b.last+1, func(r seqRow, id uint64) int { return cmp.Compare(r.id, id) })
			switch {
			case j < len(rows):
				hi = rows[j].seq
			case last[in] > 0:
				hi = last[in] + 1
			default:
				continue // nothing says how far the input's numbers went
			}
			// The block held at most its rows: the numbers nearest the
			// row above it first (the rows below it may be long
			// delivered and deleted).
			budget := b.last - b.first + 1
			if b.rows > 0 {
				budget = uint64(b.rows)
			}
			runs := missingIn(lo+1, hi-1, mergeSeqRanges(append(slices.Clone(held[in]), taken[in]...)))
			for k := len(runs) - 1; k >= 0 && budget > 0; k-- {
				m := runs[k]
				if n := m[1] - m[0] + 1; n > budget {
					m[0] = m[1] - budget + 1
				}
				budget -= m[1] - m[0] + 1
				taken[in] = append(taken[in], m)
				n := int64(m[1] - m[0] + 1)
				covered += n
				out = append(out, account.Record{Input: in, Reason: ReasonSalvageLost, Count: n, FirstSeq: m[0], LastSeq: m[1], TS: now})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b account.Record) int {
		return cmp.Or(cmp.Compare(a.Input, b.Input), cmp.Compare(a.FirstSeq, b.FirstSeq))
	})
	if left := int64(lostRows) - covered; left > 0 {
		in := ""
		if len(names) == 1 {
			in = names[0]
		}
		out = append(out, account.Record{Input: in, Reason: ReasonSalvageLost, Count: left, TS: now})
	}
	return out
}

// mergeSeqRanges sorts and merges ranges that touch or overlap.
func mergeSeqRanges(rs [][2]uint64) [][2]uint64 {
	slices.SortFunc(rs, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r[0] <= out[n-1][1]+1 {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

// missingIn returns the runs of lo..hi that no range of held (sorted,
// merged) covers.
func missingIn(lo, hi uint64, held [][2]uint64) [][2]uint64 {
	if lo == 0 || hi < lo {
		return nil
	}
	var out [][2]uint64
	next := lo
	for _, r := range held {
		if r[1] < next {
			continue
		}
		if r[0] > hi {
			break
		}
		if r[0] > next {
			out = append(out, [2]uint64{next, r[0] - 1})
		}
		next = r[1] + 1
		if next > hi {
			return out
		}
	}
	return append(out, [2]uint64{next, hi})
}
