package transporttest_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/transport/transporttest"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	var looks atomic.Int32
	transporttest.Eventually(t, 10*time.Second, "the third look", func() bool { return looks.Add(1) >= 3 })
	if n := looks.Load(); n != 3 {
		t.Fatalf("looked %d times, want 3", n)
	}
}

// recorder is a testing.TB that records Fatalf instead of ending the test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = format
}

// Under a fake clock: Eventually waits at least MinWait, however short
// within is, and looks a bounded number of times.
func TestEventuallyGivesUpBoundedInCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{TB: t}
		var looks atomic.Int32
		start := time.Now()
		transporttest.Eventually(r, 20*time.Millisecond, "never", func() bool { looks.Add(1); return false })
		if r.failed == "" {
			t.Fatal("a condition that never holds did not fail the test")
		}
		if waited := time.Since(start); waited < transporttest.MinWait {
			t.Fatalf("gave up after %v, want at least MinWait (%v)", waited, transporttest.MinWait)
		}
		// One look every 5 ms for MinWait, one before the first sleep and one after the loop.
		if n, most := looks.Load(), int32(transporttest.MinWait/(5*time.Millisecond))+2; n > most {
			t.Fatalf("looked %d times, want at most %d", n, most)
		}
	})
}
