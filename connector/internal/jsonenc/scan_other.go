//go:build !amd64 || purego

package jsonenc

// cleanCopy is the amd64 block scan's stand-in elsewhere: it copies
// nothing, and the portable word loop does all the work.
func cleanCopy(dst, src []byte) int { return 0 }
