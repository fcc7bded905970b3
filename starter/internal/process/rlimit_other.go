//go:build !unix

package process

// RaiseOpenFilesLimit does nothing where there is no RLIMIT_NOFILE; zero
// limits mean unknown.
func RaiseOpenFilesLimit() (soft, hard uint64, err error) { return 0, 0, nil }
