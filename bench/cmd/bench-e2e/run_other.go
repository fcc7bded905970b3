//go:build !linux

package main

import "errors"

// run needs /proc to measure the agent.
func run(options) error {
	return errors.New("the end-to-end benchmark reads /proc: it runs on Linux only")
}
