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
	tailed, truncated := false, false
	if ss := in.saved[c.id]; len(ss) > 0 {
		delete(in.saved, c.id)
		for _, s := range ss {
			delete(in.savedKeys, s.key)
			if key == "" && fingerprint.MatchesSum(cur, s.sum) {
				key = s.key
				if c.size >= s.Offset {
					offset, line = s.Offset, s.Line
				} else {
					truncated, savedOffset = true, s.Offset
				}
				continue
			}
			// Same inode, other content: the saved file is gone and the
			// inode was reused.
			in.emitForget(s.key)
		}
	}
	if key == "" && in.firstScan && in.firstStart && !in.cfg.ReadFromBeginning {
		// First ever start, tail from the end: from the end of the last
		// complete line, so a line being written is read whole.
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
	t.offset, t.consumed, t.readPos = offset, offset, offset
	t.line, t.consumedLine = line, line
	t.lastSize, t.lastMod = c.size, c.mod
	t.lastData = now
	t.seenScan = in.scanGen
	opened := len(in.openFiles) < in.cfg.MaxOpenFiles
	if opened {
		in.attach(t, f)
	} else {
		_ = f.Close()
		t.needsRead = true
	}
	switch {
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
	t := &tracked{id: id, fp: fingerprint.New(in.cfg.FingerprintBytes)}
	t.fp.Set(cur)
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
