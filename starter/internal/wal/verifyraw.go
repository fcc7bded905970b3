package wal

import (
	"errors"
	"fmt"
	"os"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Verify of a damaged file. bbolt's own check (Tx.Check) runs in a
// goroutine of its own and panics there on some damage, which would end
// the process, so Verify walks the file with the reader of boltfile.go
// instead; when that walk finds the tree damaged, the row checks are made
// on what the walk could read, without bbolt (whose cursors would panic,
// recoverably but ending the check, on the damaged pages).

// snapshotMeta is the meta page of the state btx reads. The file's meta
// page of btx's transaction gives the free list page too; when a commit
// has overwritten it since, root and size come from btx itself (the
// pages btx reads stay untouched while it is open).
func snapshotMeta(btx *bolt.Tx, f *os.File, size int64) boltMeta {
	if m, err := readMeta(f, size); err == nil && m.txid == uint64(btx.ID()) {
		return m
	}
	ps := uint64(btx.DB().Info().PageSize)
	return boltMeta{pageSize: ps, root: uint64(btx.Cursor().Bucket().RootPage()),
		freelist: boltNoFreelist, hwm: uint64(btx.Size()) / ps, txid: uint64(btx.ID())}
}

// rawCheck walks the file at path from meta (nil: the file's current meta
// page). It returns the structural damage and the problems of the rows it
// could read: undecodable values, checksum failures, malformed keys.
// maxDamage bounds the damage recorded (0: all).
func rawCheck(path string, meta *boltMeta, btx *bolt.Tx, maxDamage int) (damage []Damage, rows []Problem, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	var m boltMeta
	switch {
	case meta != nil:
		m = *meta
	case btx != nil:
		m = snapshotMeta(btx, f, st.Size())
	default:
		if m, err = readMeta(f, st.Size()); err != nil {
			return []Damage{{What: "neither meta page is valid: the file header is damaged or this is not a bbolt file"}}, nil, nil
		}
	}
	walk := newTreeWalk(f, st.Size(), m)
	walk.maxDamage = maxDamage
	walk.visit = func(bucket [][]byte, key, value []byte, page uint64) {
		if k, v, ok := blockVisit(bucket, key, value); ok {
			id, ok := keyID(k)
			if !ok {
				rows = append(rows, Problem{What: fmt.Sprintf("page %d: malformed block key %x", page, k)})
				return
			}
			// Whether its rows are already DEAD for it is in the
			// indexes, which a damaged tree does not give reliably.
			if b := decodeBlock(id, v); b.err != nil {
				rows = append(rows, Problem{RowID: id, What: fmt.Sprintf("page %d: %v", page, b.err)})
			}
			return
		}
		if len(bucket) != 1 {
			return
		}
		switch string(bucket[0]) {
		case string(bucketBlocks):
			id, _ := keyID(key)
			rows = append(rows, Problem{RowID: id, What: fmt.Sprintf("page %d: blocks entry %x is a value, not a block's bucket", page, key)})
		case string(bucketRows): // a schema-2 file, or one being converted
			id, ok := keyID(key)
			if !ok {
				rows = append(rows, Problem{What: fmt.Sprintf("page %d: malformed row key %x", page, key)})
				return
			}
			r, crc, err := decodeRow(id, value)
			if err != nil {
				rows = append(rows, Problem{RowID: id, What: fmt.Sprintf("page %d: %v", page, err)})
				return
			}
			if payloadCRC(r.Payload) != crc && !quarantined(&r) {
				rows = append(rows, Problem{RowID: id, What: fmt.Sprintf("page %d: payload checksum mismatch (status %s)", page, r.Status)})
			}
		}
	}
	walk.run()
	damage = walk.damage
	if walk.dropped > 0 {
		damage = append(damage, Damage{What: fmt.Sprintf("... and %d more", walk.dropped)})
	}
	return damage, rows, nil
}

// quarantined: a row Claim moved to DEAD for a bad checksum or an
// undecodable value; its checksum fails by design.
func quarantined(r *Row) bool {
	return r.Status == StatusDead && quarantinedReason(r.Reason)
}

func quarantinedReason(reason string) bool {
	return reason == ReasonChecksum || strings.HasPrefix(reason, reasonUndecodable)
}

// damageProblems turns a damaged walk into Verify's problems: the damage,
// the row problems the walk found, and what was not checked.
func damageProblems(path string, damage []Damage, rows []Problem) []Problem {
	out := make([]Problem, 0, len(damage)+len(rows)+1)
	for _, d := range damage {
		out = append(out, Problem{What: "damaged: " + d.String()})
	}
	out = append(out, rows...)
	return append(out, Problem{What: fmt.Sprintf("indexes and counters not checked: the B-tree is damaged; "+
		"copy what is readable into a new file with `%s`", SalvageCommand(path))})
}

// Verify runs ReadTx.Verify in a read transaction and returns the
// problems and the counters. When bbolt cannot even start on the file (a
// damaged root, meta bucket or mapping: the read fails with ErrCorrupt),
// it checks the file without bbolt and reports its damage instead;
// counters are then zero.
func (w *WAL) Verify(max int) ([]Problem, Counts, error) {
	var problems []Problem
	var counts Counts
	err := w.View(func(tx *ReadTx) error {
		problems, counts = tx.Verify(max), tx.Counts()
		return nil
	})
	if !errors.Is(err, ErrCorrupt) {
		return problems, counts, err
	}
	viewErr := err
	var damage []Damage
	var rows []Problem
	check := func() (err error) {
		damage, rows, err = rawCheck(w.path, nil, nil, max)
		return err
	}
	// No commit of this process during the walk; bbolt's lock keeps
	// other processes out.
	w.wmu.Lock()
	err = check()
	w.wmu.Unlock()
	if err != nil {
		return nil, Counts{}, fmt.Errorf("verify wal %s: %w", w.path, err)
	}
	if len(damage) == 0 {
		// bbolt failed where the walk found nothing: report bbolt's words.
		damage = []Damage{{What: fmt.Sprintf("bbolt cannot read the file: %v", viewErr)}}
	}
	return clip(damageProblems(w.path, damage, rows), max), Counts{}, nil
}

func clip(p []Problem, max int) []Problem {
	if max > 0 && len(p) > max {
		return p[:max]
	}
	return p
}
