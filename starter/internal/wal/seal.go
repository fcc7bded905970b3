package wal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// Encryption at rest (queue.encryption). With a key, every block's
// payload area and every input position's state is sealed with
// AES-256-GCM; the rest of the file (bucket names, row ids, batch ids,
// times, row states and reasons, source ids, payload lengths, the
// position keys, the agent's metadata) stays clear.
//
// Keys. The configured key K (32 bytes) is never used directly. Each key
// generation of a file has a random 32-byte salt, and its data key is
// HKDF-SHA256(K, salt); its check value HMAC-SHA256(K, check label ||
// salt) tells a right key from a wrong one without decrypting anything.
// The meta entry "seal" lists the generations (parseSealMeta): the first seals
// everything new, the others are those a rotation (Rekey) has not
// finished re-sealing, and every one must be matched by a given key for
// the file to open.
//
// Nonces. A nonce is the file's open epoch (4 bytes) then a 64-bit
// counter. The epoch is meta "seal_epoch", incremented by the
// transaction of every read-write open before that open seals anything;
// the counter starts at a random value at each open and only ever grows
// in memory, rolled-back transactions included. Within one data key two
// seals share a nonce only if two opens got the same epoch (a file
// restored from a copy, or an open's commit lost without fsync) and
// their counter ranges overlap: for n seals per open, a chance of about
// n/2^63. A new file, a rotation and a salvaged copy get new salts, so
// new data keys: no nonce carries over between them.
//
// Binding. A sealed block authenticates, as associated data, its bucket
// key, its header (but the CRC) and its table, so a block cannot be moved
// under another key or have its rows' sources, batch ids or lengths
// changed (but for the stand-in flag, set after the seal, standin.go); a
// position authenticates its key (input id and position key).
// The CRC stays in front of the seal: a damaged byte is reported as a
// checksum failure, exactly as in a clear file, and one that fixes the
// CRC too fails authentication, counted the same way.
const (
	blockFormatSealed = 2
	// sealPrefix is what precedes a sealed area: generation, nonce.
	sealPrefix   = 4 + 12
	sealTagSize  = 16
	sealOverhead = sealPrefix + sealTagSize
	sealSaltSize = 32
	sealCheckLen = 32
	sealEntryLen = 4 + sealSaltSize + sealCheckLen
	sealMetaV1   = 1

	// clearGen is the generation of clear blocks (no key).
	clearGen = 0

	metaSeal      = "seal"
	metaSealEpoch = "seal_epoch"

	sealCheckLabel = "edge-agent wal key check v1"
	sealDataLabel  = "edge-agent wal data key v1"
)

// keyring holds the keys of one open WAL. It never changes once built;
// a rotation builds a new one (WAL.keys).
type keyring struct {
	// cur seals everything new; nil for a clear file.
	cur *sealKey
	// gens are every generation the file lists, cur included.
	gens map[uint32]*sealKey
	// plainOK accepts clear blocks: a clear file, or one whose rotation
	// from clear is under way.
	plainOK bool
	epoch   uint32
	ctr     *atomic.Uint64
}

// plainKeys is the keyring of a clear file (and of the tests that decode
// clear blocks).
var plainKeys = &keyring{plainOK: true}

type sealKey struct {
	gen  uint32
	aead cipher.AEAD
}

// sealEntry is one key generation as meta "seal" stores it.
type sealEntry struct {
	gen   uint32
	salt  [sealSaltSize]byte
	check [sealCheckLen]byte
}

func keyCheck(key []byte, salt []byte) [sealCheckLen]byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(sealCheckLabel))
	m.Write(salt)
	var out [sealCheckLen]byte
	copy(out[:], m.Sum(nil))
	return out
}

func (e sealEntry) matches(key []byte) bool {
	if len(key) == 0 {
		return false
	}
	c := keyCheck(key, e.salt[:])
	return hmac.Equal(c[:], e.check[:])
}

func newSealEntry(gen uint32, key []byte) (sealEntry, error) {
	e := sealEntry{gen: gen}
	if _, err := rand.Read(e.salt[:]); err != nil {
		return e, fmt.Errorf("salt: %w", err)
	}
	e.check = keyCheck(key, e.salt[:])
	return e, nil
}

func (e sealEntry) open(key []byte) (*sealKey, error) {
	dk, err := hkdf.Key(sha256.New, key, e.salt[:], sealDataLabel, 32)
	if err != nil {
		return nil, err
	}
	blk, err := aes.NewCipher(dk)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(blk)
	if err != nil {
		return nil, err
	}
	return &sealKey{gen: e.gen, aead: aead}, nil
}

// readSealMeta returns the generations meta "seal" lists (none for a
// clear file).
func readSealMeta(meta *bolt.Bucket) ([]sealEntry, error) {
	return parseSealMeta(meta.Get([]byte(metaSeal)))
}

// parseSealMeta parses the value of meta "seal"; nil is a clear file.
func parseSealMeta(v []byte) ([]sealEntry, error) {
	if v == nil {
		return nil, nil
	}
	if len(v) < 1 || v[0] != sealMetaV1 || (len(v)-1)%sealEntryLen != 0 || len(v) == 1 {
		return nil, fmt.Errorf("meta %q of %d bytes does not parse: %w", metaSeal, len(v), ErrNotWAL)
	}
	var out []sealEntry
	for p := v[1:]; len(p) > 0; p = p[sealEntryLen:] {
		var e sealEntry
		e.gen = binary.BigEndian.Uint32(p)
		copy(e.salt[:], p[4:])
		copy(e.check[:], p[4+sealSaltSize:])
		out = append(out, e)
	}
	return out, nil
}

func encodeSealMeta(es []sealEntry) []byte {
	v := []byte{sealMetaV1}
	for _, e := range es {
		v = binary.BigEndian.AppendUint32(v, e.gen)
		v = append(v, e.salt[:]...)
		v = append(v, e.check[:]...)
	}
	return v
}

// buildKeyring matches the given keys to the generations es lists;
// ok=false when one of them is matched by none. Generation 0 stands for
// the clear blocks of a rotation from a clear file.
func buildKeyring(es []sealEntry, keys ...[]byte) (*keyring, bool, error) {
	kr := &keyring{gens: map[uint32]*sealKey{}, ctr: new(atomic.Uint64)}
	for i, e := range es {
		if e.gen == clearGen {
			kr.plainOK = true
			continue
		}
		var k []byte
		for _, c := range keys {
			if e.matches(c) {
				k = c
				break
			}
		}
		if k == nil {
			return nil, false, nil
		}
		sk, err := e.open(k)
		if err != nil {
			return nil, false, err
		}
		kr.gens[e.gen] = sk
		if i == 0 {
			kr.cur = sk
		}
	}
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, false, fmt.Errorf("nonce counter: %w", err)
	}
	kr.ctr.Store(binary.BigEndian.Uint64(seed[:]))
	return kr, true, nil
}

// nonce returns the next nonce of this open (see the file comment).
func (kr *keyring) nonce(dst []byte) {
	binary.BigEndian.PutUint32(dst, kr.epoch)
	binary.BigEndian.PutUint64(dst[4:], kr.ctr.Add(1))
}

// sealed reports whether new data is sealed.
func (kr *keyring) sealed() bool { return kr != nil && kr.cur != nil }

// sealInPlace seals buf[prefixAt+sealPrefix:] in place: buf[prefixAt:]
// must hold sealPrefix free bytes then the plaintext, and buf must have
// room for the tag. It returns buf with the tag appended.
func (kr *keyring) sealInPlace(buf []byte, prefixAt int, aad []byte) []byte {
	k := kr.cur
	binary.BigEndian.PutUint32(buf[prefixAt:], k.gen)
	nonce := buf[prefixAt+4 : prefixAt+sealPrefix]
	kr.nonce(nonce)
	pt := buf[prefixAt+sealPrefix:]
	ct := k.aead.Seal(pt[:0], nonce, pt, aad)
	return buf[:prefixAt+sealPrefix+len(ct)]
}

// open returns the plaintext of a sealed area (generation, nonce,
// ciphertext and tag), in a new buffer.
func (kr *keyring) open(area, aad []byte) ([]byte, error) {
	if len(area) < sealOverhead {
		return nil, errors.New("sealed area too short")
	}
	gen := binary.BigEndian.Uint32(area)
	k := kr.gens[gen]
	if k == nil {
		return nil, fmt.Errorf("sealed with key generation %d, which the WAL's keys do not include", gen)
	}
	return k.aead.Open(nil, area[4:sealPrefix], area[sealPrefix:], aad)
}

// blockAAD is what a sealed block authenticates besides its payloads:
// its bucket key, its header up to the CRC and its table. The stand-in
// flag is left out: it is set on the block after its encoding
// (standin.go).
func blockAAD(id uint64, v []byte, tableEnd int) []byte {
	aad := make([]byte, 0, 9+30+tableEnd-blockHeaderSize)
	aad = append(aad, 'b')
	aad = binary.BigEndian.AppendUint64(aad, id)
	aad = append(aad, v[:30]...)
	aad[9+1] &^= blockStandIn
	return append(aad, v[blockHeaderSize:tableEnd]...)
}

// openBlockArea returns the stored payload area (compressed as the header
// says) of the sealed block value v under key id, whose table ends at
// tableEnd.
func (kr *keyring) openBlockArea(id uint64, v []byte, tableEnd int) ([]byte, error) {
	if kr == nil || len(kr.gens) == 0 {
		return nil, fmt.Errorf("block %d is sealed and the WAL was opened without its key", id)
	}
	pt, err := kr.open(v[tableEnd:], blockAAD(id, v, tableEnd))
	if err != nil {
		return nil, fmt.Errorf("block %d: sealed payloads do not authenticate (%v): %w", id, err, errBlockChecksum)
	}
	return pt, nil
}

// posAAD binds a sealed position state to its key.
func posAAD(k []byte) []byte { return append([]byte{'p'}, k...) }

// sealPosition returns the stored value of position state st under key k.
func (kr *keyring) sealPosition(k, st []byte) []byte {
	if !kr.sealed() {
		return bytes.Clone(st)
	}
	buf := make([]byte, sealPrefix, sealOverhead+len(st))
	buf = append(buf, st...)
	return kr.sealInPlace(buf, 0, posAAD(k))
}

// openPosition returns the state of a stored position value.
func (kr *keyring) openPosition(k, v []byte) ([]byte, error) {
	if !kr.sealed() {
		return bytes.Clone(v), nil
	}
	st, err := kr.open(v, posAAD(k))
	if err == nil && st == nil {
		st = []byte{} // an empty state, as a clear file returns it
	}
	return st, err
}

// resealBlock returns block value v (under key id) sealed with kr's
// current key: a clear block gets sealed, a sealed one opened with the
// generation that sealed it and sealed again. The table and header stay;
// the CRC is computed again.
func (kr *keyring) resealBlock(id uint64, v []byte) ([]byte, error) {
	h, err := parseBlockHeader(v)
	if err != nil {
		return nil, fmt.Errorf("block %d: %w", id, err)
	}
	t, err := parseBlockTable(h, v)
	if err != nil {
		return nil, fmt.Errorf("block %d: %w", id, err)
	}
	tableEnd := len(v) - len(t.area)
	area := t.area
	if h.sealed {
		if area, err = kr.openBlockArea(id, v, tableEnd); err != nil {
			return nil, err
		}
	} else if crcOf(v) != h.crc {
		return nil, fmt.Errorf("block %d: %w", id, errBlockChecksum)
	}
	out := make([]byte, 0, tableEnd+sealOverhead+len(area))
	out = append(out, v[:tableEnd]...)
	out[0] = blockFormatSealed
	out = append(out, make([]byte, sealPrefix)...)
	out = append(out, area...)
	out = kr.sealInPlace(out, tableEnd, blockAAD(id, out, tableEnd))
	binary.BigEndian.PutUint32(out[30:], crcOf(out))
	return out, nil
}

// blockGen returns the key generation of a sealed block value, ok=false
// for a clear one or one that does not parse.
func blockGen(v []byte) (uint32, bool) {
	h, err := parseBlockHeader(v)
	if err != nil || !h.sealed {
		return 0, false
	}
	t, err := parseBlockTable(h, v)
	if err != nil || len(t.area) < 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(t.area), true
}
