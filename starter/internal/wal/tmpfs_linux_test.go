package wal

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

const tmpfsMagic = 0x01021994

func onTmpfs(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Type == tmpfsMagic
}

// smallDisk mounts a tmpfs of size bytes under t.TempDir, unmounted when
// the test ends; it skips the test when it cannot (mounting needs root).
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs for the full-disk cases")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Skipf("cannot mount a small tmpfs for the full-disk cases: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes a ballast file in dir until the filesystem is full.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "ballast")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for i := 0; i < 1<<20; i++ { // bounded: a few MiB fill long before
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path
			}
			t.Fatalf("fill disk: %v", err)
		}
	}
	t.Fatal("the disk never filled up")
	return ""
}
