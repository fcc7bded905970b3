package file

import (
	"os"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
	"github.com/edge-agent/edge-agent/connector/file/internal/linesplit"
	"github.com/edge-agent/edge-agent/connector/internal/jsonenc"
	"github.com/edge-agent/edge-agent/connector/internal/multiline"
)

// reader is one file's reading: its descriptor and the line splitter
// over it, its multiline assembler, how far it was read, handed on and
// delivered (position), and the text its events and positions are built
// from. It knows nothing of the file's identity or of other files.
type reader struct {
	position
	text
	handle
}

// position is how far a file was read, handed on and delivered:
//
//	offset   ≤ consumed ≤ readPos
//	offset:   just past the last line delivered in an event (the position)
//	consumed: just past the last complete line handed to the assembler
//	readPos:  where the next read starts (consumed + held partial line)
//
// Without multiline, offset == consumed after every line.
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
	openIdx  int                  // index in Input.openFiles while f != nil
	lastData time.Time            // last time new bytes were read (close-inactive)
	served   uint64               // round-robin tick of the last turn (eviction order)
	eofPoll  uint64               // poll in which the last read found EOF
	// head is the file's first bytes as verifyHead last found them
	// matching the fingerprint headSum: while the fingerprint is still
	// headSum, the same bytes match without hashing them again. Only an
	// open file holds one (fingerprint-bytes at most).
	head    []byte
	headSum fingerprint.Sum
}

// setPathText rebuilds what is derived from the path.
func (r *reader) setPathText(p string) {
	r.fileJSON, _ = jsonenc.AppendString(r.fileJSON[:0], []byte(p))
	r.lineHead = append(append(append(r.lineHead[:0], `{"_index":0,"_file":`...), r.fileJSON...), `,"_line":`...)
	r.refreshState()
}

// refreshState drops the constant part of the State after the path or
// the fingerprint changed; the next position rebuilds it.
func (r *reader) refreshState() { r.stateHead = nil }

// restart makes the reader read on from offset, the start of line+1:
// nothing held, everything before delivered.
func (r *reader) restart(offset, line int64) {
	r.offset, r.consumed, r.readPos = offset, offset, offset
	r.line, r.consumedLine = line, line
	if r.split != nil {
		r.split.Reset()
	}
}

// setBOM records the byte-order mark at the start of the file, head
// being its first bytes; a new byte order reconfigures the splitter.
func (r *reader) setBOM(c codec, head []byte, maxLine int) {
	n, be := c.bom(head)
	if be != r.bigEndian && r.split != nil {
		r.split.Configure(maxLine, c.width(), be)
	}
	r.bomLen, r.bigEndian = n, be
}

// open attaches the descriptor f; the splitter lives only while the file
// is open: a closed file holds no partial line, and most files of a
// large tree are closed.
func (r *reader) open(f *os.File, c codec, maxLine int) {
	if r.split == nil {
		r.split = linesplit.New(maxLine, c.width(), r.bigEndian)
	}
	r.f = f
}

// close releases the descriptor. A held partial line is dropped and will
// be read again from the file; assembled lines stay buffered.
func (r *reader) close() {
	_ = r.f.Close()
	r.f = nil
	r.stateHead = nil // rebuilt on the next position; closed files hold none
	r.split = nil
	r.readPos = r.consumed
}

// dropHead forgets the head bytes kept for verifyHead; a file that is
// not open holds none (detach).
func (h *handle) dropHead() { h.head, h.headSum = nil, fingerprint.Sum{} }

// grew reports whether the open file has bytes beyond what was read:
// written after the last read of this poll cycle. Such a file is not idle.
func (r *reader) grew() bool {
	fi, err := r.f.Stat()
	return err == nil && fi.Size() > r.readPos
}

// appendSingleHead appends a single-line event up to its payload value,
// with the timestamp digits prepared by the caller and the line number
// and offset formatted by the file's own Decimals (they step by 1 and by
// a line's length).
func (r *reader) appendSingleHead(dst []byte, line, end int64, tsTail []byte) []byte {
	dst = append(dst, r.lineHead...)
	dst = r.lineDigits.Append(dst, line)
	dst = append(dst, `,"_offset":`...)
	dst = r.offsetDigits.Append(dst, end)
	return append(dst, tsTail...)
}
