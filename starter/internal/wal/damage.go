package wal

import (
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
	return nil
}

// coverage collects the row ids and what the indexes cover during a walk,
// to find rows no index holds.
type coverage struct {
	rows    []uint64 // in key order
	index   []idRange
	badKeys []Damage // rows keys that are not 8 bytes
}

type idRange struct{ lo, hi uint64 }

func (c *coverage) visit(bucket [][]byte, key, value []byte, page uint64) {
	if len(bucket) != 1 {
		return
	}
	single := func(id uint64, ok bool) {
		if ok {
			c.index = append(c.index, idRange{id, id})
		}
	}
	switch string(bucket[0]) {
	case string(bucketMeta):
		// The meta bucket sorts before rows: size the id list once.
		if string(key) == metaCounters && c.rows == nil {
			var ctr counters
			ctr.decode(value)
			if n := ctr.pending + ctr.sending + ctr.acked + ctr.dead; n > 0 && n < 1<<32 {
				c.rows = make([]uint64, 0, n)
			}
		}
	case string(bucketRows):
		if id, ok := keyID(key); ok {
			c.rows = append(c.rows, id)
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
	case string(bucketDelayed), string(bucketDead):
		single(keyID(key))
	case string(bucketAcked):
		_, id, ok := splitTSKey(key)
		single(id, ok)
	}
}

// check adds a damage entry for each row (up to the walk's limit) that no
// index holds. Malformed keys are damage too: no index can name them.
func (c *coverage) check(walk *treeWalk) {
	for _, d := range c.badKeys {
		walk.add(d.Page, [][]byte{bucketRows}, "%s", d.What)
	}
	sort.Slice(c.index, func(i, j int) bool { return c.index[i].lo < c.index[j].lo })
	merged := c.index[:0:0]
	for _, r := range c.index {
		if n := len(merged); n > 0 && r.lo <= merged[n-1].hi+1 {
			merged[n-1].hi = max(merged[n-1].hi, r.hi)
			continue
		}
		merged = append(merged, r)
	}
	covered := uint64(0) // rows an index holds
	for _, id := range c.rows {
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
			covered++
			continue
		}
		walk.add(0, [][]byte{bucketRows}, "row %d is in no index: its key is damaged, or an index is", id)
	}
	// Index entries for rows that do not exist: Claim would walk a damaged
	// run of up to 2^64 ids one missing row at a time.
	var span uint64
	for _, r := range merged {
		if r.hi-r.lo >= covered-min(covered, span) {
			walk.add(0, nil, "index entries for rows that do not exist (from row %d): an index key or value is damaged", r.lo)
			return
		}
		span += r.hi - r.lo + 1
	}
}
