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

// dropCache asks the kernel to drop the file's clean pages from the page
// cache (POSIX_FADV_DONTNEED). The check before a read-write open reads
// the whole file; left cached, those pages would all be mapped into
// bbolt's mapping by the kernel's fault-around (it maps cached neighbours
// of every page a fault reads, whatever MADV_RANDOM says) when bbolt's
// free-page scan reads the first page of each block, and the resident
// peak at open would be the size of the file. Dropped, the scan faults in
// about one page per block.
func dropCache(f *os.File) error {
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
