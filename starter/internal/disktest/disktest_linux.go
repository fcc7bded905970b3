//go:build linux

package disktest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func small(tb testing.TB, size int) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root to mount a small tmpfs for a full-disk case")
	}
	dir := tb.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		tb.Skipf("cannot mount a small tmpfs for a full-disk case: %v", err)
	}
	tb.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			tb.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

func fill(tb testing.TB, dir string) string {
	tb.Helper()
	path := filepath.Join(dir, "ballast")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for i := 0; i < 1<<20; i++ { // bounded: a tmpfs of a few MiB is full long before
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path
			}
			tb.Fatalf("fill disk: %v", err)
		}
	}
	tb.Fatal("the disk never filled up")
	return ""
}
