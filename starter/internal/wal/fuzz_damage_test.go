package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/edge-agent/edge-agent/starter/internal/wal/boltraw"
)

// fuzzBase is a small sound WAL (rows in every state, positions, a rows
// tree with a branch page), built once per test binary; only its used
// pages are kept, so that every mutation lands on data.
var fuzzBase struct {
	once sync.Once
	b    []byte
	err  error
}

func fuzzBaseFile(t testing.TB) []byte {
	fuzzBase.once.Do(func() {
		dir, err := os.MkdirTemp("", "wal-fuzz-base")
		if err != nil {
			fuzzBase.err = err
			return
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "wal.db")
		w, err := Open(Options{Path: path, Now: newClock(t0).Now})
		if err != nil {
			fuzzBase.err = err
			return
		}
		rows := make([]NewRow, 300)
		for i := range rows {
			rows[i] = NewRow{SourceID: "app", Payload: fmt.Appendf(nil, `{"_line":%d,"pad":"%060d"}`, i+1, i)}
		}
		fuzzBase.err = w.Update(func(tx *Tx) error {
			if _, _, err := tx.Append(rows); err != nil {
				return err
			}
			if _, err := tx.Claim(10, t0); err != nil {
				return err
			}
			if _, err := tx.Fail(seq(1, 3), true, t0, 1, "DECODE_FAILED", t0); err != nil {
				return err
			}
			if err := tx.Ack(seq(4, 6), 3_600_000_000_000, t0); err != nil {
				return err
			}
			return tx.SavePositions([]PositionUpdate{{SourceID: "app", Key: "/a.log", State: []byte("42")}})
		})
		if cerr := w.Close(); fuzzBase.err == nil {
			fuzzBase.err = cerr
		}
		if fuzzBase.err != nil {
			return
		}
		b, err := os.ReadFile(path)
		if err != nil {
			fuzzBase.err = err
			return
		}
		m, err := boltraw.ReadMeta(bytesReaderAt(b), int64(len(b)))
		if err != nil {
			fuzzBase.err = err
			return
		}
		fuzzBase.b = b[:m.HWM*m.PageSize]
	})
	if fuzzBase.err != nil {
		t.Fatal(fuzzBase.err)
	}
	return fuzzBase.b
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, fmt.Errorf("read at %d: past the end", off)
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, fmt.Errorf("read at %d: short", off)
	}
	return n, nil
}

// mutate applies fuzz input to a copy of base: each 5 bytes are a 4-byte
// offset and a byte to XOR there (0 zeroes 8 bytes instead); one byte
// left over truncates the file to that many 256ths.
func mutate(base, data []byte) []byte {
	b := append([]byte(nil), base...)
	for i := 0; i+5 <= len(data); i += 5 {
		off := int(binary.LittleEndian.Uint32(data[i:]) % uint32(len(b)))
		if x := data[i+4]; x != 0 {
			b[off] ^= x
		} else {
			clear(b[off:min(off+8, len(b))])
		}
	}
	if len(data)%5 == 1 {
		b = b[:len(b)*int(data[len(data)-1])/256]
	}
	return b
}

func op(off uint32, x byte) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, off), x)
}

// FuzzDamagedWAL opens arbitrarily damaged WAL bytes the ways the agent
// and the db commands do. Nothing may panic (a panic in one of bbolt's
// goroutines would end the test binary); a read-write open either works
// or reports ErrDamaged/ErrNotWAL; salvage either fails cleanly or writes
// a copy that opens for write and verifies clean.
func FuzzDamagedWAL(f *testing.F) {
	f.Add([]byte{})                         // sound
	f.Add(op(16+40, 0x7f))                  // meta 0: page count
	f.Add(op(8192*2+20, 0))                 // a tree page's header
	f.Add([]byte{128})                      // truncated to half
	f.Add(append(op(0, 0), op(8192, 0)...)) // both metas
	f.Add(append(op(8192*5+100, 0x80), op(8192*7+40, 0)...))
	f.Fuzz(openDamaged)
}

func openDamaged(t *testing.T, data []byte) {
	{
		base := fuzzBaseFile(t)
		dir := t.TempDir()
		path := filepath.Join(dir, "wal.db")
		if err := os.WriteFile(path, mutate(base, data), 0o600); err != nil {
			t.Fatal(err)
		}
		if w, err := Open(Options{Path: path, Now: newClock(t0).Now}); err == nil {
			_, _, _ = w.Verify(0)
			_ = w.Update(func(tx *Tx) error {
				rows, err := tx.Claim(1000, t0)
				if err != nil {
					return err
				}
				return tx.Ack(ids(rows), 0, t0)
			})
			_ = w.Close()
		} else if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrNotWAL) && !errors.Is(err, ErrSchemaVersion) {
			t.Logf("read-write open: %v", err)
		}
		if w, err := Open(Options{Path: path, ReadOnly: true}); err == nil {
			_, _, _ = w.Verify(0)
			_ = w.Close()
		}
		dst := filepath.Join(dir, "salvaged.db")
		if _, err := Salvage(path, dst, SalvageOptions{Now: newClock(t0).Now}); err != nil {
			return
		}
		w, err := Open(Options{Path: dst})
		if err != nil {
			t.Fatalf("the salvaged copy does not open: %v", err)
		}
		defer w.Close()
		if p, _, err := w.Verify(0); err != nil || len(p) > 0 {
			t.Fatalf("the salvaged copy: verify %v, %v", p, err)
		}
	}
}
