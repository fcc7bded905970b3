//go:build !linux

package main

import "errors"

func run(options) error { return errors.New("bench-peers reads /proc: Linux only") }
