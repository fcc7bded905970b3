package transporttest

import (
	"testing"
	"time"
)

// pollEvery is how often Eventually looks again.
const pollEvery = 5 * time.Millisecond

// Eventually polls cond until it holds, and fails tb naming what when
// within passes first. It is bounded in count as well as in time (at most
// within/pollEvery+1 looks), for state another goroutine reaches: a
// condition that depends on a clock belongs in a synctest bubble instead.
func Eventually(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for range int(within/pollEvery) + 1 {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(pollEvery)
	}
	if cond() {
		return
	}
	tb.Fatalf("gave up after %v waiting for %s", within, what)
}
