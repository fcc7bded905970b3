package wal

import (
	"cmp"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// fileRange is a page-aligned range of the WAL file.
type fileRange struct{ off, end int64 }

// noteFreed records the pages of the block stored in bucket b, which this
// transaction is about to delete, so that once the commit is on disk they
// leave the page cache (dropFreed). A block bucket holds one value and is
// never changed after its commit, so its root is the leaf page holding
// the block, followed by the page's overflow pages: bbolt's Bucket.Root
// and Tx.Page tell where they are. A block with no page of its own (root
// 0: stored inline in the blocks bucket's leaf, or put earlier in this
// transaction and still in bbolt's memory) is skipped.
func (tx *Tx) noteFreed(b *bolt.Bucket) {
	if b == nil || !tx.w.opts.Fsync {
		return
	}
	root := int(b.Root())
	if root == 0 {
		return
	}
	info, err := tx.btx.Page(root)
	if err != nil || info == nil || info.Type != "leaf" {
		return // not the page this expects: dropping nothing only costs writes
	}
	ps := int64(tx.btx.DB().Info().PageSize)
	off := int64(root) * ps
	tx.freed = append(tx.freed, fileRange{off, off + int64(1+info.OverflowCount)*ps})
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
