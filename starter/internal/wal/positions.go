package wal

import (
	"bytes"
	"fmt"
)

// Positions are kept flat in the positions bucket: key
// <source id> 0x00 <key> -> state. The bucket has no sub-buckets, so bbolt
// keeps it inline in the root page while it is small (a few inputs): a
// commit that saves a position rewrites the root page it rewrites anyway,
// not a page of its own. Source ids and keys must not contain the byte
// 0x00. Keys sort by source id, then key, so the positions of one input
// are contiguous.
const posSep = 0x00

// flatPosKey is the key of (sourceID, key).
func flatPosKey(sourceID, key string) []byte {
	k := make([]byte, 0, len(sourceID)+1+len(key))
	k = append(k, sourceID...)
	k = append(k, posSep)
	return append(k, key...)
}

// splitFlatPosKey splits a key of the positions bucket; ok is false without a separator or
// with an empty part.
func splitFlatPosKey(k []byte) (sourceID, key string, ok bool) {
	i := bytes.IndexByte(k, posSep)
	if i <= 0 || i == len(k)-1 {
		return "", "", false
	}
	return string(k[:i]), string(k[i+1:]), true
}

// PositionUpdate sets (or, with State nil, deletes) the input position Key
// (e.g. a file identity) of input SourceID. State is opaque to the WAL.
// SourceID and Key are not empty and do not contain the byte 0x00.
type PositionUpdate struct {
	SourceID, Key string
	State         []byte
}

// SavePositions applies ups in order. Called in the same Update as Append,
// the rows and the positions that produced them commit atomically.
func (tx *Tx) SavePositions(ups []PositionUpdate) error {
	for i, u := range ups {
		if u.SourceID == "" || u.Key == "" {
			return fmt.Errorf("wal %s: save position %d: empty source id or key", tx.w.path, i)
		}
		if bytes.IndexByte([]byte(u.SourceID), posSep) >= 0 || bytes.IndexByte([]byte(u.Key), posSep) >= 0 {
			return fmt.Errorf("wal %s: save position %q/%q: a source id or key contains the byte 0x00, which the WAL "+
				"uses to separate them: rename the input (its id) or report the input type's key as a bug", tx.w.path, u.SourceID, u.Key)
		}
		k := flatPosKey(u.SourceID, u.Key)
		var err error
		if u.State == nil {
			err = tx.positions.Delete(k)
		} else {
			// Copied: bbolt keeps the slice until commit and the caller may
			// reuse its buffer before that.
			err = tx.positions.Put(k, tx.w.keyring().sealPosition(k, u.State))
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
	if bytes.IndexByte([]byte(sourceID), posSep) >= 0 {
		return out, nil // never saved
	}
	prefix := flatPosKey(sourceID, "")
	c := tx.positions.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if v != nil && len(k) > len(prefix) {
			st, err := tx.w.keyring().openPosition(k, v)
			if err != nil {
				return nil, fmt.Errorf("wal %s: position %q/%q: its sealed state does not authenticate (changed bytes): %w",
					tx.w.path, sourceID, k[len(prefix):], ErrCorrupt)
			}
			out[string(k[len(prefix):])] = st
		}
	}
	return out, nil
}

// Sources lists the input ids that have positions, in byte order.
func (tx *ReadTx) Sources() ([]string, error) {
	var out []string
	err := tx.positions.ForEach(func(k, v []byte) error {
		if v == nil {
			return nil
		}
		src, _, ok := splitFlatPosKey(k)
		if ok && (len(out) == 0 || out[len(out)-1] != src) {
			out = append(out, src)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wal %s: list sources: %w", tx.w.path, err)
	}
	return out, nil
}

// SchemaVersion is the file's layout version (meta.go): always
// SchemaVersion, since a file of another is refused at open.
func (tx *ReadTx) SchemaVersion() int { return SchemaVersion }
