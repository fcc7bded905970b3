//go:build linux

package wal

import (
	"os"
	"syscall"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// dropResident tells the kernel that the process no longer needs the pages
// of bbolt's mapping it has touched, up to used bytes (the file's high-water
// mark, which bbolt keeps inside its mapping). bbolt maps the file shared
// and read-only, so MADV_DONTNEED loses nothing: the pages stay in the page
// cache and a later read maps them again. Without it every page a claim or
// an ack ever read stays in the agent's resident set, and a backlog of a
// few hundred MB shows as as many MB of RSS. Called with wmu held, so no
// commit remaps the file meanwhile (bbolt only remaps inside a write
// transaction); readers running beside it simply fault the pages back in.
func dropResident(db *bolt.DB, used int64) error {
	if used <= 0 {
		return nil
	}
	data := db.Info().Data
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, data, uintptr(used), syscall.MADV_DONTNEED)
	if errno != 0 {
		return errno
	}
	return nil
}

// adviseRandom tells the kernel that the first size bytes of bbolt's
// mapping are read at random (MADV_RANDOM): a fault then reads only its
// own page from disk, not the pages around it, so a walk that touches one
// page per block keeps about that much resident.
func adviseRandom(db *bolt.DB, size int64) error {
	if size <= 0 {
		return nil
	}
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, db.Info().Data, uintptr(size), syscall.MADV_RANDOM)
	if errno != 0 {
		return errno
	}
	return nil
}

// dropCache asks the kernel to drop the file's clean pages from the page
// cache (POSIX_FADV_DONTNEED): the kernel's fault-around maps the cached
// neighbours of every page a fault reads, whatever MADV_RANDOM says, so a
// walk of a cached file that touches one page per block would map most
// of the file.
func dropCache(f *os.File) error {
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// dropRange drops n bytes of the file at off (page-aligned) from bbolt's
// mapping and then from the page cache (see WAL.dropFreed).
func dropRange(db *bolt.DB, f *os.File, off, n int64) error {
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, db.Info().Data+uintptr(off), uintptr(n), syscall.MADV_DONTNEED)
	if errno != 0 {
		return errno
	}
	return unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED)
}
