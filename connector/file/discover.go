package file

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
	"github.com/edge-agent/edge-agent/connector/file/internal/linesplit"
	"github.com/edge-agent/edge-agent/connector/file/internal/multiline"
)

// discover starts tracking a file seen for the first time in this run.
func (in *Input) discover(c candidate, now time.Time) error {
	f, err := in.openFile(c.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return in.fileErr("open", c.path, err)
	}
	cur, err := fingerprint.Read(f, in.cfg.FingerprintBytes, in.fpBuf)
	if err != nil {
		_ = f.Close()
		return in.fileErr("read", c.path, err)
	}
	// The descriptor may name another file than the stat did if the
	// path was replaced in between; trust the descriptor.
	if fi, err := f.Stat(); err == nil {
		if id, _, ok := idOfOpen(f, fi); ok && id != c.id {
			_ = f.Close()
			in.rescan = true
			return nil
		}
		c.size, c.mod = fi.Size(), fi.ModTime()
	}
	in.fileOK(c.path)

	var key string
	var offset, line, savedOffset int64
	var restored, old *prior // the matched position's prev; the inode's content before a truncation
	var older *prior         // an unmatched position's own prev: content before old, whose copy may still show up
	tailed, truncated := false, false
	var forgets []string // positions of content the inode no longer holds
	if ss := in.saved[c.id]; len(ss) > 0 {
		delete(in.saved, c.id)
		for _, s := range ss {
			if key == "" && fingerprint.MatchesSum(cur, s.sum) {
				delete(in.savedKeys, s.key)
				key = s.key
				if c.size >= s.Offset {
					offset, line, restored = s.Offset, s.Line, s.prior
				} else {
					truncated, savedOffset, old, older = true, s.Offset, s.asPrior(), s.prior
				}
				continue
			}
			// Same inode, other content: truncated and written again
			// while the agent was stopped (copytruncate: its old content
			// may be in a copy found next), or the inode was reused.
			if old == nil {
				old, older = s.asPrior(), s.prior
			}
			// Its key stays taken until t has one: an empty file's new
			// key would otherwise be this very key (the same inode and
			// the same empty-content hash, when the position was first
			// taken while the file was empty), and the forget below,
			// emitted after t's position, would delete the position
			// that carries the old content to its copy.
			forgets = append(forgets, s.key)
		}
	}
	var cm copyMatch // what the new file is a copy of (copytruncate), if anything
	// A saved position that delivered nothing (an empty file's) matches
	// any content on its inode: a copy that reused the inode of an empty
	// file is still a copy.
	if key == "" || (offset == 0 && !truncated) {
		cm = in.copySource(c.id, c.path, f, c.size, cur)
		if (cm.prior != nil || cm.waitOn != nil) && key != "" {
			in.emitForget(key)
			key, restored = "", nil
		}
		if p := cm.prior; p != nil {
			offset, line = p.offset, p.line
		}
	}
	if key == "" && cm.prior == nil && cm.waitOn == nil && c.tail && !in.cfg.ReadFromBeginning {
		// Present when its path was first configured, tailed: from the
		// end of the last complete line, so a line being written is
		// read whole.
		_, be := in.fmt.codec.bom(cur)
		end, err := linesplit.LastLineEnd(f, c.size, int64(in.cfg.MaxLineBytes)+readChunk, in.fmt.codec.width(), be, in.readBuf)
		if err != nil {
			_ = f.Close()
			return in.fileErr("read", c.path, err)
		}
		offset, tailed = end, true
	}
	prev := in.byPath[c.path]
	if prev != nil {
		in.local.rotations++ // the name now holds a different file
	}
	t := in.track(key, c.path, c.id, cur)
	t.headChecked = len(cur)
	for _, k := range forgets {
		delete(in.savedKeys, k)
	}
	t.offset, t.consumed, t.readPos = offset, offset, offset
	t.line, t.consumedLine = line, line
	t.lastSize, t.lastMod = c.size, c.mod
	t.lastData = now
	t.seenScan = in.scanGen
	t.behind = offset > c.size // a copy still being written
	switch {
	case restored != nil:
		in.setPrior(t, restored)
	case old != nil:
		if older != nil {
			// Truncated twice (copytruncate twice while stopped, or after
			// a truncation whose copy was not found yet): the earlier
			// content stays findable in memory once old replaces it.
			in.setPrior(t, older)
		}
		in.setPrior(t, old)
	}
	if len(forgets) > 0 {
		// The old content, now t's prior (a copy may continue it), is
		// stored before the positions it replaces are forgotten: a crash
		// in between must not lose where its copy continues.
		in.emitPosition(t)
		for _, k := range forgets {
			in.emitForget(k)
		}
	}
	if src := cm.waitOn; src != nil && (c.size <= cm.srcSize || c.size < src.offset) {
		// Not read (nor holding a descriptor) until the original is
		// truncated or ends: see copies.go.
		_ = f.Close()
		in.makeWait(t, src)
		return nil
	}
	opened := len(in.openFiles) < in.cfg.MaxOpenFiles
	if opened {
		in.attach(t, f)
	} else {
		_ = f.Close()
		t.life.pending()
	}
	if src := cm.waitOn; src != nil {
		in.takeOver(t, src) // larger than the file read so far: the original
	}
	switch {
	case cm.prior != nil:
		in.logFile(slog.LevelInfo, "file is a copy of a truncated file (copytruncate); reading it from where the original was delivered", t, offset,
			"copy_of", cm.from)
	case prev != nil:
		in.logFile(slog.LevelInfo, "file rotated: its path now names another file", t, offset,
			"previous_dev", prev.id.dev, "previous_inode", prev.id.ino)
	case opened:
		in.logFile(slog.LevelInfo, "file opened", t, offset)
	default:
		// Only when more files match than max-open-files: one line per
		// file found would flood the log of a large tree.
		in.logFile(slog.LevelDebug, "file found; it is opened when a descriptor is free (max-open-files)", t, offset)
	}
	switch {
	case cm.prior != nil:
		// The copy's position first: a crash between the two must not
		// leave the prior forgotten and the copy without a position.
		in.emitPosition(t)
		in.consume(cm)
	case truncated:
		in.local.truncations++
		in.logFile(slog.LevelInfo, "file truncated while the agent was stopped; reading it again from the start", t, 0,
			"previous_offset", savedOffset)
		in.emitPosition(t)
	case tailed && offset > 0:
		in.emitPosition(t)
	}
	return nil
}

// track registers a new identity. An empty key means a new file; keys are
// made unique among known and saved positions.
func (in *Input) track(key, path string, id fileID, cur []byte) *tracked {
	t := &tracked{identity: identity{id: id, fp: fingerprint.New(in.cfg.FingerprintBytes)}}
	in.setFP(t, cur)
	n, be := in.fmt.codec.bom(cur)
	t.bomLen, t.bigEndian = n, be
	if in.ml != nil {
		t.asm = multiline.New(*in.ml)
	}
	if key == "" {
		key = in.newKey(id, t.fp.Sum())
	}
	t.key = key
	in.setPath(t, path)
	in.files[key] = t
	in.byID[id] = t
	in.ring = append(in.ring, t)
	return t
}

func (in *Input) newKey(id fileID, sum fingerprint.Sum) string {
	base := fmt.Sprintf("%d:%d:%016x", id.dev, id.ino, sum.Hash)
	key := base
	for i := 2; in.keyUsed(key); i++ {
		key = fmt.Sprintf("%s~%d", base, i)
	}
	return key
}

func (in *Input) keyUsed(key string) bool {
	if _, ok := in.files[key]; ok {
		return true
	}
	_, ok := in.savedKeys[key]
	return ok
}
