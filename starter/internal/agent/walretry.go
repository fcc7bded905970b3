package agent

import (
	"time"

	"github.com/edge-agent/edge-agent/transport/backoff"
)

// walBackoff paces the retries of a failing WAL transaction. Not
// jittered: a disk problem is this host's own, no herd to spread.
var walBackoff = backoff.Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second}

// walRetry is the state of a failing WAL (disk full, I/O error): how many
// transactions failed in a row and when to try again.
type walRetry struct {
	errs    int       // consecutive failed transactions
	retryAt time.Time // no transaction before this
	// onlyAppends: the last failure was of a transaction that appended,
	// and its send results, claims and cleanup committed without the
	// appends; until retryAt only such transactions run.
	onlyAppends bool
}

// holdAppends says whether appends wait at now.
func (w *walRetry) holdAppends(now time.Time) bool { return now.Before(w.retryAt) }

// blocked says whether no transaction at all may run at now.
func (w *walRetry) blocked(now time.Time) bool { return w.holdAppends(now) && !w.onlyAppends }

// failed records a failed transaction at now; it reports whether to log
// it: the first failure and then every 20th, as a full disk lasts.
func (w *walRetry) failed(now time.Time, onlyAppends bool) (report bool) {
	w.errs++
	w.onlyAppends = onlyAppends
	w.retryAt = now.Add(walBackoff.Delay(w.errs - 1))
	return w.errs == 1 || w.errs%20 == 0
}

// recovered forgets the failures; it returns how many there were.
func (w *walRetry) recovered() int {
	n := w.errs
	*w = walRetry{}
	return n
}

// retryNow lets the held-back appends try at the next turn (room was made).
func (w *walRetry) retryNow() { w.retryAt = time.Time{} }
