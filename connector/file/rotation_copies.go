package file

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

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
// A fingerprint shorter than fingerprint-bytes (a file read while it was
// smaller) still counts: the new file must then start with all the bytes
// it covers, and, for a live original, also hold the same bytes before
// the end of the shorter file (sameBytes).

// setFP sets t's fingerprint to cur.
func setFP(fs *files, t *tracked, cur []byte) {
	t.fp.Set(cur)
	fs.SetSum(t, t.fp.Sum())
}

// setPrior records p as the content t held before a truncation; t's saved
// state carries it until the end of the scan after next (a copy made
// before the truncate is listed by any scan that starts after it was
// noticed), memory longer (tracker.MaxPriors). An empty file has no
// prior. The prior outlives t if t is forgotten first (deleted, rotated
// away).
func (em *emitter) setPrior(t *tracked, p *prior, gen uint64, at time.Time) {
	if dropped, ok := em.files.SetPrior(t, p, gen, at); ok {
		em.priorGone(dropped, true)
	}
	t.refreshState()
}

// dropPrior forgets t's prior; with save, a position without it is
// emitted so a restart does not find it in the WAL.
func (em *emitter) dropPrior(t *tracked, save bool) {
	if p := em.files.PriorOf(t); p != nil {
		em.removePrior(p, save)
	}
}

// removePrior forgets p, and takes it off the state of its holder.
func (em *emitter) removePrior(p *prior, save bool) {
	if t, ok := em.files.RemovePrior(p); ok {
		em.priorGone(t, save)
	}
}

// priorGone rebuilds the state of t, whose prior was taken off; with
// save it is emitted.
func (em *emitter) priorGone(t *tracked, save bool) {
	t.refreshState()
	if save && !t.life.dead() {
		em.emitPosition(t)
	}
}

// expirePriors takes the priors whose copy did not show up by the end of
// the scan after next off their files' saved state (the copies may be
// outside the globs, or there were none: a plain truncation). They stay
// findable in memory.
func (em *emitter) expirePriors(gen uint64) {
	for _, t := range em.files.ExpirePriors(gen) {
		em.priorGone(t, true)
	}
}

// refreshStale brings the stale fingerprints of the files in dir (where
// copies are made) up to date before a new file there (of curLen first
// bytes) is matched: grown, but not past curLen, so a copy made before
// the growth still matches; or truncated and rewritten (then its old
// content becomes a prior).
func (set *fileSet) refreshStale(dir string, except fileID, curLen int) {
	for _, t := range set.files.TakeStale(dir) {
		if t.life.dead() || t.id == except || t.copyOf != nil {
			continue
		}
		tf, done, ok := fileOf(set.openFile, t)
		if !ok {
			continue
		}
		head, err := fingerprint.Read(tf, set.cfg.FingerprintBytes, nil)
		done()
		switch {
		case err != nil:
		case t.fp.Matches(head):
			if n := min(len(head), curLen); n > t.fp.Len() {
				setFP(set.files, t, head[:n])
				t.refreshState()
			}
		default:
			set.truncate(t, head)
			if t.f == nil {
				t.life.pending()
			}
		}
	}
}

// copyMatch is what a new file was found to be a copy of: content no
// longer in its original (prior, from the original's name), delivered up
// to prior.offset; or a live file (waitOn).
type copyMatch struct {
	prior   *prior
	from    string
	saved   *saved // the saved position it is, for an original not found since the start
	prevOf  string // the key of the saved position whose "prev" it is, for an original not found yet
	prevIn  fileID // prevOf's file
	waitOn  *tracked
	srcSize int64    // waitOn's size now
	ends    *tracked // the original, closed and unreachable: forgotten
}

// none reports whether the file is a copy of nothing known.
func (m copyMatch) none() bool { return m.prior == nil && m.waitOn == nil }

// consume forgets the prior the copy now continues.
func (set *fileSet) consume(m copyMatch) {
	if m.prior != nil {
		set.em.removePrior(m.prior, true)
	}
	if m.ends != nil {
		set.retire(m.ends, "closed and gone from its path; its copy continues it")
	}
	if s := m.saved; s != nil {
		set.files.Consume(*s)
		set.em.emitForget(s.Key)
	}
	if m.prevOf != "" {
		// The original, found later, keeps its position but not the
		// content this copy continues.
		set.files.ClearPrev(m.prevIn, m.prevOf)
	}
}

// copySource finds what a new file whose first bytes are cur is a copy of.
// f is the new file, whose size is size.
func (set *fileSet) copySource(id fileID, path string, f *os.File, size int64, cur []byte) copyMatch {
	set.refreshStale(filepath.Dir(path), id, len(cur))
	lens := set.files.Lengths(len(cur))
	if len(lens) == 0 {
		return copyMatch{}
	}
	sums := fingerprint.Prefixes(cur, lens)
	for i := len(sums) - 1; i >= 0; i-- { // the longest, most telling match first
		if m := set.copySourceBy(id, f, size, sums[i]); m.prior != nil || m.waitOn != nil {
			return m
		}
	}
	return copyMatch{}
}

// copySourceBy is copySource for one fingerprint of the new file: the
// content a tracked file held before a truncation, a live tracked file,
// then the positions saved by the last run.
func (set *fileSet) copySourceBy(id fileID, f *os.File, size int64, sum fingerprint.Sum) copyMatch {
	if p := set.files.PriorWithSum(sum, id); p != nil {
		return copyMatch{prior: p, from: p.From}
	}
	for _, t := range set.files.WithSum(sum) {
		if t.life.dead() || t.id == id || t.copyOf != nil {
			continue
		}
		if m := set.copyOfLive(t, f, size, sum); !m.none() {
			return m
		}
	}
	return set.copyOfSaved(id, sum)
}

// copyOfLive checks the new file f (size bytes, starting with sum) for
// being a copy of the tracked file t.
func (set *fileSet) copyOfLive(t *tracked, f *os.File, size int64, sum fingerprint.Sum) copyMatch {
	tf, done, ok := fileOf(set.openFile, t)
	if !ok {
		if t.f == nil {
			// Closed, and its name is gone or holds another file:
			// it cannot be read again, its copy continues it.
			return copyMatch{prior: t.delivered(), from: t.path, ends: t}
		}
		return copyMatch{}
	}
	defer done()
	head, err := fingerprint.Read(tf, set.cfg.FingerprintBytes, nil)
	switch {
	case err != nil:
		return copyMatch{}
	case !t.fp.Matches(head):
		// The original no longer holds that content: truncated,
		// maybe refilled already, before a read noticed. Take note
		// now, so the copy continues from its prior.
		set.truncate(t, head)
		if t.f == nil {
			t.life.pending()
		}
		if p := set.files.PriorOf(t); p != nil && p.Sum == sum {
			return copyMatch{prior: p, from: t.path}
		}
		return copyMatch{}
	case len(head) < set.cfg.FingerprintBytes && int64(len(head)) < size:
		// t holds fewer bytes than fingerprint-bytes, and fewer than
		// the new file: the new file is neither its copy nor, being
		// newer, its original; they merely start alike (a line being
		// written in t that starts with the same timestamp).
		return copyMatch{}
	}
	fi, err := tf.Stat()
	if err != nil || !sameBytes(f, size, tf, fi.Size(), int64(sum.Len)) {
		return copyMatch{}
	}
	return copyMatch{waitOn: t, srcSize: fi.Size()}
}

// copyOfSaved finds a position saved by the last run whose content starts
// with sum: its file was not found (yet), truncated, replaced or rotated
// away while the agent was stopped; or it held that content before it was
// truncated (its copy may be discovered before it: an inode reused by the
// copy can carry a stale position of its own, which sorts it first).
func (set *fileSet) copyOfSaved(id fileID, sum fingerprint.Sum) copyMatch {
	if s, ok := set.files.SavedWithSum(sum, id); ok {
		matched := s // taken by address only when found: s itself stays on the stack
		return copyMatch{prior: asPrior(s), from: s.Path, saved: &matched}
	}
	if s, ok := set.files.SavedWithPrev(sum, id); ok {
		return copyMatch{prior: &prior{Content: *s.Prev}, from: s.Path, prevOf: s.Key, prevIn: s.ID}
	}
	return copyMatch{}
}

// fileOf returns t's file: its descriptor, or, for a closed file, the file
// at its path if that is still t (done closes it).
func fileOf(open func(string) (*os.File, error), t *tracked) (f *os.File, done func(), ok bool) {
	if t.f != nil {
		return t.f, func() {}, true
	}
	g, err := open(t.path)
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

// sameBytes reports whether f (size bytes) holds the same bytes as tf (tsize) in
// the copyCheck bytes before the end of the shorter one, past the first
// from bytes (the fingerprint, compared already).
func sameBytes(f *os.File, size int64, tf *os.File, tsize, from int64) bool {
	end := min(size, tsize)
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
func (set *fileSet) resolveCopies(t *tracked) bool {
	if t.copies == 0 {
		return false
	}
	for _, c := range set.ring {
		if c.copyOf == t && !c.life.dead() {
			set.continueCopy(c, t.offset, t.line, t.path)
		}
	}
	t.copies = 0
	return true
}

// copyOrOriginal settles which of t and src (m.waitOn), a live file holding the same
// content, is the copy: a copy is never larger than its original when it
// is made, so the larger is the original; on a tie src, already read,
// reads on and t waits (and takes over if it grows past src: seen).
func (set *fileSet) copyOrOriginal(t *tracked, m copyMatch, size int64) {
	src := m.waitOn
	if size > m.srcSize && size >= src.offset {
		set.takeOver(t, src)
	} else {
		set.makeWait(t, src)
	}
}

// copyAtFirstRead checks, before anything of t is read, whether t is a
// copy after all: a copy still being written when a scan listed it
// (empty, or shorter than its original's fingerprint) looked new. cur is
// t's head now. It reports whether t became a copy (reading on from its
// original's offset, or waiting).
func (set *fileSet) copyAtFirstRead(t *tracked, cur []byte) bool {
	fi, err := t.f.Stat()
	if err != nil {
		return false
	}
	t.headChecked = len(cur)
	switch cm := set.copySource(t.id, t.path, t.f, fi.Size(), cur); {
	case cm.prior != nil:
		setFP(set.files, t, cur)
		set.continueCopy(t, cm.prior.Offset, cm.prior.Line, cm.from)
		set.consume(cm)
		t.split.Reset()
		return true
	case cm.waitOn != nil:
		setFP(set.files, t, cur)
		set.copyOrOriginal(t, cm, fi.Size())
		return true
	}
	return false
}

// sizeNow is t's size as its file says now (a scan's figure may be old).
func sizeNow(open func(string) (*os.File, error), t *tracked) int64 {
	if tf, done, ok := fileOf(open, t); ok {
		defer done()
		if fi, err := tf.Stat(); err == nil {
			return fi.Size()
		}
	}
	return max(t.lastSize, t.readPos)
}

// takeOver makes t, the original, continue from where src, its copy read
// first, was delivered; src waits on t from then on.
func (set *fileSet) takeOver(t, src *tracked) {
	if t.copyOf != nil { // it waited on src
		t.copyOf.copies--
		t.copyOf = nil
	}
	set.em.flushGroups(src, true)
	if src.copyOf != nil {
		src.copyOf.copies--
		src.copyOf = nil
	}
	set.makeWait(src, t)
	t.restart(src.offset, src.line)
	if t.f == nil {
		t.life.pending()
	}
	set.rep.logFile(slog.LevelInfo, "file holds what a copy of it already delivered (copytruncate); reading it on from there", t, t.offset,
		"copy", src.path)
	set.em.emitPosition(t)
}

// makeWait makes c, tracked but not read yet, wait on its original t.
func (set *fileSet) makeWait(c, t *tracked) {
	set.closeFile(c)
	c.life.settled()
	c.copyOf = t
	t.copies++
	set.rep.logFile(slog.LevelInfo, "file is a copy of a file being read (copytruncate); it is read once the original is truncated", c, 0,
		"copy_of", t.path)
}

// continueCopy makes c, a copy, read on from offset (line) of the file it
// copies. A copy shorter than that holds nothing undelivered: it is kept
// at its end.
func (set *fileSet) continueCopy(c *tracked, offset, line int64, from string) {
	if c.copyOf != nil {
		c.copyOf.copies--
		c.copyOf = nil
	}
	size, known := int64(0), false
	if fi, err := set.fsys.Stat(c.path); err == nil {
		if id, _, ok := idOf(c.path, fi); ok && id == c.id {
			size, known = fi.Size(), true
		}
	}
	if !known {
		// Renamed since the last scan (the next rotation shifts the
		// copies): its size decides where it continues, so the next
		// scan, which finds its name, resumes it.
		c.resume = &resumeAt{offset: offset, line: line, from: from}
		set.mg.rescan = true
		return
	}
	c.resume = nil
	c.restart(offset, line)
	c.behind, c.lastSize = offset > size, size
	if c.behind {
		c.lastData = set.now() // quiet for close-inactive from now on: complete
	}
	c.life.pending()
	set.rep.logFile(slog.LevelInfo, "file is a copy of a truncated file (copytruncate); reading it from where the original was delivered", c, offset,
		"copy_of", from)
	set.em.emitPosition(c)
}

// settleBehind ends the wait of a copy that holds less than where it
// continues (behind): once it holds that much it is read on; once it has
// been quiet for close-inactive it is complete, and shorter than what its
// original delivered (lines written between the copy and the truncate,
// read from the original): it is kept at its end.
func (set *fileSet) settleBehind(t *tracked, now time.Time) {
	tf, done, ok := fileOf(set.openFile, t) // its path may name another file by now
	if !ok {
		return
	}
	fi, err := tf.Stat()
	done()
	if err != nil {
		return
	}
	switch size := fi.Size(); {
	case !t.behind:
	case size >= t.offset:
		t.behind = false
	case now.Sub(t.lastData) >= set.closeAfter:
		t.behind = false
		t.restart(size, 0)
		set.em.emitPosition(t)
	}
}

// holdCopy keeps t, not read from yet and holding fewer first bytes (cur)
// than fingerprint-bytes, unread while it may be a copy still being
// written: its name extends a tracked file's (app.log.1, app.log-1201)
// that holds more and starts with cur, or that was truncated lately (its
// prior awaits a copy). Too short to be matched, it would otherwise be
// read from 0. It is read once it holds fingerprint-bytes (then checked
// for a copy) or has been quiet for close-inactive.
func (set *fileSet) holdCopy(t *tracked, cur []byte, now time.Time) bool {
	if t.hold != holdNone || len(cur) >= set.cfg.FingerprintBytes || !set.mayBeCopyOf(t, cur) {
		return false
	}
	t.hold, t.lastData = holding, now
	set.rep.logFile(slog.LevelInfo, "file may be a copy still being written (copytruncate); it is read once it can be told", t, 0)
	return true
}

// mayBeCopyOf reports whether a file that t's name extends was truncated
// within close-inactive (noticed now if it was not yet), or holds more
// than cur and starts with it.
func (set *fileSet) mayBeCopyOf(t *tracked, cur []byte) bool {
	dir, name := filepath.Split(t.path)
	for {
		i := strings.LastIndexAny(name, ".-_")
		if i <= 0 {
			return false
		}
		name = name[:i]
		orig := filepath.Join(dir, name)
		for _, o := range set.files.Named(orig) {
			if o != t && !o.life.dead() {
				set.truncatedUnnoticed(o) // its prior is made now
			}
		}
		if set.files.RecentPrior(orig, set.mg.lastScan.Add(-set.closeAfter)) {
			return true
		}
		for _, o := range set.files.Named(orig) {
			if o != t && !o.life.dead() && startsWith(set.openFile, o, cur) {
				return true
			}
		}
	}
}

// startsWith reports whether t holds more than cur and starts with it.
func startsWith(open func(string) (*os.File, error), t *tracked, cur []byte) bool {
	tf, done, ok := fileOf(open, t)
	if !ok {
		return false
	}
	defer done()
	head, err := fingerprint.Read(tf, len(cur)+1, nil)
	return err == nil && len(head) > len(cur) && bytes.Equal(head[:len(cur)], cur)
}

// releaseHold ends the hold of t once it holds fingerprint-bytes or has
// been quiet for close-inactive. size < 0: t is no longer listed (renamed
// or deleted); it is read as any file then.
func (set *fileSet) releaseHold(t *tracked, size int64) {
	if t.hold != holding {
		return
	}
	if size < 0 {
		t.hold = holdReleased
		t.life.pending()
		return
	}
	if size != t.lastSize {
		t.lastData = set.mg.lastScan // still being written
	}
	if size >= int64(set.cfg.FingerprintBytes) || set.mg.lastScan.Sub(t.lastData) >= set.closeAfter {
		t.hold = holdReleased
		t.life.pending()
	}
}
