package wal

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/edge-agent/edge-agent/starter/internal/account"
	"github.com/edge-agent/edge-agent/starter/internal/wal/boltraw"
)

// SalvageOptions configures Salvage.
type SalvageOptions struct {
	// DryRun reads the source and reports, and writes nothing; Dest may
	// then be empty.
	DryRun bool
	// Fsync makes the new file's commits durable (see Options.Fsync).
	Fsync bool
	// Now is the clock deciding which PENDING rows are still backed off;
	// default time.Now.
	Now func() time.Time
	// Logger receives the new WAL's warnings; default discard.
	Logger *slog.Logger
	// Encryption holds the key of an encrypted source (queue.encryption);
	// the new file is sealed with the same key, under a salt of its own.
	Encryption Encryption
	// GapOrigin, when set and the source numbered its rows
	// (agent.account), gives the copy gap records for the rows of the
	// blocks that could not be read (salvagegaps.go), naming this host
	// and agent.
	GapOrigin *GapOrigin
}

// RenumberedRow is a row copied under a new id because its key was damaged.
type RenumberedRow struct {
	Key   []byte // the key as found
	Page  uint64
	NewID uint64
}

// SalvageReport says what Salvage copied and what it could not read.
type SalvageReport struct {
	Source, Dest string
	// Rows counts the rows copied per status (SENDING rows are copied as
	// PENDING, as every start does with them; RECEIVED rows stay RECEIVED
	// when their entry of the received index was read, and are PENDING,
	// sent again, when it was not).
	Rows map[Status]int
	// Renumbered are the rows among Rows whose key was damaged: each keeps
	// its batch id and content under a new row id.
	Renumbered []RenumberedRow
	// BadRows are rows found but not copied: their value does not decode
	// or fails its checksum (rows already quarantined DEAD for that too).
	BadRows []Problem
	// Positions and AppMeta count the input positions and the agent's
	// metadata entries copied.
	Positions, AppMeta int
	// Damage lists the parts of the file that could not be read: what was
	// in them (rows, positions) is lost and not counted above.
	Damage []Damage
	// OlderState is set when the newest meta page's tree was unreadable and
	// the previous transaction's state was read instead.
	OlderState bool
	// Scanned counts the rows among Rows found outside the readable tree:
	// when the tree is damaged, every page it does not reach is read, and
	// leaf pages that hold nothing but sound rows give their rows (the
	// newest copy of each id). Such a page may be an old copy, freed when
	// its rows were acked and deleted: these rows may have been delivered
	// already and are sent again (at least once, never lost).
	Scanned int
	// GapRecords are the gap records the copy got for the rows of blocks
	// that could not be read (SalvageOptions.GapOrigin); a dry run says
	// which it would get.
	GapRecords []account.Record
	// ClaimIDs counts the copied rows that keep the batch id a claim gave
	// them (a source whose rows get their ids at claim, claimids.go).
	ClaimIDs int
	// LostClaimIDs are the batch ids, as runs, that a claim gave rows
	// salvage could not copy: each got a stand-in (salvageclaims.go).
	LostClaimIDs [][2]int64
}

// Copied is the number of rows copied.
func (r *SalvageReport) Copied() int {
	n := 0
	for _, c := range r.Rows {
		n += c
	}
	return n
}

// salvageBatch is how many rows go into one transaction of the new file.
const salvageBatch = 1000

// Salvage copies every readable, checksum-valid row, every position and
// the agent's metadata of the WAL file src into a new WAL file dst, which
// must not exist, and reports what it could not read. It reads src with
// the checked reader of package boltraw only (never through bbolt, never
// writing: src is opened read-only), so it works on files bbolt cannot
// open. The new file is written through the normal write path (indexes
// and counters consistent) and verified before Salvage returns.
//
// Rows keep their row id, batch id, status at rest, attempts, times and
// reason; a row whose key was damaged (not 8 bytes, out of order, or not
// below the source's next_row_id) gets a new row id and keeps the rest.
// The id allocators of the new file continue after both the source's and
// every copied row's, so no id is ever reused. When the tree is damaged,
// the pages it does not reach are scanned for rows too (see scan and
// SalvageReport.Scanned): a cut-off subtree or a lost root loses no row
// whose page survived, at the price of possible duplicates. With both
// meta pages gone, the page size is guessed from the pages themselves and
// the scan is all there is (positions and metadata are then lost). The
// caller makes sure no agent writes to src meanwhile.
func Salvage(src, dst string, opts SalvageOptions) (rep SalvageReport, err error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if src, err = filepath.Abs(src); err != nil {
		return rep, fmt.Errorf("salvage wal: %w", err)
	}
	rep.Source, rep.Rows = src, map[Status]int{}
	if !opts.DryRun {
		if dst == "" {
			return rep, fmt.Errorf("salvage wal %s: no output file", src)
		}
		if dst, err = filepath.Abs(dst); err != nil {
			return rep, fmt.Errorf("salvage wal %s: %w", src, err)
		}
		if dst == src {
			return rep, fmt.Errorf("salvage wal %s: the output is the damaged file itself", src)
		}
		if _, err := os.Lstat(dst); err == nil {
			return rep, fmt.Errorf("salvage wal %s: output %s already exists", src, dst)
		}
		rep.Dest = dst
	}
	f, err := os.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		return rep, fmt.Errorf("salvage wal %s: no such file: %w", src, ErrNotFound)
	}
	if err != nil {
		return rep, fmt.Errorf("salvage wal %s: %w", src, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return rep, fmt.Errorf("salvage wal %s: %w", src, err)
	}
	metas, err := boltraw.ReadMetas(f, st.Size())
	headless := err != nil
	var meta boltraw.Meta
	var skipped []Damage
	if headless {
		// Both meta pages are gone: nothing says where the tree starts,
		// but the pages may still be there. Every page is scanned for rows.
		ps := boltraw.GuessPageSize(f, st.Size())
		if ps == 0 {
			return rep, fmt.Errorf("salvage wal %s: neither bbolt meta page is valid and no bbolt page was found: %w", src, ErrNotWAL)
		}
		meta = boltraw.Meta{PageSize: ps, HWM: uint64(st.Size()) / ps}
		skipped = []Damage{{What: fmt.Sprintf("neither meta page is valid (the file header is damaged): the tree cannot be walked; "+
			"the rows were looked for on every page of %d bytes; positions and the agent's metadata are lost", ps)}}
	} else {
		meta, skipped = pickState(f, st.Size(), metas, &rep)
	}
	s := &salvager{rep: &rep, now: opts.Now().UnixMilli(), copied: map[uint64]bool{}, states: map[uint64]rowState{},
		gapOrigin: opts.GapOrigin, gapRanges: map[string][][2]uint64{}}
	// First everything but the rows: the id allocators decide which row
	// keys are plausible, and the indexes and state entries which rows of
	// a block still exist, before any row is read.
	var first *boltraw.Walk
	if !headless {
		first = boltraw.NewWalk(f, st.Size(), meta)
		first.Enter = func(path [][]byte) bool { return !rowData(path) }
		first.Visit = s.visitIndex
		first.Run()
		s.live = mergeRanges(s.live)
		s.liveSorted = true
		slices.SortFunc(s.received, func(a, b run) int { return cmp.Compare(a.start, b.start) })
		s.claims.fallback(s.received)
		ctr := s.src.ctr
		s.indexDamaged = len(first.Damage) > 0 || rangesLen(s.live) < uint64(max(ctr.pending+ctr.sending+ctr.received+ctr.acked+ctr.dead, 0))
		if v := s.src.schema; v != 0 && v != SchemaVersion && v != nestedPositionsSchema {
			// Its rows are not in blocks, or its layout is a newer build's.
			return rep, fmt.Errorf("salvage wal %s: the file has WAL schema version %d, this edge-agent salvages only "+
				"versions %d and %d: %w", src, v, nestedPositionsSchema, SchemaVersion, ErrSchemaVersion)
		}
	}

	if s.keys, err = salvageKeys(s.src.seal, opts.Encryption, src); err != nil {
		return rep, err
	}
	if !opts.DryRun {
		// The copy is of SchemaVersion whatever the source's: a source of
		// nestedPositionsSchema is carried over this way.
		// A source giving ids at claim gives its mode to the copy.
		s.out, err = Open(Options{Path: dst, Fsync: opts.Fsync, Now: opts.Now, Logger: opts.Logger, Encryption: opts.Encryption,
			GapRecords: opts.GapOrigin, GapFree: s.claims.on, SendOrderBatchIDs: s.claims.on, Lanes: s.lanes.list()})
		if err != nil {
			return rep, fmt.Errorf("salvage wal %s: create %s: %w", src, dst, err)
		}
		defer func() {
			if cerr := s.out.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("salvage wal %s: close %s: %w", src, dst, cerr)
			}
			if err != nil {
				_ = os.Remove(dst)
			}
		}()
	}
	walk := boltraw.NewWalk(f, st.Size(), meta)
	if !headless {
		walk.Enter = rowData
		walk.Visit = s.visit
		walk.Run()
		// The two walks read the same root and bucket pages: damage there
		// is reported once.
		walk.Damage = mergeDamage(first.Damage, walk.Damage)
		for id := range first.Seen {
			walk.Seen[id] = true
		}
	}
	rep.Damage = append(skipped, walk.Damage...)
	if len(rep.Damage) > 0 {
		// Pages up to the newest state's end: an older state's page count
		// stops short of the pages the lost commits wrote.
		hwm := meta.HWM
		for _, m := range metas {
			hwm = max(hwm, m.HWM)
		}
		s.scan(f, st.Size(), meta.PageSize, hwm, walk.Seen)
	}
	// Not damage of the tree: no reason to scan for rows.
	rep.Damage = append(rep.Damage, s.unfit...)
	if err := s.finish(); err != nil {
		return rep, fmt.Errorf("salvage wal %s into %s: %w", src, dst, err)
	}
	if opts.DryRun {
		return rep, nil
	}
	problems, _, err := s.out.Verify(20)
	if err != nil {
		return rep, fmt.Errorf("salvage wal %s: verify %s: %w", src, dst, err)
	}
	if len(problems) > 0 {
		return rep, fmt.Errorf("salvage wal %s: the new file %s fails verify (%v); it was removed", src, dst, problems)
	}
	return rep, nil
}

// pickState returns the newest state whose root page reads, an older one
// only when the newest root is gone (a truncated file loses the pages
// written last), with the damage that made it skip the newer ones.
func pickState(f io.ReaderAt, size int64, metas []boltraw.Meta, rep *SalvageReport) (boltraw.Meta, []Damage) {
	meta := metas[0]
	var skipped []Damage
	for i, m := range metas {
		probe := boltraw.NewWalk(f, size, m)
		if _, ok := probe.ReadPage(m.Root, nil); ok {
			meta, rep.OlderState = m, i > 0
			break
		}
		skipped = append(skipped, Damage{Page: m.Root, What: fmt.Sprintf(
			"the root page of transaction %d cannot be read (%s)", m.TxID, probe.Damage[0].What)})
	}
	if !rep.OlderState {
		return meta, nil
	}
	// bbolt keeps the previous transaction's pages intact until the next
	// commit, so its state is whole and consistent: what the last commit
	// changed is lost (rows appended with their positions: the inputs read
	// them again; acks: those rows are sent again).
	skipped[0].What += fmt.Sprintf("; read the previous transaction %d instead: the last commit's changes are lost", meta.TxID)
	return meta, skipped
}

type salvager struct {
	rep *SalvageReport
	out *WAL // nil: dry run
	now int64

	src sourceMeta
	// copiedNext is one past the highest batch id of a copied row.
	copiedNext int64
	// keys open the source's sealed blocks and positions.
	keys *keyring
	// states, live and indexDamaged come from the first walk: the state
	// entries, the ids the indexes hold, and whether an index was
	// damaged (a row of a block that no index holds is then copied as
	// PENDING rather than taken for deleted: at least once, never lost).
	states       map[uint64]rowState
	received     []run           // runs of the received index read, in key order
	deadGap      map[uint64]bool // DEAD rows that got a stand-in (standin.go)
	live         []idRange
	indexDamaged bool
	lastID       uint64 // highest row id kept so far
	copied       map[uint64]bool
	liveSorted   bool
	maxScanned   uint64

	batch     []Row
	renumber  []Row // damaged keys, copied last under new ids
	renumKeys []RenumberedRow
	positions []PositionUpdate
	// unfit are the positions of the source its copy cannot hold.
	unfit      []Damage
	appMeta    map[string][]byte
	writeError error

	// gapOrigin is SalvageOptions.GapOrigin; the rest is what its gap
	// records are inferred from (salvagegaps.go).
	gapOrigin   *GapOrigin
	seqRows     []seqRow
	gapRanges   map[string][][2]uint64
	lost        []lostBlock
	renumbering bool

	// claims carries the batch ids given at claim (salvageclaims.go).
	claims claimCopy
	// lanes carries the rows' lanes (salvagelanes.go).
	lanes laneCopy
}

// sourceMeta is what the source's meta bucket says.
type sourceMeta struct {
	nextRow   uint64
	nextBatch int64
	ctr       counters
	schema    uint32 // 0 when the meta bucket does not say
	seal      []byte // meta seal: the key generations of an encrypted file
}

// rowData: the buckets the second walk reads (rows, positions, the
// agent's metadata); the first walk reads the others.
func rowData(path [][]byte) bool {
	switch string(path[0]) {
	case string(bucketBlocks), string(bucketApp), string(bucketPositions):
		return true
	}
	return false
}

// mergeDamage appends the damage of b not already in a.
func mergeDamage(a, b []Damage) []Damage {
	seen := map[string]bool{}
	out := append([]Damage(nil), a...)
	for _, d := range a {
		seen[d.String()] = true
	}
	for _, d := range b {
		if !seen[d.String()] {
			out = append(out, d)
		}
	}
	return out
}

func (s *salvager) visitIndex(bucket [][]byte, key, value []byte, _ uint64) {
	if len(bucket) != 1 {
		return
	}
	single := func(id uint64, ok bool) {
		if ok {
			s.live = append(s.live, idRange{id, id})
		}
	}
	switch bucketRole(bucket[0]) {
	case string(bucketMeta):
		switch string(key) {
		case metaNextRowID:
			if len(value) == 8 {
				s.src.nextRow = binary.BigEndian.Uint64(value)
			}
		case metaNextBatchID:
			if len(value) == 8 {
				s.src.nextBatch = int64(binary.BigEndian.Uint64(value))
			}
		case metaCounters:
			s.src.ctr.decode(value)
		case metaSchemaVersion:
			if len(value) == 4 {
				s.src.schema = binary.BigEndian.Uint32(value)
			}
		case metaSeal:
			s.src.seal = bytes.Clone(value)
		case metaClaimBatchIDs:
			s.claims.on = true
		}
	case string(bucketClaimIDs):
		if r, ok := claimIDsKind.decode(key, value); ok && r.start > 0 && r.end >= r.start && r.batch > 0 {
			s.claims.on = true // the mode flag may be what was lost
			s.claims.noteRun(r)
		}
	case string(bucketLaneBlocks):
		if id, ok := keyID(key); ok && id > 0 {
			s.lanes.noteBlock(id, string(value))
		}
	case string(bucketClaimRetry):
		b, ok := keyID(key)
		if id, ok2 := keyID(value); ok && ok2 && b > 0 {
			if s.claims.retry == nil {
				s.claims.retry = map[uint64]int64{}
			}
			s.claims.retry[id] = int64(b)
		}
	case string(bucketState):
		if id, ok := keyID(key); ok {
			if st, ok := decodeState(value); ok {
				s.states[id] = st
			}
		}
	case string(bucketPending), string(bucketSending), string(bucketReceived):
		if name, ok := strings.CutPrefix(string(bucket[0]), lanePendingPrefix); ok {
			s.lanes.noteName(name)
		}
		kind := runKindOf(bucket[0])
		if r, ok := kind.decode(key, value); ok {
			s.live = append(s.live, idRange{r.start, r.end})
			if kind == receivedKind {
				s.received = append(s.received, r)
			}
		}
	case string(bucketDelayed):
		single(keyID(key))
	case string(bucketDead):
		id, ok := keyID(key)
		single(id, ok)
		if ok && bytes.Equal(value, deadHasStandIn) {
			if s.deadGap == nil {
				s.deadGap = map[uint64]bool{}
			}
			s.deadGap[id] = true
		}
	case string(bucketAcked):
		_, id, ok := splitTSKey(key)
		single(id, ok)
	}
}

// inIndex reports whether an index holds id.
func (s *salvager) inIndex(id uint64) bool {
	if !s.liveSorted {
		s.live = mergeRanges(s.live)
		s.liveSorted = true
	}
	return inRanges(s.live, id)
}

func (s *salvager) visit(bucket [][]byte, key, value []byte, page uint64) {
	switch {
	case len(bucket) == 2 && bytes.Equal(bucket[0], bucketBlocks):
		if id, v, ok := blockVisit(bucket, key, value); ok {
			s.block(id, v, page)
		}
	case len(bucket) == 1 && bytes.Equal(bucket[0], bucketApp):
		if s.appMeta == nil {
			s.appMeta = map[string][]byte{}
		}
		s.appMeta[string(key)] = bytes.Clone(value)
	case len(bucket) == 2 && bytes.Equal(bucket[0], bucketPositions):
		// nestedPositionsSchema: one bucket per input. The copy keeps its
		// positions flat, which cannot hold a source id or key that is
		// empty or contains the separator: such a position is reported.
		src, k := bucket[1], key
		if len(src) == 0 || len(k) == 0 || bytes.IndexByte(src, posSep) >= 0 || bytes.IndexByte(k, posSep) >= 0 {
			s.unfit = append(s.unfit, Damage{Page: page, Bucket: "positions/" + string(src), What: fmt.Sprintf(
				"position %q/%q not copied: a source id or key of a version-%d file must be non-empty and free of the byte 0x00",
				src, k, SchemaVersion)})
			return
		}
		s.positions = append(s.positions, PositionUpdate{SourceID: string(src), Key: string(k), State: bytes.Clone(value)})
	case len(bucket) == 1 && bytes.Equal(bucket[0], bucketPositions):
		// Flat keys. A key without its separator is damage: skipped.
		if src, k, ok := splitFlatPosKey(key); ok {
			st, err := s.keys.openPosition(key, value)
			if err != nil {
				s.unfit = append(s.unfit, Damage{Page: page, Bucket: "positions", What: fmt.Sprintf(
					"position %q/%q not copied: its sealed state does not authenticate", src, k)})
				return
			}
			s.positions = append(s.positions, PositionUpdate{SourceID: src, Key: k, State: st})
		}
	}
}

// block takes the rows of a block that still exist: those an index or a
// state entry holds (all of them when an index was damaged).
func (s *salvager) block(key, value []byte, page uint64) {
	id, keyOK := keyID(key)
	h, err := parseBlockHeader(value)
	if err != nil {
		s.rep.BadRows = append(s.rep.BadRows, Problem{RowID: id, What: fmt.Sprintf("key %x, page %d: %v", key, page, err)})
		if keyOK && id > 0 {
			s.lost = append(s.lost, lostBlock{first: id, last: id, rows: s.lostRowsIn(id, id)})
		}
		return
	}
	b := decodeBlock(h.first, value, s.keys)
	if b.err != nil {
		s.rep.BadRows = append(s.rep.BadRows, Problem{RowID: h.first, What: fmt.Sprintf("key %x, page %d: rows %d..%d: %v", key, page, h.first, h.last(), b.err)})
		s.lost = append(s.lost, lostBlock{first: h.first, last: h.last(), rows: s.lostRowsIn(h.first, h.last())})
		return
	}
	keyOK = keyOK && id == h.first
	for _, r := range s.blockRows(b) {
		s.take(r, key, keyOK, page)
	}
}

// blockRows returns the rows of b that still exist, with their state.
func (s *salvager) blockRows(b *block) []Row {
	var out []Row
	for id := b.first; id <= b.last(); id++ {
		st, known := s.states[id]
		if !known {
			if !s.inIndex(id) && !s.indexDamaged {
				continue // deleted
			}
			st = rowState{status: StatusPending, updated: b.created}
		}
		r := rowOf(b, id, &st)
		r.Payload = bytes.Clone(r.Payload)
		// RECEIVED rests as PENDING; its run, when read and agreeing
		// with the block on the batch id, says it is RECEIVED.
		sent := r.BatchID
		if b, ok := s.claims.batchOf(id); s.claims.on && ok {
			sent = b // the block holds a placeholder
		}
		if run, ok := s.receivedRun(id); ok && st.status == StatusPending && run.batchOf(id) == sent {
			r.Status, r.UpdatedAt = StatusReceived, run.at
		}
		out = append(out, r)
	}
	s.lanes.read(b, out)
	return out
}

// receivedRun returns the run of the received index read that holds id.
func (s *salvager) receivedRun(id uint64) (run, bool) {
	i, _ := slices.BinarySearchFunc(s.received, id, func(r run, id uint64) int {
		switch {
		case r.end < id:
			return -1
		case r.start > id:
			return 1
		}
		return 0
	})
	if i < len(s.received) && s.received[i].start <= id && id <= s.received[i].end {
		return s.received[i], true
	}
	return run{}, false
}

// take copies r under its own id when that is plausible, else under a
// new one.
func (s *salvager) take(r Row, key []byte, keyOK bool, page uint64) {
	id := r.ID
	// A key is the row's own when it is well formed, in order and below
	// the allocator; anything else is a damaged key, and its row goes in
	// under a new id.
	if !keyOK || id == 0 || id <= s.lastID || (s.src.nextRow != 0 && id >= s.src.nextRow) {
		s.renumber = append(s.renumber, r)
		s.renumKeys = append(s.renumKeys, RenumberedRow{Key: bytes.Clone(key), Page: page})
		return
	}
	s.lastID = id
	s.copied[id] = true
	s.add(r, id)
}

// add copies r, row srcID of the source.
func (s *salvager) add(r Row, srcID uint64) {
	s.rep.Rows[restStatus(r.Status)]++
	s.claims.take(&r, srcID)
	s.lanes.copied(srcID, r.ID, s.renumbering)
	s.copiedNext = max(s.copiedNext, r.BatchID+1)
	s.noteSeqs(&r, !s.renumbering)
	if s.out == nil || s.writeError != nil {
		return
	}
	s.batch = append(s.batch, r)
	if len(s.batch) >= salvageBatch {
		s.flush()
	}
}

// restStatus is the status a copied row gets: SENDING becomes PENDING, as
// at every start.
func restStatus(st Status) Status {
	if st == StatusSending {
		return StatusPending
	}
	return st
}

func (s *salvager) flush() {
	if len(s.batch) == 0 || s.writeError != nil {
		return
	}
	batch := s.batch
	s.batch = s.batch[:0]
	s.writeError = s.out.Update(func(tx *Tx) error { return tx.restoreRows(batch, s.deadGap, &s.claims, &s.lanes, s.now) })
}

// scan reads every page of the file the tree walk did not reach and
// collects the rows of the leaf pages that hold nothing but sound rows
// (8-byte keys, values that decode and pass their checksum): the rows of
// subtrees a damaged page cut off, or of a lost root. Ids the tree gave
// already, or at or above the source's next_row_id (unless that comes
// from an older state), are skipped; of several copies of one id the most
// recently updated wins.
func (s *salvager) scan(r io.ReaderAt, size int64, ps, hwm uint64, seen map[uint64]bool) {
	if !boltraw.ValidPageSize(ps) {
		return
	}
	limit := min(hwm, uint64(size)/ps)
	// Pages outside the tree: whether their rows still exist is not
	// known, so they are copied (at least once, never lost).
	s.indexDamaged = true
	found := map[uint64]Row{}
	var blocks []*block
	scannedState := map[uint64]bool{} // states taken from the scan, not the tree
	head := make([]byte, boltraw.PageHeaderSize)
	for id := uint64(2); id < limit; id++ {
		if seen[id] {
			continue
		}
		if _, err := r.ReadAt(head, int64(id*ps)); err != nil {
			continue
		}
		got, flags, overflow := boltraw.PageHeader(head)
		if got != id || flags != boltraw.LeafPageFlag || id+overflow >= limit {
			continue
		}
		pg := make([]byte, (overflow+1)*ps)
		if _, err := r.ReadAt(pg, int64(id*ps)); err != nil {
			continue
		}
		if bs, ok := blocksLeaf(pg, s.keys); ok {
			blocks = append(blocks, bs...) // their rows once every state is known
			continue
		}
		sts, ok := statesLeaf(pg)
		if !ok {
			// A small state bucket is stored inline in its parent's leaf.
			sts, ok = inlineStates(pg)
		}
		if ok {
			// The tree's state entries win; of scanned copies, the most
			// recently updated.
			for id, st := range sts {
				if cur, known := s.states[id]; !known || (scannedState[id] && st.updated > cur.updated) {
					s.states[id], scannedState[id] = st, true
				}
			}
			continue
		}
	}
	for _, b := range blocks {
		s.scanned(found, s.blockRows(b))
	}
	ids := make([]uint64, 0, len(found))
	for id := range found {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		s.rep.Scanned++
		s.maxScanned = max(s.maxScanned, id)
		s.add(found[id], id)
	}
}

// scanned adds rows found by the page scan to found, keeping the most
// recently updated copy of each id.
func (s *salvager) scanned(found map[uint64]Row, rows []Row) {
	for _, row := range rows {
		// An older state's allocator does not know the ids of the lost
		// commit, which are what the scan is after.
		if s.copied[row.ID] || (!s.rep.OlderState && s.src.nextRow != 0 && row.ID >= s.src.nextRow) {
			continue
		}
		if prev, dup := found[row.ID]; !dup || row.UpdatedAt > prev.UpdatedAt {
			found[row.ID] = row
		}
	}
}

// idLeaf calls fn with every element of a leaf page whose keys are all row
// ids (> 0) and whose values are all plain values, and reports false as
// soon as an element is not, or fn refuses its value: the page then holds
// something else than the caller looks for.
func idLeaf(pg []byte, fn func(id uint64, val []byte) bool) bool {
	n, ok := boltraw.Elements(pg)
	if !ok || n == 0 {
		return false
	}
	for i := range n {
		flags, key, val, ok := boltraw.LeafElem(pg, i)
		if !ok || flags != 0 {
			return false
		}
		id, ok := keyID(key)
		if !ok || id == 0 || !fn(id, val) {
			return false
		}
	}
	return true
}

// finish copies the renumbered rows, the positions and the metadata, and
// moves the id allocators past everything the source ever handed out.
func (s *salvager) finish() error {
	next := max(s.lastID, s.maxScanned, s.src.nextRow-min(s.src.nextRow, 1)) + 1
	s.renumbering = true
	for i := range s.renumber {
		srcID := s.renumber[i].ID // from its block's header
		s.renumber[i].ID = next
		s.renumKeys[i].NewID = next
		next++
		s.add(s.renumber[i], srcID)
	}
	s.rep.ClaimIDs = len(s.claims.out)
	standIns := s.claims.lost(s.now)
	s.rep.LostClaimIDs = batchIDRanges(standIns)
	s.rep.Renumbered = s.renumKeys
	s.rep.Positions, s.rep.AppMeta = len(s.positions), len(s.appMeta)
	if s.gapOrigin != nil {
		s.rep.GapRecords = s.salvageGaps(s.now)
		if len(s.rep.LostClaimIDs) > 0 {
			if len(s.rep.GapRecords) == 0 {
				// Unnumbered rows: a record counting just these.
				s.rep.GapRecords = []account.Record{{Reason: ReasonSalvageLost, Count: int64(len(standIns)), TS: s.now}}
			}
			// The ids of the stand-ins below, on the first record, as a
			// row given up after its id went out carries its own.
			s.rep.GapRecords[0].BatchIDs = s.rep.LostClaimIDs
		}
	}
	if s.out == nil {
		return nil
	}
	s.flush()
	if s.writeError != nil {
		return s.writeError
	}
	return s.out.Update(func(tx *Tx) error {
		if len(s.positions) > 0 {
			if err := tx.SavePositions(s.positions); err != nil {
				return err
			}
		}
		for k, v := range s.appMeta {
			if err := tx.SetMeta(k, v); err != nil {
				return err
			}
		}
		tx.nextRow = max(tx.nextRow, s.src.nextRow, next)
		switch {
		case s.src.nextBatch > 0 && !s.rep.OlderState:
			// The source's, not the new file's clock-seeded id: a
			// jump would be a gap the engine's watermark never
			// passes (CHECKPOINT).
			tx.nextBatch = max(s.src.nextBatch, s.copiedNext)
		default:
			// An older state does not know the ids the lost commit
			// gave (and may have sent): the clock-seeded id is above
			// them.
			tx.nextBatch = max(tx.nextBatch, s.src.nextBatch)
		}
		if nb := s.claims.nextBatch(s.src.nextBatch); s.claims.on && nb > 0 {
			// Not a fresh file's: the engine waits for the id after
			// the last one the source gave.
			tx.nextBatch = nb
		}
		tx.ctr.checksumFailures += s.src.ctr.checksumFailures
		tx.dirty = true
		// The ids of rows lost after a claim gave them theirs go out
		// under stand-ins, after every id the source handed out.
		tx.gaps = append(tx.gaps, standIns...)
		if err := tx.flushStandIns(); err != nil {
			return err
		}
		// After every id the source handed out: none is reused.
		return tx.AppendGapRecords(slices.Clone(s.rep.GapRecords))
	})
}

// blocksLeaf returns the blocks of leaf page pg when every element is a
// sound block (so that pages of the indexes, positions and meta, whose
// values are no blocks, are never taken for blocks).
func blocksLeaf(pg []byte, kr *keyring) ([]*block, bool) {
	n, ok := boltraw.Elements(pg)
	if !ok || n == 0 {
		return nil, false
	}
	var out []*block
	for i := range n {
		flags, key, val, ok := boltraw.LeafElem(pg, i)
		if ok && flags&boltraw.BucketLeafFlag != 0 && len(val) >= boltraw.BucketHeaderSize {
			// A leaf of the blocks bucket: small blocks are inline
			// buckets; the others have pages of their own, scanned apart.
			id, idOK := keyID(key)
			if !idOK {
				return nil, false
			}
			if boltraw.BucketRoot(val) != 0 {
				continue
			}
			bs, ok := blocksLeaf(val[boltraw.BucketHeaderSize:], kr)
			if !ok || len(bs) != 1 || bs[0].first != id {
				return nil, false
			}
			out = append(out, bs[0])
			continue
		}
		if !ok || flags != 0 || !bytes.Equal(key, blockValueKey) {
			return nil, false
		}
		// A block's own bucket names it: its header gives its id.
		h, err := parseBlockHeader(val)
		if err != nil {
			return nil, false
		}
		b := decodeBlock(h.first, val, kr)
		if b.err != nil {
			return nil, false
		}
		out = append(out, b)
	}
	return out, true
}

// inlineStates returns the states of an inline state bucket on leaf
// page pg (a root bucket page of a small WAL).
func inlineStates(pg []byte) (map[uint64]rowState, bool) {
	n, ok := boltraw.Elements(pg)
	if !ok {
		return nil, false
	}
	for i := range n {
		flags, key, val, ok := boltraw.LeafElem(pg, i)
		if !ok || flags&boltraw.BucketLeafFlag == 0 || !bytes.Equal(key, bucketState) || len(val) < boltraw.BucketHeaderSize+boltraw.PageHeaderSize {
			continue
		}
		if boltraw.BucketRoot(val) != 0 {
			return nil, false // not inline: its own pages are scanned
		}
		return statesLeaf(val[boltraw.BucketHeaderSize:])
	}
	return nil, false
}

// statesLeaf returns the row states of leaf page pg when every element
// is an 8-byte key with a value that decodes as a state and not as a
// block (no index value is 21 bytes or longer; the meta bucket's are
// not 8-byte keys with a status byte first).
func statesLeaf(pg []byte) (map[uint64]rowState, bool) {
	out := make(map[uint64]rowState)
	ok := idLeaf(pg, func(id uint64, val []byte) bool {
		st, ok := decodeState(val)
		out[id] = st
		return ok
	})
	return out, ok
}

// restoreRows writes rows found by salvage, in id order, with their ids,
// batch ids, times, attempts and reasons, into the indexes of their
// status at rest. Rows with consecutive ids and batch ids created at the
// same time share a block, as they did when appended.
// deadGap names the DEAD rows that got a stand-in.
// claims gives the rows the batch ids a claim gave them (nil: none).
func (tx *Tx) restoreRows(rows []Row, deadGap map[uint64]bool, claims *claimCopy, lanes *laneCopy, now int64) error {
	for i := 0; i < len(rows); {
		lane := lanes.laneOf(rows[i].ID)
		j := i + 1
		for j < len(rows) && j-i < blockMaxRows && rows[j].ID == rows[j-1].ID+1 &&
			rows[j].BatchID == rows[j-1].BatchID+1 && rows[j].CreatedAt == rows[i].CreatedAt && rows[j].StandIn == rows[i].StandIn &&
			lanes.laneOf(rows[j].ID) == lane {
			j++
		}
		if err := tx.restoreBlock(rows[i:j], lane, deadGap, claims, now); err != nil {
			return err
		}
		i = j
	}
	return nil
}

func (tx *Tx) restoreBlock(rows []Row, lane string, deadGap map[uint64]bool, claims *claimCopy, now int64) error {
	first, last := rows[0].ID, rows[len(rows)-1].ID
	if _, _, taken := tx.findBlock(first); taken {
		return fmt.Errorf("wal %s: restore row %d: the id is taken", tx.w.path, first)
	}
	if k, _ := tx.blocks.Cursor().Seek(u64key(first)); k != nil {
		if next, _ := keyID(k); next <= last {
			return fmt.Errorf("wal %s: restore row %d: the id is taken", tx.w.path, next)
		}
	}
	nrs := make([]NewRow, len(rows))
	for i := range rows {
		nrs[i] = NewRow{SourceID: rows[i].SourceID, Payload: rows[i].Payload}
	}
	v, _ := tx.w.enc.encode(first, rows[0].BatchID, rows[0].CreatedAt, nrs, false)
	if rows[0].StandIn {
		v[1] |= blockStandIn
	}
	if err := putBlock(tx.blocks, u64key(first), v); err != nil {
		return fmt.Errorf("wal %s: restore rows %d..%d: %w", tx.w.path, first, last, err)
	}
	// Before the rows are indexed: the pending index is the block's lane's.
	if err := tx.setBlockLane(first, lane); err != nil {
		return err
	}
	for i := range rows {
		r := &rows[i]
		st := rowState{status: restStatus(r.Status), attempts: r.Attempts, updated: r.UpdatedAt, notBefore: r.NotBefore, reason: r.Reason}
		var err error
		switch st.status {
		case StatusAcked:
			err = tx.putIndexed(r.ID, &st, tx.acked, tsKey(r.UpdatedAt, r.ID))
		case StatusDead:
			err = tx.putDead(r.ID, &st, deadGap[r.ID])
		case StatusReceived:
			// At rest PENDING, with a state entry only when it differs
			// from a fresh row's (the time is its run's).
			st.status = StatusPending
			if st.attempts != 0 || st.notBefore != 0 || st.reason != "" {
				err = tx.putState(r.ID, &st)
			}
			if err == nil {
				b := r.BatchID
				if claims != nil {
					if c, ok := claims.out[r.ID]; ok {
						b = c
					}
				}
				err = tx.recv.add(run{start: r.ID, end: r.ID, batch: b, at: r.UpdatedAt})
				tx.ctr.add(StatusReceived, 1)
			}
		default:
			if st == (rowState{status: StatusPending, updated: r.CreatedAt}) {
				err = tx.pend.add(run{start: r.ID, end: r.ID}) // a fresh row: no state entry
				tx.ctr.add(StatusPending, 1)
			} else {
				err = tx.putPending(r.ID, &st, now)
			}
		}
		if err == nil {
			err = tx.restoreClaim(r.ID, claims)
		}
		if err != nil {
			return err
		}
		tx.ctr.payloadBytes += int64(len(r.Payload))
	}
	tx.nextRow = max(tx.nextRow, last+1)
	tx.nextBatch = max(tx.nextBatch, rows[len(rows)-1].BatchID+1)
	tx.dirty = true
	return nil
}

// salvageKeys returns the keys that open the source of a salvage: the
// clear ones for a clear source (or one whose meta was lost), else those
// enc's key matches, refusing with ErrKey when it matches none.
func salvageKeys(seal []byte, enc Encryption, src string) (*keyring, error) {
	if seal == nil {
		return plainKeys, nil
	}
	es, err := parseSealMeta(seal)
	if err != nil {
		return nil, fmt.Errorf("salvage wal %s: %w", src, err)
	}
	if len(enc.Key) == 0 {
		return nil, fmt.Errorf("salvage wal %s: the WAL is encrypted and no key was given: give --key-file (or set "+
			"queue.encryption.key-file): %w", src, ErrKey)
	}
	kr, ok, err := buildKeyring(es, enc.Key, enc.NextKey)
	if err != nil {
		return nil, fmt.Errorf("salvage wal %s: %w", src, err)
	}
	if !ok {
		return nil, fmt.Errorf("salvage wal %s: the WAL is encrypted with another key than the one of %s (or with two: "+
			"a rotation left unfinished, which `%s` finishes first): %w", src, enc.keyName(), RekeyCommand(src), ErrKey)
	}
	return kr, nil
}
