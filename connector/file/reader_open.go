package file

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
)

// housekeep runs the time-driven work: idle multiline flushes and
// closing files inactive for close-inactive-ms.
func (in *Input) housekeep(now time.Time) {
	nowMs := now.UnixMilli()
	for _, t := range in.ring {
		if t.life.dead() {
			continue
		}
		if t.behind {
			in.set.settleBehind(t, now)
		}
		if t.asm != nil && t.asm.Pending() && nowMs-t.asm.LastAt() >= in.flushIdle.Milliseconds() {
			t.asm.Flush()
			in.em.emitReady(t, false)
		}
		if t.f != nil && t.life.away() && t.life.atEOF() && now.Sub(t.lastData) >= in.closeAfter && !t.grew() {
			// Its last lines are read.
			in.set.retire(t, "renamed out of the globs and read to its end (quiet for close-inactive)")
			continue
		}
		if t.f != nil && t.life.atEOF() && t.missing == 0 && now.Sub(t.lastData) >= in.closeAfter && !t.grew() && in.set.stillNamed(t) {
			// Deliver the buffered group instead of dropping it (the Java
			// agent drops it here), then free the descriptor.
			in.em.flushGroups(t, true)
			in.set.closeFile(t)
			in.rep.logFile(slog.LevelInfo, "file closed after close-inactive", t, t.offset,
				"close_inactive", in.closeAfter.String())
		}
	}
}

// stillNamed reports whether t's path still names t. A file renamed or
// deleted since the last scan must keep its descriptor until it is read
// to its end: closing it would lose its tail.
func (set *fileSet) stillNamed(t *tracked) bool {
	fi, err := set.fsys.Stat(t.path)
	if err != nil {
		set.mg.rescan = true
		return false
	}
	id, _, ok := idOf(t.path, fi)
	if !ok || id != t.id {
		set.mg.rescan = true
		return false
	}
	return true
}

// reopen opens a tracked file that was closed, checking it is still the
// same content. It reports false when the file cannot be read now.
func (set *fileSet) reopen(t *tracked, now time.Time) (bool, error) {
	if len(set.openFiles) >= set.cfg.MaxOpenFiles && !set.evict(t) {
		return false, nil
	}
	wasEvicted := t.life.evicted()
	f, fi, cur, ok, err := set.openAgain(t)
	if !ok {
		return false, err
	}
	set.attach(t, f)
	t.lastData = now
	set.rep.fileOK(t.path)
	if !t.fp.Matches(cur) {
		set.rewrittenWhileClosed(t, f, fi, cur, now)
		return false, nil
	}
	if t.offset == 0 && t.readPos == 0 && len(cur) > t.headChecked {
		// Nothing delivered and a fingerprint that covers less than the
		// file holds now (an empty file's matches anything): the inode
		// may have been freed and reused by a copy (copytruncate).
		if settled, readOn := set.copyAtReopen(t, fi.Size(), cur); settled {
			return readOn, nil
		}
	}
	// A file closed to make room for another is reopened constantly when
	// more files match than max-open-files: that churn is not news.
	level := slog.LevelInfo
	if wasEvicted {
		level = slog.LevelDebug
	}
	set.rep.logFile(level, "file reopened", t, t.readPos)
	if fi.Size() < t.readPos && !t.behind {
		set.truncate(t, cur)
	}
	return t.f != nil && t.copyOf == nil, nil
}

// openAgain opens t's path and checks it still names t; false (with the
// error on-error: fail returns) when it cannot be read now.
func (set *fileSet) openAgain(t *tracked) (*os.File, os.FileInfo, []byte, bool, error) {
	f, err := set.openFile(t.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// Renamed or deleted since the last scan: scan now to find
			// its new name (or to finish and forget it).
			set.mg.rescan = true
			return nil, nil, nil, false, nil
		}
		t.life.fail()
		return nil, nil, nil, false, set.rep.fileErr("open", t.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		t.life.fail()
		return nil, nil, nil, false, set.rep.fileErr("stat", t.path, err)
	}
	if id, _, ok := idOfOpen(f, fi); !ok || id != t.id {
		// The name now holds another file; the next scan sorts it out.
		_ = f.Close()
		set.mg.rescan = true
		return nil, nil, nil, false, nil
	}
	cur, err := fingerprint.Read(f, set.cfg.FingerprintBytes, set.rd.fpBuf)
	if err != nil {
		_ = f.Close()
		t.life.fail()
		return nil, nil, nil, false, set.rep.fileErr("read", t.path, err)
	}
	return f, fi, cur, true, nil
}

// rewrittenWhileClosed replaces t, reopened on f, by a new identity read
// from 0: rewritten while closed, or a new file that reused the inode,
// the old content is gone either way.
func (set *fileSet) rewrittenWhileClosed(t *tracked, f *os.File, fi os.FileInfo, cur []byte, now time.Time) {
	path, id, had := t.path, t.id, t.offset
	old := t.delivered()
	handed := t.copies > 0
	detach(&set.openFiles, t)
	set.retire(t, "")
	nt := set.track("", path, id, cur)
	if !handed {
		set.em.setPrior(nt, old, set.mg.scanGen, set.mg.lastScan) // its old content may be in a copy
	}
	set.attach(nt, f)
	nt.lastData, nt.lastSize, nt.seenScan = now, fi.Size(), set.mg.scanGen
	set.rep.logFile(slog.LevelInfo, "file rewritten while closed; reading it again from the start", nt, 0, "previous_offset", had)
	// Stored now, with its prior: the old position is forgotten, and
	// an empty file has nothing to read that would store one, so a
	// stop before the copy is found would lose where it continues.
	set.em.emitPosition(nt)
	// Or the inode was reused by a copy (copytruncate) of another file.
	switch cm := set.copySource(id, path, f, fi.Size(), cur); {
	case cm.prior != nil:
		detach(&set.openFiles, nt)
		_ = f.Close()
		set.continueCopy(nt, cm.prior.Offset, cm.prior.Line, cm.from)
		set.consume(cm)
	case cm.waitOn != nil:
		set.copyOrOriginal(nt, cm, fi.Size())
	}
}

// copyAtReopen checks t, reopened before anything of it was read, for
// being a copy. settled reports that it is one, and readOn whether it is
// read on now.
func (set *fileSet) copyAtReopen(t *tracked, size int64, cur []byte) (settled, readOn bool) {
	t.headChecked = len(cur)
	switch cm := set.copySource(t.id, t.path, t.f, size, cur); {
	case cm.prior != nil:
		set.closeFile(t)
		setFP(set.files, t, cur)
		t.refreshState()
		set.continueCopy(t, cm.prior.Offset, cm.prior.Line, cm.from)
		set.consume(cm)
		return true, false
	case cm.waitOn != nil:
		setFP(set.files, t, cur)
		t.refreshState()
		set.copyOrOriginal(t, cm, size)
		return true, t.copyOf == nil
	}
	return false, false
}

// evict closes the open file served longest ago, preferring files at
// their end, to stay under max-open-files. Files being finished (gone)
// are never evicted: closing them would lose their tail.
//
// Only open files are considered, and only the chosen one is stat'ed
// (stillNamed): with many more files than descriptors, an eviction
// happens for nearly every reopen, so it must not cost a pass over every
// tracked file or a stat per open file.
func (set *fileSet) evict(except *tracked) bool {
	var renamed map[*tracked]struct{}
	for range len(set.openFiles) {
		var victim *tracked
		for _, t := range set.openFiles {
			if t == except || t.life.dead() || t.life.gone() || (t.missing > 0 && !t.life.moved()) {
				continue
			}
			if _, skip := renamed[t]; skip {
				continue
			}
			if victim == nil || (t.life.atEOF() && !victim.life.atEOF()) || (t.life.atEOF() == victim.life.atEOF() && t.served < victim.served) {
				victim = t
			}
		}
		if victim == nil {
			return false
		}
		if !set.stillNamed(victim) {
			if renamed == nil {
				renamed = make(map[*tracked]struct{})
			}
			renamed[victim] = struct{}{}
			continue
		}
		unread := !victim.life.atEOF() || victim.grew()
		set.closeFile(victim)
		victim.life.evictedWith(unread)
		set.rep.logFile(slog.LevelDebug, "file closed to stay under max-open-files", victim, victim.offset)
		return true
	}
	return false
}

// attach makes f the open descriptor of t. The line splitter lives only
// while the file is open: a closed file holds no partial line, and most
// files of a large tree are closed.
func (set *fileSet) attach(t *tracked, f *os.File) {
	t.open(f, set.fmt.codec, set.cfg.MaxLineBytes)
	t.life.opened()
	t.openIdx = len(set.openFiles)
	set.openFiles = append(set.openFiles, t)
}

// detach forgets t's descriptor without closing it, taking t off open,
// the list of files holding one.
func detach(open *[]*tracked, t *tracked) {
	list := *open
	last := len(list) - 1
	moved := list[last]
	list[t.openIdx] = moved
	moved.openIdx = t.openIdx
	list[last] = nil
	*open = list[:last]
	t.f = nil
	t.dropHead()
	t.life.closed()
}

// closeFile releases t's descriptor. A held partial line is dropped and
// will be read again from the file; assembled lines stay buffered.
func (set *fileSet) closeFile(t *tracked) {
	if t.f == nil {
		return
	}
	t.close()
	detach(&set.openFiles, t)
}

// readFailed applies on-error to a read error on an open file.
func (set *fileSet) readFailed(t *tracked, err error) error {
	set.em.flushGroups(t, true)
	set.closeFile(t)
	t.life.fail()
	return set.rep.fileErr("read", t.path, err)
}

// takeWatchEvents applies what the watcher noticed since the last poll.
func (mg *manager) takeWatchEvents(fs *files) {
	if mg.watch == nil {
		return
	}
	written, rescan := mg.watch.take()
	if rescan {
		mg.rescan = true
	}
	for _, p := range written {
		for _, t := range fs.Named(p) {
			if t.f == nil {
				t.life.pending()
			}
		}
	}
}
