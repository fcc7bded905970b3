package wal

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Lanes. With Options.Lanes, the due PENDING rows of each named lane
// have a pending index of their own (bucket "pending:<name>"), the rows
// of the default lane ("") the plain pending index. A row's lane is
// stored with its block: Append puts rows of one lane in blocks of their
// own, and the lane_blocks bucket maps the first id of a block of a named
// lane to that name; a block without an entry is of the default lane.
// A row that returns to PENDING (Fail, Release, a promotion, Unreceive,
// RetryDead, a restart) goes back to the index of its lane, so the lane
// survives restarts. A read-write Open folds the pending index of every
// lane Options.Lanes no longer names into the default one (and drops the
// lane_blocks entries of every block when no lane is named), so no row is
// left where no claim looks.

var bucketLaneBlocks = []byte("lane_blocks") // first row id of a block of a named lane -> the lane's name (lanes.go)

// lanePendingPrefix + a lane's name is the bucket of its pending index.
const lanePendingPrefix = "pending:"

// MaxLaneName bounds a lane's name, which is stored with its blocks.
const MaxLaneName = 64

// checkLaneName refuses names that cannot be stored as a lane: empty (the
// default lane has no name) or too long.
func checkLaneName(name string) error {
	if name == "" || len(name) > MaxLaneName {
		return fmt.Errorf("lane name %q: must be 1 to %d bytes", name, MaxLaneName)
	}
	return nil
}

// laneIndex is one named lane's pending index.
type laneIndex struct {
	name string
	index
}

// pendingSet is the due PENDING rows of every lane: the embedded index is
// the default lane's (bucket pending), others the named lanes' (nil
// without Options.Lanes, and then every method is the plain index's).
// Reads see all lanes together; add routes a run to the lane of its
// first row.
type pendingSet struct {
	index
	others     []laneIndex
	blocks     *bolt.Bucket
	laneBlocks *bolt.Bucket
}

// lane returns the pending index of lane name ("" the default); ok=false
// for a name the WAL was not opened with.
func (p pendingSet) lane(name string) (index, bool) {
	if name == "" {
		return p.index, true
	}
	for _, l := range p.others {
		if l.name == name {
			return l.index, true
		}
	}
	return index{}, false
}

// laneOf is the lane of row id, from its block; "" for the default lane.
func (p pendingSet) laneOf(id uint64) string {
	if len(p.others) == 0 || p.laneBlocks == nil {
		return ""
	}
	c := p.blocks.Cursor()
	k, _ := c.Seek(u64key(id))
	if k == nil {
		k, _ = cursorLast(c)
	} else if got, _ := keyID(k); got != id {
		k, _ = c.Prev()
	}
	if k == nil {
		return ""
	}
	return string(p.laneBlocks.Get(k))
}

func (p pendingSet) add(r run) error {
	if len(p.others) == 0 {
		return p.index.add(r)
	}
	x, ok := p.lane(p.laneOf(r.start))
	if !ok {
		x = p.index
	}
	return x.add(r)
}

func (p pendingSet) contains(id uint64) bool {
	if p.index.contains(id) {
		return true
	}
	for _, l := range p.others {
		if l.contains(id) {
			return true
		}
	}
	return false
}

func (p pendingSet) overlaps(lo, hi uint64) bool {
	if p.index.overlaps(lo, hi) {
		return true
	}
	for _, l := range p.others {
		if l.overlaps(lo, hi) {
			return true
		}
	}
	return false
}

func (p pendingSet) in(lo, hi uint64) []idRange {
	out := p.index.in(lo, hi)
	if len(p.others) == 0 {
		return out
	}
	for _, l := range p.others {
		out = append(out, l.in(lo, hi)...)
	}
	sortRanges(out)
	return out
}

func (p pendingSet) ids(afterID uint64, limit int) []uint64 {
	out := p.index.ids(afterID, limit)
	if len(p.others) == 0 {
		return out
	}
	for _, l := range p.others {
		out = append(out, l.ids(afterID, limit)...)
	}
	sortIDs(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

func (p pendingSet) firstID() uint64 {
	first := p.index.firstID()
	for _, l := range p.others {
		if id := l.firstID(); id != 0 && (first == 0 || id < first) {
			first = id
		}
	}
	return first
}

func (p pendingSet) removeRange(lo, hi uint64) error {
	if err := p.index.removeRange(lo, hi); err != nil {
		return err
	}
	for _, l := range p.others {
		if err := l.removeRange(lo, hi); err != nil {
			return err
		}
	}
	return nil
}

// all is every lane's index, the default lane's first.
func (p pendingSet) all() []index {
	out := []index{p.index}
	for _, l := range p.others {
		out = append(out, l.index)
	}
	return out
}

// openLanes builds the pending set of a transaction for the lanes the WAL
// was opened with. A lane whose bucket is missing (a read-only view of a
// file never opened with it) reads as empty.
//
// A read-only open (the db commands of a stopped agent, which do not know
// its lanes) sees the lanes the file holds.
func (w *WAL) openLanes(btx *bolt.Tx, p *pendingSet) {
	p.blocks = btx.Bucket(bucketBlocks)
	names := w.opts.Lanes
	if w.opts.ReadOnly {
		names = nil
		for _, b := range lanePendingBuckets(btx) {
			names = append(names, strings.TrimPrefix(string(b), lanePendingPrefix))
		}
	}
	if len(names) == 0 {
		return
	}
	p.laneBlocks = btx.Bucket(bucketLaneBlocks)
	for _, name := range names {
		p.others = append(p.others, laneIndex{name, index{btx.Bucket([]byte(lanePendingPrefix + name)), pendingKind, w.path}})
	}
}

// setUpLanes, in Open's transaction, creates the buckets of the lanes
// named, folds the pending index of every other lane into the default
// lane's and deletes it, and drops lane_blocks when no lane is named.
func setUpLanes(btx *bolt.Tx, lanes []string) error {
	keep := map[string]bool{}
	for _, name := range lanes {
		keep[lanePendingPrefix+name] = true
		if _, err := btx.CreateBucketIfNotExists([]byte(lanePendingPrefix + name)); err != nil {
			return fmt.Errorf("create bucket %s%s: %w", lanePendingPrefix, name, err)
		}
	}
	var gone [][]byte
	_ = btx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if bytes.HasPrefix(name, []byte(lanePendingPrefix)) && !keep[string(name)] {
			gone = append(gone, bytes.Clone(name))
		}
		return nil
	})
	def := index{btx.Bucket(bucketPending), pendingKind, ""}
	for _, name := range gone {
		from := index{btx.Bucket(name), pendingKind, ""}
		var runs []run
		from.each(func(r run, ok bool) bool {
			if ok {
				runs = append(runs, r)
			}
			return true
		})
		for _, r := range runs {
			if err := def.add(r); err != nil {
				return fmt.Errorf("fold lane %s into the default lane: %w", strings.TrimPrefix(string(name), lanePendingPrefix), err)
			}
		}
		if err := btx.DeleteBucket(name); err != nil {
			return fmt.Errorf("delete bucket %s: %w", name, err)
		}
	}
	if len(lanes) == 0 {
		if btx.Bucket(bucketLaneBlocks) != nil {
			if err := btx.DeleteBucket(bucketLaneBlocks); err != nil {
				return fmt.Errorf("delete bucket %s: %w", bucketLaneBlocks, err)
			}
		}
		return nil
	}
	if _, err := btx.CreateBucketIfNotExists(bucketLaneBlocks); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketLaneBlocks, err)
	}
	return nil
}

// setBlockLane records that the block starting at first holds rows of
// lane name.
func (tx *Tx) setBlockLane(first uint64, name string) error {
	if name == "" {
		return nil
	}
	if err := tx.pend.laneBlocks.Put(u64key(first), []byte(name)); err != nil {
		return fmt.Errorf("wal %s: lane of block %d: %w", tx.w.path, first, err)
	}
	return nil
}

// dropBlockLane forgets the lane of a deleted block.
func (tx *Tx) dropBlockLane(first uint64) error {
	if tx.pend.laneBlocks == nil {
		return nil
	}
	if err := tx.pend.laneBlocks.Delete(u64key(first)); err != nil {
		return fmt.Errorf("wal %s: lane of block %d: %w", tx.w.path, first, err)
	}
	return nil
}

// ClaimRange names the rows ClaimFrom takes: the due PENDING rows of lane
// Lane ("" the default lane) with row ids in From..Below-1 (Below 0: no
// upper bound). Row ids grow with append order, so a range is a stretch
// of the lane's rows in the order they were appended: From at a row id
// handed out after some moment picks the rows appended since.
type ClaimRange struct {
	Lane        string
	From, Below uint64
}

// ClaimFrom is ClaimFunc taking rows from r only, lowest row id first.
// A lane the WAL was not opened with is an error.
func (tx *Tx) ClaimFrom(r ClaimRange, limit, maxBytes int, now int64, fn func(r *Row)) (claimed int, bounded bool, err error) {
	x, ok := tx.pend.lane(r.Lane)
	if !ok {
		return 0, false, fmt.Errorf("wal %s: claim from lane %q: not one of the lanes it was opened with", tx.w.path, r.Lane)
	}
	if tx.claimsIDs() {
		return tx.claimAfterRetries(limit, maxBytes, now, fn, func(limit, maxBytes int) (int, bool, error) {
			return tx.claimFunc(pendSource{x: x, from: r.From, below: r.Below}, limit, maxBytes, now, fn)
		})
	}
	claimed, bounded, err = tx.claimFunc(pendSource{x: x, from: r.From, below: r.Below}, limit, maxBytes, now, fn)
	if err != nil {
		return claimed, false, err
	}
	return claimed, bounded, tx.flushGaps()
}

// LaneBacklog is what a lane holds due to be sent.
type LaneBacklog struct {
	// Rows are the lane's due PENDING rows (rows backed off after a
	// failed send are counted in Counts.Delayed only).
	Rows int64
	// OldestCreated is the creation time (unix ms) of the lane's oldest
	// due row; 0 when it has none.
	OldestCreated int64
	// NextID is the lowest due row id in From..; 0 when there is none
	// (Backlog's From argument).
	NextID uint64
	// Bytes are the payload bytes of those rows, from the blocks' tables
	// (nothing is decompressed); a row of a block whose table does not
	// parse counts 0.
	Bytes int64
}

// Backlog reports lane name's due rows with ids in from..below-1 (below
// 0: no bound). O(runs of the lane in the range), no row is read.
func (tx *ReadTx) Backlog(name string, from, below uint64) (LaneBacklog, error) {
	x, ok := tx.pend.lane(name)
	if !ok {
		return LaneBacklog{}, fmt.Errorf("wal %s: backlog of lane %q: not one of the lanes it was opened with", tx.w.path, name)
	}
	var b LaneBacklog
	var sz runBytes
	x.eachFrom(from, below, func(r run) bool {
		if b.NextID == 0 {
			b.NextID = r.start
		}
		b.Rows += int64(r.end - r.start + 1)
		b.Bytes += sz.of(tx, r.start, r.end)
		return true
	})
	b.OldestCreated = tx.createdOf(b.NextID)
	return b, nil
}

// runBytes sums payload sizes of runs of ids in ascending order, parsing
// each block's table once.
type runBytes struct {
	first, last uint64
	lens        []uint32
	ok          bool
}

// of is the payload bytes of rows lo..hi.
func (s *runBytes) of(tx *ReadTx, lo, hi uint64) int64 {
	var n int64
	for id := lo; id <= hi; {
		if !s.ok || id < s.first || id > s.last {
			s.ok = false
			first, v, found := tx.findBlock(id)
			if !found {
				id++
				continue
			}
			h, lens, ok := blockPayloadLens(v)
			if !ok || first != h.first {
				id++
				continue
			}
			s.first, s.last, s.lens, s.ok = h.first, h.last(), lens, true
		}
		end := min(hi, s.last)
		for ; id <= end; id++ {
			if i := id - s.first; i < uint64(len(s.lens)) {
				n += int64(s.lens[i])
			}
		}
	}
	return n
}

// DueUpTo counts r's due PENDING rows, stopping at limit: O(runs met).
func (tx *ReadTx) DueUpTo(r ClaimRange, limit int) int {
	x, ok := tx.pend.lane(r.Lane)
	if !ok {
		return 0
	}
	n := 0
	x.eachFrom(r.From, r.Below, func(run run) bool {
		n += int(min(run.end-run.start+1, uint64(limit-n)))
		return n < limit
	})
	return n
}

// HasDue reports whether r holds a due PENDING row: one seek.
func (tx *ReadTx) HasDue(r ClaimRange) bool {
	x, ok := tx.pend.lane(r.Lane)
	if !ok {
		return false
	}
	found := false
	x.eachFrom(r.From, r.Below, func(run) bool { found = true; return false })
	return found
}

// NextRowID is the row id the next appended row will get.
func (tx *ReadTx) NextRowID() uint64 { return tx.nextRow }

func sortRanges(rs []idRange) {
	slices.SortFunc(rs, func(a, b idRange) int { return cmp.Compare(a.lo, b.lo) })
}

func sortIDs(ids []uint64) { slices.Sort(ids) }

// claimLanes is ClaimFunc of a WAL with lanes: the named lanes in their
// order, then the default lane.
func (tx *Tx) claimLanes(limit, maxBytes int, now int64, fn func(r *Row)) (claimed int, bounded bool, err error) {
	order := append(tx.pend.all()[1:], tx.pend.index)
	used := 0
	count := func(r *Row) { used += len(r.Payload); fn(r) }
	for _, x := range order {
		budget := 0
		if maxBytes > 0 {
			if budget = maxBytes - used; budget <= 0 {
				return claimed, true, nil
			}
		}
		// A later lane may go over what is left of maxBytes by its first
		// row, as a claim does with its first row.
		n, b, err := tx.claimFunc(pendSource{x: x}, limit-claimed, budget, now, count)
		if err != nil {
			return claimed, false, err
		}
		claimed += n
		if b || claimed >= limit {
			return claimed, true, nil
		}
	}
	return claimed, false, nil
}

// checkLaneOptions checks Options.Lanes.
func checkLaneOptions(o Options) error {
	seen := map[string]bool{}
	for _, name := range o.Lanes {
		if err := checkLaneName(name); err != nil {
			return err
		}
		if seen[name] {
			return fmt.Errorf("lane %q named twice", name)
		}
		seen[name] = true
	}
	return nil
}

// bucketRole is the name of the bucket whose part a top-level bucket
// plays: "pending" for a lane's pending index, its own name otherwise.
func bucketRole(name []byte) string {
	if bytes.HasPrefix(name, []byte(lanePendingPrefix)) {
		return string(bucketPending)
	}
	return string(name)
}

// lanePendingBuckets are the names of the lanes' pending indexes in the
// file.
func lanePendingBuckets(btx *bolt.Tx) [][]byte {
	var out [][]byte
	c := btx.Cursor()
	for k, _ := c.Seek([]byte(lanePendingPrefix)); k != nil && bytes.HasPrefix(k, []byte(lanePendingPrefix)); k, _ = c.Next() {
		out = append(out, bytes.Clone(k))
	}
	return out
}

// dropByLane is DropUnsent with lim.LaneOrder: the age drops first, then
// for size the groups of each lane listed in turn, oldest first, then
// the oldest groups of any lane. A group holds the rows of one lane.
func (tx *Tx) dropByLane(lim DropLimits) (full, age Dropped, more bool, err error) {
	if lim.MaxBlocks <= 0 {
		lim.MaxBlocks = 64
	}
	if lim.OlderThanMS > 0 {
		byAge := lim
		byAge.MaxBytes = 0
		if _, age, more, err = tx.dropUnsent(byAge); err != nil || more {
			return full, age, more, err
		}
	}
	var f blockFreer
	dropped := 0
	for _, lane := range lim.LaneOrder {
		c := tx.blocks.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if tx.ctr.payloadBytes <= lim.MaxBytes {
				return full, age, false, f.free(tx)
			}
			if tx.pend.laneOfBlock(k) != lane {
				continue
			}
			h, err := parseBlockHeader(getBlock(tx.blocks, k))
			if err != nil || h.standIn {
				continue // its rows go DEAD at their claim; stand-ins are never dropped
			}
			if dropped == lim.MaxBlocks {
				return full, age, true, f.free(tx)
			}
			went, err := tx.dropBlock(&f, h, GapDroppedFull, &full)
			if err != nil {
				return full, age, false, err
			}
			if went {
				dropped++
			}
		}
	}
	if err := f.free(tx); err != nil {
		return full, age, false, err
	}
	if tx.ctr.payloadBytes <= lim.MaxBytes {
		return full, age, false, nil
	}
	rest := lim
	rest.OlderThanMS, rest.MaxBlocks = 0, lim.MaxBlocks-dropped
	if rest.MaxBlocks <= 0 {
		return full, age, true, nil
	}
	more2, restFull := false, Dropped{}
	restFull, _, more2, err = tx.dropUnsent(rest)
	if err != nil {
		return full, age, false, err
	}
	full.add(restFull.Rows, restFull.Bytes, restFull.OldestMS, restFull.Sources)
	if restFull.Rows > 0 && restFull.NewestMS > full.NewestMS {
		full.NewestMS = restFull.NewestMS
	}
	return full, age, more2, nil
}

// laneOfBlock is the lane of the block whose key is k; "" for the
// default lane.
func (p pendingSet) laneOfBlock(k []byte) string {
	if p.laneBlocks == nil {
		return ""
	}
	return string(p.laneBlocks.Get(k))
}
