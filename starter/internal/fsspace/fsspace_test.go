package fsspace

import (
	"path/filepath"
	"runtime"
	"testing"
)

// TestOf: a folder's filesystem and a file not created yet in it report
// the same, sane space.
func TestOf(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "windows" {
		t.Skip("no space figures on " + runtime.GOOS)
	}
	dir := t.TempDir()
	for _, p := range []string{dir, filepath.Join(dir, "wal.db")} {
		s, ok := Of(p)
		if !ok {
			t.Fatalf("Of(%s) cannot tell", p)
		}
		if s.Size <= 0 || s.Avail < 0 || s.Avail > s.Size {
			t.Errorf("Of(%s) = %+v: want 0 <= avail <= size, size > 0", p, s)
		}
	}
	if _, ok := Of(filepath.Join(dir, "no", "such", "wal.db")); ok {
		t.Error("a path two missing folders deep reported space")
	}
}
