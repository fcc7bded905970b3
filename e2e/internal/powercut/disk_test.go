//go:build linux

package powercut

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// mount mounts d at a new directory, unmounted at the end of the test;
// without FUSE it skips, or fails under CI=true.
func mount(t *testing.T, d *Disk, dir string) *Mount {
	t.Helper()
	m, err := d.Mount(dir)
	if errors.Is(err, ErrNoFUSE) && os.Getenv("CI") != "true" {
		t.Skipf("SKIPPED: no power-cut filesystem on this host: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCutKeepsWhatWasSynced(t *testing.T) {
	d := NewDisk(64 << 20)
	dir := t.TempDir()
	m := mount(t, d, dir)
	path := filepath.Join(dir, "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("synced "); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("lost"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "synced lost" {
		t.Fatalf("before the cut: %q, %v", b, err)
	}
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	if n := d.Cut(); n == 0 {
		t.Fatal("the cut dropped nothing")
	}
	m = mount(t, d, dir)
	defer func() {
		if err := m.Unmount(); err != nil {
			t.Error(err)
		}
	}()
	if b, err := os.ReadFile(path); err != nil || string(b) != "synced " {
		t.Fatalf("after the cut: %q, %v, want %q", b, err, "synced ")
	}
	if syncs, _ := d.Stats(); syncs != 1 {
		t.Fatalf("syncs = %d, want 1", syncs)
	}
}
