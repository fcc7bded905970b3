package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"
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
	// Rows counts the rows copied per status at rest (SENDING rows are
	// copied as PENDING, as every start does with them).
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
// the checked reader of boltfile.go only (never through bbolt, never
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
	metas, err := readMetas(f, st.Size())
	headless := err != nil
	var meta boltMeta
	var skipped []Damage
	if headless {
		// Both meta pages are gone: nothing says where the tree starts,
		// but the pages may still be there. Every page is scanned for rows.
		ps := guessPageSize(f, st.Size())
		if ps == 0 {
			return rep, fmt.Errorf("salvage wal %s: neither bbolt meta page is valid and no bbolt page was found: %w", src, ErrNotWAL)
		}
		meta = boltMeta{pageSize: ps, hwm: uint64(st.Size()) / ps}
		skipped = []Damage{{What: fmt.Sprintf("neither meta page is valid (the file header is damaged): the tree cannot be walked; "+
			"the rows were looked for on every page of %d bytes; positions and the agent's metadata are lost", ps)}}
	} else {
		meta, skipped = pickState(f, st.Size(), metas, &rep)
	}
	s := &salvager{rep: &rep, now: opts.Now().UnixMilli(), copied: map[uint64]bool{}}
	// First the meta bucket alone: the id allocators decide which row keys
	// are plausible before any row is read.
	if !headless {
		first := newTreeWalk(f, st.Size(), meta)
		first.enter = func(path [][]byte) bool { return len(path) == 1 && bytes.Equal(path[0], bucketMeta) }
		first.visit = s.visitMeta
		first.run()
	}

	if !opts.DryRun {
		s.out, err = Open(Options{Path: dst, Fsync: opts.Fsync, Now: opts.Now, Logger: opts.Logger})
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
	walk := newTreeWalk(f, st.Size(), meta)
	if !headless {
		walk.visit = s.visit
		walk.run()
	}
	rep.Damage = append(skipped, walk.damage...)
	if len(rep.Damage) > 0 {
		// Pages up to the newest state's end: an older state's page count
		// stops short of the pages the lost commits wrote.
		hwm := meta.hwm
		for _, m := range metas {
			hwm = max(hwm, m.hwm)
		}
		s.scan(f, st.Size(), meta.pageSize, hwm, walk.seen)
	}
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
func pickState(f io.ReaderAt, size int64, metas []boltMeta, rep *SalvageReport) (boltMeta, []Damage) {
	meta := metas[0]
	var skipped []Damage
	for i, m := range metas {
		probe := newTreeWalk(f, size, m)
		if _, ok := probe.readPage(m.root, nil); ok {
			meta, rep.OlderState = m, i > 0
			break
		}
		skipped = append(skipped, Damage{Page: m.root, What: fmt.Sprintf(
			"the root page of transaction %d cannot be read (%s)", m.txid, probe.damage[0].What)})
	}
	if !rep.OlderState {
		return meta, nil
	}
	// bbolt keeps the previous transaction's pages intact until the next
	// commit, so its state is whole and consistent: what the last commit
	// changed is lost (rows appended with their positions: the inputs read
	// them again; acks: those rows are sent again).
	skipped[0].What += fmt.Sprintf("; read the previous transaction %d instead: the last commit's changes are lost", meta.txid)
	return meta, skipped
}

// guessPageSize finds the page size of a bbolt file without meta pages:
// the size at which the most of the first pages carry their own id in
// their header, 0 when none does.
func guessPageSize(r io.ReaderAt, size int64) uint64 {
	const probePages = 64
	head := make([]byte, boltPageHeader)
	best, bestN := uint64(0), 0
	for ps := uint64(minBoltPage); ps <= maxBoltPage; ps *= 2 {
		n := 0
		for id := uint64(2); id < probePages && (id+1)*ps <= uint64(size); id++ {
			if _, err := r.ReadAt(head, int64(id*ps)); err == nil && native.Uint64(head) == id {
				if fl := native.Uint16(head[8:]); fl == boltLeafFlag || fl == boltBranchFlag {
					n++
				}
			}
		}
		if n > bestN {
			best, bestN = ps, n
		}
	}
	return best
}

type salvager struct {
	rep *SalvageReport
	out *WAL // nil: dry run
	now int64

	srcNextRow   uint64
	srcNextBatch int64
	srcCtr       counters
	lastID       uint64 // highest row id kept so far
	copied       map[uint64]bool
	maxScanned   uint64

	batch      []Row
	renumber   []Row // damaged keys, copied last under new ids
	renumKeys  []RenumberedRow
	positions  []PositionUpdate
	appMeta    map[string][]byte
	writeError error
}

func (s *salvager) visitMeta(bucket [][]byte, key, value []byte, _ uint64) {
	switch string(key) {
	case metaNextRowID:
		if len(value) == 8 {
			s.srcNextRow = binary.BigEndian.Uint64(value)
		}
	case metaNextBatchID:
		if len(value) == 8 {
			s.srcNextBatch = int64(binary.BigEndian.Uint64(value))
		}
	case metaCounters:
		s.srcCtr.decode(value)
	}
}

func (s *salvager) visit(bucket [][]byte, key, value []byte, page uint64) {
	switch {
	case len(bucket) == 1 && bytes.Equal(bucket[0], bucketRows):
		s.row(key, value, page)
	case len(bucket) == 1 && bytes.Equal(bucket[0], bucketApp):
		if s.appMeta == nil {
			s.appMeta = map[string][]byte{}
		}
		s.appMeta[string(key)] = bytes.Clone(value)
	case len(bucket) == 2 && bytes.Equal(bucket[0], bucketPositions):
		s.positions = append(s.positions, PositionUpdate{SourceID: string(bucket[1]), Key: string(key), State: bytes.Clone(value)})
	}
}

func (s *salvager) row(key, value []byte, page uint64) {
	id, keyOK := keyID(key)
	r, crc, err := decodeRow(id, value)
	if err != nil {
		s.rep.BadRows = append(s.rep.BadRows, Problem{RowID: id, What: fmt.Sprintf("key %x, page %d: %v", key, page, err)})
		return
	}
	if payloadCRC(r.Payload) != crc {
		what := "payload checksum mismatch"
		if quarantined(&r) {
			what = "already DEAD for a bad checksum or value (" + r.Reason + ")"
		}
		s.rep.BadRows = append(s.rep.BadRows, Problem{RowID: id, What: fmt.Sprintf("key %x, page %d: %s", key, page, what)})
		return
	}
	r.Payload = bytes.Clone(r.Payload)
	// A key is the row's own when it is well formed, in order and below
	// the allocator; anything else is a damaged key, and its row goes in
	// under a new id.
	if !keyOK || id == 0 || id <= s.lastID || (s.srcNextRow != 0 && id >= s.srcNextRow) {
		s.renumber = append(s.renumber, r)
		s.renumKeys = append(s.renumKeys, RenumberedRow{Key: bytes.Clone(key), Page: page})
		return
	}
	s.lastID = id
	s.copied[id] = true
	s.add(r)
}

func (s *salvager) add(r Row) {
	s.rep.Rows[restStatus(r.Status)]++
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
	s.writeError = s.out.Update(func(tx *Tx) error {
		for i := range batch {
			if err := tx.restore(&batch[i], s.now); err != nil {
				return err
			}
		}
		return nil
	})
}

// scan reads every page of the file the tree walk did not reach and
// collects the rows of the leaf pages that hold nothing but sound rows
// (8-byte keys, values that decode and pass their checksum): the rows of
// subtrees a damaged page cut off, or of a lost root. Ids the tree gave
// already, or at or above the source's next_row_id (unless that comes
// from an older state), are skipped; of several copies of one id the most
// recently updated wins.
func (s *salvager) scan(r io.ReaderAt, size int64, ps, hwm uint64, seen map[uint64]bool) {
	if !validPageSize(ps) {
		return
	}
	limit := min(hwm, uint64(size)/ps)
	found := map[uint64]Row{}
	head := make([]byte, boltPageHeader)
	for id := uint64(2); id < limit; id++ {
		if seen[id] {
			continue
		}
		if _, err := r.ReadAt(head, int64(id*ps)); err != nil {
			continue
		}
		overflow := uint64(native.Uint32(head[12:]))
		if native.Uint64(head) != id || native.Uint16(head[8:]) != boltLeafFlag || id+overflow >= limit {
			continue
		}
		pg := make([]byte, (overflow+1)*ps)
		if _, err := r.ReadAt(pg, int64(id*ps)); err != nil {
			continue
		}
		rows, ok := rowsLeaf(pg)
		if !ok {
			continue
		}
		for _, row := range rows {
			// An older state's allocator does not know the ids of the lost
			// commit, which are what the scan is after.
			if s.copied[row.ID] || (!s.rep.OlderState && s.srcNextRow != 0 && row.ID >= s.srcNextRow) {
				continue
			}
			if prev, dup := found[row.ID]; !dup || row.UpdatedAt > prev.UpdatedAt {
				found[row.ID] = row
			}
		}
	}
	ids := make([]uint64, 0, len(found))
	for id := range found {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		s.rep.Scanned++
		s.maxScanned = max(s.maxScanned, id)
		s.add(found[id])
	}
}

// rowsLeaf returns the rows of leaf page pg when every element is a sound
// row of the rows bucket (so that pages of the indexes, positions and
// meta, whose values are no rows, are never taken for rows).
func rowsLeaf(pg []byte) ([]Row, bool) {
	n, ok := elements(pg)
	if !ok || n == 0 {
		return nil, false
	}
	out := make([]Row, 0, n)
	for i := range n {
		flags, key, val, ok := leafElem(pg, i)
		if !ok || flags != 0 {
			return nil, false
		}
		id, ok := keyID(key)
		if !ok || id == 0 {
			return nil, false
		}
		r, crc, err := decodeRow(id, val)
		if err != nil || payloadCRC(r.Payload) != crc {
			return nil, false
		}
		r.Payload = bytes.Clone(r.Payload)
		out = append(out, r)
	}
	return out, true
}

// finish copies the renumbered rows, the positions and the metadata, and
// moves the id allocators past everything the source ever handed out.
func (s *salvager) finish() error {
	next := max(s.lastID, s.maxScanned, s.srcNextRow-min(s.srcNextRow, 1)) + 1
	for i := range s.renumber {
		s.renumber[i].ID = next
		s.renumKeys[i].NewID = next
		next++
		s.add(s.renumber[i])
	}
	s.rep.Renumbered = s.renumKeys
	s.rep.Positions, s.rep.AppMeta = len(s.positions), len(s.appMeta)
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
		tx.nextRow = max(tx.nextRow, s.srcNextRow, next)
		tx.nextBatch = max(tx.nextBatch, s.srcNextBatch)
		tx.ctr.checksumFailures += s.srcCtr.checksumFailures
		tx.dirty = true
		return nil
	})
}

// restore writes r, found by salvage, with its id, batch id, times,
// attempts and reason, into the index of its status at rest.
func (tx *Tx) restore(r *Row, now int64) error {
	k := u64key(r.ID)
	if tx.rows.Get(k) != nil {
		return fmt.Errorf("wal %s: restore row %d: the id is taken", tx.w.path, r.ID)
	}
	crc := payloadCRC(r.Payload)
	var err error
	switch restStatus(r.Status) {
	case StatusAcked:
		err = tx.put(r, crc, tx.acked, tsKey(r.UpdatedAt, r.ID))
	case StatusDead:
		err = tx.put(r, crc, tx.dead, k)
	default:
		err = tx.putPending(r, crc, now)
	}
	if err != nil {
		return err
	}
	tx.ctr.payloadBytes += int64(len(r.Payload))
	tx.nextRow = max(tx.nextRow, r.ID+1)
	tx.nextBatch = max(tx.nextBatch, r.BatchID+1)
	return nil
}
