package file

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"slices"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
)

// Copytruncate leaves two files: a new one (the copy, app.log.1) holding
// what the original held, and the original truncated to 0. Read from 0,
// the copy would deliver again everything already delivered from the
// original; left unread, it would lose the lines written between the last
// read and the truncate. So a new file whose first fingerprint-bytes
// equal those of a tracked file's content is taken for its copy:
//
//   - seen after the truncate (the original's old content is its prior),
//     it continues from where the original was delivered;
//   - seen before (the original still holds that content, or a refill
//     that is not noticed yet), it waits, unread, until the original is
//     truncated or ends, then continues from where the original was
//     delivered by then.
//
// Only full fingerprints count: a file shorter than fingerprint-bytes is
// too little to tell a copy from a file that starts the same way.

// setFP sets t's fingerprint to cur and keeps the index current.
func (in *Input) setFP(t *tracked, cur []byte) {
	in.unindexFP(t)
	t.fp.Set(cur)
	if t.fp.Full() {
		s := t.fp.Sum()
		in.byFP[s] = append(in.byFP[s], t)
		t.inFP = true
	}
}

func (in *Input) unindexFP(t *tracked) {
	if !t.inFP {
		return
	}
	t.inFP = false
	unindex(in.byFP, t.fp.Sum(), t)
}

func unindex(m map[fingerprint.Sum][]*tracked, s fingerprint.Sum, t *tracked) {
	list := slices.DeleteFunc(m[s], func(x *tracked) bool { return x == t })
	if len(list) == 0 {
		delete(m, s)
	} else {
		m[s] = list
	}
}

// setPrior records p as the content t held before a truncation, until the
// end of the next scan (a copy made before the truncate is listed by any
// scan that starts after it was noticed). A fingerprint shorter than
// fingerprint-bytes is not kept: it cannot identify a copy.
func (in *Input) setPrior(t *tracked, p *prior) {
	in.dropPrior(t, false)
	if p == nil || p.sum.Len != in.cfg.FingerprintBytes {
		return
	}
	p.until = in.scanGen + 1
	t.prior = p
	in.byPrior[p.sum] = append(in.byPrior[p.sum], t)
	t.refreshState()
}

// dropPrior forgets t's prior; with save, a position without it is
// emitted so a restart does not find it in the WAL.
func (in *Input) dropPrior(t *tracked, save bool) {
	if t.prior == nil {
		return
	}
	unindex(in.byPrior, t.prior.sum, t)
	t.prior = nil
	t.refreshState()
	if save && !t.dead {
		in.emitPosition(t)
	}
}

// expirePriors drops the priors whose copy did not show up by the end of
// the scan that ends now (the copies are outside the globs, or there were
// none: a plain truncation).
func (in *Input) expirePriors() {
	if len(in.byPrior) == 0 {
		return
	}
	var done []*tracked
	for _, list := range in.byPrior {
		for _, t := range list {
			if t.prior.until <= in.scanGen {
				done = append(done, t)
			}
		}
	}
	for _, t := range done {
		in.dropPrior(t, true)
	}
}

// copySource finds what a new file whose first bytes are cur is a copy of:
// a file's content before its truncation (fromPrior), or a live file.
// f is the new file, whose size is size.
func (in *Input) copySource(id fileID, f *os.File, size int64, cur []byte) (src *tracked, fromPrior bool) {
	n := in.cfg.FingerprintBytes
	if len(cur) < n || (len(in.byFP) == 0 && len(in.byPrior) == 0) {
		return nil, false
	}
	sum := fingerprint.Of(cur[:n])
	for _, t := range in.byPrior[sum] {
		if !t.dead && t.id != id {
			return t, true
		}
	}
	for _, t := range slices.Clone(in.byFP[sum]) {
		if t.dead || t.id == id || t.copyOf != nil {
			continue
		}
		tf, done, ok := in.fileOf(t)
		if !ok {
			continue
		}
		head, err := fingerprint.Read(tf, in.cfg.FingerprintBytes, nil)
		if err == nil && !t.fp.Matches(head) {
			// The original no longer holds that content: truncated,
			// maybe refilled already, before a read noticed. Take note
			// now, so the copy continues from its prior.
			done()
			in.truncate(t, head)
			if t.f == nil {
				t.needsRead = true
			}
			if t.prior != nil && t.prior.sum == sum {
				return t, true
			}
			continue
		}
		same := err == nil && sameBytes(f, size, tf, int64(in.cfg.FingerprintBytes))
		done()
		if same {
			return t, false
		}
	}
	return nil, false
}

// fileOf returns t's file: its descriptor, or, for a closed file, the file
// at its path if that is still t (done closes it).
func (in *Input) fileOf(t *tracked) (f *os.File, done func(), ok bool) {
	if t.f != nil {
		return t.f, func() {}, true
	}
	g, err := in.openFile(t.path)
	if err != nil {
		return nil, nil, false
	}
	fi, err := g.Stat()
	if err == nil {
		if id, _, idOK := idOfOpen(g, fi); idOK && id == t.id {
			return g, func() { _ = g.Close() }, true
		}
	}
	_ = g.Close()
	return nil, nil, false
}

// copyCheck is how many bytes before the end of the shorter of two files
// are compared, beside the fingerprint, before one is taken for a copy of
// the other: files that merely start with the same banner differ there.
const copyCheck = 4 << 10

// sameBytes reports whether f (size bytes) holds the same bytes as tf in
// the copyCheck bytes before the end of the shorter one, past the first
// from bytes (the fingerprint, compared already).
func sameBytes(f *os.File, size int64, tf *os.File, from int64) bool {
	fi, err := tf.Stat()
	if err != nil {
		return false
	}
	end := min(size, fi.Size())
	start := max(from, end-copyCheck)
	if end <= start {
		return true // the fingerprint covered all there is
	}
	a := make([]byte, end-start)
	b := make([]byte, end-start)
	if _, err := f.ReadAt(a, start); err != nil && err != io.EOF {
		return false
	}
	if _, err := tf.ReadAt(b, start); err != nil && err != io.EOF {
		return false
	}
	return bytes.Equal(a, b)
}

// resolveCopies lets the copies waiting on t continue from where t was
// delivered, now that t is truncated or ends. It reports whether there
// were any: then t's old content needs no prior.
func (in *Input) resolveCopies(t *tracked) bool {
	if t.copies == 0 {
		return false
	}
	for _, c := range in.ring {
		if c.copyOf == t && !c.dead {
			in.continueCopy(c, t.offset, t.line, t.path)
		}
	}
	t.copies = 0
	return true
}

// continueCopy makes c, a copy, read on from offset (line) of the file it
// copies. A copy shorter than that holds nothing undelivered: it is kept
// at its end.
func (in *Input) continueCopy(c *tracked, offset, line int64, from string) {
	if c.copyOf != nil {
		c.copyOf.copies--
		c.copyOf = nil
	}
	size := c.lastSize
	if fi, err := in.fsys.Stat(c.path); err == nil {
		if id, _, ok := idOf(c.path, fi); ok && id == c.id {
			size = fi.Size()
		}
	}
	if offset > size {
		offset, line = size, 0
	}
	c.offset, c.consumed, c.readPos = offset, offset, offset
	c.line, c.consumedLine = line, line
	c.needsRead = true
	in.logFile(slog.LevelInfo, "file is a copy of a truncated file (copytruncate); reading it from where the original was delivered", c, offset,
		"copy_of", from)
	in.emitPosition(c)
}
