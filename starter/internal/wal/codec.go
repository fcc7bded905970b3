package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	bolt "go.etcd.io/bbolt"
)

// Row value layout of schema 2 (format 1), one value per row in the rows
// bucket: what the conversion to blocks (migrate.go) and the salvage of a
// schema-2 file read; this build writes it only in tests that build such
// files. A fixed header first, then the variable parts; the payload runs
// to the end of the value so it needs no length prefix.
//
// The status byte is the row's status at rest (PENDING, ACKED, DEAD). A
// claimed row keeps its PENDING value: SENDING is recorded only by the
// sending index (runs of ids with their claim time, sending.go), because
// rewriting the whole value, payload included, just to flip one byte made
// Claim and Ack the most expensive part of a loaded agent's transaction.
// Rows leave
// SENDING through Ack (deleted, or rewritten as ACKED), Fail or Release
// (rewritten), so the byte is right again as soon as the row is at rest.
//
//	off len field
//	0   1   format (1)
//	1   1   status
//	2   4   attempts        uint32 BE
//	6   8   batch id        int64  BE
//	14  8   created ms      int64  BE
//	22  8   updated ms      int64  BE
//	30  8   not-before ms   int64  BE
//	38  4   crc32c(payload) uint32 BE
//	42  ..  uvarint len + source id, uvarint len + reason, payload
const (
	rowFormat     = 1
	rowHeaderSize = 42
	// maxRowString bounds source ids and reasons so a corrupt length prefix
	// cannot make the decoder allocate or slice absurdly.
	maxRowString = 1 << 16
	// maxPayload keeps a row under bbolt's value limit with room for the
	// header and strings.
	maxPayload = bolt.MaxValueSize - rowHeaderSize - 2*(maxRowString+binary.MaxVarintLen32)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func payloadCRC(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }

var errRowDecode = errors.New("decode row")

// encodeRow returns a freshly allocated value for r with the given payload
// checksum. bbolt keeps the slice until commit, so it must not be reused.
func encodeRow(r *Row, crc uint32) []byte {
	return appendRow(make([]byte, 0, encodedRowSize(r)), r, crc)
}

// encodedRowSize is an upper bound of the encoded size of r.
func encodedRowSize(r *Row) int {
	return rowHeaderSize + binary.MaxVarintLen32*2 + min(len(r.SourceID), maxRowString) +
		min(len(r.Reason), maxRowString) + len(r.Payload)
}

// appendRow appends the value of r to dst.
func appendRow(dst []byte, r *Row, crc uint32) []byte {
	src, reason := r.SourceID, r.Reason
	if len(src) > maxRowString {
		src = src[:maxRowString]
	}
	if len(reason) > maxRowString {
		reason = reason[:maxRowString]
	}
	start := len(dst)
	b := append(dst, make([]byte, rowHeaderSize)...)
	h := b[start:]
	h[0] = rowFormat
	h[1] = byte(r.Status)
	attempts := r.Attempts
	if attempts < 0 {
		attempts = 0
	}
	binary.BigEndian.PutUint32(h[2:], uint32(attempts))
	binary.BigEndian.PutUint64(h[6:], uint64(r.BatchID))
	binary.BigEndian.PutUint64(h[14:], uint64(r.CreatedAt))
	binary.BigEndian.PutUint64(h[22:], uint64(r.UpdatedAt))
	binary.BigEndian.PutUint64(h[30:], uint64(r.NotBefore))
	binary.BigEndian.PutUint32(h[38:], crc)
	b = binary.AppendUvarint(b, uint64(len(src)))
	b = append(b, src...)
	b = binary.AppendUvarint(b, uint64(len(reason)))
	b = append(b, reason...)
	b = append(b, r.Payload...)
	return b
}

// decodeRow parses v into a Row whose Payload ALIASES v (callers copy before
// the transaction ends) and returns the stored checksum. It never panics on
// garbage: every length is checked (see FuzzDecodeRow).
func decodeRow(id uint64, v []byte) (Row, uint32, error) {
	if len(v) < rowHeaderSize {
		return Row{}, 0, fmt.Errorf("%w %d: value too short (%d bytes)", errRowDecode, id, len(v))
	}
	if v[0] != rowFormat {
		return Row{}, 0, fmt.Errorf("%w %d: unknown row format %d", errRowDecode, id, v[0])
	}
	r := Row{
		ID:        id,
		Status:    Status(v[1]),
		Attempts:  int(binary.BigEndian.Uint32(v[2:])),
		BatchID:   int64(binary.BigEndian.Uint64(v[6:])),
		CreatedAt: int64(binary.BigEndian.Uint64(v[14:])),
		UpdatedAt: int64(binary.BigEndian.Uint64(v[22:])),
		NotBefore: int64(binary.BigEndian.Uint64(v[30:])),
	}
	if !r.Status.Valid() {
		return Row{}, 0, fmt.Errorf("%w %d: invalid status byte %d", errRowDecode, id, v[1])
	}
	crc := binary.BigEndian.Uint32(v[38:])
	rest := v[rowHeaderSize:]
	src, rest, err := readString(rest)
	if err != nil {
		return Row{}, 0, fmt.Errorf("%w %d: source id: %v", errRowDecode, id, err)
	}
	reason, rest, err := readString(rest)
	if err != nil {
		return Row{}, 0, fmt.Errorf("%w %d: reason: %v", errRowDecode, id, err)
	}
	r.SourceID, r.Reason, r.Payload = src, reason, rest
	return r, crc, nil
}

func readString(b []byte) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return "", nil, errors.New("bad length prefix")
	}
	if n > maxRowString || n > uint64(len(b)-k) {
		return "", nil, fmt.Errorf("length %d exceeds value", n)
	}
	end := k + int(n)
	return string(b[k:end]), b[end:], nil
}

func u64key(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}

// tsKey is the 16-byte index key (ms timestamp, row id): ordering by it is
// ordering by time, then by age. Negative times sort as 0.
func tsKey(ts int64, id uint64) []byte {
	if ts < 0 {
		ts = 0
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(ts))
	binary.BigEndian.PutUint64(b[8:], id)
	return b[:]
}

func splitTSKey(k []byte) (int64, uint64, bool) {
	if len(k) != 16 {
		return 0, 0, false
	}
	return int64(binary.BigEndian.Uint64(k[:8])), binary.BigEndian.Uint64(k[8:]), true
}

func keyID(k []byte) (uint64, bool) {
	if len(k) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(k), true
}
