package file

import (
	"log/slog"
	"os"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
	"github.com/edge-agent/edge-agent/connector/file/internal/linesplit"
	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
	"github.com/edge-agent/edge-agent/connector/internal/multiline"
)

// tracker knows every file identity of the input, open or not, by key,
// identity, path and fingerprint, and the positions saved by the last run
// that no file has claimed yet.
type tracker struct {
	files  map[string]*tracked // by Key
	byID   map[fileID]*tracked
	byPath map[string]*tracked // live files by path, chained by samePath
	// byFP and byPrior index files by their fingerprint and by the
	// fingerprint of their content before a truncation: a new file is
	// looked up in both to tell a copy (copytruncate) from a new file.
	byFP    map[fingerprint.Sum][]*tracked
	byPrior map[fingerprint.Sum][]*prior
	fpLens  map[int]int // entries of byFP and byPrior by fingerprint length
	priorQ  []*prior    // the priors in byPrior, oldest first
	// staleByDir lists by directory the files whose short fingerprint
	// they outgrew since their last read (rotation_copies.go).
	staleByDir map[string][]*tracked
	savedIndex
}

// savedIndex holds the positions restored by Open that no file has
// matched yet.
type savedIndex struct {
	saved     map[fileID][]savedState // positions from Open not yet matched
	savedKeys map[string]struct{}     // the keys in saved
	// savedBySum and savedLens index the saved positions by fingerprint,
	// for copies of files truncated or gone while the agent was stopped
	// (entries whose position was matched since are skipped on lookup).
	savedBySum map[fingerprint.Sum][]fileID
	// savedByPrior indexes them by their "prev": the content a file held
	// before a truncation, which its copy continues even when the copy
	// is discovered before the truncated file is.
	savedByPrior map[fingerprint.Sum][]fileID
	savedLens    map[int]struct{}
	savedScans   int
}

func newTracker() tracker {
	return tracker{
		files:      make(map[string]*tracked),
		byID:       make(map[fileID]*tracked),
		byPath:     make(map[string]*tracked),
		byFP:       make(map[fingerprint.Sum][]*tracked),
		byPrior:    make(map[fingerprint.Sum][]*prior),
		fpLens:     make(map[int]int),
		staleByDir: make(map[string][]*tracked),
		savedIndex: savedIndex{
			saved:        make(map[fileID][]savedState),
			savedKeys:    make(map[string]struct{}),
			savedBySum:   make(map[fingerprint.Sum][]fileID),
			savedByPrior: make(map[fingerprint.Sum][]fileID),
			savedLens:    make(map[int]struct{}),
		},
	}
}

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
	samePath    *tracked // next live file indexed under the same path (tracker.byPath)
	inFP        bool     // indexed in tracker.byFP under fp.Sum()
	stale       bool     // listed in tracker.staleByDir
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
	// prior is the content this file held before its last truncation,
	// kept for a scan or two so that its copy (copytruncate) continues
	// from where it was delivered instead of from 0.
	prior *prior
	// copyOf is the live file this one is a copy of, seen before that
	// file was truncated: it is not read until the original is truncated
	// or ends, then continues from where the original was delivered.
	copyOf *tracked
	copies int // files whose copyOf is this one
	// resume is where a copy continues once a scan finds its new name
	// (continueCopy could not stat it: renamed in between).
	resume *prior
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

// prior is content a file no longer holds: its fingerprint and how far it
// was delivered. until is the last scan that may still find its copy.
type prior struct {
	sum          fingerprint.Sum
	offset, line int64
	until        uint64
	madeAt       time.Time // the scan time when it was made
	from         string    // the file's name then
	holder       *tracked  // the file, while it is tracked (its state saves the prior)
}

// setPath records the name t is matched under and keeps the path index
// current; _file and the state's path follow renames within the globs.
func (tk *tracker) setPath(t *tracked, p string) {
	if t.path != "" {
		tk.unindexPath(t)
	}
	t.path = p
	t.samePath = tk.byPath[p]
	tk.byPath[p] = t
	t.setPathText(p)
}

// unindexPath removes t from the path index. A path names several live
// files only briefly (a rotated file still being finished under its old
// name next to its successor), so the chain is short.
func (tk *tracker) unindexPath(t *tracked) {
	head := tk.byPath[t.path]
	if head == t {
		if t.samePath == nil {
			delete(tk.byPath, t.path)
		} else {
			tk.byPath[t.path] = t.samePath
		}
		t.samePath = nil
		return
	}
	for x := head; x != nil; x = x.samePath {
		if x.samePath == t {
			x.samePath = t.samePath
			break
		}
	}
	t.samePath = nil
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

// state returns the constant part of the State, building it if needed
// for an open file; nil for a closed one, whose positions are rare
// (first-start tails, forgets) and must not leave a cached copy behind.
func (t *tracked) state() []byte {
	if t.stateHead == nil && t.f != nil {
		t.stateHead = appendStateHead(make([]byte, 0, len(t.fileJSON)+stateHeadFixed), t.id, t.fileJSON, t.fp.Sum(), t.prior)
	}
	return t.stateHead
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
	in.releasePrior(t)
	in.unindexFP(t)
	t.life.retire()
	delete(in.files, t.key)
	if in.byID[t.id] == t {
		delete(in.byID, t.id)
	}
	delete(in.errSeen, t.path)
	in.unindexPath(t)
	in.emitForget(t.key)
}
