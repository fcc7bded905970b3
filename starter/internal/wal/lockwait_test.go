//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package wal

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// lockPair opens one file twice: flock locks belong to open file
// descriptions, so the two conflict as two processes would.
func lockPair(t *testing.T) (holder, waiter *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lock")
	var err error
	if holder, err = os.Create(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Close() })
	if waiter, err = os.Open(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = waiter.Close() })
	if !flockNB(holder, syscall.LOCK_EX) {
		t.Fatal("cannot take the first lock")
	}
	return holder, waiter
}

// pollTimes returns when flockWait looks at the lock, after its first
// look at 0: the running sums of lockPoll's delays, up to and including
// the first at or past limit.
func pollTimes(limit time.Duration) []time.Duration {
	var at []time.Duration
	var sum time.Duration
	for n := 0; sum < limit; n++ {
		sum += lockPoll.Delay(n)
		at = append(at, sum)
	}
	return at
}

func TestFlockWaitPollsOnTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		holder, waiter := lockPair(t)
		released := make(chan struct{})
		time.AfterFunc(20*time.Millisecond, func() {
			unlock(holder)
			close(released)
		})
		// The cleanup closes holder: the unlock must come first.
		defer func() { <-released }()
		start := time.Now()
		if !flockWait(waiter, syscall.LOCK_EX, time.Second) {
			t.Fatal("flockWait gave up on a lock released after 20ms")
		}
		polls := pollTimes(20 * time.Millisecond)
		if got, want := time.Since(start), polls[len(polls)-1]; got != want {
			t.Fatalf("lock taken at %v, want at the first poll after the release, %v (polls %v)", got, want, polls)
		}
	})
}

func TestFlockWaitGivesUpAfterTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, waiter := lockPair(t)
		start := time.Now()
		if flockWait(waiter, syscall.LOCK_SH, 30*time.Millisecond) {
			t.Fatal("flockWait took a lock someone holds")
		}
		// The first poll after the deadline, not a busy loop, ends the wait.
		polls := pollTimes(30*time.Millisecond + 1)
		if got, want := time.Since(start), polls[len(polls)-1]; got != want {
			t.Fatalf("gave up at %v, want %v (polls %v)", got, want, polls)
		}
	})
}
