//go:build !linux

package main

import "errors"

// run needs /proc to measure the agent.
func run(options) error {
	return errors.New("the end-to-end benchmark reads /proc: it runs on Linux only")
}

// runFlash needs /proc to measure the agent.
func runFlash(options) error {
	return errors.New("the write-amplification table reads /proc: it runs on Linux only")
}

// flashRate is a row of the write-amplification table (flash_linux.go).
type flashRate struct {
	rate int
	n    int
}
