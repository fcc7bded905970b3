//go:build !unix

package file

// openFilesLimit: no per-process descriptor limit to respect here.
func openFilesLimit() uint64 { return 0 }
