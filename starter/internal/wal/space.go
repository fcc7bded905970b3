package wal

import (
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/edge-agent/edge-agent/starter/internal/fsspace"
)

// spaceReserve is the disk space kept allocated in the WAL file past its
// last used page (Linux). bbolt copies every page it changes, so even a
// transaction that only deletes rows needs new pages before it frees any;
// on a full disk, without room held back, acks could never commit and a
// backlog could never drain. Appends stop short of the reserve (ErrNoSpace);
// acks, releases and claims may use it, and the pages they free take the
// appends again. 1 MiB covers the acks of many jobs: deleting rows dirties
// only the leaves at the edges of each deleted range and the branches
// above them.
const spaceReserve = 1 << 20

// usedSize is the file's high-water mark: the end of its last used page.
func usedSize(db *bolt.DB) (int64, bool) {
	var used int64
	if err := db.View(func(btx *bolt.Tx) error { used = btx.Size(); return nil }); err != nil {
		return 0, false
	}
	return used, true
}

// keepReserve re-allocates the reserve past the last used page (used)
// after a commit moved it. On a full disk it cannot, and appends wait
// until acks free pages in the file or the disk has room again. Called
// with wmu held.
func (w *WAL) keepReserve(used int64) {
	if w.file == nil {
		return
	}
	if used+spaceReserve <= w.reservedEnd {
		return
	}
	if err := allocate(w.file, used, spaceReserve); err != nil {
		if !w.reserveShort {
			w.reserveShort = true
			w.log.Warn("cannot keep the WAL's disk reserve; new rows are refused once it is used up, acks and deletes go on",
				"error", err.Error(), "reserve_bytes", spaceReserve)
		}
		return
	}
	w.reservedEnd = used + spaceReserve
	if w.reserveShort {
		w.reserveShort = false
		w.log.Info("WAL disk reserve restored", "reserve_bytes", spaceReserve)
	}
}

// diskAvail is the space left on the WAL's filesystem; ok=false when it
// cannot be told. A filesystem reporting a total of 0 (some FUSE and
// network filesystems) has an unknown size, not a full disk: there the
// WAL appends until a write fails with ENOSPC, as bbolt alone does.
func (w *WAL) diskAvail() (int64, bool) {
	stat := fsspace.Of
	if w.opts.statDisk != nil {
		stat = w.opts.statDisk
	}
	st, ok := stat(w.path)
	if !ok || st.Size <= 0 {
		return 0, false
	}
	return st.Avail, true
}

// roomFor refuses an append of about size bytes that would leave less than
// spaceReserve for the transactions that free space. Pages on bbolt's
// freelist and the allocated reserve count as room, as does free disk.
func (tx *Tx) roomFor(size int) error {
	avail, ok := tx.w.diskAvail()
	if !ok {
		return nil
	}
	db := tx.btx.DB()
	page := int64(db.Info().PageSize)
	// Leaves are split half full at worst; a few more pages for the
	// indexes, the counters and the branches above them.
	need := 2*int64(size) + 8*page
	slack := max(0, tx.w.reservedEnd-tx.btx.Size())
	free := int64(db.Stats().FreeAlloc)
	if avail+slack+free-need >= spaceReserve {
		return nil
	}
	return fmt.Errorf("wal %s: append of %d bytes would leave less than the %d bytes kept for acks (disk free %d, WAL free pages %d, reserve left %d): %w",
		tx.w.path, size, spaceReserve, avail, free, slack, ErrNoSpace)
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
