package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
)

// SalvageCommand is the command an operator runs to copy what is readable
// of the damaged WAL at path into a new file.
func SalvageCommand(path string) string {
	return fmt.Sprintf("edge-agent db salvage --db-path %s --out %s.salvaged", path, path)
}

// damagedError is the error of an open refused because of damage.
func damagedError(path string, damage []Damage, more int) error {
	first := "?"
	if len(damage) > 0 {
		first = damage[0].String()
	}
	n := len(damage) + more
	return fmt.Errorf("open wal %s: the file is damaged (%d problems; first: %s); the agent will not write to it. "+
		"With the agent stopped, copy every readable row and position into a new file with `%s`, "+
		"then move the new file over %s and start the agent (`edge-agent db verify` lists the problems): %w",
		path, n, first, SalvageCommand(path), path, ErrDamaged)
}

// openCheckMaxDamage bounds what a refused open keeps of the damage list;
// `db verify` and `db salvage` report it in full.
const openCheckMaxDamage = 20

// checkBeforeWrite walks the whole file at path before bbolt opens it for
// writing (see boltfile.go: bbolt would panic, out of reach of any
// recover, on a damaged tree) and checks that every row is in an index,
// since a row whose key was damaged falls out of every index and would
// silently never be sent. It returns nil for a file that does not exist
// or has no valid meta page (bbolt reports those itself, without
// panicking), an error wrapping ErrDamaged for a damaged one. The caller
// holds the file lock, so no agent is writing.
func checkBeforeWrite(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open wal %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("open wal %s: %w", path, err)
	}
	if st.Size() == 0 {
		return nil
	}
	meta, err := readMeta(f, st.Size())
	if err != nil {
		return nil
	}
	walk := newTreeWalk(f, st.Size(), meta)
	walk.maxDamage = openCheckMaxDamage
	cov := &coverage{}
	walk.visit = cov.visit
	walk.run()
	if len(walk.damage) == 0 {
		cov.check(walk)
	}
	if len(walk.damage) > 0 {
		return damagedError(path, walk.damage, walk.dropped)
	}
	// A failure only costs memory at open (dropCache says how much).
	_ = dropCache(f)
	return nil
}

// coverage collects the row id ranges of the blocks (and of the rows of
// a schema-2 file) and what the indexes cover during a walk, to find
// blocks none of whose rows an index holds (a block key or an index was
// damaged: the rows would silently never be sent) and index entries for
// rows no block holds.
type coverage struct {
	blocks  []idRange // in key order
	index   []idRange
	badKeys []Damage // block or row keys that are not 8 bytes
	// rows is the row count the counters give: the indexes must hold as
	// many ids, since a row whose index entry is lost looks deleted in a
	// block that still holds other rows.
	rows    int64
	hasRows bool
}

type idRange struct{ lo, hi uint64 }

func (c *coverage) visit(bucket [][]byte, key, value []byte, page uint64) {
	if len(bucket) != 1 && (len(bucket) != 2 || !bytes.Equal(bucket[0], bucketBlocks)) {
		return
	}
	single := func(id uint64, ok bool) {
		if ok {
			c.index = append(c.index, idRange{id, id})
		}
	}
	switch string(bucket[0]) {
	case string(bucketMeta):
		if string(key) == metaCounters {
			var ctr counters
			ctr.decode(value)
			c.rows, c.hasRows = ctr.pending+ctr.sending+ctr.acked+ctr.dead, true
		}
	case string(bucketBlocks):
		k, v, ok := blockVisit(bucket, key, value)
		if !ok {
			return
		}
		id, ok := keyID(k)
		if !ok {
			c.badKeys = append(c.badKeys, Damage{Page: page, Bucket: string(bucketBlocks), What: fmt.Sprintf("malformed block key %x", k)})
			return
		}
		hi := id
		if h, err := parseBlockHeader(v); err == nil && h.first == id {
			hi = h.last()
		}
		c.blocks = append(c.blocks, idRange{id, hi})
	case string(bucketRows):
		if id, ok := keyID(key); ok {
			c.blocks = append(c.blocks, idRange{id, id})
		} else {
			c.badKeys = append(c.badKeys, Damage{Page: page, Bucket: string(bucketRows), What: fmt.Sprintf("malformed row key %x", key)})
		}
	case string(bucketPending):
		lo, ok1 := keyID(key)
		hi, ok2 := runEnd(value)
		if ok1 && ok2 && hi >= lo {
			c.index = append(c.index, idRange{lo, hi})
		}
	case string(bucketSending):
		if r, ok := decodeSendRun(key, value); ok {
			c.index = append(c.index, idRange{r.start, r.end})
		}
	case string(bucketDelayed), string(bucketDead), string(bucketState):
		single(keyID(key))
	case string(bucketAcked):
		_, id, ok := splitTSKey(key)
		single(id, ok)
	}
}

// mergeRanges sorts rs and merges the ranges that overlap or touch.
func mergeRanges(rs []idRange) []idRange {
	sort.Slice(rs, func(i, j int) bool { return rs[i].lo < rs[j].lo })
	merged := rs[:0:0]
	for _, r := range rs {
		if n := len(merged); n > 0 && r.lo <= merged[n-1].hi+1 {
			merged[n-1].hi = max(merged[n-1].hi, r.hi)
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// rangeAt returns the index of the range of merged that holds id, -1
// when none does.
func rangeAt(merged []idRange, id uint64) int {
	i, _ := slices.BinarySearchFunc(merged, id, func(r idRange, id uint64) int {
		switch {
		case r.hi < id:
			return -1
		case r.lo > id:
			return 1
		}
		return 0
	})
	if i < len(merged) && merged[i].lo <= id && id <= merged[i].hi {
		return i
	}
	return -1
}

func inRanges(merged []idRange, id uint64) bool { return rangeAt(merged, id) >= 0 }

// check adds a damage entry for each block (up to the walk's limit) none
// of whose rows an index holds, and one for index entries outside every
// block. Malformed keys are damage too: no index can name them.
func (c *coverage) check(walk *treeWalk) {
	for _, d := range c.badKeys {
		walk.add(d.Page, [][]byte{bucketBlocks}, "%s", d.What)
	}
	index := mergeRanges(c.index)
	for _, b := range c.blocks {
		// Some index range overlaps b: the first one ending at or after
		// b.lo starts at or before b.hi.
		i := sort.Search(len(index), func(i int) bool { return index[i].hi >= b.lo })
		if i < len(index) && index[i].lo <= b.hi {
			continue
		}
		if b.lo == b.hi {
			walk.add(0, [][]byte{bucketBlocks}, "row %d is in no index: its key is damaged, or an index is", b.lo)
		} else {
			walk.add(0, [][]byte{bucketBlocks}, "rows %d..%d are in no index: their block's key is damaged, or an index is", b.lo, b.hi)
		}
	}
	if n := rangesLen(index); c.hasRows && n < uint64(max(c.rows, 0)) {
		walk.add(0, nil, "the indexes hold %d rows, the counters say %d: an index entry is damaged or lost", n, c.rows)
	}
	// Index entries for rows that do not exist: Claim would walk a damaged
	// run of up to 2^64 ids one missing row at a time.
	blocks := mergeRanges(c.blocks)
	for _, r := range index {
		if i := rangeAt(blocks, r.lo); i < 0 || blocks[i].hi < r.hi {
			walk.add(0, nil, "index entries for rows that do not exist (from row %d): an index key or value is damaged", r.lo)
			return
		}
	}
}

// rangesLen is the number of ids in merged (disjoint) ranges.
func rangesLen(merged []idRange) uint64 {
	var n uint64
	for _, r := range merged {
		n += r.hi - r.lo + 1
	}
	return n
}
