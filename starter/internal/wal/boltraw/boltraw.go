// Package boltraw reads bbolt files without bbolt, for salvaging a
// damaged one: every page id, offset, length and count is checked against
// the page and the file before it is used, and pages are read with
// ReadAt, never through a memory mapping, so no file can make it panic or
// fault. Walk follows the B-trees from a meta page and reports what it
// cannot read as Damage; the page helpers let a caller scan pages the
// tree no longer reaches.
//
// The page format is bbolt's, pinned to the minor version FormatVersion
// names: bbolt does not promise it, so a test fails when go.mod moves to
// another minor version and the reader must be checked against it. bbolt
// writes in the host's byte order; so does this reader.
package boltraw

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"strings"
)

var native = binary.NativeEndian

const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	PageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	boltElemSize     = 16 // branch: pos, ksize, pgid; leaf: flags, pos, ksize, vsize
	BranchPageFlag   = 0x01
	LeafPageFlag     = 0x02
	boltFreelistFlag = 0x10
	BucketLeafFlag   = 0x01 // leaf element flag: the value is a bucket
	BucketHeaderSize = 16   // root pgid u64, sequence u64
	metaSumOffset    = 56   // the meta's FNV-64a covers the bytes before it
	boltNoFreelist   = math.MaxUint64
	// maxTreeDepth and maxBucketDepth bound the walk: a sound WAL is a few
	// levels deep with buckets nested twice (blocks/<first id>, and
	// positions/<input> in files of the previous schema), so deeper means
	// a cycle or garbage, not data.
	maxTreeDepth   = 64
	maxBucketDepth = 8
	// MinPageSize and MaxPageSize bound the page size read from a meta page.
	MinPageSize = 512
	MaxPageSize = 1 << 20
)

// Meta is the part of a bbolt meta page the walk needs.
type Meta struct {
	PageSize uint64
	Root     uint64 // page of the root bucket (never inline)
	Freelist uint64 // boltNoFreelist when not written (Options.NoFreelistSync)
	HWM      uint64 // pages in use: ids below it
	TxID     uint64
}

// parseMeta validates a meta page as bbolt does (magic, version, checksum).
func parseMeta(pg []byte) (Meta, bool) {
	if len(pg) < PageHeaderSize+metaSumOffset+8 {
		return Meta{}, false
	}
	m := pg[PageHeaderSize:]
	if native.Uint32(m) != boltMagic || native.Uint32(m[4:]) != boltVersion {
		return Meta{}, false
	}
	h := fnv.New64a()
	_, _ = h.Write(m[:metaSumOffset])
	if h.Sum64() != native.Uint64(m[metaSumOffset:]) {
		return Meta{}, false
	}
	return Meta{PageSize: uint64(native.Uint32(m[8:])), Root: native.Uint64(m[16:]),
		Freelist: native.Uint64(m[32:]), HWM: native.Uint64(m[40:]), TxID: native.Uint64(m[48:])}, true
}

// ErrNoMeta: neither meta page of the file is valid; bbolt cannot open it
// and nothing says where the tree starts.
var ErrNoMeta = errors.New("no valid bbolt meta page")

// ReadMeta returns the meta page bbolt would use: the valid one with the
// higher transaction id. Meta 0 is at offset 0; meta 1 one page later, so
// when meta 0 is unreadable its page size is found by trying each.
func ReadMeta(r io.ReaderAt, size int64) (Meta, error) {
	metas, err := ReadMetas(r, size)
	if err != nil {
		return Meta{}, err
	}
	return metas[0], nil
}

// ReadMetas returns the valid meta pages, the one bbolt uses first: the
// higher transaction id.
func ReadMetas(r io.ReaderAt, size int64) ([]Meta, error) {
	buf := make([]byte, PageHeaderSize+metaSumOffset+8)
	read := func(off int64) (Meta, bool) {
		if off+int64(len(buf)) > size {
			return Meta{}, false
		}
		if _, err := r.ReadAt(buf, off); err != nil {
			return Meta{}, false
		}
		return parseMeta(buf)
	}
	var metas []Meta
	m0, ok0 := read(0)
	if ok0 && ValidPageSize(m0.PageSize) {
		metas = append(metas, m0)
	}
	for ps := uint64(MinPageSize); ps <= MaxPageSize; ps *= 2 {
		if len(metas) == 1 && ps != m0.PageSize {
			continue
		}
		if m, ok := read(int64(ps)); ok && m.PageSize == ps {
			metas = append(metas, m)
			break
		}
	}
	if len(metas) == 0 {
		return nil, ErrNoMeta
	}
	if len(metas) == 2 && metas[1].TxID > metas[0].TxID {
		metas[0], metas[1] = metas[1], metas[0]
	}
	return metas, nil
}

func ValidPageSize(ps uint64) bool {
	return ps >= MinPageSize && ps <= MaxPageSize && ps&(ps-1) == 0
}

// Damage is one structural problem of a bbolt file: a page that cannot
// be read or whose content contradicts the B-tree.
type Damage struct {
	// Page is the bbolt page id, 0 when the problem is not one page's.
	Page uint64
	// Bucket is the bucket path, e.g. "blocks" or "positions/app"; empty
	// for the root and the file itself.
	Bucket string
	What   string
}

func (d Damage) String() string {
	var b strings.Builder
	if d.Page != 0 {
		fmt.Fprintf(&b, "page %d", d.Page)
	}
	if d.Bucket != "" {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "(bucket %s)", d.Bucket)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(d.What)
	return b.String()
}

// Visitor receives every key/value of every bucket the walk reaches, in
// key order within a bucket. bucket is the path of bucket names; page is
// the leaf page (0 for an inline bucket). key and value are only valid
// during the call (the walk reuses its page buffers).
type Visitor func(bucket [][]byte, key, value []byte, page uint64)

// Walk walks the B-trees of one bbolt file from its meta page.
type Walk struct {
	r    io.ReaderAt
	size int64
	meta Meta
	ps   uint64

	Seen   map[uint64]bool // pages referenced so far (bbolt: "multiple references")
	freed  map[uint64]bool // pages of the freelist page, when the file has one
	Damage []Damage
	// maxDamage stops recording (not walking) after this many; 0: no limit.
	MaxDamage int
	Dropped   int

	// bufs[level] holds the page being walked at each level of the walk's
	// recursion (a page's keys bound its children's, so a level's page
	// stays in use until its subtree is done): one buffer per level for
	// the whole walk instead of one allocation per page.
	bufs  [][]byte
	level int

	Visit Visitor // nil: check only
	// enter says whether to walk a bucket reached at path; nil: all.
	Enter func(path [][]byte) bool
}

func NewWalk(r io.ReaderAt, size int64, meta Meta) *Walk {
	return &Walk{r: r, size: size, meta: meta, ps: meta.PageSize, Seen: map[uint64]bool{0: true, 1: true}}
}

func (w *Walk) add(pg uint64, path [][]byte, f string, a ...any) {
	if w.MaxDamage > 0 && len(w.Damage) >= w.MaxDamage {
		w.Dropped++
		return
	}
	w.Damage = append(w.Damage, Damage{Page: pg, Bucket: bucketName(path), What: fmt.Sprintf(f, a...)})
}

func bucketName(path [][]byte) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = printableKey(p)
	}
	return strings.Join(parts, "/")
}

// printableKey shows a key as text when it is plain ASCII, else as hex.
func printableKey(k []byte) string {
	for _, c := range k {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("%x", k)
		}
	}
	return string(k)
}

// run checks the file level, the freelist page if there is one, and walks
// the whole tree from the root.
func (w *Walk) Run() {
	if !ValidPageSize(w.ps) {
		w.add(0, nil, "meta page size %d is not a bbolt page size", w.ps)
		return
	}
	filePages := uint64(w.size) / w.ps
	if w.meta.HWM > filePages {
		w.add(0, nil, "the file is %d bytes, shorter than the %d pages of %d bytes its meta page counts: truncated",
			w.size, w.meta.HWM, w.ps)
	}
	if w.meta.Freelist != boltNoFreelist {
		w.checkFreelist()
	}
	w.walkTree(w.meta.Root, nil, 0, nil, nil)
}

// readPage reads page id with its overflow pages after checking that it is
// a page of the tree: inside the used range and the file, self-identifying
// as id, a branch or leaf page, and referenced only once.
func (w *Walk) ReadPage(id uint64, path [][]byte) ([]byte, bool) {
	switch {
	case id < 2:
		w.add(id, path, "a meta page is referenced as a tree page")
		return nil, false
	case id >= w.meta.HWM:
		w.add(id, path, "page id beyond the %d pages in use", w.meta.HWM)
		return nil, false
	case id > uint64(w.size)/w.ps-1:
		w.add(id, path, "page lies beyond the end of the file (%d bytes): truncated", w.size)
		return nil, false
	}
	if w.Seen[id] {
		w.add(id, path, "page referenced twice")
		return nil, false
	}
	if w.freed[id] {
		w.add(id, path, "page is in the tree and on the freelist")
		return nil, false
	}
	for len(w.bufs) <= w.level {
		w.bufs = append(w.bufs, nil)
	}
	if uint64(cap(w.bufs[w.level])) < w.ps {
		w.bufs[w.level] = make([]byte, w.ps)
	}
	// One read for the usual page without overflow.
	pg := w.bufs[w.level][:w.ps]
	if _, err := w.r.ReadAt(pg, int64(id*w.ps)); err != nil {
		w.add(id, path, "read: %v", err)
		return nil, false
	}
	if got := native.Uint64(pg); got != id {
		w.add(id, path, "page identifies as %d", got)
		return nil, false
	}
	flags := native.Uint16(pg[8:])
	if flags != BranchPageFlag && flags != LeafPageFlag {
		w.add(id, path, "not a branch or leaf page (flags %#x)", flags)
		return nil, false
	}
	overflow := uint64(native.Uint32(pg[12:]))
	if id+overflow >= w.meta.HWM || (id+overflow+1)*w.ps > uint64(w.size) {
		w.add(id, path, "%d overflow pages run past the pages in use or the file", overflow)
		return nil, false
	}
	for i := id; i <= id+overflow; i++ {
		if w.Seen[i] {
			w.add(id, path, "overflow page %d referenced twice", i)
			return nil, false
		}
	}
	for i := id; i <= id+overflow; i++ {
		w.Seen[i] = true
	}
	if overflow > 0 {
		n := (overflow + 1) * w.ps
		if uint64(cap(w.bufs[w.level])) < n {
			w.bufs[w.level] = make([]byte, n)
		}
		pg = w.bufs[w.level][:n]
		if _, err := w.r.ReadAt(pg, int64(id*w.ps)); err != nil {
			w.add(id, path, "read: %v", err)
			return nil, false
		}
	}
	return pg, true
}

// elements returns the element count of page pg after checking that the
// elements fit in it.
func Elements(pg []byte) (int, bool) {
	n := int(native.Uint16(pg[10:]))
	return n, PageHeaderSize+n*boltElemSize <= len(pg)
}

// leafElem returns key and value of element i of a leaf page (or inline
// bucket page) pg, checked to lie inside pg.
func LeafElem(pg []byte, i int) (flags uint32, key, val []byte, ok bool) {
	e := PageHeaderSize + i*boltElemSize
	flags = native.Uint32(pg[e:])
	pos, ks, vs := uint64(native.Uint32(pg[e+4:])), uint64(native.Uint32(pg[e+8:])), uint64(native.Uint32(pg[e+12:]))
	start := uint64(e) + pos
	if start+ks+vs > uint64(len(pg)) {
		return 0, nil, nil, false
	}
	return flags, pg[start : start+ks], pg[start+ks : start+ks+vs], true
}

// branchElem returns key and child page of element i of branch page pg.
func branchElem(pg []byte, i int) (key []byte, child uint64, ok bool) {
	e := PageHeaderSize + i*boltElemSize
	pos, ks := uint64(native.Uint32(pg[e:])), uint64(native.Uint32(pg[e+4:]))
	child = native.Uint64(pg[e+8:])
	start := uint64(e) + pos
	if start+ks > uint64(len(pg)) {
		return nil, 0, false
	}
	return pg[start : start+ks], child, true
}

// walkTree walks the subtree at page id of the bucket at path. Its keys
// must lie in [minKey, maxKey) (nil: unbounded), the order bbolt's own
// check demands; it returns the subtree's highest key (nil when unknown),
// as bbolt's check carries it to the next sibling.
func (w *Walk) walkTree(id uint64, path [][]byte, depth int, minKey, maxKey []byte) []byte {
	if depth > maxTreeDepth {
		w.add(id, path, "B-tree deeper than %d levels", maxTreeDepth)
		return nil
	}
	w.level++
	defer func() { w.level-- }()
	pg, ok := w.ReadPage(id, path)
	if !ok {
		return nil
	}
	n, ok := Elements(pg)
	if !ok {
		w.add(id, path, "%d elements do not fit in the page", n)
		return nil
	}
	if native.Uint16(pg[8:]) == BranchPageFlag {
		if n == 0 {
			w.add(id, path, "branch page without elements")
			return nil
		}
		running := minKey
		var last []byte
		for i := range n {
			key, child, ok := branchElem(pg, i)
			if !ok {
				w.add(id, path, "branch element %d points outside the page", i)
				return last
			}
			w.checkOrder(id, path, i, key, running, maxKey)
			upper := maxKey
			if i < n-1 {
				if next, _, ok := branchElem(pg, i+1); ok {
					upper = next
				}
			}
			last = w.walkTree(child, path, depth+1, key, upper)
			running = last
		}
		return last
	}
	return w.walkLeaf(id, pg, n, path, minKey, maxKey, depth)
}

func (w *Walk) walkLeaf(id uint64, pg []byte, n int, path [][]byte, minKey, maxKey []byte, depth int) []byte {
	running := minKey
	var last []byte
	for i := range n {
		flags, key, val, ok := LeafElem(pg, i)
		if !ok {
			w.add(id, path, "leaf element %d points outside the page", i)
			continue
		}
		if id != 0 {
			w.checkOrder(id, path, i, key, running, maxKey)
		}
		running, last = key, key
		if flags&BucketLeafFlag != 0 {
			w.walkBucket(id, path, key, val, depth)
			continue
		}
		if w.Visit != nil {
			w.Visit(path, key, val, id)
		}
	}
	return bytes.Clone(last)
}

// checkOrder applies bbolt's key order rules to element i of page id.
func (w *Walk) checkOrder(id uint64, path [][]byte, i int, key, prev, maxKey []byte) {
	if prev != nil {
		c := bytes.Compare(prev, key)
		if (i == 0 && c > 0) || (i > 0 && c >= 0) {
			w.add(id, path, "key %x out of order after %x", key, prev)
		}
	}
	if maxKey != nil && bytes.Compare(key, maxKey) >= 0 {
		w.add(id, path, "key %x not below the parent's next key %x", key, maxKey)
	}
}

// walkBucket walks the nested bucket stored as value val under key at
// page id of the bucket at path.
func (w *Walk) walkBucket(id uint64, path [][]byte, key, val []byte, depth int) {
	child := append(append([][]byte(nil), path...), bytes.Clone(key))
	if len(child) > maxBucketDepth {
		w.add(id, path, "buckets nested deeper than %d", maxBucketDepth)
		return
	}
	if len(val) < BucketHeaderSize {
		w.add(id, child, "bucket header of %d bytes", len(val))
		return
	}
	if w.Enter != nil && !w.Enter(child) {
		return
	}
	root := native.Uint64(val)
	if root != 0 {
		w.walkTree(root, child, 0, nil, nil)
		return
	}
	// Inline bucket: a leaf page inside the value.
	pg := val[BucketHeaderSize:]
	if len(pg) < PageHeaderSize || native.Uint16(pg[8:]) != LeafPageFlag {
		w.add(id, child, "inline bucket without a leaf page")
		return
	}
	n, ok := Elements(pg)
	if !ok {
		w.add(id, child, "inline bucket: %d elements do not fit", n)
		return
	}
	w.walkLeaf(0, pg, n, child, nil, nil, depth+1)
}

// checkFreelist validates a freelist page (files bbolt wrote without
// NoFreelistSync): bbolt reads it at open, and a freed page that is in the
// tree would be handed out again and overwritten.
func (w *Walk) checkFreelist() {
	id := w.meta.Freelist
	if id < 2 || id >= w.meta.HWM || (id+1)*w.ps > uint64(w.size) {
		w.add(id, nil, "freelist page outside the file")
		return
	}
	head := make([]byte, PageHeaderSize+8)
	if _, err := w.r.ReadAt(head, int64(id*w.ps)); err != nil {
		w.add(id, nil, "Freelist: read: %v", err)
		return
	}
	overflow := uint64(native.Uint32(head[12:]))
	if native.Uint64(head) != id || native.Uint16(head[8:]) != boltFreelistFlag ||
		id+overflow >= w.meta.HWM || (id+overflow+1)*w.ps > uint64(w.size) {
		w.add(id, nil, "not a sound freelist page")
		return
	}
	pg := make([]byte, (overflow+1)*w.ps)
	if _, err := w.r.ReadAt(pg, int64(id*w.ps)); err != nil {
		w.add(id, nil, "Freelist: read: %v", err)
		return
	}
	count, first := uint64(native.Uint16(pg[10:])), uint64(PageHeaderSize)
	if count == 0xFFFF {
		count, first = native.Uint64(pg[PageHeaderSize:]), PageHeaderSize+8
	}
	if count > (uint64(len(pg))-first)/8 {
		w.add(id, nil, "freelist of %d ids does not fit its page", count)
		return
	}
	for i := id; i <= id+overflow; i++ {
		w.Seen[i] = true
	}
	w.freed = make(map[uint64]bool, count)
	for i := range count {
		f := native.Uint64(pg[first+8*i:])
		if f < 2 || f >= w.meta.HWM || w.freed[f] {
			w.add(id, nil, "freelist holds page %d twice or out of range", f)
			continue
		}
		w.freed[f] = true
	}
}

// FormatVersion is the bbolt minor version whose page format this reader
// was checked against.
const FormatVersion = "v1.5"

// PageHeader returns the id, flags and overflow count of the page header
// at the start of pg, which must hold PageHeaderSize bytes.
func PageHeader(pg []byte) (id uint64, flags uint16, overflow uint64) {
	return native.Uint64(pg), native.Uint16(pg[8:]), uint64(native.Uint32(pg[12:]))
}

// BucketRoot is the root page of the bucket whose header starts value v
// (BucketHeaderSize bytes); 0 for an inline bucket, whose leaf page
// follows the header.
func BucketRoot(v []byte) uint64 { return native.Uint64(v) }

// GuessPageSize finds the page size of a bbolt file without meta pages:
// the size at which the most of the first pages carry their own id in
// their header, 0 when none does.
func GuessPageSize(r io.ReaderAt, size int64) uint64 {
	const probePages = 64
	head := make([]byte, PageHeaderSize)
	best, bestN := uint64(0), 0
	for ps := uint64(MinPageSize); ps <= MaxPageSize; ps *= 2 {
		n := 0
		for id := uint64(2); id < probePages && (id+1)*ps <= uint64(size); id++ {
			if _, err := r.ReadAt(head, int64(id*ps)); err == nil {
				if got, fl, _ := PageHeader(head); got == id && (fl == LeafPageFlag || fl == BranchPageFlag) {
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
