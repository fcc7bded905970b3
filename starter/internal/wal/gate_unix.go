//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package wal

import (
	"errors"
	"log/slog"
	"os"
	"syscall"
	"time"

	"github.com/edge-agent/edge-agent/transport/backoff"
)

// downgradeLock turns bbolt's exclusive lock on the WAL file into a shared
// one. A second read-write opener (another agent, a db write command) still
// fails, since it needs an exclusive lock; read-only openers can now get
// their shared lock. The reader gate keeps them from reading mid-commit.
// Conversion is not atomic in the kernel: if another writer slipped in,
// the non-blocking request fails and this opener gives up.
func downgradeLock(f *os.File) error {
	if f == nil {
		return errors.New("no file handle to downgrade the lock")
	}
	return syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
}

// lockForCheck takes the exclusive lock bbolt takes for a read-write open,
// so that the file is checked while no agent writes to it, waiting up to
// timeout like bbolt does. The lock is released before bbolt takes its own
// (flock locks belong to one open file).
func lockForCheck(path string, timeout time.Duration) (release func(), err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || !time.Now().Before(deadline) {
			_ = f.Close()
			return nil, errLockBusy
		}
		time.Sleep(lockPollInterval)
	}
}

// lockPollInterval is how often lockForCheck retries, as bbolt's flock.
const lockPollInterval = 50 * time.Millisecond

// gate coordinates a read-write WAL in one process with read-only readers
// in others through two lock files beside the WAL:
//
//	writer, per Update: SH intent -> SH gate -> drop intent -> commit -> drop gate
//	reader, per View:   EX intent -> EX gate -> read -> drop gate -> drop intent
//
// A reader holding intent stops new commits from starting, then waits for
// the commit in progress; without intent, back-to-back commits could
// starve it. The writer waits at most `wait` for a reader, then goes on
// (and ignores that reader until it leaves); the reader notices the commit
// through the meta pages and reports ErrChangedDuringRead.
type gate struct {
	intent, lock *os.File
	writer       bool
	wait         time.Duration
	log          *slog.Logger
	bypass       bool // writer: a reader overstayed; do not wait for it again
	held         bool
}

// openGate returns nil (no coordination) when the lock files cannot be
// opened, e.g. a read-only data dir: readers then rely on the meta check.
func openGate(path string, writer bool, wait time.Duration, log *slog.Logger) *gate {
	open := func(name string) (*os.File, error) {
		// O_RDONLY is enough for flock, so a reader that may not write
		// (root reading a WAL another user owns, say) can still lock it.
		// 0600 like the WAL: the data dir is the agent's alone.
		f, err := os.OpenFile(name, os.O_RDONLY|os.O_CREATE, 0o600)
		if err != nil {
			f, err = os.Open(name)
		}
		return f, err
	}
	intent, err := open(path + intentSuffix)
	if err != nil {
		log.Warn("wal: reader gate unavailable; db reads while the agent runs may need retries", "error", err)
		return nil
	}
	lock, err := open(path + gateSuffix)
	if err != nil {
		_ = intent.Close()
		log.Warn("wal: reader gate unavailable; db reads while the agent runs may need retries", "error", err)
		return nil
	}
	return &gate{intent: intent, lock: lock, writer: writer, wait: wait, log: log}
}

func (g *gate) close() {
	if g == nil {
		return
	}
	_ = g.intent.Close()
	_ = g.lock.Close()
}

func flockNB(f *os.File, how int) bool {
	return syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB) == nil
}

func unlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// lockPoll paces flockWait: quick first looks, since a commit or a read
// is usually short, then no busier than every 5ms. Not jittered: one
// writer and a few local readers form no herd.
var lockPoll = backoff.Policy{Initial: 50 * time.Microsecond, Max: 5 * time.Millisecond}

// flockWait polls for a lock: the blocking call cannot be bounded.
func flockWait(f *os.File, how int, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for n := 0; ; n++ {
		if flockNB(f, how) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(lockPoll.Delay(n))
	}
}

func (g *gate) writerEnter() {
	if g == nil {
		return
	}
	var gotIntent bool
	if g.bypass {
		if gotIntent = flockNB(g.intent, syscall.LOCK_SH); gotIntent {
			g.bypass = false
		}
	} else if gotIntent = flockWait(g.intent, syscall.LOCK_SH, g.wait); !gotIntent {
		g.bypass = true
		g.log.Warn("wal: a db reader held the WAL too long; committing anyway", "waited", g.wait)
	}
	g.held = flockNB(g.lock, syscall.LOCK_SH)
	if gotIntent {
		unlock(g.intent)
	}
}

func (g *gate) writerExit() {
	if g == nil || !g.held {
		return
	}
	unlock(g.lock)
	g.held = false
}

// readerEnter never fails: without the gate the read still runs and the
// meta check catches a concurrent commit.
func (g *gate) readerEnter() {
	if g == nil {
		return
	}
	g.held = false
	if !flockWait(g.intent, syscall.LOCK_EX, g.wait) {
		return
	}
	if !flockWait(g.lock, syscall.LOCK_EX, g.wait) {
		unlock(g.intent)
		return
	}
	g.held = true
}

func (g *gate) readerExit() {
	if g == nil || !g.held {
		return
	}
	unlock(g.lock)
	unlock(g.intent)
	g.held = false
}
