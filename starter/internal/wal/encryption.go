package wal

import (
	"encoding/binary"
	"fmt"
	"math"

	bolt "go.etcd.io/bbolt"
)

// KeySize is the length of an encryption key: AES-256.
const KeySize = 32

// Encryption is agent.yaml's queue.encryption: the WAL's payloads and
// positions sealed with a key (seal.go). The zero value is a clear WAL.
type Encryption struct {
	// KeyFile holds the key, base64 (as output.aes-secret-key-file does);
	// named in every refusal.
	KeyFile string `yaml:"key-file"`
	// Key is the decoded key of KeyFile, read by the config layer (or the
	// db command's --key-file); empty: no encryption.
	Key []byte `yaml:"-" json:"-"`
	// NextKey is the key a rotation seals with (Rekey, `db rekey`): given,
	// Open also accepts a file whose rotation to it is under way.
	NextKey []byte `yaml:"-" json:"-"`
	// NextKeyFile names NextKey's file in messages.
	NextKeyFile string `yaml:"-"`
}

// RekeyCommand is the command that rotates the key of the WAL at path.
func RekeyCommand(path string) string {
	return fmt.Sprintf("edge-agent db rekey --db-path %s --key-file <current key file> --new-key-file <new key file> --yes", path)
}

func (e Encryption) keyName() string {
	if e.KeyFile != "" {
		return e.KeyFile + " (queue.encryption.key-file)"
	}
	return "the key given"
}

// initKeys reads the file's key generations in btx, checks them against
// the configured keys and, on a read-write open, records a clear new
// file as encrypted and starts a new nonce epoch. Every refusal wraps
// ErrKey and leaves the file unchanged.
func (w *WAL) initKeys(btx *bolt.Tx) error {
	enc := w.opts.Encryption
	meta := btx.Bucket(bucketMeta)
	es, err := readSealMeta(meta)
	if err != nil {
		return err
	}
	for _, k := range [][]byte{enc.Key, enc.NextKey} {
		if len(k) != 0 && len(k) != KeySize {
			return fmt.Errorf("a key of %d bytes, want %d (%s): %w", len(k), KeySize, enc.keyName(), ErrKey)
		}
	}
	if len(es) == 0 {
		if len(enc.Key) == 0 || w.opts.ReadOnly {
			// A clear file is read as one, and a read-only open writes
			// nothing.
			w.setKeys(plainKeys)
			return nil
		}
		if k, _ := btx.Bucket(bucketBlocks).Cursor().First(); k != nil {
			return fmt.Errorf("the WAL is not encrypted and holds rows, but %s is set; rows are never converted at "+
				"start: either remove queue.encryption until the agent has sent them all, or stop the agent and run "+
				"`edge-agent db rekey --new-key-file %s --yes` (with queue.encryption removed), which seals them: %w",
				enc.keyName(), enc.KeyFile, ErrKey)
		}
		return w.sealNewFile(btx, meta)
	}
	unfinished := fmt.Errorf("a key rotation of this WAL did not finish, and its blocks are sealed with two keys "+
		"(or with one, and clear): stop the agent and run `%s` again with the same two key files (or with only "+
		"--new-key-file when the WAL was clear), then start it with the new key: %w", RekeyCommand(w.path), ErrKey)
	if len(es) > 1 && len(enc.NextKey) == 0 {
		return unfinished
	}
	if len(enc.Key) == 0 && len(enc.NextKey) == 0 {
		return fmt.Errorf("the WAL is encrypted and no key was given: set queue.encryption.key-file to the file "+
			"holding its key (db commands: --key-file): %w", ErrKey)
	}
	kr, ok, err := buildKeyring(es, enc.Key, enc.NextKey)
	if err != nil {
		return err
	}
	if !ok {
		if len(es) > 1 {
			return unfinished
		}
		return fmt.Errorf("the WAL is encrypted with another key than the one of %s: put the WAL's key back into "+
			"that file (a key is changed only with `%s`); without its key the WAL's rows cannot be read, and the agent "+
			"does not start rather than lose them: %w", enc.keyName(), RekeyCommand(w.path), ErrKey)
	}
	if !w.opts.ReadOnly {
		if kr.epoch, err = nextEpoch(meta); err != nil {
			return err
		}
	}
	w.setKeys(kr)
	return nil
}

// sealNewFile records a clear file without rows as encrypted with the
// configured key, sealing the positions a drained file may still hold.
func (w *WAL) sealNewFile(btx *bolt.Tx, meta *bolt.Bucket) error {
	e, err := newSealEntry(1, w.opts.Encryption.Key)
	if err != nil {
		return err
	}
	es := []sealEntry{e}
	kr, _, err := buildKeyring(es, w.opts.Encryption.Key)
	if err != nil {
		return err
	}
	if kr.epoch, err = nextEpoch(meta); err != nil {
		return err
	}
	if err := resealPositions(btx, plainKeys, kr); err != nil {
		return err
	}
	if err := meta.Put([]byte(metaSeal), encodeSealMeta(es)); err != nil {
		return fmt.Errorf("write meta %s: %w", metaSeal, err)
	}
	w.setKeys(kr)
	return nil
}

// nextEpoch increments and returns meta seal_epoch (seal.go, nonces).
func nextEpoch(meta *bolt.Bucket) (uint32, error) {
	var ep uint32
	if v := meta.Get([]byte(metaSealEpoch)); len(v) == 4 {
		ep = binary.BigEndian.Uint32(v)
	}
	if ep == math.MaxUint32 {
		return 0, fmt.Errorf("the WAL was opened %d times with its key: rotate the key (%s) to go on: %w", ep, RekeyCommand("<wal>"), ErrKey)
	}
	ep++
	if err := meta.Put([]byte(metaSealEpoch), binary.BigEndian.AppendUint32(nil, ep)); err != nil {
		return 0, fmt.Errorf("write meta %s: %w", metaSealEpoch, err)
	}
	return ep, nil
}

func (w *WAL) setKeys(kr *keyring) {
	w.keys.Store(kr)
	w.enc.keys = kr
}

// keyring returns the WAL's keys (clear ones before Open read them).
func (w *WAL) keyring() *keyring {
	if kr := w.keys.Load(); kr != nil {
		return kr
	}
	return plainKeys
}

// Encrypted reports whether the WAL seals what it stores.
func (w *WAL) Encrypted() bool { return w.keyring().sealed() }

// resealPositions rewrites every position of btx from the keys from (a
// clear file's, or a generation of a rotation) to those of to.
func resealPositions(btx *bolt.Tx, from, to *keyring) error {
	b := btx.Bucket(bucketPositions)
	type kv struct{ k, v []byte }
	var all []kv
	err := b.ForEach(func(k, v []byte) error {
		if v == nil {
			return nil
		}
		st, err := from.openPosition(k, v)
		if err != nil {
			return fmt.Errorf("position %q: sealed state does not authenticate: %w", k, ErrCorrupt)
		}
		all = append(all, kv{append([]byte(nil), k...), to.sealPosition(k, st)})
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range all {
		if err := b.Put(e.k, e.v); err != nil {
			return fmt.Errorf("position %q: %w", e.k, err)
		}
	}
	return nil
}

// positions reports the positions of an encrypted file whose sealed
// state does not open (Verify's last step); true when the limit is
// reached.
func (v *verifier) positions() bool {
	kr := v.tx.w.keyring()
	if !kr.sealed() {
		return false
	}
	stop := false
	_ = v.tx.positions.ForEach(func(k, val []byte) error {
		if val == nil || stop {
			return nil
		}
		if _, err := kr.openPosition(k, val); err != nil {
			src, key, _ := splitFlatPosKey(k)
			stop = v.add(0, "position %q/%q: its sealed state does not authenticate: %v", src, key, err)
		}
		return nil
	})
	return stop
}
