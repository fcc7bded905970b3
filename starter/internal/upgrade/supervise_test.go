package upgrade

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edge-agent/edge-agent/transport/transporttest"
)

// fakeClock fires After only when the test advances it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	return ch
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// fakeChild exits when told; onSignal decides what a signal does.
type fakeChild struct {
	done     chan struct{}
	once     sync.Once
	code     int
	signals  chan os.Signal
	onSignal func(os.Signal)
}

func newChild() *fakeChild {
	return &fakeChild{done: make(chan struct{}), signals: make(chan os.Signal, 4)}
}

func (c *fakeChild) Done() <-chan struct{} { return c.done }
func (c *fakeChild) ExitCode() int         { return c.code }
func (c *fakeChild) Signal(s os.Signal) error {
	c.signals <- s
	if c.onSignal != nil {
		c.onSignal(s)
	}
	return nil
}
func (c *fakeChild) exit(code int) { c.once.Do(func() { c.code = code; close(c.done) }) }

// trialLayout is a state dir with 1.0.0 current and 1.1.0 on trial.
func trialLayout(t *testing.T, starts int) Layout {
	t.Helper()
	l := Layout{Dir: t.TempDir()}
	bin := l.Binary("1.1.0")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("new"), 0o755); err != nil {
		t.Fatal(err)
	}
	st := State{Current: Slot{Version: "1.0.0", Path: "/opt/edge-agent/bin/edge-agent"},
		Trial: &Trial{Slot: Slot{Version: "1.1.0", Path: bin}, Hash: []byte{1}, Starts: starts, Deadline: Duration(time.Minute)}}
	if err := l.Save(st); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestSupervise(t *testing.T) {
	for _, tc := range []struct {
		name   string
		starts int
		// act plays the trial once it runs.
		act         func(t *testing.T, l Layout, c *fakeChild, clk *fakeClock, cancel func())
		wantVerdict Verdict
		wantExec    string // "new", "old" or ""
		wantReason  string
		wantTrial   bool // the trial is still pending afterwards
	}{
		{name: "confirmed then exits", act: func(t *testing.T, l Layout, c *fakeChild, _ *fakeClock, _ func()) {
			if err := l.Confirm("1.1.0", time.Time{}); err != nil {
				t.Error(err)
			}
			c.exit(0)
		}, wantVerdict: Confirmed, wantExec: "new"},
		{name: "exits 1 at start", act: func(_ *testing.T, _ Layout, c *fakeChild, _ *fakeClock, _ func()) { c.exit(1) },
			wantVerdict: RolledBack, wantExec: "old", wantReason: "exited with code 1 before it reported healthy"},
		{name: "never healthy", act: func(t *testing.T, _ Layout, c *fakeChild, clk *fakeClock, _ func()) {
			c.onSignal = func(s os.Signal) {
				if s == syscall.SIGTERM {
					c.exit(0)
				}
			}
			clk.advance(59 * time.Second)
			select {
			case <-c.signals:
				t.Error("stopped before the deadline")
			default:
			}
			clk.advance(time.Second)
		}, wantVerdict: RolledBack, wantExec: "old", wantReason: "not healthy within 1m0s"},
		{name: "hangs on SIGTERM past the grace", act: func(t *testing.T, _ Layout, c *fakeChild, clk *fakeClock, _ func()) {
			c.onSignal = func(s os.Signal) {
				if s == syscall.SIGKILL {
					c.exit(-1)
				}
			}
			clk.advance(time.Minute)
			transporttest.Eventually(t, 10*time.Second, "the grace timer to be set", func() bool { return clk.pending() == 1 })
			clk.advance(30 * time.Second)
		}, wantVerdict: RolledBack, wantExec: "old", wantReason: "not healthy within"},
		{name: "stopped by a signal", act: func(_ *testing.T, _ Layout, c *fakeChild, _ *fakeClock, cancel func()) {
			c.onSignal = func(os.Signal) { c.exit(0) }
			cancel()
		}, wantVerdict: Stopped, wantTrial: true},
		{name: "stopped through its pid file", act: func(_ *testing.T, _ Layout, c *fakeChild, _ *fakeClock, _ func()) { c.exit(0) },
			wantVerdict: Stopped, wantTrial: true},
		{name: "crash loop", starts: MaxTrialStarts, wantVerdict: RolledBack, wantExec: "old", wantReason: "started 3 times"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := trialLayout(t, tc.starts)
			clk := &fakeClock{now: time.Unix(1000, 0)}
			child := newChild()
			started := make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := &Supervisor{Layout: l, Clock: clk, Start: func(path, version string) (Child, error) {
				if version != "1.1.0" || path != l.Binary("1.1.0") {
					t.Errorf("started %s as %s", path, version)
				}
				close(started)
				return child, nil
			}}
			type out struct {
				r   Result
				err error
			}
			res := make(chan out, 1)
			go func() { r, err := s.Supervise(ctx); res <- out{r, err} }()
			if tc.act != nil {
				select {
				case <-started:
				case <-time.After(10 * time.Second):
					t.Fatal("the trial was not started")
				}
				transporttest.Eventually(t, 10*time.Second, "the deadline to be set", func() bool { return clk.pending() == 1 })
				tc.act(t, l, child, clk, cancel)
			}
			var o out
			select {
			case o = <-res:
			case <-time.After(10 * time.Second):
				t.Fatal("Supervise did not return")
			}
			if o.err != nil {
				t.Fatal(o.err)
			}
			want := map[string]string{"new": l.Binary("1.1.0"), "old": "/opt/edge-agent/bin/edge-agent", "": ""}[tc.wantExec]
			if o.r.Verdict != tc.wantVerdict || o.r.Exec != want || !strings.Contains(o.r.Reason, tc.wantReason) {
				t.Errorf("got %+v, want verdict %d exec %q reason %q", o.r, tc.wantVerdict, want, tc.wantReason)
			}
			st, err := l.Load()
			if err != nil {
				t.Fatal(err)
			}
			if (st.Trial != nil) != tc.wantTrial {
				t.Errorf("trial after: %+v", st.Trial)
			}
			if tc.wantVerdict == RolledBack {
				if st.Current.Version != "1.0.0" || st.Last == nil || !st.Last.Failed || !strings.Contains(st.Last.Error, tc.wantReason) {
					t.Errorf("state after rollback %+v last %+v", st, st.Last)
				}
				if _, err := os.Stat(filepath.Join(l.Root(), "1.1.0")); !os.IsNotExist(err) {
					t.Errorf("the failed version is kept: %v", err)
				}
			}
			if tc.wantVerdict == Confirmed && (st.Current.Version != "1.1.0" || st.Previous == nil || st.Previous.Version != "1.0.0") {
				t.Errorf("state after confirm %+v", st)
			}
		})
	}
}

// Each start of a pending trial is counted before it runs, so a trial
// killed at every start is rolled back at the MaxTrialStarts+1-th.
func TestSuperviseCountsStarts(t *testing.T) {
	l := trialLayout(t, 0)
	for i := 1; i <= MaxTrialStarts; i++ {
		child := newChild()
		s := &Supervisor{Layout: l, Clock: &fakeClock{}, Start: func(string, string) (Child, error) {
			st, err := l.Load()
			if err != nil || st.Trial == nil || st.Trial.Starts != i {
				t.Errorf("start %d: state %+v %v", i, st.Trial, err)
			}
			child.exit(0) // stopped: as if killed and started again
			return child, nil
		}}
		if r, err := s.Supervise(context.Background()); err != nil || r.Verdict != Stopped {
			t.Fatalf("start %d: %+v %v", i, r, err)
		}
	}
	s := &Supervisor{Layout: l, Clock: &fakeClock{}, Start: func(string, string) (Child, error) {
		t.Error("started past MaxTrialStarts")
		return newChild(), nil
	}}
	if r, err := s.Supervise(context.Background()); err != nil || r.Verdict != RolledBack {
		t.Fatalf("after %d starts: %+v %v", MaxTrialStarts, r, err)
	}
}

func TestConfirmKeepsTwoVersions(t *testing.T) {
	l := trialLayout(t, 1)
	for _, v := range []string{"0.9.0", "1.0.0"} {
		if err := os.MkdirAll(filepath.Dir(l.Binary(v)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Confirm("2.0.0", time.Time{}); err == nil {
		t.Error("confirmed a version not on trial")
	}
	if err := l.Confirm("1.1.0", time.Time{}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(l.Root())
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, ","); got != "1.0.0,1.1.0,state.json" {
		t.Errorf("versions/ holds %s", got)
	}
}
