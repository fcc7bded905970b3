//go:build !linux

package main

import "errors"

// run needs /proc to measure the relay.
func run(options) error {
	return errors.New("the relay benchmark reads /proc: it runs on Linux only")
}
