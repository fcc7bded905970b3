package file

import (
	"os"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
	"github.com/edge-agent/edge-agent/connector/file/internal/jsonenc"
	"github.com/edge-agent/edge-agent/connector/file/internal/linesplit"
	"github.com/edge-agent/edge-agent/connector/file/internal/multiline"
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
	key  string
	path string
	id   fileID

	fp        fingerprint.Print
	bigEndian bool // UTF-16 byte order of this file
	bomLen    int  // byte-order mark length at offset 0

	offset, line           int64
	consumed, consumedLine int64
	readPos                int64
	f                      *os.File
	split                  *linesplit.Splitter  // only while f != nil: holds no more than a partial line
	asm                    *multiline.Assembler // nil without multiline

	fileJSON []byte // the path as a JSON string, for _file
	// lineHead is a single-line event up to its _line value, so the
	// event starts with one copy.
	lineHead []byte
	// lineDigits and offsetDigits format _line and _offset of its events.
	lineDigits, offsetDigits jsonenc.Decimal
	// stateHead is the State up to the offset (appendStateHead), built
	// when a position is needed and dropped when the file is closed, so
	// only open files hold one.
	stateHead []byte

	lastData time.Time // last time new bytes were read (close-inactive)
	served   uint64    // round-robin tick of the last turn (eviction order)
	seenScan uint64    // last scan whose globs matched this file
	missing  int       // consecutive scans that did not match it
	life     lifecycle
	eofPoll  uint64    // poll in which the last read found EOF
	lastSize int64     // size at the last scan
	lastMod  time.Time // modification time at the last scan

	samePath *tracked // next live file indexed under the same path (Input.byPath)
	openIdx  int      // index in Input.openFiles while f != nil

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
	// headChecked is how many first bytes the last check for being a
	// copy saw; a file not read from yet is checked again at its first
	// read when it holds more (a copy listed while still being written).
	headChecked int
	// behind: a copy continued from its original's offset while it held
	// less (still being written); it is not taken for truncated meanwhile.
	behind bool
	inFP   bool // indexed in Input.byFP under fp.Sum()
	stale  bool // listed in Input.staleByDir
}

// prior is content a file no longer holds: its fingerprint and how far it
// was delivered. until is the last scan that may still find its copy.
type prior struct {
	sum          fingerprint.Sum
	offset, line int64
	until        uint64
	from         string   // the file's name then
	holder       *tracked // the file, while it is tracked (its state saves the prior)
}

// setPath records the name t is matched under and keeps the path index
// current; _file and the state's path follow renames within the globs.
func (in *Input) setPath(t *tracked, p string) {
	if t.path != "" {
		in.unindexPath(t)
	}
	t.path = p
	t.samePath = in.byPath[p]
	in.byPath[p] = t
	t.setPathText(p)
}

// unindexPath removes t from the path index. A path names several live
// files only briefly (a rotated file still being finished under its old
// name next to its successor), so the chain is short.
func (in *Input) unindexPath(t *tracked) {
	head := in.byPath[t.path]
	if head == t {
		if t.samePath == nil {
			delete(in.byPath, t.path)
		} else {
			in.byPath[t.path] = t.samePath
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
