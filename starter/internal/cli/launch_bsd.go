//go:build unix && !linux

package cli

import "syscall"

// trialProcAttr: without Pdeathsig, a trial outlives a killed launcher
// until it stops; its pid file keeps a second agent from starting.
func trialProcAttr() *syscall.SysProcAttr { return nil }
