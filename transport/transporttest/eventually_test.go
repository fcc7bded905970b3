package transporttest_test

import (
	"sync/atomic"
	"testing"
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

func TestEventuallyGivesUpBoundedInCount(t *testing.T) {
	r := &recorder{TB: t}
	var looks atomic.Int32
	transporttest.Eventually(r, 20*time.Millisecond, "never", func() bool { looks.Add(1); return false })
	if r.failed == "" {
		t.Fatal("a condition that never holds did not fail the test")
	}
	// 20ms at one look every 5ms: at most 5 looks in the loop, one after.
	if n := looks.Load(); n > 6 {
		t.Fatalf("looked %d times, want at most 6", n)
	}
}
