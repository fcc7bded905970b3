package diskcheck

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync is fdatasync, what bbolt calls on Linux.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
