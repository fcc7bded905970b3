package transporttest

import (
	"testing"
	"time"
)

// pollEvery is how often Eventually looks again.
const pollEvery = 5 * time.Millisecond

// MinWait is the least Eventually waits before it gives up, whatever
// within says: tests run on shared, loaded machines, where a state reached
// in a second on a quiet one can take tens of seconds. A test that passes
// waits no longer for it; one that fails takes longer to say so.
const MinWait = time.Minute

// Eventually polls cond until it holds, and fails tb naming what when
// within (raised to MinWait) passes first. It is bounded in count as well as in time (at most
// within/pollEvery+1 looks), for state another goroutine reaches: a
// condition that depends on a clock belongs in a synctest bubble instead.
func Eventually(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	within = max(within, MinWait)
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
