package wal

import (
	"bytes"
	"fmt"
	"slices"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/edge-agent/edge-agent/starter/internal/wal/boltraw"
)

// SalvageCommand is the command an operator runs to copy what is readable
// of the damaged WAL at path into a new file.
func SalvageCommand(path string) string {
	return fmt.Sprintf("edge-agent db salvage --db-path %s --out %s.salvaged", path, path)
}

// Damage is one structural problem of a WAL file found by salvage: a
// page that cannot be read or whose content contradicts the B-tree.
type Damage = boltraw.Damage

// damagedError is the error of an open refused because of damage.
func damagedError(path string, damage []string, more int) error {
	first := "?"
	if len(damage) > 0 {
		first = damage[0]
	}
	return fmt.Errorf("open wal %s: the file is damaged (%d problems; first: %s); the agent will not write to it. "+
		"With the agent stopped, copy every readable row and position into a new file with `%s`, "+
		"then move the new file over %s and start the agent (`edge-agent db verify` lists the problems): %w",
		path, len(damage)+more, first, SalvageCommand(path), path, ErrDamaged)
}

// coverageDamage checks what bbolt's own check cannot know: that every
// block still has a row in an index, that the indexes hold as many rows
// as the counters count, and that no index entry names a row outside
// every block. A block whose key or index entry was damaged would
// otherwise silently never be sent; a damaged run would make Claim walk
// ids that do not exist.
func coverageDamage(btx *bolt.Tx) []Damage {
	if err := checkSchema(btx); err != nil {
		return nil // what the indexes mean is not known: the open refuses the file
	}
	cov := &coverage{}
	names := [][]byte{bucketMeta, bucketPending, bucketSending, bucketReceived, bucketDelayed, bucketDead, bucketState, bucketAcked}
	for _, name := range append(names, lanePendingBuckets(btx)...) {
		b := btx.Bucket(name)
		if b == nil {
			continue
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			cov.visit([][]byte{name}, k, v)
		}
	}
	if blocks := btx.Bucket(bucketBlocks); blocks != nil {
		c := blocks.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				cov.visit([][]byte{bucketBlocks, k}, blockValueKey, getBlock(blocks, k))
			}
		}
	}
	return cov.check()
}

// coverage collects the row id ranges of the blocks and what the indexes
// cover, to find blocks none of whose rows an index holds (a block key or
// an index was damaged: the rows would silently never be sent) and index
// entries for rows no block holds.
type coverage struct {
	blocks  []idRange // in key order
	index   []idRange
	badKeys []Damage // block keys that are not 8 bytes
	// rows is the row count the counters give: the indexes must hold as
	// many ids, since a row whose index entry is lost looks deleted in a
	// block that still holds other rows.
	rows    int64
	hasRows bool
}

type idRange struct{ lo, hi uint64 }

func (c *coverage) visit(bucket [][]byte, key, value []byte) {
	if len(bucket) != 1 && (len(bucket) != 2 || !bytes.Equal(bucket[0], bucketBlocks)) {
		return
	}
	single := func(id uint64, ok bool) {
		if ok {
			c.index = append(c.index, idRange{id, id})
		}
	}
	switch bucketRole(bucket[0]) {
	case string(bucketMeta):
		if string(key) == metaCounters {
			var ctr counters
			ctr.decode(value)
			c.rows, c.hasRows = ctr.pending+ctr.sending+ctr.received+ctr.acked+ctr.dead, true
		}
	case string(bucketBlocks):
		k, v, ok := blockVisit(bucket, key, value)
		if !ok {
			return
		}
		id, ok := keyID(k)
		if !ok {
			c.badKeys = append(c.badKeys, Damage{Bucket: string(bucketBlocks), What: fmt.Sprintf("malformed block key %x", k)})
			return
		}
		hi := id
		if h, err := parseBlockHeader(v); err == nil && h.first == id {
			hi = h.last()
		}
		c.blocks = append(c.blocks, idRange{id, hi})
	case string(bucketPending), string(bucketSending), string(bucketReceived):
		if r, ok := runKindOf(bucket[0]).decode(key, value); ok {
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

// check returns a damage entry for each block none of whose rows an
// index holds, and one for index entries outside every block. Malformed
// keys are damage too: no index can name them.
func (c *coverage) check() []Damage {
	out := c.badKeys
	add := func(bucket []byte, f string, a ...any) {
		out = append(out, Damage{Bucket: string(bucket), What: fmt.Sprintf(f, a...)})
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
			add(bucketBlocks, "row %d is in no index: its key is damaged, or an index is", b.lo)
		} else {
			add(bucketBlocks, "rows %d..%d are in no index: their block's key is damaged, or an index is", b.lo, b.hi)
		}
	}
	if n := rangesLen(index); c.hasRows && n < uint64(max(c.rows, 0)) {
		add(nil, "the indexes hold %d rows, the counters say %d: an index entry is damaged or lost", n, c.rows)
	}
	// Index entries for rows that do not exist: Claim would walk a damaged
	// run of up to 2^64 ids one missing row at a time.
	blocks := mergeRanges(c.blocks)
	for _, r := range index {
		if i := rangeAt(blocks, r.lo); i < 0 || blocks[i].hi < r.hi {
			add(nil, "index entries for rows that do not exist (from row %d): an index key or value is damaged", r.lo)
			return out
		}
	}
	return out
}

// rangesLen is the number of ids in merged (disjoint) ranges.
func rangesLen(merged []idRange) uint64 {
	var n uint64
	for _, r := range merged {
		n += r.hi - r.lo + 1
	}
	return n
}
