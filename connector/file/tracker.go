package file

import (
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
	"github.com/edge-agent/edge-agent/connector/file/internal/tracker"
)

// tracked is one file identity (device+inode+fingerprint) the input knows,
// open or not: what it is, its reader, what the scans saw of it, where it
// is in its life and its part in copytruncate.
type tracked struct {
	identity
	reader
	seenBy
	life lifecycle
	copyState
	slot tracker.Slot[fileID] // the tracker's record of it
}

// Slot is the tracker's record of t (tracker.File).
func (t *tracked) Slot() *tracker.Slot[fileID] { return &t.slot }

// identity is what a tracked file is, and how the tracker's indexes
// find it.
type identity struct {
	key  string
	path string
	id   fileID
	fp   fingerprint.Print
	// headChecked is how many first bytes the last check for being a
	// copy saw; a file not read from yet is checked again at its first
	// read when it holds more (a copy listed while still being written).
	headChecked int
}

// seenBy is what the scans saw of a file.
type seenBy struct {
	seenScan uint64    // last scan whose globs matched this file
	missing  int       // consecutive scans that did not match it
	lastSize int64     // size at the last scan
	lastMod  time.Time // modification time at the last scan
}

// copyState is a file's part in copytruncate (rotation_copies.go).
type copyState struct {
	// copyOf is the live file this one is a copy of, seen before that
	// file was truncated: it is not read until the original is truncated
	// or ends, then continues from where the original was delivered.
	copyOf *tracked
	copies int // files whose copyOf is this one
	// resume is where a copy continues once a scan finds its new name
	// (continueCopy could not stat it: renamed in between).
	resume *resumeAt
	// behind: a copy continued from its original's offset while it held
	// less (still being written); it is not taken for truncated meanwhile.
	behind bool
	hold   copyHold
}

// copyHold is whether a new file too short to be told for a copy is kept
// unread until it can be (holdCopy).
type copyHold uint8

const (
	holdNone     copyHold = iota // never held
	holding                      // not read until it holds fingerprint-bytes, or is quiet
	holdReleased                 // held once; not held again
)

// prior is content a file no longer holds (tracker.Prior).
type prior = tracker.Prior

// resumeAt is where a copy continues: offset (line) of the file it
// copies, named from.
type resumeAt struct {
	offset, line int64
	from         string
}

// files is the tracker of the input's files.
type files = tracker.Tracker[*tracked, fileID]

// setPath records the name t is matched under; _file and the state's
// path follow renames within the globs.
func setPath(fs *files, t *tracked, p string) {
	t.path = p
	fs.SetPath(t, p)
	t.setPathText(p)
}

// state returns the constant part of t's State, building it if needed
// for an open file; nil for a closed one, whose positions are rare
// (first-start tails, forgets) and must not leave a cached copy behind.
func (em *emitter) state(t *tracked) []byte {
	if t.stateHead == nil && t.f != nil {
		t.stateHead = appendStateHead(make([]byte, 0, len(t.fileJSON)+stateHeadFixed), t.id, t.fileJSON, t.fp.Sum(), contentOf(em.files.PriorOf(t)))
	}
	return t.stateHead
}

// contentOf is p's content, nil for none.
func contentOf(p *prior) *tracker.Content {
	if p == nil {
		return nil
	}
	return &p.Content
}

// delivered is t's content as far as it was delivered, as a prior.
func (t *tracked) delivered() *prior {
	return &prior{Content: tracker.Content{Sum: t.fp.Sum(), Offset: t.offset, Line: t.line}}
}

// resetTo0 restarts reading at offset 0 (truncation, rewrite).
func (t *tracked) resetTo0() {
	t.restart(0, 0)
	t.life.grew()
}

// retire delivers what t still holds, closes it and forgets its position.
// why, when not empty, is logged as the reason, with the final offset
// and extra.
func (set *fileSet) retire(t *tracked, why string, extra ...any) {
	if t.life.dead() {
		return
	}
	set.em.flushGroups(t, true)
	set.closeFile(t)
	if why != "" {
		set.rep.logFile(slog.LevelInfo, "file forgotten: "+why, t, t.offset, extra...)
	}
	set.resolveCopies(t)
	if t.copyOf != nil {
		t.copyOf.copies--
		t.copyOf = nil
	}
	set.files.Retire(t)
	t.life.retire()
	delete(set.rep.errSeen, t.path)
	set.em.emitForget(t.key)
}
