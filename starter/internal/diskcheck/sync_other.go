//go:build !linux

package diskcheck

import "os"

// datasync is fsync where bbolt uses it (no fdatasync).
func datasync(f *os.File) error { return f.Sync() }
