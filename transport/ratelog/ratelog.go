// Package ratelog writes a warning that may repeat thousands of times a
// second (a flood of bad connections, a full queue) at most once per
// interval, with the count of the ones it held back, so a flood cannot
// flood the log.
package ratelog

import (
	"log/slog"
	"sync"
	"time"
)

// DefaultEvery is the interval of a Warner whose Every is zero.
const DefaultEvery = 10 * time.Second

// Warner writes at most one WARN per Every. The zero value is ready to use
// and safe for concurrent use; it must not be copied once used.
type Warner struct {
	// Every is the least time between two lines. Zero means DefaultEvery.
	Every time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// Warn writes msg with attrs at WARN unless a line was written less than
// Every ago, in which case it only counts it. A line written after some
// were held back carries suppressed_since_last, their number.
func (w *Warner) Warn(l *slog.Logger, msg string, attrs ...any) {
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	t := now()
	w.mu.Lock()
	if !w.last.IsZero() && t.Sub(w.last) < w.every() {
		w.suppressed++
		w.mu.Unlock()
		return
	}
	n := w.suppressed
	w.last, w.suppressed = t, 0
	w.mu.Unlock()
	if n > 0 {
		attrs = append(attrs, slog.Int("suppressed_since_last", n))
	}
	l.Warn(msg, attrs...)
}

// TakeHeld returns the number of lines held back since the last one
// written and forgets them, so a flood that stopped still gets its count
// logged by the caller. Unless all is set it takes them only once Every
// has passed since that last line, when Warn would have written the next.
func (w *Warner) TakeHeld(all bool) int {
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	t := now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.suppressed == 0 || (!all && t.Sub(w.last) < w.every()) {
		return 0
	}
	n := w.suppressed
	w.suppressed = 0
	return n
}

func (w *Warner) every() time.Duration {
	if w.Every <= 0 {
		return DefaultEvery
	}
	return w.Every
}
