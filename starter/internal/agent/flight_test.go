package agent

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edge-agent/edge-agent/connector/input"
	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// slowDisk is a queue whose every transaction becomes durable disk after
// it ran: a fake fsync on the bubble's clock. For each commit that
// appended it records when it began and ended and how many polls the
// input had made by then. at, when set, runs inside Update at each
// appending commit, before (durable false) and after (true) the inner
// transaction, on the commit's goroutine.
type slowDisk struct {
	queue
	disk time.Duration
	in   *fakeInput

	mu      sync.Mutex
	commits []diskCommit
	at      func(n int, durable bool)
}

type diskCommit struct {
	rows                 int
	start, end           time.Time
	pollsStart, pollsEnd int
}

func (d *slowDisk) polls() int {
	d.in.mu.Lock()
	defer d.in.mu.Unlock()
	return d.in.polls
}

func (d *slowDisk) Update(fn func(queueTx) error) error {
	c := diskCommit{start: time.Now(), pollsStart: d.polls()}
	d.mu.Lock()
	at, n := d.at, len(d.commits)
	d.mu.Unlock()
	err := d.queue.Update(func(tx queueTx) error {
		c.rows = 0
		if err := fn(countingTx{queueTx: tx, n: &c.rows}); err != nil {
			return err
		}
		if at != nil && c.rows > 0 {
			at(n, false)
		}
		return nil
	})
	if err == nil && at != nil && c.rows > 0 {
		at(n, true)
	}
	time.Sleep(d.disk)
	c.end, c.pollsEnd = time.Now(), d.polls()
	if err == nil && c.rows > 0 {
		d.mu.Lock()
		d.commits = append(d.commits, c)
		d.mu.Unlock()
	}
	return err
}

func (d *slowDisk) appended() []diskCommit {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]diskCommit(nil), d.commits...)
}

// While a commit waits for its disk the loop reads the next group, so
// under load a cycle takes max(disk, group reading), not their sum: at
// 30 ms of disk per commit and 20 ms of reading per group, 30 ms per
// group where a serial loop took 50.
func TestCommitOverlapsReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			disk     = 30 * time.Millisecond
			perPoll  = 5 * time.Millisecond
			pollRows = 250
			group    = 4 * pollRows // a bulk-max-size above the ceiling: every group this size
			groups   = 12
		)
		reading := group / pollRows * perPoll
		cfg := testConfig(t)
		cfg.Agent.BulkMaxSize, cfg.Queue.PollBatchSize = group, pollRows
		in := &fakeInput{onPoll: func() { time.Sleep(perPoll) }}
		in.push(lineEvents("a.log", 0, groups*group)...)
		h := newRuntime(t, newOptions(t, cfg, t.TempDir(), in, newFakeSender(nil)))
		d := &slowDisk{disk: disk, in: in}
		h.rt.wrapQueue = func(q queue) queue { d.queue = q; return d }
		h.run()
		transporttest.Eventually(t, time.Minute, "every group appended", func() bool {
			return h.rt.Snapshot().RowsAppended == groups*group
		})
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		commits := d.appended()
		if len(commits) != groups {
			t.Fatalf("%d commits appended, want one per group, %d", len(commits), groups)
		}
		for i, c := range commits {
			if c.rows != group {
				t.Fatalf("commit %d appended %d rows, want a whole group of %d", i, c.rows, group)
			}
			// Past the first, every group but the last is read while the
			// commit before it waits for the disk.
			if i < groups-1 && c.pollsEnd-c.pollsStart != group/pollRows {
				t.Fatalf("commit %d: %d polls while it waited for the disk, want the next group's %d",
					i, c.pollsEnd-c.pollsStart, group/pollRows)
			}
		}
		cycle := commits[groups-1].end.Sub(commits[0].end) / (groups - 1)
		if want := max(disk, reading); cycle != want {
			t.Fatalf("a commit every %v under load, want max(disk %v, reading %v) = %v, not their sum %v",
				cycle, disk, reading, want, disk+reading)
		}
	})
}

// resumingInput is a fakeInput that, when opened, reads lines from the one
// after its saved position of "a.log" up to total, as a file input does
// after a restart.
type resumingInput struct {
	fakeInput
	total int
}

func (r *resumingInput) Open(ctx context.Context, o input.OpenOptions) error {
	from := 0
	if s, ok := o.Saved["a.log"]; ok {
		n, err := strconv.Atoi(string(s))
		if err != nil {
			return err
		}
		from = n + 1
	}
	r.push(lineEvents("a.log", from, r.total)...)
	return r.fakeInput.Open(ctx, o)
}

var deliveredLineRe = regexp.MustCompile(`_line\\?":(\d+)`)

// linesOf are the _line numbers in payloads.
func linesOf(t *testing.T, payloads map[string]int) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	for p := range payloads {
		for _, m := range deliveredLineRe.FindAllStringSubmatch(p, -1) {
			n, err := strconv.Atoi(m[1])
			if err != nil {
				t.Fatal(err)
			}
			out[n] = true
		}
	}
	return out
}

// A crash while a commit is in flight and the loop reads the next group
// loses nothing: the WAL file as a crash would leave it at that moment
// (the commit not yet durable, or durable but not yet landed) is started
// again with an input that resumes from its saved position; what the
// engine had by then and what the restart delivers cover every line. The
// rows of the group in flight are durable with their position, or read
// again; those read meanwhile are read again.
func TestCrashWhileCommitInFlight(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run("durable="+strconv.FormatBool(durable), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const (
					pollRows = 50
					group    = 4 * pollRows
					total    = 10 * group
					crashAt  = 4 // the fifth appending commit
				)
				cfg := testConfig(t)
				cfg.Agent.BulkMaxSize, cfg.Queue.PollBatchSize = group, pollRows
				home := t.TempDir()
				in := &fakeInput{onPoll: func() { time.Sleep(time.Millisecond) }}
				in.push(lineEvents("a.log", 0, total)...)
				snd := newFakeSender(nil)
				h := newRuntime(t, newOptions(t, cfg, home, in, snd))
				d := &slowDisk{disk: 10 * time.Millisecond, in: in}
				crashed := filepath.Join(t.TempDir(), "crashed")
				var engineHad map[string]int
				var readAtCrash int
				d.at = func(n int, isDurable bool) {
					if n != crashAt || isDurable != durable {
						return
					}
					copyWAL(t, filepath.Join(home, cfg.Queue.Path), filepath.Join(crashed, cfg.Queue.Path))
					engineHad = snd.payloads()
					readAtCrash = total - in.left()
				}
				h.rt.wrapQueue = func(q queue) queue { d.queue = q; return d }
				h.run()
				transporttest.Eventually(t, time.Minute, "every line appended", func() bool {
					return h.rt.Snapshot().RowsAppended == total
				})
				if err := h.stop(); err != nil {
					t.Fatal(err)
				}
				if engineHad == nil {
					t.Fatal("no crash point: the fifth appending commit never ran")
				}
				if readAtCrash <= (crashAt+1)*group {
					t.Fatalf("%d lines read at the crash, want the group in flight and more: the next group was not being read", readAtCrash)
				}

				in2 := &resumingInput{total: total}
				snd2 := newFakeSender(nil)
				h2 := startRuntime(t, newOptions(t, cfg, crashed, in2, snd2))
				had := linesOf(t, engineHad)
				missing := func() int {
					got := linesOf(t, snd2.payloads())
					for i := range total {
						if !had[i] && !got[i] {
							return i
						}
					}
					return -1
				}
				transporttest.Eventually(t, time.Minute, "every line at the engine before the crash or delivered after the restart", func() bool {
					return missing() < 0
				})
				if err := h2.stop(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// copyWAL copies the WAL file from to to, as a crash would leave it.
func copyWAL(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	if err != nil {
		t.Error(err)
		return
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Error(err)
		return
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Error(err)
	}
}
