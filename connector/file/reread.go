package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"

	"github.com/edge-agent/edge-agent/connector/file/internal/glob"
	"github.com/edge-agent/edge-agent/connector/input"
)

var _ input.Rereader = (*Input)(nil)

// Reread moves the position of the file path names to offset, so that
// its lines from there are read and delivered again (or, forward, the
// bytes in between are never delivered). An offset inside a line starts
// at the next line's start (RereadResult.Aligned): a line read from its
// middle would be delivered cut. An offset inside the last line, whose
// newline is not written yet, is refused, as is one beyond the size.
//
// The file is the one path names now among the files the input tracks; a
// path its globs match but no scan found yet is looked for by a scan.
// Buffered multiline lines of the file are dropped (they lie after the
// position, so a reread reads them again). The new position is queued as
// a position-only event, first in the next Poll.
//
// Counting the lines before the new start reads the bytes between it and
// the old position (or the file's start, whichever is nearer), on the
// caller's goroutine.
func (in *Input) Reread(ctx context.Context, path string, offset int64) (input.RereadResult, error) {
	switch {
	case in.closed:
		return input.RereadResult{}, ErrClosed
	case !in.opened:
		return input.RereadResult{}, ErrNotOpen
	case offset < 0:
		return input.RereadResult{}, fmt.Errorf("reread %s: offset %d is negative; give a byte offset of 0 or more", path, offset)
	}
	p := filepath.Clean(path)
	t, err := in.rereadTarget(ctx, p)
	if err != nil {
		return input.RereadResult{}, err
	}
	if t.copyOf != nil || t.resume != nil || t.hold == holding {
		return input.RereadResult{}, fmt.Errorf("reread %s: the file is a copy (copytruncate) still being matched to its original; try again in a few seconds", p)
	}
	f, done, ok := fileOf(in.openFile, t)
	if !ok {
		return input.RereadResult{}, fmt.Errorf("reread %s: the file cannot be opened now (renamed, deleted or unreadable); check the path", p)
	}
	defer done()
	fi, err := f.Stat()
	if err != nil {
		return input.RereadResult{}, fmt.Errorf("reread %s: %w", p, err)
	}
	size := fi.Size()
	if offset > size {
		return input.RereadResult{}, fmt.Errorf("reread %s: offset %d is beyond the file's size, %d bytes; give an offset from 0 to %d", p, offset, size, size)
	}
	w := in.fmt.codec.width()
	start, err := lineStart(in.rd.readBuf, f, t, offset, size, w)
	if err != nil {
		return input.RereadResult{}, fmt.Errorf("reread %s: %w", p, err)
	}
	line, err := linesBefore(in.rd.readBuf, f, t, start, size, w)
	if err != nil {
		return input.RereadResult{}, fmt.Errorf("reread %s: count lines: %w", p, err)
	}
	res := input.RereadResult{Path: t.path, Identity: t.key, Requested: offset, Start: start, Aligned: start != offset,
		Line: line, Previous: t.offset, Size: size}
	if start < t.offset {
		res.Reread = t.offset - start
	} else {
		res.Skipped = start - t.offset
	}
	in.moveTo(t, start, line)
	in.rep.logFile(slog.LevelInfo, "file position moved on request; reading on from there", t, start,
		"previous_offset", res.Previous, "requested_offset", offset, "reread_bytes", res.Reread, "skipped_bytes", res.Skipped)
	return res, nil
}

// rereadTarget is the tracked file path names: among the files tracked
// under it, the one it names now (a rotated file still being finished
// shares its old name with its successor briefly). A path this input
// does not read, or leaves to an earlier input, wraps input.ErrNotRead.
func (in *Input) rereadTarget(ctx context.Context, p string) (*tracked, error) {
	if t := namedNow(in.files, in.fsys, p); t != nil {
		return t, nil
	}
	if !in.mg.matches(p) {
		hint := ""
		if !filepath.IsAbs(p) {
			hint = "; give the path as the globs name it (absolute)"
		}
		return nil, fmt.Errorf("reread %s: %w (paths %v, exclude %v)%s", p, input.ErrNotRead, in.cfg.Paths, in.cfg.Exclude, hint)
	}
	if owner := in.mg.claims.Owner(in.id, p); owner != "" {
		return nil, fmt.Errorf("reread %s: %w: input %s, earlier in the config, reads it", p, input.ErrNotRead, owner)
	}
	// Matched but not tracked: a file created since the last scan.
	if err := in.scanNow(ctx); err != nil {
		return nil, fmt.Errorf("reread %s: look for it: %w", p, err)
	}
	if t := namedNow(in.files, in.fsys, p); t != nil {
		return t, nil
	}
	if _, err := in.fsys.Stat(p); err != nil {
		return nil, fmt.Errorf("reread %s: the input's globs match it but it is not there: %w", p, err)
	}
	return nil, fmt.Errorf("reread %s: the input's globs match it but it does not read it (a directory, or not a regular file)", p)
}

// namedNow returns the live file tracked under p that p names now, or
// the only one tracked under it; nil when none is.
func namedNow(fs *files, fsys glob.FS, p string) *tracked {
	named := fs.Named(p)
	switch {
	case len(named) == 0:
		return nil
	case len(named) == 1:
		return named[0]
	}
	if fi, err := fsys.Stat(p); err == nil {
		if id, _, ok := idOf(p, fi); ok {
			for _, t := range named {
				if t.id == id {
					return t
				}
			}
		}
	}
	return named[0]
}

// scanNow runs a scan between two polls, as Open does: what it emits is
// queued for the next Poll.
func (in *Input) scanNow(ctx context.Context) error {
	in.em.budget = math.MaxInt
	in.em.out = in.em.pending[:0:0]
	err := in.set.scan(ctx, in.now())
	in.em.settle()
	in.em.pending = append(in.em.pending, in.em.out...)
	in.em.out, in.em.budget = nil, 0
	in.publish()
	return err
}

// lineStart is offset when a line starts there, else the start of the
// next line. With UTF-16 (w 2) newlines are code units at even offsets.
func lineStart(buf []byte, f io.ReaderAt, t *tracked, offset, size int64, w int) (int64, error) {
	if offset <= int64(t.bomLen) {
		return 0, nil // the first line starts after the byte-order mark, which a read from 0 skips
	}
	pos := offset - offset%int64(w)
	if pos == offset {
		pos -= int64(w) // the code unit before offset: a newline makes offset a line start
	}
	for pos < size {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-pos)], pos)
		n -= n % w
		if w == 1 {
			if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
				return pos + int64(i+1), nil
			}
		} else {
			for i := 0; i < n; i += w {
				if isNewline(buf[i:i+w], t.bigEndian) {
					return pos + int64(i+w), nil
				}
			}
		}
		if n == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				break
			}
			return 0, err
		}
		pos += int64(n)
	}
	return 0, fmt.Errorf("offset %d is inside the file's last line, which has no newline yet (size %d); give an offset at a line start or at the end", offset, size)
}

// linesBefore counts the lines that end before start, from t's own
// position (its offset ends line t.line) or from 0, whichever is nearer.
func linesBefore(buf []byte, f io.ReaderAt, t *tracked, start, size int64, w int) (int64, error) {
	if t.offset <= size {
		if start <= t.offset && t.offset-start <= start {
			n, err := countNewlines(buf, f, start, t.offset, w, t.bigEndian)
			return max(0, t.line-n), err
		}
		if start > t.offset && start-t.offset <= start {
			n, err := countNewlines(buf, f, t.offset, start, w, t.bigEndian)
			return t.line + n, err
		}
	}
	return countNewlines(buf, f, 0, start, w, t.bigEndian)
}

// countNewlines counts the newline code units in [from, to).
func countNewlines(buf []byte, f io.ReaderAt, from, to int64, w int, bigEndian bool) (int64, error) {
	var n int64
	for pos := from; pos < to; {
		got, err := f.ReadAt(buf[:min(int64(len(buf)), to-pos)], pos)
		got -= got % w
		if w == 1 {
			n += int64(bytes.Count(buf[:got], newline))
		} else {
			for i := 0; i < got; i += w {
				if isNewline(buf[i:i+w], bigEndian) {
					n++
				}
			}
		}
		if got == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				return n, fmt.Errorf("the file ended at %d, before %d", pos, to)
			}
			return n, err
		}
		pos += int64(got)
	}
	return n, nil
}

var newline = []byte{'\n'}

// isNewline reports whether the code unit u is U+000A.
func isNewline(u []byte, bigEndian bool) bool {
	if len(u) == 1 {
		return u[0] == '\n'
	}
	if bigEndian {
		return u[0] == 0 && u[1] == '\n'
	}
	return u[0] == '\n' && u[1] == 0
}

// moveTo restarts t's reading at start, line lines in, and queues its new
// position for the next Poll (after every event already queued, so the
// scheduler keeps it over their positions).
func (in *Input) moveTo(t *tracked, start, line int64) {
	in.em.settle()
	if t.asm != nil {
		t.asm.Reset()
	}
	t.restart(start, line)
	t.behind = false
	t.eofPoll = 0
	if t.f == nil {
		t.life.pending()
	} else {
		t.life.grew()
	}
	in.em.budget = 0 // between polls: the event waits in pending for the next Poll
	in.em.emitPosition(t)
	in.publish()
}
