package wal

import (
	"bytes"
	"fmt"
)

// PositionUpdate sets (or, with State nil, deletes) the input position Key
// (e.g. a file identity) of input SourceID. State is opaque to the WAL.
type PositionUpdate struct {
	SourceID, Key string
	State         []byte
}

// SavePositions applies ups in order. Called in the same Update as Append,
// the rows and the positions that produced them commit atomically.
func (tx *Tx) SavePositions(ups []PositionUpdate) error {
	var last string
	var b = tx.positions // replaced by the source's nested bucket below
	for i, u := range ups {
		if u.SourceID == "" || u.Key == "" {
			return fmt.Errorf("wal %s: save position %d: empty source id or key", tx.w.path, i)
		}
		if i == 0 || u.SourceID != last {
			nb, err := tx.positions.CreateBucketIfNotExists([]byte(u.SourceID))
			if err != nil {
				return fmt.Errorf("wal %s: positions of %q: %w", tx.w.path, u.SourceID, err)
			}
			b, last = nb, u.SourceID
		}
		var err error
		if u.State == nil {
			err = b.Delete([]byte(u.Key))
		} else {
			// Copied: bbolt keeps the slice until commit and the caller may
			// reuse its buffer before that.
			err = b.Put([]byte(u.Key), bytes.Clone(u.State))
		}
		if err != nil {
			return fmt.Errorf("wal %s: save position %q/%q: %w", tx.w.path, u.SourceID, u.Key, err)
		}
	}
	return nil
}

// Positions returns the positions of one input (empty map when none).
func (tx *ReadTx) Positions(sourceID string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if sourceID == "" {
		return out, nil
	}
	b := tx.positions.Bucket([]byte(sourceID))
	if b == nil {
		return out, nil
	}
	err := b.ForEach(func(k, v []byte) error {
		if v != nil {
			out[string(k)] = bytes.Clone(v)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wal %s: positions of %q: %w", tx.w.path, sourceID, err)
	}
	return out, nil
}

// Sources lists the input ids that have positions, in byte order.
func (tx *ReadTx) Sources() ([]string, error) {
	var out []string
	err := tx.positions.ForEach(func(k, v []byte) error {
		if v == nil {
			out = append(out, string(k))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wal %s: list sources: %w", tx.w.path, err)
	}
	return out, nil
}
