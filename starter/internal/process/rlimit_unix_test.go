//go:build unix

package process

import (
	"syscall"
	"testing"
)

// Finding: under a soft limit below the hard one the agent ran out of
// descriptors (EMFILE) although it was allowed more. After
// RaiseOpenFilesLimit the soft limit is the hard one.
func TestRaiseOpenFilesLimit(t *testing.T) {
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	if orig.Max < 2 {
		t.Skipf("hard open-files limit %d leaves nothing to lower", orig.Max)
	}
	t.Cleanup(func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
			t.Errorf("restore the open-files limit: %v", err)
		}
	})
	low := orig
	low.Cur = orig.Max / 2 // as `ulimit -Sn` leaves it
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	soft, hard, err := RaiseOpenFilesLimit()
	if err != nil {
		t.Fatal(err)
	}
	var now syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &now); err != nil {
		t.Fatal(err)
	}
	if now.Cur != orig.Max || soft != uint64(now.Cur) || hard != uint64(orig.Max) {
		t.Fatalf("after raise: soft %d (reported %d), hard %d (reported %d); want soft = hard = %d",
			now.Cur, soft, now.Max, hard, orig.Max)
	}
}
