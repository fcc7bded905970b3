package wal

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// State value layout (schemas 3 and 4): the mutable part of a row, in the state
// bucket under its row id. A row has an entry only once something about
// it differs from what its block says (PENDING, no attempts, updated at
// creation, no backoff, no reason): every row in the delayed, acked or
// dead index has one, a fresh row never does. The status byte is the
// status at rest: SENDING and RECEIVED rows rest as PENDING and are
// recorded only by the sending and received indexes.
//
//	off len field
//	0   1   status at rest
//	1   4   attempts       uint32 BE
//	5   8   updated ms     int64  BE
//	13  8   not-before ms  int64  BE
//	21  ..  reason (to the end)
const stateHeaderSize = 21

// rowState is the mutable part of a row.
type rowState struct {
	status    Status
	attempts  int
	updated   int64
	notBefore int64
	reason    string
}

func (s *rowState) encode() []byte {
	reason := s.reason
	if len(reason) > maxRowString {
		reason = reason[:maxRowString]
	}
	v := make([]byte, stateHeaderSize, stateHeaderSize+len(reason))
	v[0] = byte(s.status)
	binary.BigEndian.PutUint32(v[1:], uint32(max(s.attempts, 0)))
	binary.BigEndian.PutUint64(v[5:], uint64(s.updated))
	binary.BigEndian.PutUint64(v[13:], uint64(s.notBefore))
	return append(v, reason...)
}

func decodeState(v []byte) (rowState, bool) {
	if len(v) < stateHeaderSize || !Status(v[0]).Valid() || len(v)-stateHeaderSize > maxRowString {
		return rowState{}, false
	}
	return rowState{
		status:    Status(v[0]),
		attempts:  int(binary.BigEndian.Uint32(v[1:])),
		updated:   int64(binary.BigEndian.Uint64(v[5:])),
		notBefore: int64(binary.BigEndian.Uint64(v[13:])),
		reason:    string(v[stateHeaderSize:]),
	}, true
}

// stateOf returns the state of row id: its entry, or the default of a
// row created at created.
func (tx *ReadTx) stateOf(id uint64, created int64) (rowState, bool) {
	if v := tx.state.Get(u64key(id)); v != nil {
		if st, ok := decodeState(v); ok {
			return st, true
		}
		tx.w.log.Warn("wal: row state does not decode", "row_id", id)
	}
	return rowState{status: StatusPending, updated: created}, false
}

// putState writes the state of row id.
func (tx *Tx) putState(id uint64, st *rowState) error {
	if err := tx.state.Put(u64key(id), st.encode()); err != nil {
		return fmt.Errorf("wal %s: row state %d: %w", tx.w.path, id, err)
	}
	tx.dirty = true
	return nil
}

// stateScan reads state entries for ascending ids with one cursor: a
// stretch of ids without entries costs one seek. reset it after writing
// to the state bucket (a bbolt cursor does not follow writes).
type stateScan struct {
	c      *bolt.Cursor
	k      uint64 // key under the cursor; 0: past the end
	v      []byte
	last   uint64 // the id asked last
	sought bool
}

func (s *stateScan) get(id uint64) ([]byte, bool) {
	if !s.sought || id < s.last || (s.k != 0 && s.k < id) {
		k, v := s.c.Seek(u64key(id))
		s.k, s.v, s.sought = 0, nil, true
		if k != nil {
			s.k, _ = keyID(k)
			s.v = v
		}
	}
	s.last = id
	if s.k == id {
		return s.v, true
	}
	return nil, false
}

func (s *stateScan) reset() { s.sought = false }
