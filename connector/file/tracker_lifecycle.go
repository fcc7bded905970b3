package file

// lifecycle is where a tracked file is in its life: what its descriptor
// is doing (phase) and, once the globs no longer name it, how it ends
// (exit). Every change goes through one of the named transitions below.
type lifecycle struct {
	phase phase
	exit  exit
}

// phase is what a tracked file's descriptor is doing.
type phase uint8

const (
	phaseIdle           phase = iota // closed, nothing known to read (close-inactive)
	phaseReading                     // open, may have more to read
	phaseAtEOF                       // open, the last read found no more
	phasePending                     // closed, known to have data or to need a look
	phaseEvicted                     // closed for max-open-files, nothing unread
	phaseEvictedPending              // closed for max-open-files with bytes unread
	phaseFailed                      // closed after an open or read error (on-error: skip); retried when it changes
	phaseDead                        // retired: its position is forgotten
)

// exit is how a file that the globs no longer name ends.
type exit uint8

const (
	exitNone  exit = iota // named by the globs
	exitGone              // deleted: read to its end, then forgotten
	exitAway              // renamed out of the globs: read until quiet for close-inactive
	exitMoved             // renamed out of the globs while stopped, found at start: as exitAway, and it may wait for a descriptor
)

// Queries.

func (l *lifecycle) dead() bool    { return l.phase == phaseDead }
func (l *lifecycle) atEOF() bool   { return l.phase == phaseAtEOF }
func (l *lifecycle) failed() bool  { return l.phase == phaseFailed }
func (l *lifecycle) evicted() bool { return l.phase == phaseEvicted || l.phase == phaseEvictedPending }
func (l *lifecycle) gone() bool    { return l.exit == exitGone }
func (l *lifecycle) away() bool    { return l.exit == exitAway || l.exit == exitMoved }
func (l *lifecycle) moved() bool   { return l.exit == exitMoved }
func (l *lifecycle) needsRead() bool {
	return l.phase == phasePending || l.phase == phaseEvictedPending
}

// Transitions of the descriptor.

// opened: a descriptor was attached.
func (l *lifecycle) opened() { l.phase = phaseReading }

// reachedEOF: a read found no more data.
func (l *lifecycle) reachedEOF() {
	if l.phase == phaseReading {
		l.phase = phaseAtEOF
	}
}

// grew: bytes beyond what was read showed up, or were read.
func (l *lifecycle) grew() {
	if l.phase == phaseAtEOF {
		l.phase = phaseReading
	}
}

// closed: the descriptor was released; nothing is known to be unread.
func (l *lifecycle) closed() {
	if l.phase == phaseReading || l.phase == phaseAtEOF {
		l.phase = phaseIdle
	}
}

// pending: a closed file has data to read, or needs a look (an open one
// is read anyway).
func (l *lifecycle) pending() {
	switch l.phase {
	case phaseIdle, phaseFailed:
		l.phase = phasePending
	case phaseEvicted:
		l.phase = phaseEvictedPending
	}
}

// settled: a closed file has nothing to read until it changes.
func (l *lifecycle) settled() {
	switch l.phase {
	case phasePending, phaseFailed:
		l.phase = phaseIdle
	case phaseEvictedPending:
		l.phase = phaseEvicted
	}
}

// evictedWith: closed to stay under max-open-files, with bytes unread or not.
func (l *lifecycle) evictedWith(unread bool) {
	l.phase = phaseEvicted
	if unread {
		l.phase = phaseEvictedPending
	}
}

// fail: an open or read failed; the file is closed.
func (l *lifecycle) fail() { l.phase = phaseFailed }

// retire: the file is forgotten.
func (l *lifecycle) retire() { l.phase = phaseDead }

// Transitions of the exit.

// listed: a scan's globs name the file again.
func (l *lifecycle) listed() { l.exit = exitNone }

// markGone: the file was deleted.
func (l *lifecycle) markGone() { l.exit = exitGone }

// markAway: the file was renamed out of the globs while open.
func (l *lifecycle) markAway() { l.exit = exitAway }

// markMoved: the file was found at start under a name the globs do not match.
func (l *lifecycle) markMoved() { l.exit = exitMoved }
