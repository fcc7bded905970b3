//go:build !unix

package wal

import "time"

// cpuTime is the process's CPU time where getrusage exists; elsewhere
// the cpu-ns/op figures read 0.
func cpuTime() time.Duration { return 0 }
