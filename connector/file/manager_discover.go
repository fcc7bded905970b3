package file

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
	"github.com/edge-agent/edge-agent/connector/file/internal/linesplit"
	"github.com/edge-agent/edge-agent/connector/file/internal/tracker"
	"github.com/edge-agent/edge-agent/connector/internal/multiline"
)

// found is what discover learned of a new file before tracking it.
type found struct {
	key          string // the saved position it continues; empty for a new file
	offset, line int64
	savedOffset  int64     // the saved offset of a position whose file shrank while stopped
	restored     *prior    // the matched position's prev
	old          *prior    // the inode's content before a truncation
	older        *prior    // an unmatched position's own prev: content before old, whose copy may still show up
	truncated    bool      // its saved position is past its end: truncated while stopped
	tailed       bool      // started at the end of its last complete line
	forgets      []string  // positions of content the inode no longer holds
	cm           copyMatch // what it is a copy of (copytruncate), if anything
}

// discover starts tracking a file seen for the first time in this run,
// in steps: open it, match the saved positions on its inode, check it
// for being a copy, pick where it starts, track it, then read it or make
// it wait for its original.
func (set *fileSet) discover(c candidate, now time.Time) error {
	f, cur, ok, err := set.openCandidate(&c)
	if !ok {
		return err
	}
	fd := set.matchSaved(c, cur)
	set.matchCopy(c, f, cur, &fd)
	if fd.key == "" && fd.cm.none() && c.tail && !set.cfg.ReadFromBeginning {
		if err := set.tailStart(c, f, cur, &fd); err != nil {
			_ = f.Close()
			return err
		}
	}
	var prev *tracked
	if named := set.files.Named(c.path); len(named) > 0 {
		prev = named[0]
		set.em.local.rotations++ // the name now holds a different file
	}
	t := set.register(c, cur, &fd, now)
	if src := fd.cm.waitOn; src != nil && (c.size <= fd.cm.srcSize || c.size < src.offset) {
		// Not read (nor holding a descriptor) until the original is
		// truncated or ends: see rotation_copies.go.
		_ = f.Close()
		set.makeWait(t, src)
		return nil
	}
	opened := len(set.openFiles) < set.cfg.MaxOpenFiles
	if opened {
		set.attach(t, f)
	} else {
		_ = f.Close()
		t.life.pending()
	}
	if src := fd.cm.waitOn; src != nil {
		set.takeOver(t, src) // larger than the file read so far: the original
	}
	set.logDiscovered(t, &fd, prev, opened)
	set.saveDiscovered(t, &fd)
	return nil
}

// openCandidate opens c and reads its first bytes. It reports false when
// there is nothing to track (gone, replaced, or an error on-error let
// pass); c's size and time are the descriptor's.
func (set *fileSet) openCandidate(c *candidate) (*os.File, []byte, bool, error) {
	f, err := set.openFile(c.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, false, nil
		}
		return nil, nil, false, set.rep.fileErr("open", c.path, err)
	}
	cur, err := fingerprint.Read(f, set.cfg.FingerprintBytes, set.rd.fpBuf)
	if err != nil {
		_ = f.Close()
		return nil, nil, false, set.rep.fileErr("read", c.path, err)
	}
	// The descriptor may name another file than the stat did if the
	// path was replaced in between; trust the descriptor.
	if fi, err := f.Stat(); err == nil {
		if id, _, ok := idOfOpen(f, fi); ok && id != c.id {
			_ = f.Close()
			set.mg.rescan = true
			return nil, nil, false, nil
		}
		c.size, c.mod = fi.Size(), fi.ModTime()
	}
	set.rep.fileOK(c.path)
	return f, cur, true, nil
}

// matchSaved matches the positions saved on c's inode against its first
// bytes cur: the one it still starts with is its own; the others held
// content the inode no longer holds.
func (set *fileSet) matchSaved(c candidate, cur []byte) found {
	var fd found
	for _, s := range set.files.TakeSaved(c.id) {
		if fd.key == "" && fingerprint.MatchesSum(cur, s.Sum) {
			set.files.ReleaseKey(s.Key)
			fd.key = s.Key
			if c.size >= s.Offset {
				fd.offset, fd.line, fd.restored = s.Offset, s.Line, priorOf(s.Prev)
			} else {
				fd.truncated, fd.savedOffset, fd.old, fd.older = true, s.Offset, asPrior(s), priorOf(s.Prev)
			}
			continue
		}
		// Same inode, other content: truncated and written again
		// while the agent was stopped (copytruncate: its old content
		// may be in a copy found next), or the inode was reused.
		if fd.old == nil {
			fd.old, fd.older = asPrior(s), priorOf(s.Prev)
		}
		// Its key stays taken until t has one: an empty file's new
		// key would otherwise be this very key (the same inode and
		// the same empty-content hash, when the position was first
		// taken while the file was empty), and the forget below,
		// emitted after t's position, would delete the position
		// that carries the old content to its copy.
		fd.forgets = append(fd.forgets, s.Key)
	}
	return fd
}

// matchCopy checks a file without a position of its own, or with one
// that delivered nothing (an empty file's, which matches any content on
// its inode), for being a copy (copytruncate).
func (set *fileSet) matchCopy(c candidate, f *os.File, cur []byte, fd *found) {
	if fd.key != "" && (fd.offset != 0 || fd.truncated) {
		return
	}
	fd.cm = set.copySource(c.id, c.path, f, c.size, cur)
	if fd.cm.none() {
		return
	}
	if fd.key != "" {
		set.em.emitForget(fd.key)
		fd.key, fd.restored = "", nil
	}
	if p := fd.cm.prior; p != nil {
		fd.offset, fd.line = p.Offset, p.Line
	}
}

// tailStart starts a file present when its path was first configured at
// the end of its last complete line, so a line being written is read
// whole.
func (set *fileSet) tailStart(c candidate, f *os.File, cur []byte, fd *found) error {
	_, be := set.fmt.codec.bom(cur)
	end, err := linesplit.LastLineEnd(f, c.size, int64(set.cfg.MaxLineBytes)+readChunk, set.fmt.codec.width(), be, set.rd.readBuf)
	if err != nil {
		return set.rep.fileErr("read", c.path, err)
	}
	fd.offset, fd.tailed = end, true
	return nil
}

// register tracks the file found, from where fd says it starts, with the
// content its inode held before as its prior.
func (set *fileSet) register(c candidate, cur []byte, fd *found, now time.Time) *tracked {
	t := set.track(fd.key, c.path, c.id, cur)
	t.headChecked = len(cur)
	for _, k := range fd.forgets {
		set.files.ReleaseKey(k)
	}
	t.restart(fd.offset, fd.line)
	t.lastSize, t.lastMod = c.size, c.mod
	t.lastData = now
	t.seenScan = set.mg.scanGen
	t.behind = fd.offset > c.size // a copy still being written
	if fd.key != "" {
		t.hold = holdReleased // its own position: not a new copy
	}
	switch {
	case fd.restored != nil:
		set.em.setPrior(t, fd.restored, set.mg.scanGen, set.mg.lastScan)
	case fd.old != nil:
		if fd.older != nil {
			// Truncated twice (copytruncate twice while stopped, or after
			// a truncation whose copy was not found yet): the earlier
			// content stays findable in memory once old replaces it.
			set.em.setPrior(t, fd.older, set.mg.scanGen, set.mg.lastScan)
		}
		set.em.setPrior(t, fd.old, set.mg.scanGen, set.mg.lastScan)
	}
	if len(fd.forgets) > 0 {
		// The old content, now t's prior (a copy may continue it), is
		// stored before the positions it replaces are forgotten: a crash
		// in between must not lose where its copy continues.
		set.em.emitPosition(t)
		for _, k := range fd.forgets {
			set.em.emitForget(k)
		}
	}
	return t
}

// logDiscovered logs how t was found.
func (set *fileSet) logDiscovered(t *tracked, fd *found, prev *tracked, opened bool) {
	switch {
	case fd.cm.prior != nil:
		set.rep.logFile(slog.LevelInfo, "file is a copy of a truncated file (copytruncate); reading it from where the original was delivered", t, fd.offset,
			"copy_of", fd.cm.from)
	case prev != nil:
		set.rep.logFile(slog.LevelInfo, "file rotated: its path now names another file", t, fd.offset,
			"previous_dev", prev.id.dev, "previous_inode", prev.id.ino)
	case opened:
		set.rep.logFile(slog.LevelInfo, "file opened", t, fd.offset)
	default:
		// Only when more files match than max-open-files: one line per
		// file found would flood the log of a large tree.
		set.rep.logFile(slog.LevelDebug, "file found; it is opened when a descriptor is free (max-open-files)", t, fd.offset)
	}
}

// saveDiscovered stores t's position where it differs from what a
// restart would find on its own.
func (set *fileSet) saveDiscovered(t *tracked, fd *found) {
	switch {
	case fd.cm.prior != nil:
		// The copy's position first: a crash between the two must not
		// leave the prior forgotten and the copy without a position.
		set.em.emitPosition(t)
		set.consume(fd.cm)
	case fd.truncated:
		set.em.local.truncations++
		set.rep.logFile(slog.LevelInfo, "file truncated while the agent was stopped; reading it again from the start", t, 0,
			"previous_offset", fd.savedOffset)
		set.em.emitPosition(t)
	case fd.tailed && fd.offset > 0:
		set.em.emitPosition(t)
	}
}

// track registers a new identity. An empty key means a new file; keys are
// made unique among known and saved positions.
func (set *fileSet) track(key, path string, id fileID, cur []byte) *tracked {
	t := &tracked{identity: identity{id: id, path: path, fp: fingerprint.New(set.cfg.FingerprintBytes)}}
	t.fp.Set(cur)
	t.setBOM(set.fmt.codec, cur, set.cfg.MaxLineBytes)
	if set.ml != nil {
		t.asm = multiline.New(*set.ml)
	}
	if key == "" {
		key = set.files.UniqueKey(fmt.Sprintf("%d:%d:%016x", id.dev, id.ino, t.fp.Sum().Hash))
	}
	t.key = key
	set.files.Add(t, key, id, path)
	set.files.SetSum(t, t.fp.Sum())
	t.setPathText(path)
	set.ring = append(set.ring, t)
	return t
}

// priorOf is content c as a prior, nil for none.
func priorOf(c *tracker.Content) *prior {
	if c == nil {
		return nil
	}
	return &prior{Content: *c}
}
