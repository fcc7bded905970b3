//go:build !unix && !windows

package file

import (
	"hash/fnv"
	"os"
)

// Without a file identity from the system the identity falls back to the
// name and the fingerprint, so rename rotation is not followed (a rename
// looks like a new file) on these systems.
func idOf(path string, _ os.FileInfo) (fileID, uint64, bool) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(path))
	return fileID{ino: h.Sum64()}, 1, true
}

func idOfOpen(f *os.File, fi os.FileInfo) (fileID, uint64, bool) { return idOf(f.Name(), fi) }

func openShared(path string) (*os.File, error) { return os.Open(path) }
