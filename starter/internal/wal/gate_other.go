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

// lockForCheck: bbolt keeps an exclusive lock for the whole open here, so
// the check before it runs unlocked; a running agent's own lock makes
// bbolt's open fail with ErrLocked right after.
func lockForCheck(string, time.Duration) (func(), error) { return func() {}, nil }

type gate struct{}

func openGate(string, bool, time.Duration, *slog.Logger) *gate { return nil }
func (g *gate) close()                                         {}
func (g *gate) writerEnter()                                   {}
func (g *gate) writerExit()                                    {}
func (g *gate) readerEnter()                                   {}
func (g *gate) readerExit()                                    {}
