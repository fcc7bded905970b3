package agent

import (
	"testing"
	"time"
)

// The soft memory limit rises by groupMemoryFactor times what a slow
// disk's group holds past group-max-bytes, and comes back once the disk
// is fast again; a limit the environment set (base 0) is never moved.
func TestMemoryLimitFollowsTheGroup(t *testing.T) {
	const base = 48 << 20
	var got []int64
	m := newMemoryLimit(base)
	m.set = func(n int64) int64 { got = append(got, n); return 0 }
	o := slowDiskOptions()
	s := newDiskSim(o, 60*time.Millisecond, 3500*time.Nanosecond, 360)
	for range 64 {
		s.commit(true)
		m.follow(s.g.maxBytes - s.g.fastBytes)
	}
	extra := o.Queue.slowDiskGroupMaxBytes() - o.Queue.groupMaxBytes()
	if want := int64(base + groupMemoryFactor*extra); m.now != want || len(got) == 0 || got[len(got)-1] != want {
		t.Fatalf("limit %d after a slow disk's commits (set %v), want %d", m.now, got, want)
	}
	s.disk = time.Millisecond
	for range 64 {
		s.commit(true)
		m.follow(s.g.maxBytes - s.g.fastBytes)
	}
	if m.now != base || got[len(got)-1] != base {
		t.Fatalf("limit %d once the disk is fast again (set %v), want %d", m.now, got, base)
	}
	if n := len(got); n > 8 {
		t.Fatalf("limit set %d times over 128 commits, want only when it changes", n)
	}

	env := newMemoryLimit(0)
	env.set = func(n int64) int64 { t.Fatalf("limit set to %d under the environment's GOMEMLIMIT", n); return 0 }
	env.follow(extra)
}

// A job's byte bound follows the group's: 1 MiB while the group is within
// group-max-bytes, a groupJobs-th of its bound past it, so that the jobs
// out still hold two groups.
func TestJobBytesFollowTheGroup(t *testing.T) {
	l := &loop{group: newGrouping(slowDiskOptions(), 1024, true)}
	if got := l.jobBytes(); got != jobBytes {
		t.Fatalf("job bound %d bytes with a group of %d, want %d", got, l.group.maxBytes, jobBytes)
	}
	l.group.maxBytes = 8 << 20
	if got, want := l.jobBytes(), (8<<20)/groupJobs; got != want {
		t.Fatalf("job bound %d bytes with a group of 8 MiB, want %d", got, want)
	}
	if got := maxJobs * l.jobBytes(); got < 2*l.group.maxBytes {
		t.Fatalf("jobs out hold %d bytes, want two groups' %d", got, 2*l.group.maxBytes)
	}
}
