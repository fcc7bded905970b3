package wal

import (
	"bytes"
	"context"
	"fmt"
)

// rekeyTxBytes bounds the block bytes one transaction of Rekey re-seals,
// and rekeyTxBlocks the blocks: a rotation of a big backlog commits in
// steps of bounded memory and duration.
const (
	rekeyTxBytes  = 8 << 20
	rekeyTxBlocks = 256
)

// RekeyReport says what Rekey did.
type RekeyReport struct {
	// Resumed: a rotation to the same new key had been started before
	// (and stopped by a crash); this one finished it.
	Resumed bool
	// Blocks and Positions count what was sealed again.
	Blocks, Positions int
	// Unreadable lists the blocks that could not be opened (damaged):
	// left as they are, their rows go DEAD at their claim, as before.
	Unreadable []Problem
}

// Rekey rotates the file's key to Options.Encryption.NextKey (the WAL is
// opened read-write with Key the current key, none for a clear file).
//
// Crash safety: the first transaction adds the new key generation in
// front of the old one in meta "seal" (seal.go) and seals every position
// with it; then transactions of at most rekeyTxBlocks blocks
// (rekeyTxBytes) each re-seal the blocks still under an old generation;
// the last transaction removes the old generation. Each block records the
// generation that sealed it, so a crash at any point leaves a file every
// block and position of which opens with one of the two keys: Open
// refuses it without both (ErrKey, naming this command), and Rekey with
// the same two keys resumes where it stopped.
func (w *WAL) Rekey(ctx context.Context) (RekeyReport, error) {
	var rep RekeyReport
	next := w.opts.Encryption.NextKey
	if len(next) != KeySize {
		return rep, fmt.Errorf("rekey wal %s: no new key of %d bytes given: %w", w.path, KeySize, ErrKey)
	}
	var newKeys *keyring
	err := w.Update(func(tx *Tx) error {
		es, err := readSealMeta(tx.meta)
		if err != nil {
			return err
		}
		if len(es) > 0 && es[0].matches(next) {
			rep.Resumed = len(es) > 1
			return nil
		}
		if len(es) > 1 {
			return fmt.Errorf("a rotation to another key is under way: finish it first with the two key files it " +
				"was started with")
		}
		gen := uint32(1)
		if len(es) == 0 {
			es = []sealEntry{{gen: clearGen}}
		} else {
			gen = es[0].gen + 1
		}
		e, err := newSealEntry(gen, next)
		if err != nil {
			return err
		}
		es = append([]sealEntry{e}, es...)
		kr, ok, err := buildKeyring(es, w.opts.Encryption.Key, next)
		if err != nil || !ok {
			return fmt.Errorf("build keys: %v: %w", err, ErrKey)
		}
		kr.epoch = w.keyring().epoch
		n := tx.positions.Stats().KeyN
		if err := resealPositions(tx.btx, w.keyring(), kr); err != nil {
			return err
		}
		rep.Positions = n
		if err := tx.meta.Put([]byte(metaSeal), encodeSealMeta(es)); err != nil {
			return fmt.Errorf("write meta %s: %w", metaSeal, err)
		}
		newKeys = kr
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("rekey wal %s: %w", w.path, err)
	}
	if newKeys != nil {
		w.wmu.Lock()
		w.setKeys(newKeys)
		w.wmu.Unlock()
	}
	kr := w.keyring()
	var after []byte
	for done := false; !done; {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("rekey wal %s: stopped with blocks still under the old key (run it again to "+
				"finish): %w", w.path, err)
		}
		err := w.Update(func(tx *Tx) error {
			var batch [][2][]byte
			size := 0
			c := tx.blocks.Cursor()
			k, _ := c.First()
			if after != nil {
				k, _ = c.Seek(after)
				if k != nil && bytes.Equal(k, after) {
					k, _ = c.Next()
				}
			}
			for ; k != nil && len(batch) < rekeyTxBlocks && size < rekeyTxBytes; k, _ = c.Next() {
				after = bytes.Clone(k)
				v := getBlock(tx.blocks, k)
				if gen, ok := blockGen(v); ok && gen == kr.cur.gen {
					continue
				}
				id, _ := keyID(k)
				nv, err := kr.resealBlock(id, v)
				if err != nil {
					rep.Unreadable = append(rep.Unreadable, Problem{RowID: id, What: err.Error()})
					continue
				}
				batch = append(batch, [2][]byte{after, nv})
				size += len(nv)
			}
			done = k == nil
			for _, kv := range batch {
				if err := tx.blocks.Bucket(kv[0]).Put(blockValueKey, kv[1]); err != nil {
					return fmt.Errorf("block %x: %w", kv[0], err)
				}
			}
			rep.Blocks += len(batch)
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("rekey wal %s: %w", w.path, err)
		}
	}
	err = w.Update(func(tx *Tx) error {
		es, err := readSealMeta(tx.meta)
		if err != nil {
			return err
		}
		return tx.meta.Put([]byte(metaSeal), encodeSealMeta(es[:1]))
	})
	if err != nil {
		return rep, fmt.Errorf("rekey wal %s: %w", w.path, err)
	}
	es := []sealEntry{}
	_ = w.View(func(rt *ReadTx) error {
		es, err = readSealMeta(rt.meta)
		return err
	})
	final, ok, err := buildKeyring(es, next)
	if err == nil && ok {
		final.epoch, final.ctr = kr.epoch, kr.ctr
		w.wmu.Lock()
		w.setKeys(final)
		w.wmu.Unlock()
	}
	return rep, nil
}
