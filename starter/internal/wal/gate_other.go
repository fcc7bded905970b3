//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package wal

import (
	"log/slog"
	"os"
	"time"
)

// On other systems bbolt keeps its exclusive lock, so read-only opens
// fail with ErrLocked while the agent runs.
func downgradeLock(*os.File) error { return nil }

type gate struct{}

func openGate(string, bool, time.Duration, *slog.Logger) *gate { return nil }
func (g *gate) close()                                         {}
func (g *gate) writerEnter()                                   {}
func (g *gate) writerExit()                                    {}
func (g *gate) readerEnter()                                   {}
func (g *gate) readerExit()                                    {}
