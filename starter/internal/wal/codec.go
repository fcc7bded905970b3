package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	bolt "go.etcd.io/bbolt"
)

const (
	// maxRowString bounds source ids and reasons so a corrupt length prefix
	// cannot make the decoder allocate or slice absurdly.
	maxRowString = 1 << 16
	// maxPayload keeps a row, with its fixed fields and strings, under
	// bbolt's value limit.
	maxPayload = bolt.MaxValueSize - rowFixedSize - 2*(maxRowString+binary.MaxVarintLen32)
	// rowFixedSize bounds the fixed-size fields a row stores beside its
	// payload and strings.
	rowFixedSize = 42
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// readString reads a uvarint length and that many bytes of b.
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
