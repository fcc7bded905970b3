package wal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Two fixed keys: tests must not depend on randomness they cannot repeat.
var (
	testKeyA = bytes.Repeat([]byte{0xa5}, KeySize)
	testKeyB = bytes.Repeat([]byte{0x5b}, KeySize)
)

// testEncryptions are the settings the model and crash tests run under.
var testEncryptions = []struct {
	name string
	enc  Encryption
}{
	{"clear", Encryption{}},
	{"sealed", Encryption{KeyFile: "key-a", Key: testKeyA}},
}

func testEncryption(name string) Encryption {
	for _, e := range testEncryptions {
		if e.name == name {
			return e.enc
		}
	}
	return Encryption{}
}

// openOpts opens a WAL with opts and checks its consistency at the end.
func openOpts(t testing.TB, opts Options) *WAL {
	t.Helper()
	w, err := Open(opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		checkConsistent(t, w)
		_ = w.Close()
	})
	return w
}

const secretPayload = "password=hunter2-in-a-log-line"

// fillSealed appends n single-row appends (one block each) and a position.
func fillSealed(t testing.TB, w *WAL, n int) {
	t.Helper()
	for i := range n {
		mustUpdate(t, w, func(tx *Tx) error {
			if _, _, err := tx.Append([]NewRow{{SourceID: "in", Payload: fmt.Appendf(nil, "%s #%d", secretPayload, i)}}); err != nil {
				return err
			}
			return tx.SavePositions([]PositionUpdate{{SourceID: "in", Key: "file", State: []byte(secretPayload)}})
		})
	}
}

// storedPayloads returns the payload of every row, in id order.
func storedPayloads(t testing.TB, w *WAL) []string {
	t.Helper()
	var out []string
	err := w.View(func(tx *ReadTx) error {
		rows, err := tx.List(nil, 0, 0)
		for _, r := range rows {
			out = append(out, string(r.Payload))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSealedStoresNoPlaintext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	w, err := Open(Options{Path: path, Encryption: Encryption{Key: testKeyA}})
	if err != nil {
		t.Fatal(err)
	}
	fillSealed(t, w, 20)
	if !w.Encrypted() {
		t.Fatal("Encrypted() = false")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("hunter2")) {
		t.Fatal("the file holds a payload or position in clear")
	}
	w = openOpts(t, Options{Path: path, Encryption: Encryption{Key: testKeyA}})
	got := storedPayloads(t, w)
	if len(got) != 20 || got[19] != secretPayload+" #19" {
		t.Fatalf("payloads after reopen: %q", got)
	}
	_ = w.View(func(tx *ReadTx) error {
		p, err := tx.Positions("in")
		if err != nil || string(p["file"]) != secretPayload {
			t.Fatalf("position %q, %v", p["file"], err)
		}
		return nil
	})
}

// TestKeyRefusals: every mismatch of key and file is a refusal wrapping
// ErrKey that names the key file, and the file keeps its rows.
func TestKeyRefusals(t *testing.T) {
	dir := t.TempDir()
	sealed := filepath.Join(dir, "sealed.db")
	clear := filepath.Join(dir, "clear.db")
	for _, c := range []struct {
		path string
		key  []byte
	}{{sealed, testKeyA}, {clear, nil}} {
		w, err := Open(Options{Path: c.path, Encryption: Encryption{Key: c.key}})
		if err != nil {
			t.Fatal(err)
		}
		fillSealed(t, w, 3)
		_ = w.Close()
	}
	cases := []struct {
		name, path string
		enc        Encryption
		readOnly   bool
		want       string
	}{
		{"sealed, no key", sealed, Encryption{}, false, "no key was given"},
		{"sealed, no key, read-only", sealed, Encryption{}, true, "no key was given"},
		{"sealed, wrong key", sealed, Encryption{KeyFile: "/etc/edge-agent/wal.key", Key: testKeyB}, false, "/etc/edge-agent/wal.key"},
		{"sealed, wrong key, read-only", sealed, Encryption{KeyFile: "/k", Key: testKeyB}, true, "another key"},
		{"sealed, short key", sealed, Encryption{KeyFile: "/k", Key: testKeyA[:16]}, false, "16 bytes"},
		{"clear with rows, key", clear, Encryption{KeyFile: "/etc/edge-agent/wal.key", Key: testKeyA}, false, "db rekey"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, _ := os.ReadFile(c.path)
			w, err := Open(Options{Path: c.path, Encryption: c.enc, ReadOnly: c.readOnly})
			if err == nil {
				_ = w.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
				t.Fatalf("err = %v; want ErrKey naming %q and the WAL", err, c.want)
			}
			if c.enc.KeyFile != "" && !strings.Contains(err.Error(), c.enc.KeyFile) {
				t.Fatalf("err = %v; want the key file named", err)
			}
			after, _ := os.ReadFile(c.path)
			if !bytes.Equal(before, after) {
				t.Fatal("a refused open changed the file")
			}
		})
	}
	// The right keys still read every row.
	for _, c := range []struct {
		path string
		key  []byte
	}{{sealed, testKeyA}, {clear, nil}} {
		w := openOpts(t, Options{Path: c.path, Encryption: Encryption{Key: c.key}})
		if n := len(storedPayloads(t, w)); n != 3 {
			t.Fatalf("%s: %d rows", c.path, n)
		}
	}
}

// TestKeyForDrainedClearFile: a clear file without rows is sealed at the
// first open with a key, its positions included.
func TestKeyForDrainedClearFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	w, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	mustUpdate(t, w, func(tx *Tx) error {
		return tx.SavePositions([]PositionUpdate{{SourceID: "in", Key: "file", State: []byte(secretPayload)}})
	})
	_ = w.Close()
	w = openOpts(t, Options{Path: path, Encryption: Encryption{Key: testKeyA}})
	if !w.Encrypted() {
		t.Fatal("not sealed")
	}
	_ = w.View(func(tx *ReadTx) error {
		p, err := tx.Positions("in")
		if err != nil || string(p["file"]) != secretPayload {
			t.Fatalf("position %q, %v", p["file"], err)
		}
		raw := tx.positions.Get(flatPosKey("in", "file"))
		if bytes.Contains(raw, []byte("hunter2")) {
			t.Fatal("position still clear")
		}
		return nil
	})
}

// corruptBlock changes the stored block under first with fn, bypassing
// the WAL.
func corruptBlock(t *testing.T, path string, first uint64, fn func(v []byte)) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(btx *bolt.Tx) error {
		b := btx.Bucket(bucketBlocks)
		v := bytes.Clone(getBlock(b, u64key(first)))
		fn(v)
		return b.Bucket(u64key(first)).Put(blockValueKey, v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFlippedSealedByte: a changed byte of a sealed block is a checksum
// failure (DEAD at claim, counted, reported by Verify and Salvage), and
// one whose CRC was fixed up fails authentication the same way.
func TestFlippedSealedByte(t *testing.T) {
	for _, fixCRC := range []bool{false, true} {
		t.Run(fmt.Sprintf("fixed-crc=%v", fixCRC), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "wal.db")
			enc := Encryption{Key: testKeyA}
			w, err := Open(Options{Path: path, Encryption: enc})
			if err != nil {
				t.Fatal(err)
			}
			fillSealed(t, w, 2)
			_ = w.Close()
			corruptBlock(t, path, 1, func(v []byte) {
				v[len(v)-20] ^= 0x01 // in the ciphertext
				if fixCRC {
					binary.BigEndian.PutUint32(v[30:], crcOf(v))
				}
			})
			w, err = Open(Options{Path: path, Encryption: enc})
			if err != nil {
				t.Fatal(err)
			}
			var problems []Problem
			_ = w.View(func(tx *ReadTx) error { problems = tx.Verify(10); return nil })
			if len(problems) == 0 || !strings.Contains(fmt.Sprint(problems), "checksum mismatch") {
				t.Fatalf("verify: %v", problems)
			}
			rows := claim(t, w, 10, t0)
			if len(rows) != 1 || rows[0].ID != 2 {
				t.Fatalf("claimed %v, want only row 2", ids(rows))
			}
			if c := counts(t, w); c.Dead != 1 || c.ChecksumFailures != 1 {
				t.Fatalf("counts %+v", c)
			}
			_ = w.Close()
			rep, err := Salvage(path, "", SalvageOptions{DryRun: true, Encryption: enc})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.BadRows) != 1 || rep.BadRows[0].RowID != 1 {
				t.Fatalf("salvage bad rows %v", rep.BadRows)
			}
		})
	}
}

// TestFlippedSealedPosition: a changed byte of a sealed position is
// reported by Verify and Positions, never returned as a state.
func TestFlippedSealedPosition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	enc := Encryption{Key: testKeyA}
	w, err := Open(Options{Path: path, Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	fillSealed(t, w, 1)
	_ = w.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(btx *bolt.Tx) error {
		b := btx.Bucket(bucketPositions)
		k := flatPosKey("in", "file")
		v := bytes.Clone(b.Get(k))
		v[len(v)-1] ^= 0x40
		return b.Put(k, v)
	})
	_ = db.Close()
	if err != nil {
		t.Fatal(err)
	}
	w, err = Open(Options{Path: path, Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_ = w.View(func(tx *ReadTx) error {
		if p := tx.Verify(10); len(p) != 1 || !strings.Contains(p[0].What, "does not authenticate") {
			t.Fatalf("verify: %v", p)
		}
		if _, err := tx.Positions("in"); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("positions: %v", err)
		}
		return nil
	})
}

// TestSalvageSealed: salvage needs the key, and writes a sealed copy.
func TestSalvageSealed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "wal.db")
	enc := Encryption{KeyFile: "key-a", Key: testKeyA}
	w, err := Open(Options{Path: path, Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	fillSealed(t, w, 5)
	_ = w.Close()
	if _, err := Salvage(path, filepath.Join(dir, "x.db"), SalvageOptions{}); !errors.Is(err, ErrKey) {
		t.Fatalf("salvage without key: %v", err)
	}
	if _, err := Salvage(path, filepath.Join(dir, "y.db"), SalvageOptions{Encryption: Encryption{KeyFile: "b", Key: testKeyB}}); !errors.Is(err, ErrKey) {
		t.Fatalf("salvage with wrong key: %v", err)
	}
	out := filepath.Join(dir, "out.db")
	rep, err := Salvage(path, out, SalvageOptions{Encryption: enc})
	if err != nil || rep.Copied() != 5 || rep.Positions != 1 {
		t.Fatalf("salvage: %+v, %v", rep, err)
	}
	raw, _ := os.ReadFile(out)
	if bytes.Contains(raw, []byte("hunter2")) {
		t.Fatal("salvaged copy holds clear data")
	}
	w = openOpts(t, Options{Path: out, Encryption: enc})
	if got := storedPayloads(t, w); len(got) != 5 || got[4] != secretPayload+" #4" {
		t.Fatalf("payloads %q", got)
	}
}

// stopAfter is a context whose Err turns non-nil after n calls: Rekey
// checks it between its transactions, so it stops Rekey exactly as a
// crash between two commits would (a commit is atomic).
type stopAfter struct {
	context.Context
	n int
}

func (s *stopAfter) Err() error {
	if s.n <= 0 {
		return context.Canceled
	}
	s.n--
	return nil
}

// TestRekeyInterrupted stops a rotation after every possible number of
// transactions and checks that the file then opens only with both keys,
// that a Rekey with them finishes it, and that afterwards it opens with
// the new key alone, every row and position intact.
func TestRekeyInterrupted(t *testing.T) {
	const blocks = 3*rekeyTxBlocks + 10 // four re-seal transactions
	master := filepath.Join(t.TempDir(), "master.db")
	for _, from := range []Encryption{{}, {KeyFile: "key-a", Key: testKeyA}} {
		_ = os.Remove(master)
		w, err := Open(Options{Path: master, Encryption: from})
		if err != nil {
			t.Fatal(err)
		}
		fillSealed(t, w, blocks)
		want := storedPayloads(t, w)
		_ = w.Close()
		for stop := 0; stop <= 5; stop++ {
			t.Run(fmt.Sprintf("from-sealed=%v/stop=%d", from.Key != nil, stop), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "wal.db")
				data, _ := os.ReadFile(master)
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Fatal(err)
				}
				both := Encryption{Key: from.Key, NextKey: testKeyB, NextKeyFile: "key-b"}
				w, err := Open(Options{Path: path, Encryption: both})
				if err != nil {
					t.Fatal(err)
				}
				_, err = w.Rekey(&stopAfter{context.Background(), stop})
				_ = w.Close()
				finished := err == nil
				if !finished && !errors.Is(err, context.Canceled) {
					t.Fatal(err)
				}
				if !finished {
					for _, one := range []Encryption{from, {Key: testKeyB}} {
						if w, err := Open(Options{Path: path, Encryption: one}); !errors.Is(err, ErrKey) ||
							!strings.Contains(err.Error(), "did not finish") {
							if err == nil {
								_ = w.Close()
							}
							t.Fatalf("open with one key mid-rotation: %v", err)
						}
					}
					w, err := Open(Options{Path: path, Encryption: both})
					if err != nil {
						t.Fatal(err)
					}
					if got := storedPayloads(t, w); !slicesEqual(got, want) {
						t.Fatal("rows differ mid-rotation")
					}
					rep, err := w.Rekey(context.Background())
					_ = w.Close()
					if err != nil || !rep.Resumed {
						t.Fatalf("resume: %+v, %v", rep, err)
					}
				}
				if from.Key != nil {
					if _, err := Open(Options{Path: path, Encryption: from}); !errors.Is(err, ErrKey) {
						t.Fatalf("old key after rotation: %v", err)
					}
				}
				w = openOpts(t, Options{Path: path, Encryption: Encryption{Key: testKeyB}})
				if got := storedPayloads(t, w); !slicesEqual(got, want) {
					t.Fatal("rows differ after rotation")
				}
				_ = w.View(func(tx *ReadTx) error {
					p, err := tx.Positions("in")
					if err != nil || string(p["file"]) != secretPayload {
						t.Fatalf("position %q, %v", p["file"], err)
					}
					return nil
				})
			})
		}
	}
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzOpenSealed changes bytes of a sealed block and of a sealed
// position: decoding never panics, and whatever decodes is the original
// (but the stand-in flag, which is outside the seal).
func FuzzOpenSealed(f *testing.F) {
	e, err := newSealEntry(1, testKeyA)
	if err != nil {
		f.Fatal(err)
	}
	kr, _, err := buildKeyring([]sealEntry{e}, testKeyA)
	if err != nil {
		f.Fatal(err)
	}
	enc := blockEncoder{keys: kr}
	rows := []NewRow{{SourceID: "a", Payload: []byte(secretPayload)}, {SourceID: "b", Payload: bytes.Repeat([]byte("x"), 300)}}
	good, _ := enc.encode(7, 100, t0, rows, false)
	good = bytes.Clone(good)
	posKey := flatPosKey("in", "file")
	pos := kr.sealPosition(posKey, []byte(secretPayload))
	f.Add(uint(0), byte(1), uint(0))
	f.Add(uint(40), byte(0x80), uint(3))
	f.Add(uint(len(good)-1), byte(0xff), uint(len(pos)-1))
	f.Fuzz(func(t *testing.T, at uint, x byte, posAt uint) {
		v := bytes.Clone(good)
		v[at%uint(len(v))] ^= x
		// Fix the CRC up, so that the seal is what is tested.
		if len(v) >= blockHeaderSize {
			binary.BigEndian.PutUint32(v[30:], crcOf(v))
		}
		b := decodeBlock(7, v, kr)
		if b.err == nil {
			w := bytes.Clone(v)
			w[1] = w[1]&^blockStandIn | good[1]&blockStandIn
			if !bytes.Equal(w[:30], good[:30]) || !bytes.Equal(w[blockHeaderSize:], good[blockHeaderSize:]) {
				t.Fatalf("a changed block decodes: byte %d ^ %#x", at%uint(len(v)), x)
			}
		}
		p := bytes.Clone(pos)
		p[posAt%uint(len(p))] ^= x
		if st, err := kr.openPosition(posKey, p); err == nil && (x != 0 || string(st) != secretPayload) {
			t.Fatalf("a changed position opens: %q", st)
		}
	})
}

// FuzzSealMeta: meta "seal" never panics its parser, and what parses
// encodes back to the same bytes.
func FuzzSealMeta(f *testing.F) {
	e, err := newSealEntry(3, testKeyA)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(encodeSealMeta([]sealEntry{e}))
	f.Add(encodeSealMeta([]sealEntry{e, {gen: clearGen}}))
	f.Add([]byte{sealMetaV1})
	f.Fuzz(func(t *testing.T, v []byte) {
		es, err := parseSealMeta(v)
		if err != nil || v == nil {
			return
		}
		if !bytes.Equal(encodeSealMeta(es), v) {
			t.Fatalf("%x parses as %d entries that encode otherwise", v, len(es))
		}
		if _, _, err := buildKeyring(es, testKeyA, testKeyB); err != nil {
			t.Fatal(err)
		}
	})
}
