package file

import (
	"log/slog"
	"os"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
	"github.com/edge-agent/edge-agent/connector/file/internal/linesplit"
	"github.com/edge-agent/edge-agent/connector/file/internal/tracker"
	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
	"github.com/edge-agent/edge-agent/connector/internal/multiline"
)

// tracked is one file identity (device+inode+fingerprint) the input knows,
// open or not. Offsets:
//
//	offset   ≤ consumed ≤ readPos
//	offset:   just past the last line delivered in an event (the position)
//	consumed: just past the last complete line handed to the assembler
//	readPos:  where the next read starts (consumed + held partial line)
//
// Without multiline, offset == consumed after every line.
type tracked struct {
	identity
	position
	text
	handle
	seenBy
	life lifecycle
	copyState
}

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

// position is how far a tracked file was read, handed on and delivered
// (see tracked).
type position struct {
	offset, line           int64
	consumed, consumedLine int64
	readPos                int64
}

// text is what the events and positions of a file are built from.
type text struct {
	bigEndian bool   // UTF-16 byte order of this file
	bomLen    int    // byte-order mark length at offset 0
	fileJSON  []byte // the path as a JSON string, for _file
	// lineHead is a single-line event up to its _line value, so the
	// event starts with one copy.
	lineHead []byte
	// lineDigits and offsetDigits format _line and _offset of its events.
	lineDigits, offsetDigits jsonenc.Decimal
	// stateHead is the State up to the offset (appendStateHead), built
	// when a position is needed and dropped when the file is closed, so
	// only open files hold one.
	stateHead []byte
}

// handle is the open descriptor of a file and its read loop's state.
type handle struct {
	f        *os.File
	split    *linesplit.Splitter  // only while f != nil: holds no more than a partial line
	asm      *multiline.Assembler // nil without multiline
	openIdx  int                  // index in readers.openFiles while f != nil
	lastData time.Time            // last time new bytes were read (close-inactive)
	served   uint64               // round-robin tick of the last turn (eviction order)
	eofPoll  uint64               // poll in which the last read found EOF
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
func (in *Input) setPath(t *tracked, p string) {
	t.path = p
	in.files.SetPath(t, p)
	t.setPathText(p)
}

// setPathText rebuilds what is derived from the path.
func (t *tracked) setPathText(p string) {
	t.fileJSON, _ = jsonenc.AppendString(t.fileJSON[:0], []byte(p))
	t.lineHead = append(append(append(t.lineHead[:0], `{"_index":0,"_file":`...), t.fileJSON...), `,"_line":`...)
	t.refreshState()
}

// refreshState drops the constant part of the State after the path or
// the fingerprint changed; the next position rebuilds it.
func (t *tracked) refreshState() { t.stateHead = nil }

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

// resetTo restarts reading at offset 0 (truncation, rewrite).
func (t *tracked) resetTo0() {
	t.offset, t.line, t.consumed, t.consumedLine, t.readPos = 0, 0, 0, 0, 0
	if t.split != nil {
		t.split.Reset()
	}
	t.life.grew()
}

// retire delivers what t still holds, closes it and forgets its position.
// why, when not empty, is logged as the reason, with the final offset
// and extra.
func (in *Input) retire(t *tracked, why string, extra ...any) {
	if t.life.dead() {
		return
	}
	in.flushGroups(t, true)
	in.closeFile(t)
	if why != "" {
		in.logFile(slog.LevelInfo, "file forgotten: "+why, t, t.offset, extra...)
	}
	in.resolveCopies(t)
	if t.copyOf != nil {
		t.copyOf.copies--
		t.copyOf = nil
	}
	in.files.Retire(t)
	t.life.retire()
	delete(in.rep.errSeen, t.path)
	in.em.emitForget(t.key)
}
