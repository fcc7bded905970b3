//go:build linux

// Package powercut is a test filesystem that loses what a power cut loses.
// A Disk holds the files of one flat directory in memory; Mount serves it
// over FUSE. Every write reaches the Disk (the mount has no write-back
// cache), but a file's data survives Cut only as of its last fsync or
// fdatasync: Cut puts every file back to that content, as a host that lost
// power finds it. Names (create, rename, unlink) are durable at once, as
// on a journalling filesystem; sizes and data are not.
//
// A power cut in a test: stop the writer (kill -9), Unmount (which drops
// the kernel's page cache of the mount), Cut, Mount again.
package powercut

import (
	"slices"
	"sync"
)

// Disk is the content of the filesystem, safe for concurrent use: the
// FUSE server's goroutines and the test's.
type Disk struct {
	mu      sync.Mutex
	files   map[string]*file
	nextIno uint64
	// Size is what statfs reports as the filesystem's size in bytes.
	size int64
	// syncs counts fsync and fdatasync calls, cuts the bytes Cut dropped.
	syncs   int
	dropped int64
}

// file is one regular file: data as written, synced as of the last fsync.
type file struct {
	ino          uint64
	mode         uint32
	data, synced []byte
}

// NewDisk returns an empty disk that reports size bytes to statfs.
func NewDisk(size int64) *Disk {
	return &Disk{files: map[string]*file{}, nextIno: 2, size: size}
}

// Cut drops every write not synced since, as a power cut does, and
// returns how many bytes of files differed from what was synced.
func (d *Disk) Cut() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n int64
	for _, f := range d.files {
		if !slices.Equal(f.data, f.synced) {
			n += int64(max(len(f.data), len(f.synced)))
		}
		f.data = slices.Clone(f.synced)
	}
	d.dropped += n
	return n
}

// Stats are the fsyncs the disk served and the bytes its cuts dropped.
func (d *Disk) Stats() (syncs int, dropped int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.syncs, d.dropped
}

// Names lists the files, sorted.
func (d *Disk) Names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for n := range d.files {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (d *Disk) used() int64 {
	var n int64
	for _, f := range d.files {
		n += int64(max(len(f.data), len(f.synced)))
	}
	return n
}

// resize sets f's length to n, zero-filled; d.mu held.
func (f *file) resize(n int) {
	if n <= len(f.data) {
		f.data = f.data[:n]
		return
	}
	f.data = append(f.data, make([]byte, n-len(f.data))...)
}
