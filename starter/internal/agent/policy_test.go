package agent

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// A failing WAL is retried after a doubling delay, capped, and logged at
// the first failure and every 20th; a success forgets the failures.
func TestWALRetryBacksOffAndReportsSparingly(t *testing.T) {
	var w walRetry
	var reported []int
	for n := 1; n <= 40; n++ {
		if w.failed(t0, false) {
			reported = append(reported, n)
		}
		want := min(walBackoff.Initial<<(n-1), walBackoff.Max)
		if n > 10 {
			want = walBackoff.Max
		}
		if got := w.retryAt.Sub(t0); got != want {
			t.Fatalf("failure %d: retry in %s, want %s", n, got, want)
		}
	}
	if len(reported) != 3 || reported[0] != 1 || reported[1] != 20 || reported[2] != 40 {
		t.Errorf("reported failures %v, want [1 20 40]", reported)
	}
	if !w.blocked(t0) || w.blocked(w.retryAt) {
		t.Error("a failed transaction must block every transaction until retryAt, and no longer")
	}
	w.failed(t0, true)
	if w.blocked(t0) || !w.holdAppends(t0) {
		t.Error("after a failed append only the appends wait")
	}
	if n := w.recovered(); n != 41 || w.holdAppends(t0) || w.errs != 0 {
		t.Errorf("recovered() = %d and holdAppends %v, want 41 and false", n, w.holdAppends(t0))
	}
}

func TestCleanupPolicyDue(t *testing.T) {
	const retention = 30 * time.Second // a tenth: 3 s between cleanups alone
	for _, tc := range []struct {
		name       string
		c          cleanupPolicy
		since      time.Duration
		committing bool
		want       bool
	}{
		{name: "nothing acked", c: cleanupPolicy{}, since: time.Hour, committing: true, want: false},
		{name: "NON mode", c: cleanupPolicy{off: true, acked: 5}, since: time.Hour, committing: true, want: false},
		{name: "rides a commit", c: cleanupPolicy{acked: 5}, committing: true, want: true},
		{name: "more left", c: cleanupPolicy{acked: 5, more: true}, want: true},
		{name: "alone, too soon", c: cleanupPolicy{acked: 5}, since: 2 * time.Second, want: false},
		{name: "alone, due", c: cleanupPolicy{acked: 5}, since: 3 * time.Second, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.last = t0
			if got := tc.c.due(t0.Add(tc.since), tc.committing, retention); got != tc.want {
				t.Errorf("due = %v, want %v", got, tc.want)
			}
		})
	}
}

// Claims look for rows only when something says some may be due: a hint,
// a retry time passed, or now and then while rows are queued.
func TestClaimPolicyDue(t *testing.T) {
	c := claimPolicy{queuedRows: 0, lastCheck: t0}
	if c.due(t0.Add(time.Hour), false) {
		t.Error("an empty queue with no hint was looked at")
	}
	if !c.due(t0, true) {
		t.Error("a commit's hint was ignored")
	}
	c.queuedRows = 10
	if c.due(t0.Add(claimRecheckInterval/2), false) || !c.due(t0.Add(claimRecheckInterval), false) {
		t.Error("queued rows are looked for once per claimRecheckInterval")
	}
	c.retryAt(t0.Add(5 * time.Second))
	c.retryAt(t0.Add(2 * time.Second)) // the earliest wins
	c.claimed(t0, false)
	c.queuedRows = 0
	if c.due(t0.Add(time.Second), false) {
		t.Error("claimed before the retry time")
	}
	if !c.due(t0.Add(2*time.Second), false) || !c.hint {
		t.Error("the retry time passed without a claim")
	}
	c.claimed(t0, true)
	if !c.due(t0, false) {
		t.Error("a claim that stopped at its bound leaves rows to claim")
	}
}

// Each job's result says whether the link is down and how long to pause.
func TestLinkPacingObservesResults(t *testing.T) {
	var p linkPacing
	p.observe(&jobResult{err: errors.New("unreachable"), retryAt: t0.Add(time.Second)})
	if !p.down || !p.paused(t0) || p.paused(t0.Add(time.Second)) {
		t.Fatalf("after an unreachable engine: down %v, paused until %s", p.down, p.pausedUntil)
	}
	p.observe(&jobResult{skipped: true})
	if !p.down {
		t.Error("a job the sender skipped brought the link up")
	}
	p.observe(&jobResult{retryAt: t0.Add(time.Millisecond)})
	if p.pausedUntil != t0.Add(time.Second) {
		t.Error("a shorter pause shortened the one in force")
	}
	p.observe(&jobResult{})
	if p.down {
		t.Error("a job that went through left the link down")
	}
}

func TestJobSlots(t *testing.T) {
	s := newJobSlots(16)
	a := s.add(make([]row, 3))
	b := s.add(make([]row, 2))
	if a.seq >= b.seq || s.free() != maxJobs-2 || s.rows() != 5 {
		t.Fatalf("seq %d, %d; free %d; rows %d", a.seq, b.seq, s.free(), s.rows())
	}
	s.done(a.seq)
	if s.rows() != 2 {
		t.Errorf("rows %d after one came back, want 2", s.rows())
	}
	if got := s.takeAll(); len(got) != 1 || got[0] != b || s.free() != maxJobs {
		t.Errorf("takeAll = %v, free %d", got, s.free())
	}
}
