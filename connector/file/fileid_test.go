package file

import (
	"testing"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
)

// TestWindowsFileID: the two halves of a Windows file index and its volume
// make one identity that no other (volume, index) shares, and that a saved
// position gives back after a restart. Runs everywhere: only the call that
// reads the numbers is Windows'.
func TestWindowsFileID(t *testing.T) {
	distinct := [][3]uint32{
		{1, 0, 1},
		{1, 1, 0}, // halves swapped
		{2, 0, 1}, // same index, other volume
		{1, 1, 1},
		{0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF},
		{0, 0, 0xFFFFFFFF},
		{0, 0xFFFFFFFF, 0},
	}
	seen := make(map[fileID][3]uint32)
	for _, c := range distinct {
		id := windowsFileID(c[0], c[1], c[2])
		if prev, dup := seen[id]; dup {
			t.Fatalf("%v and %v share the identity %+v", prev, c, id)
		}
		seen[id] = c
		if id != windowsFileID(c[0], c[1], c[2]) {
			t.Fatalf("%v: identity not stable", c)
		}
		roundTrip(t, id)
	}
	// The index is one 64-bit number: high half above the low one.
	if got := windowsFileID(7, 0x1, 0x2).ino; got != 0x1_0000_0002 {
		t.Fatalf("index = %#x, want 0x100000002", got)
	}
}

// TestUnixFileID: device and inode are kept whole, and a saved position
// gives them back.
func TestUnixFileID(t *testing.T) {
	for _, c := range [][2]uint64{{2049, 1835012}, {0, 1}, {1, 0}, {^uint64(0), ^uint64(0)}} {
		id := unixFileID(c[0], c[1])
		if id.dev != c[0] || id.ino != c[1] {
			t.Fatalf("unixFileID(%d, %d) = %+v", c[0], c[1], id)
		}
		roundTrip(t, id)
	}
	if unixFileID(1, 2) == unixFileID(2, 1) {
		t.Fatal("device and inode confused")
	}
}

// roundTrip saves a position for id the way the input does and decodes it
// the way Open does; the identity must survive, or a restart would read
// the file again from 0 (or attach its position to another file).
func roundTrip(t *testing.T, id fileID) {
	t.Helper()
	b := appendStateHead(nil, id, []byte(`"a.log"`), fingerprint.Sum{Len: 4, Hash: 0xabc}, nil)
	b = appendStateTail(b, 10, 1, 12)
	s, err := decodeState("k", b)
	if err != nil {
		t.Fatal(err)
	}
	if s.id() != id {
		t.Fatalf("saved %+v, read back %+v from %s", id, s.id(), b)
	}
}
