package boltraw

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

const bboltModule = "go.etcd.io/bbolt"

// TestFormatVersionIsGoModBbolt fails when go.mod requires bbolt of
// another minor version than the one the reader was checked against: its
// page format must then be checked again, and FormatVersion moved. (Test
// binaries carry no module list in their build info, so go.mod is read.)
func TestFormatVersionIsGoModBbolt(t *testing.T) {
	version := requiredVersion(t, bboltModule)
	if minor := minorOf(version); minor != FormatVersion {
		t.Fatalf("go.mod requires %s %s: the page reader is checked against %s; check bbolt's meta, branch, leaf "+
			"and bucket layout of %s against this package, then set FormatVersion", bboltModule, version, FormatVersion, minor)
	}
}

// requiredVersion returns the version of module the go.mod of the
// module under test requires.
func requiredVersion(t *testing.T, module string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for line := range strings.Lines(string(b)) {
				f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
				if len(f) >= 2 && f[0] == module {
					return f[1]
				}
			}
			t.Fatalf("%s does not require %s", filepath.Join(dir, "go.mod"), module)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package directory")
		}
		dir = parent
	}
}

// minorOf returns "vX.Y" of a module version "vX.Y.Z[-pre]".
func minorOf(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

func TestMinorOf(t *testing.T) {
	for in, want := range map[string]string{"v1.5.0": "v1.5", "v1.4.3": "v1.4", "v1.10.0-alpha.1": "v1.10", "v2": "v2"} {
		if got := minorOf(in); got != want {
			t.Errorf("minorOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// writeBolt writes, through bbolt, buckets with enough keys for branch
// pages, a nested bucket and an inline one; it returns the path and every
// key/value as "bucket/path key=value".
func writeBolt(t *testing.T) (string, map[string]bool) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "b.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	err = db.Update(func(tx *bolt.Tx) error {
		big, err := tx.CreateBucket([]byte("big"))
		if err != nil {
			return err
		}
		for i := range 2000 {
			k, v := fmt.Sprintf("k%05d", i), fmt.Sprintf("value %d %040d", i, i)
			if err := big.Put([]byte(k), []byte(v)); err != nil {
				return err
			}
			want["big "+k+"="+v] = true
		}
		outer, err := tx.CreateBucket([]byte("outer"))
		if err != nil {
			return err
		}
		inner, err := outer.CreateBucket([]byte("inner"))
		if err != nil {
			return err
		}
		want["outer/inner a=1"] = true
		return inner.Put([]byte("a"), []byte("1"))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return path, want
}

func walkFile(t *testing.T, path string) (*Walk, map[string]bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := ReadMeta(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	w := NewWalk(f, st.Size(), m)
	w.Visit = func(bucket [][]byte, key, value []byte, _ uint64) {
		got[bucketName(bucket)+" "+string(key)+"="+string(value)] = true
	}
	w.Run()
	return w, got
}

// TestWalkReadsWhatBboltWrote: the walk of a sound file written by the
// bbolt this module builds with finds no damage and every key/value.
func TestWalkReadsWhatBboltWrote(t *testing.T) {
	path, want := writeBolt(t)
	w, got := walkFile(t, path)
	if len(w.Damage) > 0 {
		t.Fatalf("damage on a sound file: %v", w.Damage)
	}
	if len(got) != len(want) {
		t.Fatalf("walk found %d key/values, bbolt wrote %d", len(got), len(want))
	}
	for kv := range want {
		if !got[kv] {
			t.Fatalf("walk misses %q", kv)
		}
	}
}

// TestWalkReportsDamage: a page overwritten with garbage is reported, and
// the walk still reads the rest of the tree.
func TestWalkReportsDamage(t *testing.T) {
	path, want := writeBolt(t)
	_, got := walkFile(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The last page in use holds a leaf of the big bucket or later data:
	// overwrite a page in the middle of the used range instead.
	m, err := ReadMeta(bytesReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	mid := m.HWM / 2
	for i := range m.PageSize {
		b[mid*m.PageSize+i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	w, damaged := walkFile(t, path)
	if len(w.Damage) == 0 {
		t.Fatal("no damage reported for a page of garbage")
	}
	if len(damaged) == 0 || len(damaged) >= len(got) || len(got) != len(want) {
		t.Fatalf("read %d key/values of a damaged file, %d of the sound one", len(damaged), len(got))
	}
}

type bytesReader []byte

func (b bytesReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, fmt.Errorf("read at %d: past the end", off)
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, fmt.Errorf("read at %d: short", off)
	}
	return n, nil
}
