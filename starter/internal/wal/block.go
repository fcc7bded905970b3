package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"slices"

	"github.com/klauspost/compress/s2"
	bolt "go.etcd.io/bbolt"
)

// Block value layout (schemas 3 and 4). One Append stores its rows as one
// immutable block (several when it is bigger than blockMaxRaw), keyed by
// its first row id in the blocks bucket; row i of the block has row id
// first+i and batch id firstBatch+i. The mutable part of a row (status at
// rest, attempts, times, reason) lives in the state bucket, and only for
// rows that have any (codec.go): a fresh row costs its block bytes alone,
// and acking it with retention 0 writes nothing about the row itself.
//
//	off len field
//	0   1   format (1)
//	1   1   compression of the payload area: 0 none, 1 s2; the bit 0x80
//	        marks a block of stand-in rows (standin.go)
//	2   8   first row id    uint64 BE (the key: a damaged key is seen)
//	10  4   row count       uint32 BE
//	14  8   first batch id  int64  BE
//	22  8   created ms      int64  BE
//	30  4   crc32c of every byte after this field
//	34  ..  table: uvarint sources, (uvarint len, bytes) each; per row
//	        uvarint source index, uvarint payload length; then the
//	        payload area (the payloads back to back, compressed as said)
//
// The table stays uncompressed so that an ack can count the payload bytes
// it frees without decompressing. One CRC covers the whole stored block:
// the payloads are only ever read by decoding the block, so a per-row
// checksum would catch nothing more (only a bug between decompression
// and use) and cost 4 bytes and a pass over every payload.
const (
	blockFormat     = 1
	blockHeaderSize = 34
	compNone        = 0
	compS2          = 1
	// blockStandIn is the flag bit of byte 1 marking stand-in rows.
	blockStandIn = 0x80
	// blockMaxRaw bounds the payload bytes of one block: a bigger Append
	// is split, so that decoding a block for one row stays cheap and a
	// block is never near bbolt's value limit.
	blockMaxRaw = 1 << 20
	// blockMaxRows bounds the rows of one block for the same reason: a
	// Get or a List of one row decodes its whole block. The agent's
	// commit groups are about this size or smaller, so it rarely splits
	// one.
	blockMaxRows = 512
)

var errBlockDecode = errors.New("decode block")

// blockHeader is the fixed part of a block.
type blockHeader struct {
	first      uint64
	count      uint32
	firstBatch int64
	created    int64
	comp       byte
	crc        uint32
	standIn    bool // its rows are stand-ins (standin.go)
	sealed     bool // its payload area is sealed (seal.go)
}

func (h blockHeader) last() uint64 { return h.first + uint64(h.count) - 1 }

func parseBlockHeader(v []byte) (blockHeader, error) {
	if len(v) < blockHeaderSize {
		return blockHeader{}, fmt.Errorf("%w: value too short (%d bytes)", errBlockDecode, len(v))
	}
	if v[0] != blockFormat && v[0] != blockFormatSealed {
		return blockHeader{}, fmt.Errorf("%w: unknown block format %d", errBlockDecode, v[0])
	}
	h := blockHeader{
		sealed:     v[0] == blockFormatSealed,
		comp:       v[1] &^ blockStandIn,
		standIn:    v[1]&blockStandIn != 0,
		first:      binary.BigEndian.Uint64(v[2:]),
		count:      binary.BigEndian.Uint32(v[10:]),
		firstBatch: int64(binary.BigEndian.Uint64(v[14:])),
		created:    int64(binary.BigEndian.Uint64(v[22:])),
		crc:        binary.BigEndian.Uint32(v[30:]),
	}
	if h.count == 0 || h.count > blockMaxRows || h.first == 0 || h.first+uint64(h.count) < h.first {
		return blockHeader{}, fmt.Errorf("%w: bad row range %d+%d", errBlockDecode, h.first, h.count)
	}
	if h.comp != compNone && h.comp != compS2 {
		return blockHeader{}, fmt.Errorf("%w: unknown compression %d", errBlockDecode, h.comp)
	}
	return h, nil
}

// blockTable is the parsed table of a block.
type blockTable struct {
	sources []string
	src     []uint32 // per row: index into sources
	lens    []uint32 // per row: payload length
	rawLen  int      // sum of lens
	area    []byte   // the stored payload area (aliases the value)
}

// parseBlockTable parses the table after the header; it never panics on
// garbage (FuzzDecodeBlock).
func parseBlockTable(h blockHeader, v []byte) (blockTable, error) {
	rest := v[blockHeaderSize:]
	var t blockTable
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(h.count) || n > uint64(len(rest)) {
		return t, fmt.Errorf("%w: bad source count", errBlockDecode)
	}
	rest = rest[k:]
	t.sources = make([]string, n)
	for i := range t.sources {
		s, r, err := readString(rest)
		if err != nil {
			return t, fmt.Errorf("%w: source %d: %v", errBlockDecode, i, err)
		}
		t.sources[i], rest = s, r
	}
	t.src = make([]uint32, h.count)
	t.lens = make([]uint32, h.count)
	for i := range h.count {
		si, k := binary.Uvarint(rest)
		if k <= 0 || si >= uint64(len(t.sources)) {
			return t, fmt.Errorf("%w: row %d: bad source index", errBlockDecode, i)
		}
		rest = rest[k:]
		pl, k := binary.Uvarint(rest)
		if k <= 0 || pl > maxPayload || uint64(t.rawLen)+pl > blockMaxRaw+maxPayload {
			return t, fmt.Errorf("%w: row %d: bad payload length", errBlockDecode, i)
		}
		rest = rest[k:]
		t.src[i], t.lens[i] = uint32(si), uint32(pl)
		t.rawLen += int(pl)
	}
	t.area = rest
	return t, nil
}

// block is a decoded block: what Claim, Get and List read rows from.
// Blocks are immutable and row ids are never reused, so a decoded block
// stays right for as long as it is kept (blockCache).
type block struct {
	blockHeader
	sources []string
	src     []uint32
	offs    []int  // per row + 1: payload i is raw[offs[i]:offs[i+1]]
	raw     []byte // owned, never aliases bbolt's mapping
	// err is set for a block that fails its checksum or does not decode;
	// its rows go DEAD at their claim (the header may be zero then).
	err error
}

func (b *block) has(id uint64) bool { return b.err == nil && id >= b.first && id <= b.last() }

func (b *block) payload(id uint64) []byte {
	i := id - b.first
	return b.raw[b.offs[i]:b.offs[i+1]:b.offs[i+1]]
}

func (b *block) source(id uint64) string { return b.sources[b.src[id-b.first]] }

func (b *block) batchID(id uint64) int64 { return b.firstBatch + int64(id-b.first) }

// decodeBlock decodes the block value v stored under key id, opening a
// sealed one with kr. A block that fails is returned with err set (and
// whatever of the header could be read), never as a Go error: the caller
// decides what its rows become.
func decodeBlock(id uint64, v []byte, kr *keyring) *block {
	h, err := parseBlockHeader(v)
	if err != nil {
		return &block{blockHeader: blockHeader{first: id}, err: fmt.Errorf("block %d: %w", id, err)}
	}
	b := &block{blockHeader: h}
	if h.first != id {
		b.err = fmt.Errorf("block %d: %w: header says first row %d", id, errBlockDecode, h.first)
		return b
	}
	if crcOf(v) != h.crc {
		b.err = fmt.Errorf("block %d: %w", id, errBlockChecksum)
		return b
	}
	t, err := parseBlockTable(h, v)
	if err != nil {
		b.err = fmt.Errorf("block %d: %w", id, err)
		return b
	}
	switch {
	case h.sealed:
		if t.area, err = kr.openBlockArea(id, v, len(v)-len(t.area)); err != nil {
			b.err = err
			return b
		}
	case !kr.plainOK:
		// A clear block in an encrypted file was put there by someone
		// without the key.
		b.err = fmt.Errorf("block %d: a clear block in an encrypted WAL: %w", id, errBlockChecksum)
		return b
	}
	switch h.comp {
	case compNone:
		if len(t.area) != t.rawLen {
			b.err = fmt.Errorf("block %d: %w: payload area of %d bytes, table says %d", id, errBlockDecode, len(t.area), t.rawLen)
			return b
		}
		if h.sealed {
			b.raw = t.area // already a copy
		} else {
			b.raw = append([]byte(nil), t.area...)
		}
	case compS2:
		n, err := s2.DecodedLen(t.area)
		if err != nil || n != t.rawLen {
			b.err = fmt.Errorf("block %d: %w: compressed payload area: length %d, table says %d (%v)", id, errBlockDecode, n, t.rawLen, err)
			return b
		}
		if b.raw, err = s2.Decode(make([]byte, n), t.area); err != nil {
			b.err = fmt.Errorf("block %d: %w: %v", id, errBlockDecode, err)
			return b
		}
	}
	b.sources, b.src = t.sources, t.src
	b.offs = make([]int, len(t.lens)+1)
	for i, l := range t.lens {
		b.offs[i+1] = b.offs[i] + int(l)
	}
	return b
}

// errBlockChecksum: the stored block does not match its CRC32C, or its
// sealed payloads do not authenticate.
var errBlockChecksum = errors.New("checksum mismatch")

// crcOf is the CRC a block value's header holds: of every byte after it.
func crcOf(v []byte) uint32 { return crc32.Checksum(v[blockHeaderSize:], castagnoli) }

// blockPayloadLens returns the payload length of every row of the block
// value v without decompressing it; ok=false when the header or table
// does not parse.
func blockPayloadLens(v []byte) (blockHeader, []uint32, bool) {
	h, err := parseBlockHeader(v)
	if err != nil {
		return h, nil, false
	}
	t, err := parseBlockTable(h, v)
	if err != nil {
		return h, nil, false
	}
	return h, t.lens, true
}

// encodeBlock returns a freshly allocated block value of rows with row
// ids first.. and batch ids firstBatch.. (bbolt keeps the slice until
// commit). The payload area is compressed with s2 unless that does not
// make it smaller.
func encodeBlock(first uint64, firstBatch, created int64, rows []NewRow) []byte {
	var e blockEncoder
	v, _ := e.encode(first, firstBatch, created, rows, false)
	return v
}

// encArenaKeep bounds the value arena a WAL keeps between transactions
// (blockEncoder.release): a group's blocks, compressed, plus the room
// the compressor needs for the last one, fit in it with the agent's
// 2 MiB groups; a bigger one (a salvage, an operator's tool) is
// dropped after its transaction instead of staying resident.
const encArenaKeep = 4 << 20

// blockEncoder assembles block values. A WAL keeps one (guarded by wmu)
// so that the buffers of one append are the next one's: the value, the
// payloads laid end to end for the compressor and the table are not
// allocated (and zeroed) again for every block, a cost next to the
// compressor's own (docs/performance-history.md, "What one commit
// writes, and the WAL's allocations per block").
type blockEncoder struct {
	// arena holds the values of the current write transaction back to
	// back: bbolt keeps a value until its commit, so the arena is only
	// reused once the transaction has ended (release). It is never
	// grown in place: a value handed out stays where it is.
	arena []byte
	raw   []byte   // payloads end to end, for a block not kept decoded
	pays  [][]byte // the payloads of a kept block, for bytes.Join
	table []byte
	// halves receive the two halves of a payload area compressed side
	// by side (compress), before they are joined into the arena.
	halves [2][]byte
	// keys seal the payload area when the file is encrypted (seal.go);
	// nil or clear keys leave it clear.
	keys *keyring
}

// release makes the arena reusable; called once the write transaction
// whose values it holds has committed or rolled back.
func (e *blockEncoder) release() {
	if cap(e.arena) > encArenaKeep {
		e.arena = nil
	} else {
		e.arena = e.arena[:0]
	}
	for i := range e.halves {
		if cap(e.halves[i]) > halfKeep {
			e.halves[i] = nil
		}
	}
}

// splitCompressMin is the smallest payload area compress cuts in two:
// the agent's blocks are bigger, and below it the second goroutine
// would cost about what it saves.
const splitCompressMin = 64 << 10

// halfKeep bounds the room a WAL keeps for a compressed half between
// transactions: enough for the agent's blocks; a half of a bigger block
// (a salvage, big events) is let go after its transaction.
const halfKeep = 256 << 10

// compress returns raw compressed with s2 in dst, which has room for
// s2.MaxEncodedLen(len(raw)) bytes, or nil when that does not make it
// smaller. A big area is cut in two halves compressed at the same time,
// the second on a goroutine of its own, and joined with
// s2.ConcatBlocks: one s2 block, which s2.Decode reads as it reads any
// other. The encoding is the block's cost that grows with its bytes,
// and it runs inside the write transaction: on two cores the
// transaction, and the claims and acks waiting for it, take about half
// the time for a few more instructions and stored bytes (matches
// across the cut are lost). procs is how many goroutines may run at
// once (GOMAXPROCS): with one, the area is compressed whole.
func (e *blockEncoder) compress(dst, raw []byte, procs int) []byte {
	if len(raw) < splitCompressMin || procs < 2 {
		if enc := s2.Encode(dst, raw); len(enc) < len(raw) {
			return enc
		}
		return nil
	}
	h := len(raw) / 2
	parts := [2][]byte{raw[:h], raw[h:]}
	for i := range e.halves {
		if n := s2.MaxEncodedLen(len(parts[i])); cap(e.halves[i]) < n {
			e.halves[i] = make([]byte, n)
		}
		e.halves[i] = e.halves[i][:cap(e.halves[i])]
	}
	var second []byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		second = s2.Encode(e.halves[1], parts[1])
	}()
	first := s2.Encode(e.halves[0], parts[0])
	<-done
	// The joined block holds both bodies and a header of at most 5
	// bytes: shorter than raw, it fits in dst.
	if len(first)+len(second) >= len(raw)-binary.MaxVarintLen32 {
		return nil
	}
	enc, err := s2.ConcatBlocks(dst[:0], first, second)
	if err != nil {
		// Not reached: both are blocks s2 just wrote.
		if enc := s2.Encode(dst, raw); len(enc) < len(raw) {
			return enc
		}
		return nil
	}
	return enc
}

// encode returns the block value of rows (see encodeBlock), in the
// arena, and, with keep, the block as decoding the value gives it, so
// that an append can cache it and a claim right
// after it decompresses nothing. A kept block's payload buffer is its
// own copy: the caller's payloads are not kept.
func (e *blockEncoder) encode(first uint64, firstBatch, created int64, rows []NewRow, keep bool) ([]byte, *block) {
	var srcIdx map[string]int
	var sources []string
	rawLen := 0
	src := make([]uint32, len(rows))
	for i := range rows {
		s := rows[i].SourceID
		j := -1
		if len(sources) > 0 && sources[len(sources)-1] == s {
			j = len(sources) - 1
		} else if k, ok := srcIdx[s]; ok {
			j = k
		} else {
			if srcIdx == nil {
				srcIdx = map[string]int{}
			}
			j = len(sources)
			srcIdx[s] = j
			sources = append(sources, s)
		}
		src[i] = uint32(j)
		rawLen += len(rows[i].Payload)
	}
	tbl := binary.AppendUvarint(e.table[:0], uint64(len(sources)))
	for _, s := range sources {
		tbl = binary.AppendUvarint(tbl, uint64(len(s)))
		tbl = append(tbl, s...)
	}
	for i := range rows {
		tbl = binary.AppendUvarint(tbl, uint64(src[i]))
		tbl = binary.AppendUvarint(tbl, uint64(len(rows[i].Payload)))
	}
	e.table = tbl
	// The compressor reads the payloads as one buffer. A kept block owns
	// its copy (bytes.Join allocates it without zeroing it first); the
	// others are laid out in a buffer the next block reuses.
	var raw []byte
	if keep && rawLen > 0 {
		for i := range rows {
			e.pays = append(e.pays, rows[i].Payload)
		}
		raw = bytes.Join(e.pays, nil)
		clear(e.pays) // the caller's payloads are not kept
		e.pays = e.pays[:0]
	} else {
		raw = e.raw[:0]
		for i := range rows {
			raw = append(raw, rows[i].Payload...)
		}
		e.raw = raw
	}
	sealed := e.keys.sealed()
	need := blockHeaderSize + len(tbl) + s2.MaxEncodedLen(rawLen)
	if sealed {
		need += sealOverhead
	}
	start := len(e.arena)
	if cap(e.arena)-start < need {
		// A new arena, not a grown one: the values already handed to
		// bbolt must stay valid until the commit.
		e.arena = make([]byte, 0, max(need, 2*cap(e.arena), 64<<10))
		start = 0
	}
	buf := append(e.arena[start:start+blockHeaderSize], tbl...)
	comp := byte(compNone)
	tableEnd := len(buf)
	if sealed {
		buf = buf[:tableEnd+sealPrefix] // generation and nonce, set by the seal
	}
	off := len(buf)
	if rawLen > 0 {
		// s2 rather than zstd: on log lines it packs about as well per
		// block at a fraction of the CPU (BenchmarkBlockCodec). And
		// rather than nothing: raw blocks save CPU but write about three
		// times the input, over the disk writes the targets allow; s2
		// has no cheaper mode than Encode, and cutting the area into
		// smaller blocks only adds instructions (figures in
		// docs/performance-history.md, "The block encoder and its cache"
		// and "The block encoder's two halves").
		if enc := e.compress(buf[off:off+s2.MaxEncodedLen(rawLen)], raw, runtime.GOMAXPROCS(0)); enc != nil {
			comp, buf = compS2, buf[:off+len(enc)]
		}
	}
	if comp == compNone {
		buf = append(buf, raw...)
	}
	buf[0], buf[1] = blockFormat, comp
	binary.BigEndian.PutUint64(buf[2:], first)
	binary.BigEndian.PutUint32(buf[10:], uint32(len(rows)))
	binary.BigEndian.PutUint64(buf[14:], uint64(firstBatch))
	binary.BigEndian.PutUint64(buf[22:], uint64(created))
	if sealed {
		buf[0] = blockFormatSealed
		buf = e.keys.sealInPlace(buf, tableEnd, blockAAD(first, buf, tableEnd))
	}
	crc := crcOf(buf)
	binary.BigEndian.PutUint32(buf[30:], crc)
	e.arena = e.arena[:start+len(buf)]
	v := buf[:len(buf):len(buf)]
	if !keep {
		return v, nil
	}
	if rawLen == 0 {
		raw = nil // as decoding gives it
	}
	offs := make([]int, len(rows)+1)
	for i := range rows {
		offs[i+1] = offs[i] + len(rows[i].Payload)
	}
	b := &block{
		blockHeader: blockHeader{first: first, count: uint32(len(rows)), firstBatch: firstBatch, created: created, comp: comp, crc: crc, sealed: sealed},
		sources:     sources, src: src, offs: offs, raw: raw,
	}
	if b.sources == nil {
		b.sources = []string{}
	}
	return v, b
}

// splitBlocks cuts rows into the groups that become one block each.
func splitBlocks(rows []NewRow) [][]NewRow {
	var out [][]NewRow
	start, size := 0, 0
	for i := range rows {
		n := len(rows[i].Payload)
		if i > start && (size+n > blockMaxRaw || i-start >= blockMaxRows) {
			out = append(out, rows[start:i])
			start, size = i, 0
		}
		size += n
	}
	return append(out, rows[start:])
}

// blockCacheBytes bounds the payload bytes of the decoded blocks a WAL
// keeps. A claim window takes a block's rows over several transactions
// and its acks follow; while the engine keeps up, the blocks an append
// cached are claimed some commits later, and a miss costs an s2 decode.
// A bigger cache saves decodes but its bytes count in the peak RSS the
// agent must keep under 64 MiB: 4 MiB kept it under, 8 MiB did not
// (docs/performance-history.md, "The block encoder and its cache").
const blockCacheBytes = 4 << 20

// blockCache keeps the decoded blocks of write transactions, by first id,
// oldest first: those an append wrote and those a claim decoded. Guarded
// by WAL.wmu; cleared when a transaction rolls back, since the ids of a
// block appended in it are handed out again.
type blockCache struct {
	b     []*block
	bytes int
	// extra is what the cache may hold past blockCacheBytes
	// (WAL.SetDecodedCacheExtra).
	extra int
}

// limit is the payload bytes the cache holds at most.
func (c *blockCache) limit() int { return blockCacheBytes + c.extra }

func blockBytes(b *block) int { return len(b.raw) + 12*int(b.count) }

func (c *blockCache) get(id uint64) *block {
	// Newest first: the claim after an append reads the latest blocks.
	for i := len(c.b) - 1; i >= 0; i-- {
		if b := c.b[i]; b.err == nil && id >= b.first && id <= b.last() {
			return b
		}
	}
	return nil
}

// put adds b, dropping the oldest blocks while they are over the budget
// (b itself is kept, even alone over it).
func (c *blockCache) put(b *block) {
	if b.err != nil {
		return
	}
	c.b = append(c.b, b)
	c.bytes += blockBytes(b)
	n := 0
	for c.bytes > c.limit() && n < len(c.b)-1 {
		c.bytes -= blockBytes(c.b[n])
		n++
	}
	if n > 0 {
		k := copy(c.b, c.b[n:])
		clear(c.b[k:])
		c.b = c.b[:k]
	}
}

// drop forgets the block with first id first (it was deleted).
func (c *blockCache) drop(first uint64) {
	for i, b := range c.b {
		if b.first == first {
			c.bytes -= blockBytes(b)
			c.b = slices.Delete(c.b, i, i+1)
			return
		}
	}
}

func (c *blockCache) clear() { *c = blockCache{} }

func isChecksum(err error) bool { return errors.Is(err, errBlockChecksum) }

// Each block is the only value of a bucket of its own, nested in the
// blocks bucket under its first row id. bbolt rewrites a whole leaf node
// whenever one of its keys changes, and a leaf holds at least two keys,
// however big: blocks stored side by side would be rewritten with every
// append next to them and every delete beside them
// (BenchmarkWriteAmplification measures the bytes written per payload byte).
// In a bucket of its own a block is written once, at its commit, and its
// pages are freed without being rewritten; the blocks bucket's leaves
// hold only the 16-byte bucket headers (small blocks, under a quarter of
// a page, are stored inline there, as bbolt does with small buckets).
var blockValueKey = []byte{0}

// getBlock returns the stored block under key k of the blocks bucket b,
// nil when there is none.
func getBlock(b *bolt.Bucket, k []byte) []byte {
	if nb := b.Bucket(k); nb != nil {
		return nb.Get(blockValueKey)
	}
	return nil
}

func putBlock(b *bolt.Bucket, k, v []byte) error {
	nb, err := b.CreateBucket(k)
	if err != nil {
		return err
	}
	nb.FillPercent = 1
	return nb.Put(blockValueKey, v)
}

func deleteBlock(b *bolt.Bucket, k []byte) error { return b.DeleteBucket(k) }

// blockVisit is the block a tree walk reaches at bucket path with key
// and value: the id (the nested bucket's name) and the stored block;
// ok=false for anything else.
func blockVisit(bucket [][]byte, key, value []byte) (id []byte, v []byte, ok bool) {
	if len(bucket) != 2 || !bytes.Equal(bucket[0], bucketBlocks) || !bytes.Equal(key, blockValueKey) {
		return nil, nil, false
	}
	return bucket[1], value, true
}
