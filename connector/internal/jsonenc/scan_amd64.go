//go:build !purego

package jsonenc

// cleanCopy copies the bytes of src that need no escaping, from its start,
// into dst and returns how many it copied: up to the first byte to escape
// or to the last whole 16-byte block, so it may stop short of a clean end
// (the caller scans on from there). It may write up to 16 bytes past the
// count, but never past len(src): dst must be at least as long as src.
//
//go:noescape
func cleanCopy(dst, src []byte) int
