package wal

import (
	"cmp"
	"slices"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// fileRange is a page-aligned range of the WAL file.
type fileRange struct{ off, end int64 }

// noteFreed records the pages of a block value this transaction deletes,
// v as bbolt returned it, so that once the commit is on disk they leave
// the page cache (dropFreed). Only a value on a committed page has a
// place in the file: one put earlier in this transaction lives in
// bbolt's memory and is skipped.
func (tx *Tx) noteFreed(v []byte) {
	if len(v) == 0 || !tx.w.opts.Fsync {
		return
	}
	base := tx.btx.DB().Info().Data
	p := uintptr(unsafe.Pointer(unsafe.SliceData(v)))
	size := uintptr(tx.btx.Size())
	if p < base || p+uintptr(len(v)) > base+size {
		return
	}
	ps := int64(tx.btx.DB().Info().PageSize)
	off := int64(p - base)
	tx.freed = append(tx.freed, fileRange{off &^ (ps - 1), (off + int64(len(v)) + ps - 1) &^ (ps - 1)})
}

// dropFreed drops the pages of deleted blocks from the mapping and the
// page cache once their deletion committed (with fsync on, so they are
// clean and dropping them writes nothing). A block is written with one
// write of all its pages, which the kernel caches as one large folio;
// bbolt later reuses those pages one at a time (a tree page, the root),
// and a one-page write into a cached large folio dirties, and writes
// back, the whole folio. Dropped, a reused page comes back as a folio of
// its own. The pages hold only deleted rows, so no read pays for it.
// Called with wmu held, after the commit.
func (w *WAL) dropFreed(db *bolt.DB, freed []fileRange) {
	if len(freed) == 0 || w.file == nil {
		return
	}
	slices.SortFunc(freed, func(a, b fileRange) int { return cmp.Compare(a.off, b.off) })
	merged := freed[:1]
	for _, r := range freed[1:] {
		if last := &merged[len(merged)-1]; r.off <= last.end {
			last.end = max(last.end, r.end)
			continue
		}
		merged = append(merged, r)
	}
	for _, r := range merged {
		// Unmapped first: the kernel keeps mapped pages in the cache.
		if dropRange(db, w.file, r.off, r.end-r.off) != nil {
			return // a failure only costs writes
		}
	}
}
