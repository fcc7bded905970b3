package agent

import (
	"encoding/binary"
	"fmt"

	"github.com/edge-agent/edge-agent/starter/internal/account"
	"github.com/edge-agent/edge-agent/starter/internal/wal"
)

// metaSeqPrefix + input id holds the last "_seq" given to a row of that
// input (8 bytes, big-endian), written in the transaction that appends
// the rows, so a number is never given twice, even after a crash.
const metaSeqPrefix = account.SeqMetaPrefix

// seqRoom bounds what Stamp adds to a payload beside the input tag:
// `,"_seq":` and a uint64.
const seqRoom = len(`,"_seq":`) + 20 + 1

// sequencer stamps the rows of an append with their input's sequence
// numbers (agent.account). Only the loop goroutine uses it.
type sequencer struct {
	tags map[string][]byte // input id → account.InputTag
	// arena holds the stamped payloads of the last append; the WAL
	// copies them, so the next append reuses it.
	arena []byte
	out   [][]byte
}

// stamp returns payloads stamped with the next numbers of input id, and
// stores the last number given in the same transaction.
func (s *sequencer) stamp(tx *wal.Tx, id string, payloads [][]byte) ([][]byte, error) {
	tag, ok := s.tags[id]
	if !ok {
		if s.tags == nil {
			s.tags = map[string][]byte{}
		}
		tag = account.InputTag(id)
		s.tags[id] = tag
	}
	key := metaSeqPrefix + id
	v, err := tx.Meta(key)
	if err != nil {
		return nil, fmt.Errorf("read sequence number of input %s: %w", id, err)
	}
	var n uint64
	if len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	size := 0
	for _, p := range payloads {
		size += len(p) + len(tag) + seqRoom
	}
	if cap(s.arena) < size {
		s.arena = make([]byte, 0, size)
	}
	// The arena never grows below: every slice of it stays valid.
	arena := s.arena[:0]
	out := s.out[:0]
	for _, p := range payloads {
		start := len(arena)
		var stamped bool
		if arena, stamped = account.Stamp(arena, p, tag, n+1); !stamped {
			out = append(out, p)
			continue
		}
		n++
		out = append(out, arena[start:len(arena):len(arena)])
	}
	s.arena, s.out = arena[:0], out[:0]
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	if err := tx.SetMeta(key, b[:]); err != nil {
		return nil, fmt.Errorf("store sequence number of input %s: %w", id, err)
	}
	return out, nil
}
