//go:build !unix

package file

import (
	"hash/fnv"
	"os"
)

// fileID is what the operating system says a file is. Without inode
// numbers the identity falls back to the name and the fingerprint, so
// rename rotation is not followed (a rename looks like a new file) on these systems.
type fileID struct{ dev, ino uint64 }

func idOf(path string, fi os.FileInfo) (fileID, uint64, bool) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(path))
	return fileID{ino: h.Sum64()}, 1, true
}
