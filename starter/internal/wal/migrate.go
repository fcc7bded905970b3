package wal

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Converting a schema-2 file (one row per key in the rows bucket) into
// blocks. A read-write open does it before anything else reads the file,
// in transactions of at most migrateChunkRows rows or migrateChunkBytes
// of payload: a big backlog never needs one huge transaction (bbolt keeps
// every page a transaction dirties in memory until it commits). The first
// transaction creates the new buckets, sets the schema version to 3 (so an
// older build refuses the half-converted file) and the migrating mark;
// each next one moves the lowest rows into blocks and deletes them; the
// last one removes the rows bucket and the mark. A kill between two
// leaves a file whose every row is in exactly one of the two buckets, and
// the next read-write open carries on. The indexes (pending, delayed,
// timers, sending, acked, dead), the counters, the positions and the
// metadata have the same layout in both versions and are not touched.
const (
	migrateChunkRows  = 50_000
	migrateChunkBytes = 8 << 20
)

// migrate converts the file if it is a schema-2 file or one whose
// conversion was interrupted; a file of any other version is left to
// initOrCheck.
func (w *WAL) migrate(db *bolt.DB) error {
	var version uint32
	migrating := false
	err := db.View(func(btx *bolt.Tx) error {
		if meta := btx.Bucket(bucketMeta); meta != nil {
			if v := meta.Get([]byte(metaSchemaVersion)); len(v) == 4 {
				version = binary.BigEndian.Uint32(v)
			}
			migrating = meta.Get([]byte(metaMigrating)) != nil
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("open wal %s: %w", w.path, err)
	}
	if version == schemaRows {
		w.log.Info("wal: converting to the block format", "from_schema", schemaRows, "to_schema", SchemaVersion)
		if err := db.Update(startMigration); err != nil {
			return fmt.Errorf("open wal %s: start converting from schema %d: %w", w.path, schemaRows, err)
		}
		migrating = true
	}
	if !migrating {
		return nil
	}
	for chunk := 1; ; chunk++ {
		done := false
		err := db.Update(func(btx *bolt.Tx) error {
			var err error
			done, err = migrateChunk(btx, w.now().UnixMilli(), cmp.Or(w.opts.migrateChunk, migrateChunkRows))
			return err
		})
		if err != nil {
			return fmt.Errorf("open wal %s: convert to schema %d: %w", w.path, SchemaVersion, err)
		}
		if done {
			w.log.Info("wal: converted to the block format", "schema", SchemaVersion)
			return nil
		}
		if w.opts.migrateStop != nil {
			if err := w.opts.migrateStop(chunk); err != nil {
				return err
			}
		}
	}
}

func startMigration(btx *bolt.Tx) error {
	for _, name := range [][]byte{bucketBlocks, bucketState} {
		if _, err := btx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	meta := btx.Bucket(bucketMeta)
	var v [4]byte
	binary.BigEndian.PutUint32(v[:], SchemaVersion)
	if err := meta.Put([]byte(metaSchemaVersion), v[:]); err != nil {
		return err
	}
	return meta.Put([]byte(metaMigrating), []byte{1})
}

// migrateChunk moves the lowest rows of the rows bucket into blocks and
// state entries; done=true once none is left (and the mark is removed).
func migrateChunk(btx *bolt.Tx, now int64, maxRows int) (done bool, err error) {
	rowsB, blocks, state := btx.Bucket(bucketRows), btx.Bucket(bucketBlocks), btx.Bucket(bucketState)
	meta := btx.Bucket(bucketMeta)
	if blocks == nil || state == nil {
		return false, fmt.Errorf("blocks or state bucket missing during the conversion: %w", ErrNotWAL)
	}
	if rowsB == nil {
		return true, meta.Delete([]byte(metaMigrating))
	}
	blocks.FillPercent, state.FillPercent = appendFillPercent, appendFillPercent
	type old struct {
		r       Row
		bad     bool // failed its checksum or did not decode
		decoded bool
	}
	var chunk []old
	var keys [][]byte
	size := 0
	c := rowsB.Cursor()
	for k, v := c.First(); k != nil && len(chunk) < maxRows && size < migrateChunkBytes; k, v = c.Next() {
		keys = append(keys, bytes.Clone(k))
		id, ok := keyID(k)
		if !ok || id == 0 {
			continue // a malformed key: the open's check refuses such files
		}
		r, crc, err := decodeRow(id, v)
		if err != nil {
			// Kept as an undecodable row: its raw value becomes the
			// payload of a block that fails its checksum, so its claim
			// moves it to DEAD as Claim did with the row.
			chunk = append(chunk, old{r: Row{ID: id, Status: StatusPending, CreatedAt: now, UpdatedAt: now, Payload: v}, bad: true})
			size += len(v)
			continue
		}
		chunk = append(chunk, old{r: r, bad: payloadCRC(r.Payload) != crc, decoded: true})
		size += len(r.Payload)
	}
	// Encode everything first: the values alias the mapping, and the
	// deletes below may change the pages they point into.
	type put struct{ k, v []byte }
	var puts, states []put
	for i := 0; i < len(chunk); {
		j := i + 1
		if !chunk[i].bad {
			for j < len(chunk) && j-i < blockMaxRows && !chunk[j].bad && chunk[j].r.ID == chunk[j-1].r.ID+1 &&
				chunk[j].r.BatchID == chunk[j-1].r.BatchID+1 && chunk[j].r.CreatedAt == chunk[i].r.CreatedAt {
				j++
			}
		}
		nrs := make([]NewRow, j-i)
		for x := i; x < j; x++ {
			r := &chunk[x].r
			nrs[x-i] = NewRow{SourceID: r.SourceID, Payload: r.Payload}
			st := rowState{status: r.Status, attempts: r.Attempts, updated: r.UpdatedAt, notBefore: r.NotBefore, reason: r.Reason}
			if chunk[x].decoded && st != (rowState{status: StatusPending, updated: r.CreatedAt}) {
				states = append(states, put{u64key(r.ID), st.encode()})
			}
		}
		head := &chunk[i].r
		puts = append(puts, put{u64key(head.ID), encodeBlock(head.ID, head.BatchID, head.CreatedAt, nrs, chunk[i].bad)})
		i = j
	}
	for _, k := range keys {
		if err := rowsB.Delete(k); err != nil {
			return false, fmt.Errorf("delete row %x: %w", k, err)
		}
	}
	for _, p := range puts {
		if err := putBlock(blocks, p.k, p.v); err != nil {
			return false, fmt.Errorf("put block %x: %w", p.k, err)
		}
	}
	for _, p := range states {
		if err := state.Put(p.k, p.v); err != nil {
			return false, fmt.Errorf("put row state %x: %w", p.k, err)
		}
	}
	if k, _ := rowsB.Cursor().First(); k != nil {
		return false, nil
	}
	if err := btx.DeleteBucket(bucketRows); err != nil {
		return false, fmt.Errorf("delete the rows bucket: %w", err)
	}
	return true, meta.Delete([]byte(metaMigrating))
}
