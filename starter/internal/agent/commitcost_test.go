package agent

import (
	"fmt"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// slowDiskOptions are the defaults with fsync on, as the agent runs.
func slowDiskOptions() Options {
	var o Options
	o.Agent = DefaultSettings()
	o.Queue = DefaultQueueSettings()
	o.WAL.Fsync = true
	return o
}

// diskSim drives a grouping and a commitCost as the loop does, on an
// injected clock: each commit takes perRow per event of the group plus
// the disk time of one commit, and the group is as big as the grouping
// lets the buffer grow (size events, or maxBytes of payloads).
type diskSim struct {
	g       grouping
	c       commitCost
	now     time.Time
	disk    time.Duration // one commit's disk time (bbolt: two fdatasyncs)
	perRow  time.Duration
	payload int // bytes per event
}

func newDiskSim(o Options, disk, perRow time.Duration, payload int) *diskSim {
	return &diskSim{g: newGrouping(o, 1024, true), now: time.Unix(1_700_000_000, 0),
		disk: disk, perRow: perRow, payload: payload}
}

// group is how many events the buffer holds when the grouping calls it
// full, with the input never running dry.
func (s *diskSim) group() int {
	byBytes := (s.g.maxBytes + s.payload - 1) / s.payload
	return min(s.g.size, byBytes)
}

// commit runs one commit of the current group; loaded says the input
// still had more (the poll stopped at a full group).
func (s *diskSim) commit(loaded bool) {
	rows := s.group()
	s.g.inputFull = loaded
	s.now = s.now.Add(time.Duration(rows)*s.perRow + s.disk)
	s.c.observe(s.now, s.disk, rows, rows*s.payload, loaded)
	s.g.adapt(&s.c)
	s.g.grow()
}

// rate is the lines/s of a loaded loop at the current group.
func (s *diskSim) rate() float64 {
	g := s.group()
	return float64(g) / (time.Duration(g)*s.perRow + s.disk).Seconds()
}

// Under load the group grows until the fsync is queue.fsync-share of a
// row's time, so a slow disk reaches the throughput a fast one has,
// within the slow-disk memory cap; a fast disk keeps the fast-disk groups.
func TestGroupFollowsFsyncLatency(t *testing.T) {
	const perRow = 1500 * time.Nanosecond // the loop's time per 200-byte line
	o := slowDiskOptions()
	capRows := (o.Queue.slowDiskGroupMaxBytes() + 199) / 200 // the poll that crosses the bound ends the group
	for _, tc := range []struct {
		name        string
		fsync       time.Duration
		minRate     float64 // lines/s the group must reach
		minGroup    int
		maxGroup    int
		wantCeiling int // 0: not checked
	}{
		// bbolt fdatasyncs twice per commit.
		{name: "10 ms", fsync: 10 * time.Millisecond, minRate: 250_000, minGroup: 8192, maxGroup: capRows},
		{name: "30 ms", fsync: 30 * time.Millisecond, minRate: 150_000, minGroup: 8192, maxGroup: capRows},
		{name: "3.5 ms", fsync: 3500 * time.Microsecond, minRate: 250_000, minGroup: 8192, maxGroup: capRows},
		{name: "0.1 ms stays small", fsync: 100 * time.Microsecond, minRate: 0, minGroup: 4096, maxGroup: 4096, wantCeiling: 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newDiskSim(o, 2*tc.fsync, perRow, 200)
			for range 64 {
				s.commit(true)
			}
			if g := s.group(); g < tc.minGroup || g > tc.maxGroup {
				t.Fatalf("group %d events after 64 loaded commits at fsync %v (ceiling %d), want %d..%d",
					g, tc.fsync, s.g.ceiling, tc.minGroup, tc.maxGroup)
			}
			if r := s.rate(); r < tc.minRate {
				t.Fatalf("group %d: %.0f lines/s at fsync %v, want >= %.0f", s.group(), r, tc.fsync, tc.minRate)
			}
			if tc.wantCeiling != 0 && s.g.ceiling != tc.wantCeiling {
				t.Fatalf("ceiling %d at fsync %v, want the fast-disk %d", s.g.ceiling, tc.fsync, tc.wantCeiling)
			}
			// The rule itself: the fsync's share of a row's time is at
			// most fsync-share, unless the memory cap stopped the group.
			g := s.group()
			share := float64(s.disk) / float64(s.disk+time.Duration(g)*perRow)
			if share > o.Queue.FsyncShare*1.1 && g < capRows && s.g.ceiling > s.g.base {
				t.Fatalf("fsync %.2f of a row's time at group %d, want <= %.2f", share, g, o.Queue.FsyncShare)
			}
		})
	}
}

// On a disk measured slow, a loaded input takes the group the disk asks
// for at once rather than doubling toward it from bulk-max-size: within
// the two loaded commits that measure the disk and the loop, and one more.
func TestSlowDiskGroupGrowsAtOnce(t *testing.T) {
	o := slowDiskOptions()
	s := newDiskSim(o, 60*time.Millisecond, 3500*time.Nanosecond, 360)
	for range 3 {
		s.commit(true)
	}
	if want := s.g.maxBytes / 360; s.group() < want {
		t.Fatalf("group %d events after 3 loaded commits at fsync 30 ms (size %d, ceiling %d), want the byte bound's %d",
			s.group(), s.g.size, s.g.ceiling, want)
	}
	// A fast disk still doubles, up to its ceiling.
	s = newDiskSim(o, time.Millisecond, 3500*time.Nanosecond, 360)
	for i := range 6 {
		before := s.g.size
		s.commit(true)
		if s.g.size != min(2*before, s.g.base) {
			t.Fatalf("commit %d on a fast disk: group %d after %d, want it doubled up to %d", i, s.g.size, before, s.g.base)
		}
	}
}

// A burst grows the group on a slow disk; once the input runs dry the
// group halves back to bulk-max-size within a bounded number of commits.
func TestGroupShrinksAfterBurst(t *testing.T) {
	o := slowDiskOptions()
	s := newDiskSim(o, 20*time.Millisecond, 1500*time.Nanosecond, 200)
	for range 64 {
		s.commit(true)
	}
	grown := s.g.size
	if grown <= 4096 {
		t.Fatalf("group %d after a burst at fsync 10 ms, want above the fast-disk 4096", grown)
	}
	for i := range 32 {
		if s.g.size == o.Agent.BulkMaxSize {
			if i == 0 {
				t.Fatal("group at bulk-max-size before the input ran dry")
			}
			return
		}
		s.commit(false)
	}
	t.Fatalf("group %d after 32 commits of a dry input (grown to %d), want bulk-max-size %d",
		s.g.size, grown, o.Agent.BulkMaxSize)
}

// The memory cap bounds the group in bytes (a group of 200-byte events
// ends at slow-disk-group-max-bytes on a disk this slow, never below
// group-max-bytes, and at most a quarter of max-bytes) and in events
// (eventCost each, for tiny events), however slow the disk.
func TestGroupMemoryCap(t *testing.T) {
	for _, tc := range []struct {
		name          string
		groupMaxBytes int
		slowMaxBytes  int
		maxBytes      int64
		payload       int
		wantMaxBytes  int
	}{
		{name: "slow-disk-group-max-bytes", groupMaxBytes: 1 << 20, slowMaxBytes: 3 << 20, payload: 200, wantMaxBytes: 3 << 20},
		{name: "slow-disk bound at group-max-bytes", groupMaxBytes: 1 << 20, slowMaxBytes: 1 << 20, payload: 200, wantMaxBytes: 1 << 20},
		{name: "slow-disk bound below group-max-bytes", groupMaxBytes: 1 << 20, slowMaxBytes: 64 << 10, payload: 200, wantMaxBytes: 1 << 20},
		{name: "a quarter of max-bytes", groupMaxBytes: 4 << 20, slowMaxBytes: 12 << 20, maxBytes: 2 << 20, payload: 200, wantMaxBytes: 512 << 10},
		{name: "never below 64 KiB", groupMaxBytes: 4 << 20, slowMaxBytes: 12 << 20, maxBytes: 100_000, payload: 200, wantMaxBytes: 64 << 10},
		{name: "tiny events", groupMaxBytes: 1 << 20, slowMaxBytes: 2 << 20, payload: 8, wantMaxBytes: 2 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := slowDiskOptions()
			o.Queue.GroupMaxBytes, o.Queue.SlowDiskGroupMaxBytes, o.Queue.MaxBytes = tc.groupMaxBytes, tc.slowMaxBytes, tc.maxBytes
			s := newDiskSim(o, 60*time.Millisecond, 1500*time.Nanosecond, tc.payload)
			if want := min(tc.groupMaxBytes, tc.wantMaxBytes); s.g.maxBytes != want {
				t.Fatalf("group bound %d bytes before a commit was measured, want group-max-bytes' %d", s.g.maxBytes, want)
			}
			for range 64 {
				s.commit(true)
			}
			if s.g.maxBytes != tc.wantMaxBytes {
				t.Fatalf("group bound %d bytes at fsync 30 ms, want %d", s.g.maxBytes, tc.wantMaxBytes)
			}
			g := s.group()
			if g*tc.payload > tc.wantMaxBytes+tc.payload {
				t.Fatalf("group of %d events of %d bytes holds %d bytes, want <= %d", g, tc.payload, g*tc.payload, tc.wantMaxBytes)
			}
			if g*eventCost > tc.wantMaxBytes {
				t.Fatalf("group of %d events costs %d bytes besides payloads, want <= %d", g, g*eventCost, tc.wantMaxBytes)
			}
			if g <= 4096 && tc.wantMaxBytes >= 1<<20 {
				t.Fatalf("group %d at fsync 30 ms, want it grown past 4096 within the cap", g)
			}
		})
	}
}

// The byte bound follows the disk: it stays at group-max-bytes while the
// rows fsync-share asks for fit in it (a fast disk, or one only a little
// slow), grows to their bytes past it, up to slow-disk-group-max-bytes,
// and comes back once the disk is fast again. The rows and disk times
// are the bench's (about 360 bytes a row with its JSON, 3.5 µs of loop
// time per row on the shared machine, two fdatasyncs per commit).
func TestGroupBytesFollowTheDisk(t *testing.T) {
	const perRow, payload = 3500 * time.Nanosecond, 360
	o := slowDiskOptions()
	fast, slow := o.Queue.groupMaxBytes(), o.Queue.slowDiskGroupMaxBytes()
	fastRate := func(disk time.Duration) float64 { // at a group of fast bytes
		g := fast / payload
		return float64(g) / (time.Duration(g)*perRow + disk).Seconds()
	}
	for _, tc := range []struct {
		name      string
		disk      time.Duration // a commit's
		wantBytes int           // the bound after a while; 0: between fast and slow, not either
	}{
		{name: "fast disk", disk: 2 * time.Millisecond, wantBytes: fast},
		{name: "rows that fit in group-max-bytes", disk: 10 * time.Millisecond, wantBytes: fast},
		{name: "rows past group-max-bytes", disk: 16 * time.Millisecond},
		{name: "fsync 10 ms", disk: 32 * time.Millisecond, wantBytes: slow},
		{name: "fsync 30 ms", disk: 70 * time.Millisecond, wantBytes: slow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newDiskSim(o, tc.disk, perRow, payload)
			for range 64 {
				s.commit(true)
			}
			switch tc.wantBytes {
			case 0:
				if s.g.maxBytes <= fast || s.g.maxBytes >= slow {
					t.Fatalf("bound %d bytes at a commit's disk time %v, want between %d and %d", s.g.maxBytes, tc.disk, fast, slow)
				}
				// The rule: the bound holds the rows the disk asks for.
				want := float64(tc.disk) * (1 - o.Queue.FsyncShare) / (o.Queue.FsyncShare * float64(perRow)) * (payload + eventCost)
				if d := float64(s.g.maxBytes) - want; d > 0.05*want || d < -0.05*want {
					t.Fatalf("bound %d bytes at a commit's disk time %v, want about %.0f", s.g.maxBytes, tc.disk, want)
				}
			default:
				if s.g.maxBytes != tc.wantBytes {
					t.Fatalf("bound %d bytes at a commit's disk time %v, want %d", s.g.maxBytes, tc.disk, tc.wantBytes)
				}
			}
			if s.g.maxBytes > fast {
				if r := s.rate(); r <= fastRate(tc.disk) {
					t.Fatalf("%.0f lines/s at a bound of %d bytes, want more than the %.0f of group-max-bytes", r, s.g.maxBytes, fastRate(tc.disk))
				}
			}
			// The disk speeds up: the bound comes back to group-max-bytes.
			s.disk = 2 * time.Millisecond
			for range 64 {
				s.commit(true)
			}
			if s.g.maxBytes != fast {
				t.Fatalf("bound %d bytes once the disk is fast again, want group-max-bytes' %d", s.g.maxBytes, fast)
			}
		})
	}
}

// Without a measure, with fsync-share 0, without fsync or in NON mode,
// the ceiling stays what it was before groups followed the disk.
func TestGroupCeilingStaysWithoutAdaptation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		share float64
		fsync bool
		wal   bool
		want  int
	}{
		{name: "fsync-share 0", share: 0, fsync: true, wal: true, want: 4096},
		{name: "no fsync", share: 0.25, fsync: false, wal: true, want: nosyncMaxGroup},
		{name: "NON mode", share: 0.25, fsync: true, wal: false, want: 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := slowDiskOptions()
			o.Queue.FsyncShare, o.WAL.Fsync = tc.share, tc.fsync
			g := newGrouping(o, 1024, tc.wal)
			c := commitCost{disk: 60 * time.Millisecond, perRow: 1500}
			g.adapt(&c)
			if g.ceiling != tc.want {
				t.Fatalf("ceiling %d, want %d", g.ceiling, tc.want)
			}
		})
	}
	o := slowDiskOptions()
	g := newGrouping(o, 1024, true)
	for _, c := range []commitCost{{disk: 60 * time.Millisecond}, {perRow: 1500}} {
		g.adapt(&c)
		if g.ceiling != 4096 {
			t.Fatalf("ceiling %d with only one figure measured (%+v), want 4096", g.ceiling, c)
		}
	}
}

// The loop's time per row is the span between two loaded commits less
// the disk time of every commit in it; a commit of a group that was not
// full starts the span again, since the time before it held waits.
func TestCommitCostPerRow(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := time.Millisecond
	var c commitCost
	c.observe(t0, 10*ms, 1000, 200_000, true) // the first loaded commit: no span yet
	if c.perRow != 0 || c.disk != 10*ms {
		t.Fatalf("after one commit: %+v, want disk 10ms and no per-row figure", c)
	}
	// An acks-only commit in between: its disk time is not loop time.
	c.observe(t0.Add(15*ms), 4*ms, 0, 0, true)
	c.observe(t0.Add(30*ms), 10*ms, 1000, 200_000, true) // 30 ms − 14 ms disk = 16 µs per row
	if got := time.Duration(c.perRow); got != 16*time.Microsecond {
		t.Fatalf("per row %v, want 16µs", got)
	}
	// An idle gap, then a group that was not full: no observation.
	c.observe(t0.Add(time.Hour), 10*ms, 10, 2_000, false)
	c.observe(t0.Add(time.Hour+20*ms), 10*ms, 1000, 200_000, true)
	if got := time.Duration(c.perRow); got != 16*time.Microsecond {
		t.Fatalf("per row %v after an idle gap, want still 16µs", got)
	}
	// The next loaded span moves the average by an eighth of the way.
	c.observe(t0.Add(time.Hour+20*ms+26*ms), 10*ms, 1000, 200_000, true) // 16 µs again
	c.observe(t0.Add(time.Hour+46*ms+18*ms), 10*ms, 1000, 200_000, true) // 8 µs
	if got, want := time.Duration(c.perRow), 15*time.Microsecond; got != want {
		t.Fatalf("per row %v, want %v (an eighth of the way from 16µs to 8µs)", got, want)
	}
	if c.disk <= 9*ms || c.disk > 10*ms {
		t.Fatalf("disk estimate %v, want between 9 and 10 ms", c.disk)
	}
}

// With queue.fsync on, every commit's disk time goes into the fsync
// histogram and the estimate Snapshot shows; with it off there is no
// fsync to measure and the groups keep their size.
func TestSnapshotShowsCommitCost(t *testing.T) {
	for _, fsync := range []bool{true, false} {
		t.Run(fmt.Sprintf("fsync=%v", fsync), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Queue.Fsync = fsync
			in := &fakeInput{}
			in.push(lineEvents("a.log", 0, 100)...)
			h := startRuntime(t, newOptions(t, cfg, t.TempDir(), in, newFakeSender(nil)))
			transporttest.Eventually(t, 10*time.Second, "100 acks", func() bool { return h.rt.Snapshot().Acked == 100 })
			s := h.rt.Snapshot()
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			c := s.Queue.Commit
			if !fsync {
				if s.FsyncLatency.Count != 0 || c != (CommitEstimate{}) {
					t.Fatalf("without fsync: %d fsyncs measured, estimate %+v; want none", s.FsyncLatency.Count, c)
				}
				return
			}
			if s.FsyncLatency.Count == 0 || s.FsyncLatency.Count > s.Commits || s.FsyncLatency.Sum <= 0 {
				t.Fatalf("fsync histogram %d observations (sum %v) for %d commits; want one per commit so far",
					s.FsyncLatency.Count, s.FsyncLatency.Sum, s.Commits)
			}
			if last := s.FsyncLatency.Counts[len(s.FsyncLatency.Counts)-1]; last > s.FsyncLatency.Count {
				t.Fatalf("histogram's last bucket %d above its count %d", last, s.FsyncLatency.Count)
			}
			if c.Disk <= 0 || c.GroupCeiling < groupJobs*jobSize(h.rt.opts) {
				t.Fatalf("estimate %+v; want a measured disk time and a ceiling of at least %d", c, groupJobs*jobSize(h.rt.opts))
			}
		})
	}
}
